"""peerwire's HTTP server: it listens, runs the app's lifespan, and shuts down in the order an
A2A server needs.

Connections are ``_connection.H1Connection`` (HTTP/1.1 on httptools). The shutdown order: stop
accepting; drain the runner (open streams end at once with a final error event; working
tasks get the shutdown grace to finish, then fail, and the callers blocked on them get that
outcome), while idle connections close at once and busy ones close after their answer; give
those answers ``connection_grace`` seconds at most; drop what is left; exit the lifespan (the
store closes last).

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
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import PeerwireError
from ._connection import (
    BODY_TIMEOUT,
    HEAD_TIMEOUT,
    IDLE_TIMEOUT,
    MAX_BODY_BYTES,
    MAX_HEAD_BYTES,
    MAX_HEADERS,
    ConnectionSet,
    H1Connection,
)

__all__ = ["CannotListenError", "HTTPLimits", "HTTPServer", "ServedApp"]

log = logging.getLogger("peerwire.server")

# Sockets waiting to be accepted; a burst of clients connecting at once should not be refused.
_BACKLOG = 2048


class CannotListenError(PeerwireError, OSError):
    """The address cannot be bound (in use, not this host's, not allowed)."""


@dataclass(frozen=True, slots=True)
class HTTPLimits:
    """What peerwire's HTTP server accepts from a client (docs/LIMITS.md).

    Each is checked as bytes arrive; a request past one is refused with its status and a
    one-line text, then the connection closes: ``max_head_bytes`` for the request line and
    head (414, 431), ``max_headers`` fields (431), ``max_body_bytes`` of body (413; ``None``:
    64 MiB, or the app's own ``max_body_bytes`` when larger, so that the app's limit is the
    one that applies), a head complete within ``head_timeout`` seconds and a body never
    silent for ``body_timeout`` seconds (408). ``idle_timeout``: how long a keep-alive
    connection may wait for its next request.
    """

    max_head_bytes: int = MAX_HEAD_BYTES
    max_headers: int = MAX_HEADERS
    max_body_bytes: int | None = None
    head_timeout: float = HEAD_TIMEOUT
    body_timeout: float = BODY_TIMEOUT
    idle_timeout: float = IDLE_TIMEOUT

    def __post_init__(self) -> None:
        for name in ("max_head_bytes", "max_headers", "head_timeout", "body_timeout"):
            if getattr(self, name) <= 0:
                raise ValueError(f"HTTPLimits.{name} must be positive")
        if self.idle_timeout < 0:
            raise ValueError("HTTPLimits.idle_timeout must not be negative")
        if self.max_body_bytes is not None and self.max_body_bytes <= 0:
            raise ValueError("HTTPLimits.max_body_bytes must be positive (or None)")


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
    """Serves one app over HTTP/1.1 (HTTPS with ``ssl``) on a socket or host and port.

    ``limits`` bound what a client may send (``HTTPLimits``). ``connection_grace``: how long
    answers still being written when the runner has drained may take (default: the
    runner's shutdown grace + 5 s).
    """

    def __init__(
        self,
        app: ServedApp,
        *,
        ssl_context: ssl.SSLContext | None = None,
        limits: HTTPLimits | None = None,
        connection_grace: float | None = None,
    ) -> None:
        self.app = app
        self._ssl = ssl_context
        self._runner = app.dispatcher.runner
        self.limits = limits = HTTPLimits() if limits is None else limits
        self.connection_grace = (
            self._runner.shutdown_grace + 5.0 if connection_grace is None else connection_grace
        )
        max_body_bytes = limits.max_body_bytes
        if max_body_bytes is None:
            max_body_bytes = max(MAX_BODY_BYTES, getattr(app, "max_body_bytes", 0))
        self._connections = ConnectionSet(
            app,
            scheme="http" if ssl_context is None else "https",
            idle_timeout=limits.idle_timeout,
            head_timeout=limits.head_timeout,
            body_timeout=limits.body_timeout,
            max_head_bytes=limits.max_head_bytes,
            max_headers=limits.max_headers,
            max_body_bytes=max_body_bytes,
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

    def run(
        self, *, host: str = "127.0.0.1", port: int = 8000, sock: socket.socket | None = None
    ) -> None:
        """Serve in this process until SIGINT or SIGTERM (a second one skips the grace), on
        ``sock`` when given (already bound), else on ``host`` and ``port``."""
        _event_loop_runner()(self._run_until_signalled(host, port, sock))

    async def _run_until_signalled(
        self, host: str, port: int, sock: socket.socket | None = None
    ) -> None:
        loop = asyncio.get_running_loop()
        signals = (signal.SIGINT, signal.SIGTERM)

        def on_signal() -> None:
            self.request_exit(force=self._exit.is_set())

        for number in signals:
            loop.add_signal_handler(number, on_signal)
        try:
            await self.serve(host=host, port=port, sock=sock)
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
