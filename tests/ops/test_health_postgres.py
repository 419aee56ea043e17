"""``/readyz`` follows PostgreSQL: the agent reaches the machine's PostgreSQL through a TCP
relay of the test's own, which the test cuts (every connection dropped, nothing listening)
and restores; the machine's server itself is never touched."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket

import asyncpg
import httpx

from peerwire import Agent
from peerwire.server.stores.postgres import PostgresTaskStore
from peerwire.testing import live_server

from ._readiness import wait_for_status

PG_HOST, PG_PORT = "127.0.0.1", 5432
PG_DSN = f"postgresql://postgres@{PG_HOST}:{PG_PORT}/test"

WAIT_S = 20.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Relay:
    """Forwards a loopback port to PostgreSQL; ``cut()`` drops it all, ``start()`` again."""

    def __init__(self) -> None:
        self.port = _free_port()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._pumps: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)

    async def cut(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        for pump in list(self._pumps):
            pump.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)
        if server is not None:
            await server.wait_closed()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(PG_HOST, PG_PORT)
        except OSError:
            writer.transport.abort()
            return
        self._writers.update((writer, upstream_writer))
        for source, target in ((reader, upstream_writer), (upstream_reader, writer)):
            pump = asyncio.ensure_future(_pump(source, target))
            self._pumps.add(pump)
            pump.add_done_callback(self._pumps.discard)


async def _pump(source: asyncio.StreamReader, target: asyncio.StreamWriter) -> None:
    try:
        while chunk := await source.read(65536):
            target.write(chunk)
            await target.drain()
    except (OSError, asyncio.IncompleteReadError):
        pass
    finally:
        target.transport.abort()


def _agent() -> Agent:
    agent = Agent("Durable", description="Keeps its tasks in PostgreSQL")

    @agent.skill("echo", description="Echoes")
    async def echo(text: str) -> str:
        return text

    return agent


async def test_readiness_turns_503_while_postgresql_is_unreachable_and_200_when_back() -> None:
    schema = f"pwtest_ready_{secrets.token_hex(6)}"
    relay = Relay()
    await relay.start()
    store = PostgresTaskStore(
        f"postgresql://postgres@127.0.0.1:{relay.port}/test",
        schema=schema,
        acquire_timeout=2.0,
        command_timeout=2.0,
    )
    try:
        async with (
            live_server(_agent(), store=store) as url,
            httpx.AsyncClient(base_url=url) as web,
        ):
            assert (await wait_for_status(web, 200, within=WAIT_S))["checks"] == {"store": "ok"}
            await relay.cut()
            down = await wait_for_status(web, 503, within=WAIT_S)
            assert down == {"status": "unavailable", "checks": {"store": "down"}}
            assert (await web.get("/healthz")).status_code == 200
            await relay.start()
            await wait_for_status(web, 200, within=WAIT_S)
    finally:
        await relay.cut()
        with contextlib.suppress(OSError, asyncpg.PostgresError):
            connection = await asyncpg.connect(PG_DSN)
            try:
                await connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            finally:
                await connection.close()
