"""``peerwire worker --health-port``: ``/healthz`` and ``/readyz`` of a real worker process on
the machine's PostgreSQL (a schema of its own) and Redis (a key prefix of its own)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
import socket
import sys
from pathlib import Path

import asyncpg
import httpx
from redis.asyncio import Redis

PG_DSN = "postgresql://postgres@127.0.0.1:5432/test"
REDIS_URL = "redis://127.0.0.1:6379"
WAIT_S = 60.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _cleanup(schema: str, prefix: str) -> None:
    connection = await asyncpg.connect(PG_DSN)
    try:
        await connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    finally:
        await connection.close()
    client = Redis.from_url(REDIS_URL)
    try:
        keys = [key async for key in client.scan_iter(match=f"{prefix}:*", count=1000)]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


async def test_worker_health_port_serves_liveness_and_readiness_for_kubernetes() -> None:
    schema = f"pwtest_wh_{secrets.token_hex(6)}"
    prefix = f"pwtest_wh_{secrets.token_hex(6)}"
    port = _free_port()
    command = [
        str(Path(sys.executable).with_name("peerwire")),
        *("worker", "peerwire.samples.glossary:agent"),
        *("--store", f"{PG_DSN}?schema={schema}", "--bus", f"{REDIS_URL}?prefix={prefix}"),
        *("--health-port", str(port), "--log-format", "json", "--shutdown-grace", "1"),
    ]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    process = await asyncio.create_subprocess_exec(
        *command, env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", trust_env=False) as web:
            ready = None
            async with asyncio.timeout(WAIT_S):
                while ready is None or ready.status_code != 200:
                    assert process.returncode is None, "the worker ended early"
                    with contextlib.suppress(httpx.TransportError):  # not listening yet
                        ready = await web.get("/readyz")
                    await asyncio.sleep(0.1)
            assert ready.json() == {
                "status": "ready",
                "checks": {"store": "ok", "queue": "ok", "bus": "ok"},
            }
            live = await web.get("/healthz")
            assert (live.status_code, live.json()) == (200, {"status": "ok"})
        process.send_signal(signal.SIGTERM)
        assert process.stderr is not None
        async with asyncio.timeout(WAIT_S):
            said = (await process.stderr.read()).decode()
            assert await process.wait() == 0, said
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await _cleanup(schema, prefix)
    records = [json.loads(line) for line in said.splitlines() if line]
    [started] = [r for r in records if "worker running" in r["message"]]
    assert started["health_url"] == f"http://127.0.0.1:{port}"
    message = started["message"]
    assert message.startswith("peerwire: worker running the tasks of 'Glossary Agent'; ")
    assert f"store {PG_DSN} (schema {schema})" in message
    assert f"work queue {REDIS_URL} (prefix {prefix})" in message


async def test_a_taken_health_port_is_one_line_and_exit_1() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        command = [
            str(Path(sys.executable).with_name("peerwire")),
            *("worker", "peerwire.samples.glossary:agent"),
            *("--store", f"{PG_DSN}?schema=pwtest_wh_unused", "--bus", REDIS_URL),
            *("--health-port", str(port)),
        ]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        process = await asyncio.create_subprocess_exec(
            *command, env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
        )
        async with asyncio.timeout(WAIT_S):
            _, err = await process.communicate()
    said = err.decode().strip()
    assert process.returncode == 1, said
    assert said.startswith(f"peerwire: cannot serve health checks on 127.0.0.1:{port}: ")
    assert "Traceback" not in said and len(said.splitlines()) == 1
