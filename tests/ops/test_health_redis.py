"""``/readyz`` follows Redis: a ``redis-server`` of the test's own (never the machine's) is
stopped and started again under an agent whose bus and work queue use it."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from redis.asyncio import Redis
from redis.exceptions import RedisError

from peerwire import Agent, Client
from peerwire.cluster import RedisWorkQueue
from peerwire.testing import live_server

from ._readiness import wait_for_status

WAIT_S = 20.0

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class OwnRedis:
    """A ``redis-server`` on a port of its own, keeping nothing on disk."""

    def __init__(self, folder: Path) -> None:
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}"
        self.folder = folder
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            "redis-server",
            *("--port", str(self.port), "--bind", "127.0.0.1", "--save", ""),
            *("--appendonly", "no", "--dir", str(self.folder)),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        client = Redis.from_url(self.url, socket_timeout=1)
        try:
            async with asyncio.timeout(WAIT_S):
                while True:
                    with contextlib.suppress(OSError, RedisError):
                        if await client.ping():
                            return
                    await asyncio.sleep(0.05)
        finally:
            await client.aclose()

    async def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.returncode is None:
            process.send_signal(signal.SIGKILL)  # by its pid: only the server this test started
            await process.wait()


@contextlib.asynccontextmanager
async def own_redis(folder: Path) -> AsyncIterator[OwnRedis]:
    redis = OwnRedis(folder)
    await redis.start()
    try:
        yield redis
    finally:
        await redis.stop()


def _agent() -> Agent:
    agent = Agent("Shared", description="Runs on a Redis bus")

    @agent.skill("echo", description="Echoes")
    async def echo(text: str) -> str:
        return text

    return agent


async def test_readiness_turns_503_while_redis_is_stopped_and_200_when_it_is_back(
    tmp_path: Path,
) -> None:
    async with own_redis(tmp_path) as redis:
        bus = f"{redis.url}?prefix=pwhealth"
        queue = RedisWorkQueue.from_url(bus)
        async with (
            live_server(
                _agent(), store=f"sqlite:{tmp_path / 'tasks.db'}", bus=bus, queue=queue
            ) as url,
            httpx.AsyncClient(base_url=url) as web,
        ):
            ready = await wait_for_status(web, 200, within=WAIT_S)
            assert ready["checks"] == {"store": "ok", "bus": "ok", "queue": "ok"}

            await redis.stop()
            down = await wait_for_status(web, 503, within=WAIT_S)
            assert down == {
                "status": "unavailable",
                "checks": {"store": "ok", "bus": "down", "queue": "down"},
            }
            assert (await web.get("/healthz")).status_code == 200

            await redis.start()  # the same port, empty
            await wait_for_status(web, 200, within=WAIT_S)
            async with Client.connect(url) as client:
                task = await client.send("back")
            assert task.artifacts[0].parts[0].text == "back"
