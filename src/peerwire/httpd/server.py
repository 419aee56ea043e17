"""peerwire's HTTP server: it listens, runs the app's lifespan, and shuts down in the order an
A2A server needs.

Connections are ``_connection.H1Connection`` (HTTP/1.1 on httptools). The shutdown order: stop
accepting; drain the runner (working tasks get the shutdown grace to finish, then fail, and
the callers blocked on them or following their streams get that outcome), while idle
connections close at once and busy ones close after their answer; give those answers
``connection_grace`` seconds at most; drop what is left; exit the lifespan (the store closes
last).

``HTTPServer(app).serve(...)`` runs in the caller's event loop until ``request_exit()``;
``run(...)`` is the blocking form for a process of its own (uvloop when installed, SIGINT and
SIGTERM stop it, a second one stops it without the grace).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import ssl
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ._connection import ConnectionSet, H1Connection

__all__ = ["CannotListenError", "HTTPServer", "ServedApp"]

log = logging.getLogger("peerwire.server")

# Sockets waiting to be accepted; a burst of clients connecting at once should not be refused.
_BACKLOG = 2048


class CannotListenError(OSError):
    """The address cannot be bound (in use, not this host's, not allowed)."""


class _Runner(Protocol):
    shutdown_grace: float

    def drain(self) -> Awaitable[None]: ...


class _Dispatcher(Protocol):
    @property
    def runner(self) -> _Runner: ...


class ServedApp(Protocol):
    """An ASGI app with what serving it takes: ``A2AApp``, or an app that wraps one."""

    @property
    def dispatcher(self) -> _Dispatcher: ...

    def lifespan(self) -> contextlib.AbstractAsyncContextManager[None]: ...

    def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Awaitable[None]: ...


class HTTPServer:
    """Serves one app over HTTP/1.1 (HTTPS with ``ssl``) on a socket or host and port."""

    def __init__(
        self,
        app: ServedApp,
        *,
        ssl_context: ssl.SSLContext | None = None,
        idle_timeout: float = 5.0,
        connection_grace: float | None = None,
    ) -> None:
        self.app = app
        self._ssl = ssl_context
        self._runner = app.dispatcher.runner
        # Answers still being written when the runner has drained get this long.
        self.connection_grace = (
            self._runner.shutdown_grace + 5.0 if connection_grace is None else connection_grace
        )
        self._connections = ConnectionSet(
            app, idle_timeout=idle_timeout, scheme="http" if ssl_context is None else "https"
        )
        self.started = asyncio.Event()
        self._exit = asyncio.Event()
        self._force = False
        self.sockets: tuple[socket.socket, ...] = ()

    def request_exit(self, *, force: bool = False) -> None:
        """Begin the shutdown (``force``: without waiting for tasks and answers)."""
        self._force = self._force or force
        self._exit.set()
        if force:
            self._connections.abort_all()

    async def serve(
        self, *, host: str = "127.0.0.1", port: int = 8000, sock: socket.socket | None = None
    ) -> None:
        """Enter the app's lifespan, listen, and serve until ``request_exit()``."""
        loop = asyncio.get_running_loop()
        connections = self._connections
        async with self.app.lifespan():

            def connection() -> H1Connection:
                return H1Connection(connections, loop)

            if sock is not None:
                server = await loop.create_server(
                    connection, sock=sock, ssl=self._ssl, backlog=_BACKLOG
                )
            else:
                try:
                    server = await loop.create_server(
                        connection, host, port, ssl=self._ssl, backlog=_BACKLOG, reuse_address=True
                    )
                except OSError as exc:
                    raise CannotListenError(f"cannot listen on {host}:{port}: {exc}") from exc
            self.sockets = tuple(server.sockets)
            try:
                self.started.set()
                await self._exit.wait()
            finally:
                await self._shut_down(server)

    async def _shut_down(self, server: asyncio.Server) -> None:
        server.close()
        connections = self._connections
        try:
            # Idle keep-alive connections close now; busy ones answer (saying "close") first.
            connections.close_idle()
            if not self._force:
                await self._runner.drain()
            if not self._force and not await connections.wait_empty(self.connection_grace):
                log.warning(
                    "peerwire: %d connections still open after %.0f s; closing them",
                    len(connections.connections),
                    self.connection_grace,
                )
        finally:
            connections.abort_all()
            # Each aborted transport reports its loss on the next loop iterations.
            await connections.wait_empty(1.0)

    def run(self, *, host: str = "127.0.0.1", port: int = 8000) -> None:
        """Serve in this process until SIGINT or SIGTERM (a second one skips the grace)."""
        _event_loop_runner()(self._run_until_signalled(host, port))

    async def _run_until_signalled(self, host: str, port: int) -> None:
        loop = asyncio.get_running_loop()
        signals = (signal.SIGINT, signal.SIGTERM)

        def on_signal() -> None:
            self.request_exit(force=self._exit.is_set())

        for number in signals:
            loop.add_signal_handler(number, on_signal)
        try:
            await self.serve(host=host, port=port)
        finally:
            for number in signals:
                loop.remove_signal_handler(number)


def _event_loop_runner() -> Callable[[Any], None]:
    """``uvloop.run`` when uvloop is installed (about a fifth more requests per second here),
    else ``asyncio.run``."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run
    return uvloop.run
