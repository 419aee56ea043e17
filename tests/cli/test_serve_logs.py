"""``peerwire serve --log-format json --access-log`` as a real process: its stderr is JSON, one
object a line, with the start-up line naming every URL and the store (its password
redacted), a skill's traceback with its task id, and the access log."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

PG_DSN = "postgresql://postgres@127.0.0.1:5432/test"
PASSWORD = "pw-never-logged-61f3"  # the machine's PostgreSQL trusts loopback: any password works
WAIT_S = 60.0

AGENT = textwrap.dedent(
    """
    from peerwire import Agent

    agent = Agent("Lookup", description="Looks keys up")


    @agent.skill("lookup", description="Looks a key up")
    async def lookup(text: str) -> str:
        return {"present": "here"}[text]
    """
)


async def _read_until(stream: asyncio.StreamReader, lines: list[str], marker: str) -> str:
    async with asyncio.timeout(WAIT_S):
        while True:
            raw = await stream.readline()
            assert raw, "peerwire serve ended early:\n" + "\n".join(lines)
            line = raw.decode().rstrip("\n")
            lines.append(line)
            if marker in line:
                return line


def _send(text: str) -> dict[str, Any]:
    message = {"role": "ROLE_USER", "messageId": secrets.token_hex(8), "parts": [{"text": text}]}
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}


@pytest.mark.parametrize("http", ["peerwire", "uvicorn"])
async def test_serve_logs_json_with_the_start_up_line_tracebacks_and_the_access_log(
    tmp_path: Path, http: str
) -> None:
    (tmp_path / "lookup_agent.py").write_text(AGENT)
    schema = f"pwtest_logs_{secrets.token_hex(6)}"
    store = f"postgresql://postgres:{PASSWORD}@127.0.0.1:5432/test?schema={schema}"
    command = [
        str(Path(sys.executable).with_name("peerwire")),
        *("serve", "lookup_agent:agent", "--port", "0", "--grpc-port", "0", "--http", http),
        *("--store", store, "--log-format", "json", "--access-log"),
    ]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    process = await asyncio.create_subprocess_exec(
        *command,
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    lines: list[str] = []
    try:
        assert process.stderr is not None
        started = json.loads(await _read_until(process.stderr, lines, "peerwire: serving 'Lookup'"))
        url = started["url"]
        interfaces = started["interfaces"]
        assert set(interfaces) == {"JSON-RPC", "HTTP+JSON", "gRPC"}
        assert interfaces["JSON-RPC"] == url + "/" and interfaces["HTTP+JSON"] == url + "/rest"
        assert started["card_url"] == url + "/.well-known/agent-card.json"
        assert started["store"].startswith("postgresql://postgres:***@127.0.0.1:5432/test")
        assert started["bus"] == "memory" and started["level"] == "INFO"
        for where in (
            *interfaces.values(),
            started["card_url"],
            "store postgresql://postgres:***@",
        ):
            assert where in started["message"], (where, started["message"])

        async with httpx.AsyncClient(base_url=url, trust_env=False, timeout=30) as web:
            assert (await web.get("/healthz")).status_code == 200
            ready = await web.get("/readyz")
            assert (ready.status_code, ready.json()["checks"]) == (200, {"store": "ok"})
            answer = await web.post("/", json=_send("missing"), headers={"A2A-Version": "1.0"})
        task = answer.json()["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_FAILED"
        assert task["status"]["message"]["parts"][0]["text"] == "'missing'"
        assert "Traceback" not in answer.text

        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(WAIT_S):
            rest = await process.stderr.read()
            assert await process.wait() == 0
        lines.extend(rest.decode().splitlines())
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        connection = await asyncpg.connect(PG_DSN)
        try:
            await connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        finally:
            await connection.close()

    records = [json.loads(line) for line in lines if line]  # every line is one JSON object
    [raised] = [r for r in records if r["logger"] == "peerwire.runner"]
    assert raised["level"] == "ERROR" and raised["task_id"] == task["id"]
    assert (raised["context_id"], raised["skill"]) == (task["contextId"], "lookup")
    assert "KeyError: 'missing'" in raised["exception"] and "in lookup" in raised["exception"]
    access = [r for r in records if r["logger"] == "peerwire.access"]
    sent = [r for r in access if r["operation"] == "SendMessage"]
    assert len(sent) == 1 and sent[0]["task_id"] == task["id"] and sent[0]["status"] == 200
    assert {r["path"] for r in access} >= {"/", "/healthz", "/readyz"}
    assert not [line for line in lines if PASSWORD in line]
    if http == "uvicorn":  # uvicorn's own records are JSON too
        assert any(r["logger"].startswith("uvicorn") for r in records)
