"""A hostile TCP proxy on loopback: it forwards everything, except that it swallows the
response to the first request whose bytes contain ``marker`` and then cuts both connections,
as a network failure after the request reached the server would. The server did the work;
the client never hears of it."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator

import anyio

WAIT_S = 10.0


class DroppingProxy:
    def __init__(self, marker: bytes) -> None:
        self.marker = marker
        self.upstream: tuple[str, int] | None = None
        self.dropped = 0
        """Responses swallowed so far (at most one)."""
        self.url = ""
        self._connections: set[asyncio.Task[None]] = set()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert self.upstream is not None, "the proxy's upstream is set before use"
        up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        doomed = asyncio.Event()  # set once this connection carries the request to drop

        async def forward() -> None:
            while data := await reader.read(65536):
                if not self.dropped and self.marker in data:
                    self.dropped += 1
                    doomed.set()
                up_writer.write(data)
                await up_writer.drain()

        async def backward() -> None:
            while data := await up_reader.read(65536):
                if doomed.is_set():
                    return  # the server answered: the answer goes nowhere, the line is cut
                writer.write(data)
                await writer.drain()

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(forward)
                await backward()
                group.cancel_scope.cancel()
        except OSError:
            pass
        finally:
            for end in (writer, up_writer):
                transport = end.transport
                if isinstance(transport, asyncio.Transport):
                    transport.abort()  # a reset, not an orderly close

    async def _serve(self, client: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await self._handle(client, writer)
        finally:
            self._connections.discard(task)


@contextlib.asynccontextmanager
async def dropping_proxy(marker: bytes) -> AsyncIterator[DroppingProxy]:
    """The proxy listening on 127.0.0.1 (``url`` set); set ``upstream`` before use."""
    proxy = DroppingProxy(marker)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    proxy.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = await asyncio.start_server(proxy._serve, sock=sock)
    try:
        yield proxy
    finally:
        server.close()
        for task in list(proxy._connections):
            task.cancel()
        with anyio.move_on_after(WAIT_S):
            await server.wait_closed()
