"""A small HTTP/1.1 client: keep-alive connections per origin on asyncio, parsed by httptools.

Why not httpx here: on a blocking SendMessage, httpx/httpcore/h11/anyio cost about two thirds
of the client's CPU (httpcore alone looks at every pooled connection on every request). This
pool does only what the A2A HTTP bindings need, in few steps per request:

* one pool of connections per origin (scheme, host, port), at most
  ``ClientLimits.max_connections`` each; callers beyond that wait in line (first come, first
  served). A connection goes back to the pool only after its response was read to the end
  and the server did not ask to close it; one kept idle longer than ``keepalive_expiry`` is
  closed instead of reused;
* http and https (``ssl_context``, the system's trust store when none is given);
* bodies framed by Content-Length, chunked, or read until the server closes; a streamed
  response is handed over as its chunks arrive (reading pauses while the consumer lags);
* timeouts: one deadline for a whole unary exchange (waiting for a connection, connecting,
  the response), the same for a stream up to its response head, then an idle limit per chunk;
  connecting alone within ``ClientLimits.connect_timeout``;
* limits on what a server may send (``ClientLimits``: head, headers, status line, a body read
  whole), checked as bytes arrive; past one, the call fails and the connection is cut;
* a connection out of step is cut, never reused: bytes after a response or while idle, a
  protocol switch (``101``), a parser error, an answer that came before the request was all
  sent (the rest of the request would follow it as if it were the next);
* a kept-alive connection the server closed while it sat idle is noticed before use; a request
  is sent again, once, on a new connection only when it went out on a reused connection that
  turned out closed before the request had fully left and before any byte of an answer came
  back. Nothing else is ever retried.

Not supported: proxies (the caller routes proxied URLs elsewhere), HEAD requests, request
bodies other than bytes, content codings (requests say ``Accept-Encoding: identity``), HTTP/2.
Failures raise ``H1Error`` subclasses (``LimitExceeded`` for a limit passed); the transports
map them to peerwire's error tree.

This module is the pool; ``_h1_connection`` is one connection and the exchanges on it,
``_h1_request`` turns a URL and headers into the bytes of a request.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import AsyncIterator, Mapping
from typing import Any

from ._h1_connection import (
    ConnectFailed,
    Connection,
    ConnectTimeout,
    Disconnected,
    Exchange,
    H1Error,
    H1Timeout,
    InvalidURL,
    LimitExceeded,
    MalformedResponse,
    PoolTimeout,
    ReadTimeout,
    Response,
    ResponseHeaders,
)
from ._h1_request import Target, request_bytes
from ._limits import DEFAULT_LIMITS, ClientLimits

__all__ = [
    "ConnectFailed",
    "ConnectTimeout",
    "Disconnected",
    "H1Error",
    "H1Pool",
    "H1Timeout",
    "InvalidURL",
    "LimitExceeded",
    "MalformedResponse",
    "PoolTimeout",
    "ReadTimeout",
    "Response",
    "ResponseHeaders",
    "StreamedResponse",
    "default_ssl_context",
]


# -- tuning -----------------------------------------------------------------------------------

DEFAULT_KEEPALIVE_EXPIRY = 5.0  # as httpx; servers commonly close idle connections after 5 s+
# A connection idle for longer than this is checked for a close (or stray bytes) the event
# loop has not processed yet before it is reused: one non-blocking poll() call. Younger
# ones are not, since a server closing a connection it used a moment ago would have said
# "Connection: close" in its response.
_PROBE_IDLE_AFTER = 1.0
_CLOSE_WAIT_S = 1.0  # how long aclose waits for TLS connections to shut down cleanly
_URL_CACHE_SIZE = 256


# -- the pool of one origin -------------------------------------------------------------------


class _Origin:
    """The connections to one (scheme, host, port), and the callers waiting for one."""

    def __init__(
        self, pool: H1Pool, loop: asyncio.AbstractEventLoop, host: str, port: int, tls: bool
    ) -> None:
        self.loop = loop
        self.limits = pool.limits
        self._pool = pool
        self._host = host
        self._port = port
        self._tls = tls
        self._idle: list[Connection] = []  # most recently used last
        self._connections: set[Connection] = set()
        self._opening = 0  # slots taken by connections being made
        self._waiters: deque[asyncio.Future[Connection | None]] = deque()

    async def acquire(self, deadline: float | None) -> tuple[Connection, bool]:
        """A connection for one exchange, and whether it served an earlier one."""
        idle = self._idle
        if idle:
            now = self.loop.time()
            while idle:
                connection = idle.pop()
                if connection.closed:
                    continue
                idle_for = now - connection.idle_since
                if idle_for > self._pool.keepalive_expiry or (
                    idle_for > _PROBE_IDLE_AFTER and connection.peer_gone()
                ):
                    connection.close()
                    continue
                return connection, True
        if self._pool.closed:
            raise RuntimeError("the HTTP client is closed")
        if len(self._connections) + self._opening < self._pool.limits.max_connections:
            self._opening += 1
            return await self._open(deadline), False
        granted = await self._wait_for_turn(deadline)
        if granted is None:  # a slot, not a connection: the one holding it closed
            return await self._open(deadline), False
        return granted, True

    def release(self, connection: Connection, keep_alive: bool) -> None:
        """Give back a connection whose last response was read to its end."""
        connection.finish()
        if not keep_alive or connection.closed or self._pool.closed:
            connection.close()  # connection_lost frees its slot
            return
        waiters = self._waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(connection)
                return
        connection.idle_since = self.loop.time()
        self._idle.append(connection)

    def forget(self, connection: Connection) -> None:
        """``connection`` is gone: drop it, and hand its slot to the first caller waiting."""
        if connection in self._connections:
            self._connections.discard(connection)
            if connection in self._idle:
                self._idle.remove(connection)
            self._slot_freed()

    def close(self) -> list[Connection]:
        """Close every connection (an exchange in progress fails); returns them."""
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_exception(Disconnected("the HTTP client was closed"))
        self._waiters.clear()
        connections = list(self._connections)
        for connection in connections:
            if connection.exchange is not None:
                connection.exchange.fail(Disconnected("the HTTP client was closed"))
            connection.close()
        self._idle.clear()
        return connections

    # -- internals

    def _slot_freed(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self._opening += 1  # taken on the waiter's behalf
                waiter.set_result(None)
                return

    async def _wait_for_turn(self, deadline: float | None) -> Connection | None:
        waiter: asyncio.Future[Connection | None] = self.loop.create_future()
        self._waiters.append(waiter)
        timer = None
        if deadline is not None:
            timer = self.loop.call_at(deadline, _pool_expire, waiter)
        try:
            return await waiter
        except BaseException:
            # Timed out or cancelled; if a connection or slot was handed over meanwhile,
            # it goes to the next in line.
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                granted = waiter.result()
                if granted is None:
                    self._opening -= 1
                    self._slot_freed()
                else:
                    self.release(granted, True)
            raise
        finally:
            if timer is not None:
                timer.cancel()

    async def _open(self, deadline: float | None) -> Connection:
        """A new connection, in a slot already counted in ``_opening``."""
        connection = Connection(self.loop, self.forget, self.limits)
        ssl_context = self._pool.ssl_context() if self._tls else None
        connect_timeout = self.limits.connect_timeout
        bound = ""  # what ends the wait, when it is not the call's own deadline
        if connect_timeout is not None:
            connect_by = self.loop.time() + connect_timeout
            if deadline is None or connect_by < deadline:
                deadline = connect_by
                bound = f" (ClientLimits.connect_timeout: {connect_timeout:g} s)"
        try:
            async with asyncio.timeout_at(deadline):
                await self.loop.create_connection(
                    lambda: connection,
                    self._host,
                    self._port,
                    ssl=ssl_context,
                    server_hostname=self._host if ssl_context is not None else None,
                )
        except TimeoutError:
            self._opening -= 1
            self._slot_freed()
            raise ConnectTimeout(f"connecting to {self._address()} timed out{bound}") from None
        except OSError as exc:
            self._opening -= 1
            self._slot_freed()
            raise ConnectFailed(f"cannot connect to {self._address()}: {exc}") from exc
        except BaseException:
            self._opening -= 1
            self._slot_freed()
            connection.abort()
            raise
        self._opening -= 1
        if connection.closed:  # lost during the handshake's last steps
            self._slot_freed()
            raise ConnectFailed(f"the connection to {self._address()} closed at once")
        if self._pool.closed:  # closed while this connection was being made
            connection.close()
            raise Disconnected("the HTTP client was closed")
        self._connections.add(connection)
        return connection

    def _address(self) -> str:
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"{host}:{self._port}"


def _pool_expire(waiter: asyncio.Future[Any]) -> None:
    if not waiter.done():
        waiter.set_exception(PoolTimeout("no connection of the pool became free in time"))


# -- the pool ---------------------------------------------------------------------------------


class H1Pool:
    """Keep-alive HTTP/1.1 connections per origin. Bound to the event loop of its first use.

    ``ssl_context`` verifies https servers (default: the system's trust store, made on first
    need); ``limits`` bound the connections per origin, connecting, and what a server may
    send; ``keepalive_expiry`` is how long an idle connection may be reused.
    """

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext | None = None,
        limits: ClientLimits = DEFAULT_LIMITS,
        keepalive_expiry: float = DEFAULT_KEEPALIVE_EXPIRY,
    ) -> None:
        self.limits = limits
        self.keepalive_expiry = keepalive_expiry
        self.closed = False
        self._ssl_context = ssl_context
        self._origins: dict[tuple[bool, str, int], _Origin] = {}
        self._targets: dict[str, Target] = {}

    def ssl_context(self) -> ssl.SSLContext:
        if self._ssl_context is None:
            self._ssl_context = default_ssl_context()
        return self._ssl_context

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None = None,
        timeout: float | None,
    ) -> Response:
        """Send a request and read its response to the end, all within ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        origin, connection, exchange = await self._exchange(
            loop, method, url, headers, body, deadline, streaming=False
        )
        origin.release(connection, exchange.keep_alive)
        return Response(exchange.status, ResponseHeaders(exchange.raw_headers), exchange.body())

    async def open_stream(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None = None,
        timeout: float | None,
        idle_timeout: float | None,
    ) -> StreamedResponse:
        """Send a request and return once its response head is in (within ``timeout``); the
        body then comes chunk by chunk, each within ``idle_timeout`` of the previous one."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        origin, connection, exchange = await self._exchange(
            loop, method, url, headers, body, deadline, streaming=True
        )
        return StreamedResponse(loop, origin, connection, exchange, idle_timeout)

    async def aclose(self) -> None:
        """Close every connection; requests in progress fail with ``Disconnected``."""
        self.closed = True
        connections = [c for origin in self._origins.values() for c in origin.close()]
        self._origins.clear()
        pending = [c.lost for c in connections if not c.lost.done()]
        if pending:
            # TLS connections say goodbye to the server first; bounded, then cut.
            await asyncio.wait(pending, timeout=_CLOSE_WAIT_S)
            for connection in connections:
                if not connection.lost.done():
                    connection.abort()

    # -- internals

    async def _exchange(
        self,
        loop: asyncio.AbstractEventLoop,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        deadline: float | None,
        *,
        streaming: bool,
    ) -> tuple[_Origin, Connection, Exchange]:
        """Send the request and wait for its response (the head, for a stream), sending it
        again once on a new connection if a reused one turned out closed (module docstring)."""
        if self.closed:
            raise RuntimeError("the HTTP client is closed")
        target = self._target(url)
        request = request_bytes(method, target, headers, body)
        origin = self._origins.get(target.origin)
        if origin is None:
            origin = self._origins[target.origin] = _Origin(
                self, loop, target.host, target.port, target.tls
            )
        retried = False
        while True:
            connection, reused = await origin.acquire(deadline)
            exchange = connection.start(request, streaming)
            try:
                while exchange.error is None and not (
                    exchange.head_done if streaming else exchange.complete
                ):
                    await exchange.wait(loop, deadline)
            except BaseException:
                connection.abort()  # timed out or cancelled mid-exchange: unusable
                raise
            if exchange.error is None:
                return origin, connection, exchange
            connection.close()
            if reused and not retried and exchange.replayable():
                retried = True
                continue
            raise exchange.error

    def _target(self, url: str) -> Target:
        # A transport calls the same URL every time: each is parsed once.
        target = self._targets.get(url)
        if target is None:
            target = Target(url)
            if len(self._targets) >= _URL_CACHE_SIZE:
                self._targets.clear()
            self._targets[url] = target
        return target


class StreamedResponse:
    """A response whose head is in and whose body is read as it arrives.

    Read it with ``chunks()`` or ``read()``; ``aclose()`` afterwards (also when abandoning it
    early: the connection is then closed, not reused).
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        origin: _Origin,
        connection: Connection,
        exchange: Exchange,
        idle_timeout: float | None,
    ) -> None:
        self.status = exchange.status
        self.headers = ResponseHeaders(exchange.raw_headers)
        self.limits = origin.limits
        self._loop = loop
        self._origin = origin
        self._connection: Connection | None = connection
        self._exchange = exchange
        self._idle_timeout = idle_timeout

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive; ``ReadTimeout`` if none come for the idle time."""
        exchange = self._exchange
        while True:
            if exchange.chunks:
                data = exchange.body()
                exchange.chunks.clear()
                exchange.size = 0
                if self._connection is not None:
                    self._connection.consumed(exchange)
                yield data
                continue
            if exchange.error is not None:
                raise exchange.error
            if exchange.complete:
                self._release()
                return
            if self._connection is None:
                raise RuntimeError("the response was closed")
            idle = self._idle_timeout
            deadline = None if idle is None else self._loop.time() + idle
            try:
                await exchange.wait(self._loop, deadline)
            except ReadTimeout:
                self._abort()
                raise ReadTimeout(f"the stream sent nothing for {idle:g} s") from None

    async def read(self) -> bytes:
        """The rest of the body, within ``ClientLimits.max_body_size``."""
        limit = self.limits.max_body_size
        parts = []
        size = 0
        async for chunk in self.chunks():
            size += len(chunk)
            if size > limit:
                self._abort()
                raise LimitExceeded(
                    f"the response body is larger than ClientLimits.max_body_size ({limit} bytes)"
                )
            parts.append(chunk)
        return b"".join(parts)

    async def aclose(self) -> None:
        if self._exchange.complete and self._exchange.error is None:
            self._release()  # read to the end by the parser: reusable, buffered or not
        else:
            self._abort()

    def _release(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            self._origin.release(connection, self._exchange.keep_alive)

    def _abort(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.abort()


def default_ssl_context() -> ssl.SSLContext:
    """Verifies servers against the system's trust store (``SSL_CERT_FILE``/``SSL_CERT_DIR``
    honoured, as OpenSSL does), HTTP/1.1 offered by ALPN."""
    context = ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])
    return context
