"""HTTP/1.1 for an ASGI application: one asyncio protocol per connection, httptools parsing.

peerwire's own thin HTTP server (``server.py`` listens and shuts down; this module is a
connection). Measured on the bench (docs/PERFORMANCE.md), uvicorn's protocol cost about a
third of a GetTask; this one does only what serving an ASGI ``http`` app takes:

* keep-alive (HTTP/1.1 by default, HTTP/1.0 on request) and pipelining: requests on one
  connection are answered one after the other, in order;
* request bodies of any framing (httptools decodes chunked), handed over whole when they
  arrived with the head (the usual case: one ``receive()``, no wait), else streamed with
  flow control (reading pauses while more than ``HIGH_WATER`` bytes wait unread);
  ``Expect: 100-continue`` answered when the app first asks for a body not yet sent;
* responses with the app's ``Content-Length``, else one computed for a single-part body,
  else chunked (close-delimited for HTTP/1.0); nothing after the head for ``HEAD``; writes
  wait while the transport is paused (a slow reader holds back a stream, not memory);
* ``http.disconnect`` when the client goes away, so an abandoned stream stops following its
  task;
* limits: heads of at most ``MAX_HEAD_BYTES`` and ``MAX_HEADERS`` lines (else 431), an idle
  connection (between requests, or a head that does not complete) closed after
  ``idle_timeout`` seconds, malformed requests answered 400 and the connection closed;
* TLS: the ASGI TLS extension (``scope["extensions"]["tls"]``) on every request of a TLS
  connection, so mutual TLS maps the client certificate to a principal.
"""

from __future__ import annotations

import asyncio
import collections
import http
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from email.utils import formatdate
from typing import Any, cast
from urllib.parse import unquote

import httptools

from ._tls_scope import tls_extension

__all__ = [
    "DISCONNECT_EXTENSION",
    "HIGH_WATER",
    "MAX_HEADERS",
    "MAX_HEAD_BYTES",
    "ConnectionSet",
    "H1Connection",
]

log = logging.getLogger("peerwire.server")

ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]

HIGH_WATER = 64 * 1024
MAX_HEAD_BYTES = 64 * 1024
MAX_HEADERS = 128
# Requests parsed ahead of the one being answered before reading pauses.
_MAX_PIPELINED = 8

_ASGI = {"version": "3.0", "spec_version": "2.3"}
# A server extension (ASGI allows those in ``scope["extensions"]``): ``watch(callback)`` calls
# ``callback()`` once the client has gone and returns what stops the watch, so a stream needs
# no task of its own waiting on ``receive()`` for ``http.disconnect``.
DISCONNECT_EXTENSION = "peerwire.disconnect"
_STATUS_LINES = {
    status.value: b"HTTP/1.1 %d %s\r\n" % (status.value, status.phrase.encode("latin-1"))
    for status in http.HTTPStatus
}
_CHUNK_END = b"0\r\n\r\n"
_METHODS = {m.encode(): m for m in ("GET", "POST", "HEAD", "PUT", "DELETE", "PATCH", "OPTIONS")}


class _Clock:
    """The ``date`` header line, formatted once per second (RFC 9110 §6.6.1 wants it)."""

    __slots__ = ("_line", "_second")

    def __init__(self) -> None:
        self._second = -1
        self._line = b""

    def date_line(self) -> bytes:
        second = int(time.time())
        if second != self._second:
            self._second = second
            self._line = b"date: " + formatdate(second, usegmt=True).encode("ascii") + b"\r\n"
        return self._line


_clock = _Clock()


class ConnectionSet:
    """What the connections of one server share: the app, settings, and each other."""

    def __init__(self, app: ASGIApp, *, idle_timeout: float, scheme: str) -> None:
        self.app = app
        self.idle_timeout = idle_timeout
        self.scheme = scheme
        self.connections: set[H1Connection] = set()
        self.shutting_down = False
        self._emptied: asyncio.Event | None = None

    def closed(self, connection: H1Connection) -> None:
        self.connections.discard(connection)
        if not self.connections and self._emptied is not None:
            self._emptied.set()

    def close_idle(self) -> None:
        """Stop taking requests: idle connections close now, busy ones after their answer."""
        self.shutting_down = True
        for connection in list(self.connections):
            connection.shutdown()

    async def wait_empty(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for every connection to close; whether they did."""
        if not self.connections:
            return True
        self._emptied = asyncio.Event()
        try:
            await asyncio.wait_for(self._emptied.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def abort_all(self) -> None:
        for connection in list(self.connections):
            connection.abort()


class _Request:
    """One request on a connection: its scope, body, and how far its answer got."""

    __slots__ = (
        "body",
        "body_done",
        "buffered",
        "chunked",
        "complete",
        "connection",
        "continue_wanted",
        "disconnected",
        "head_only",
        "keep_alive",
        "response_done",
        "response_head",
        "response_started",
        "scope",
        "silent",
        "waiter",
    )

    def __init__(
        self,
        connection: H1Connection,
        scope: dict[str, Any],
        *,
        keep_alive: bool,
        continue_wanted: bool,
    ) -> None:
        self.connection = connection
        self.scope = scope
        self.keep_alive = keep_alive
        self.continue_wanted = continue_wanted
        self.head_only = scope["method"] == "HEAD"
        self.body: list[bytes] = []
        self.buffered = 0
        self.complete = False  # the whole body has been parsed
        self.body_done = False  # ... and handed to the app
        self.disconnected = False
        self.response_started = False
        self.response_head: tuple[int, Iterable[tuple[bytes, bytes]]] | None = None
        self.response_done = False
        self.chunked = False
        self.silent = False  # a response without a body (HEAD, 204, 304): parts are dropped
        self.waiter: asyncio.Future[None] | None = None

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)

    # -- the ASGI callables -------------------------------------------------------------------

    async def receive(self) -> dict[str, Any]:
        while True:
            if self.disconnected or self.response_done:
                return {"type": "http.disconnect"}
            if self.body or (self.complete and not self.body_done):
                body = self.body[0] if len(self.body) == 1 else b"".join(self.body)
                self.body.clear()
                self.buffered = 0
                self.body_done = self.complete
                self.connection.body_consumed(self)
                return {"type": "http.request", "body": body, "more_body": not self.complete}
            if not self.complete and self.continue_wanted:
                self.continue_wanted = False
                self.connection.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.waiter = self.connection.loop.create_future()
            await self.waiter

    async def send(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            if self.response_started:
                raise RuntimeError("ASGI: http.response.start sent twice")
            self.response_started = True
            # Held back: the head goes out with the first body part, in one write.
            self.response_head = (message["status"], message.get("headers") or ())
            return
        if kind != "http.response.body":
            raise RuntimeError(f"ASGI: unexpected message {kind!r} on an HTTP connection")
        if not self.response_started or self.response_done:
            raise RuntimeError("ASGI: http.response.body outside a response")
        body = message.get("body", b"")
        more = message.get("more_body", False)
        connection = self.connection
        if self.disconnected:
            # The client is gone (a stream hears of it from the disconnect watch): drop writes.
            if not more:
                self.response_done = True
            return
        if self.response_head is not None:
            payload = self._head(body, more)
        elif self.silent:
            payload = b""
        elif self.chunked:
            payload = b"%x\r\n%b\r\n" % (len(body), body) if body else b""
        else:
            payload = body
        if not more:
            self.response_done = True
            if self.chunked:
                payload += _CHUNK_END
        if payload:
            connection.write(payload)
        if not more:
            self.wake()  # a receive() waiting for more now learns the exchange is over
        if connection.write_paused:
            await connection.drained()

    def _head(self, body: bytes, more: bool) -> bytes:
        assert self.response_head is not None
        status, headers = self.response_head
        self.response_head = None
        parts = [_STATUS_LINES.get(status) or b"HTTP/1.1 %d \r\n" % status, _clock.date_line()]
        framed = False
        for name, value in headers:
            lowered = name.lower()
            if lowered == b"content-length":
                framed = True
            elif lowered == b"connection" and value.lower() == b"close":
                self.keep_alive = False
            elif lowered == b"transfer-encoding":
                continue  # the framing is this server's to choose
            parts += (name, b": ", value, b"\r\n")
        no_body = self.head_only or status in (204, 304) or status < 200
        if not framed and not no_body:
            if not more:
                parts.append(b"content-length: %d\r\n" % len(body))
            elif self.scope["http_version"] == "1.1":
                self.chunked = True
                parts.append(b"transfer-encoding: chunked\r\n")
            else:
                self.keep_alive = False  # HTTP/1.0: the body ends when the connection does
        if self.connection.closing_after_answer or not self.complete:
            # An answer before the whole body arrived: the connection cannot be reused.
            self.keep_alive = False
        if not self.keep_alive:
            parts.append(b"connection: close\r\n")
        parts.append(b"\r\n")
        if no_body:
            self.silent = True
            return b"".join(parts)
        if self.chunked:
            if body:
                parts.append(b"%x\r\n%b\r\n" % (len(body), body))
        else:
            parts.append(body)
        return b"".join(parts)


class H1Connection(asyncio.Protocol):
    """One HTTP/1.1 connection serving ``shared.app``."""

    def __init__(self, shared: ConnectionSet, loop: asyncio.AbstractEventLoop) -> None:
        self.shared = shared
        self.loop = loop
        self._parser = httptools.HttpRequestParser(self)
        self._transport: asyncio.Transport | None = None
        self._server_address: tuple[str, int] | None = None
        self._client_address: tuple[str, int] | None = None
        self._extensions: dict[str, Any] = {}
        self._tls = False
        # What ``watch_disconnect`` registered: called once the connection is lost.
        self._on_lost: list[Callable[[], None]] = []
        # The request being parsed, the one being answered, and complete ones waiting.
        self._parsing: _Request | None = None
        self._active: _Request | None = None
        self._pipeline: collections.deque[_Request] = collections.deque()
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._head_bytes = 0
        self._head_too_large = False
        self._continue_wanted = False
        self._read_paused = False
        self.write_paused = False
        self._drain_waiter: asyncio.Future[None] | None = None
        self._idle_timer: asyncio.TimerHandle | None = None
        self._idle_since = 0.0
        self._task: asyncio.Task[None] | None = None
        self.closing_after_answer = False
        self._lost = False

    # -- asyncio.Protocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but have its methods.
        transport = cast(asyncio.Transport, transport)
        self._transport = transport
        self._server_address = _address(transport.get_extra_info("sockname"))
        self._client_address = _address(transport.get_extra_info("peername"))
        tls = tls_extension(transport)
        # One dict per connection, shared by its requests' scopes.
        self._extensions = {DISCONNECT_EXTENSION: self.watch_disconnect}
        if tls is not None:
            self._extensions["tls"] = tls
            self._tls = True
        self.shared.connections.add(self)
        if self.shared.shutting_down:
            transport.close()
            return
        self._arm_idle_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._cancel_idle_timer()
        for request in (self._active, self._parsing, *self._pipeline):
            if request is not None:
                request.disconnected = True
                request.wake()
        self._pipeline.clear()
        if self._drain_waiter is not None and not self._drain_waiter.done():
            self._drain_waiter.set_result(None)
        callbacks, self._on_lost = self._on_lost, []
        for callback in callbacks:
            callback()
        self.shared.closed(self)

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            # No protocol upgrades here: the request is answered as plain HTTP, then the
            # connection closes (what follows the head is in the other protocol).
            self.closing_after_answer = True
            self._pause_reading()
            if self._parsing is not None:
                self.on_message_complete()
        except httptools.HttpParserError as exc:
            # httptools wraps what a callback raises in its own error: the flag tells them apart.
            if self._head_too_large:
                self._reject(431, "Request Header Fields Too Large")
            else:
                self._reject(400, f"Bad Request: {exc}")
            return
        parsing = self._parsing
        if parsing is not None and self._active is None and not self.closing_after_answer:
            # The head is here, the body still coming: let the app start and stream it.
            self._start(parsing)

    def eof_received(self) -> bool | None:
        # A client that half-closes after its request still gets the answer; closing for
        # writing too happens once nothing is being answered. (TLS cannot half-close.)
        if (self._active is None and not self._pipeline) or self._tls:
            return None
        self.closing_after_answer = True
        return True

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        if self._drain_waiter is not None and not self._drain_waiter.done():
            self._drain_waiter.set_result(None)

    # -- httptools callbacks ------------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._url = b""
        self._headers = []
        self._head_bytes = 0
        self._continue_wanted = False

    def on_url(self, url: bytes) -> None:
        self._url += url
        self._head_bytes += len(url)
        if self._head_bytes > MAX_HEAD_BYTES:
            self._head_too_large = True
            raise _HeadTooLarge

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_bytes += len(name) + len(value) + 4
        if self._head_bytes > MAX_HEAD_BYTES or len(self._headers) >= MAX_HEADERS:
            self._head_too_large = True
            raise _HeadTooLarge
        name = name.lower()
        if name == b"expect" and value.lower() == b"100-continue":
            self._continue_wanted = True
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        parser = self._parser
        raw_method = parser.get_method()
        method = _METHODS.get(raw_method) or raw_method.decode("ascii")
        path, raw_path, query = _split_target(self._url)
        scope: dict[str, Any] = {
            "type": "http",
            "asgi": _ASGI,
            "http_version": parser.get_http_version(),
            "scheme": self.shared.scheme,
            "method": method,
            "path": path,
            "raw_path": raw_path,
            "query_string": query,
            "root_path": "",
            "headers": self._headers,
            "server": self._server_address,
            "client": self._client_address,
            "extensions": self._extensions,
        }
        keep_alive = parser.should_keep_alive() and not self.shared.shutting_down
        self._parsing = _Request(
            self, scope, keep_alive=keep_alive, continue_wanted=self._continue_wanted
        )

    def on_body(self, body: bytes) -> None:
        request = self._parsing
        assert request is not None
        request.body.append(body)
        request.buffered += len(body)
        if request.buffered > HIGH_WATER:
            self._pause_reading()  # the app reads it first (body_consumed resumes)
        request.wake()

    def on_message_complete(self) -> None:
        request = self._parsing
        assert request is not None
        self._parsing = None
        request.complete = True
        if request is self._active:
            request.wake()
        elif self._active is None and not self._pipeline:
            self._start(request)
        else:
            self._pipeline.append(request)
            if len(self._pipeline) >= _MAX_PIPELINED:
                self._pause_reading()

    # -- answering ----------------------------------------------------------------------------

    def _start(self, request: _Request) -> None:
        self._active = request
        # Held here: the event loop keeps only weak references to tasks.
        self._task = self.loop.create_task(self._run(request))

    async def _run(self, request: _Request) -> None:
        try:
            await self.shared.app(request.scope, request.receive, request.send)
        except Exception:
            if not request.response_started and not request.disconnected:
                log.exception("peerwire: the application failed before answering")
                await _answer_plain(request, 500, b"Internal Server Error")
            elif not request.response_done and not request.disconnected:
                log.exception("peerwire: the application failed while answering")
                request.keep_alive = False
        except BaseException:
            request.keep_alive = False  # cancelled (the loop is closing): no answer, close
            raise
        else:
            if not request.response_started and not request.disconnected:
                log.error("peerwire: the application returned without answering")
                await _answer_plain(request, 500, b"Internal Server Error")
            elif not request.response_done:
                request.keep_alive = False  # an unfinished answer cannot be framed: close
        finally:
            self._finished(request)

    def _finished(self, request: _Request) -> None:
        self._active = None
        request.response_done = True
        request.wake()
        transport = self._transport
        if transport is None or self._lost:
            return
        if not request.keep_alive or not request.complete or self.closing_after_answer:
            # A body the app did not read to its end leaves the connection mid-message.
            transport.close()
            return
        if self._pipeline:
            self._start(self._pipeline.popleft())
        elif self._parsing is not None:
            self._start(self._parsing)
        else:
            self._arm_idle_timer()
        self._resume_reading()

    def body_consumed(self, request: _Request) -> None:
        if request is self._active and not self._pipeline:
            self._resume_reading()

    def watch_disconnect(self, callback: Callable[[], None]) -> Callable[[], None]:
        """The ``peerwire.disconnect`` extension: ``callback()`` once the client is gone
        (no task per stream waiting on ``receive()``); returns what cancels the watch."""
        if self._lost:
            self.loop.call_soon(callback)
            return _nothing
        self._on_lost.append(callback)

        def unwatch() -> None:
            if callback in self._on_lost:
                self._on_lost.remove(callback)

        return unwatch

    def write(self, data: bytes) -> None:
        if self._transport is not None and not self._lost:
            self._transport.write(data)

    async def drained(self) -> None:
        if not self.write_paused or self._lost:
            return
        self._drain_waiter = self.loop.create_future()
        await self._drain_waiter

    # -- closing ------------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Close when idle; a request being answered finishes first."""
        self.closing_after_answer = True
        if self._active is None and self._transport is not None:
            self._transport.close()

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    def _reject(self, status: int, text: str) -> None:
        """Answer a request that cannot be parsed, then close: the stream is out of step."""
        self._parsing = None
        self._pipeline.clear()
        if self._transport is None or self._lost:
            return
        if self._active is not None:
            # The request before it is still being answered; it gets its answer, then close.
            self.closing_after_answer = True
            self._pause_reading()
            return
        body = text.encode("latin-1", "replace")
        self._transport.write(
            b"%b%bcontent-type: text/plain; charset=utf-8\r\ncontent-length: %d\r\n"
            b"connection: close\r\n\r\n%b"
            % (_STATUS_LINES[status], _clock.date_line(), len(body), body)
        )
        self._transport.close()

    def _arm_idle_timer(self) -> None:
        # One timer re-armed when it fires early, not one new timer per request: keep-alive
        # connections go idle after every answer.
        self._idle_since = self.loop.time()
        if self._idle_timer is None:
            self._idle_timer = self.loop.call_at(
                self._idle_since + self.shared.idle_timeout, self._idle
            )

    def _cancel_idle_timer(self) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None

    def _idle(self) -> None:
        self._idle_timer = None
        if self._active is not None or self._parsing is not None or self._transport is None:
            return  # busy: armed again when the answer is done
        deadline = self._idle_since + self.shared.idle_timeout
        if self.loop.time() < deadline:
            self._idle_timer = self.loop.call_at(deadline, self._idle)
        else:
            self._transport.close()

    def _pause_reading(self) -> None:
        if not self._read_paused and self._transport is not None and not self._lost:
            self._read_paused = True
            self._transport.pause_reading()

    def _resume_reading(self) -> None:
        if self._read_paused and self._transport is not None and not self._lost:
            if self.closing_after_answer:
                return
            self._read_paused = False
            self._transport.resume_reading()


class _HeadTooLarge(Exception):
    pass


def _nothing() -> None:
    pass


async def _answer_plain(request: _Request, status: int, text: bytes) -> None:
    request.keep_alive = False
    await request.send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8")],
        }
    )
    await request.send({"type": "http.response.body", "body": text})


def _split_target(target: bytes) -> tuple[str, bytes, bytes]:
    """``(path, raw_path, query_string)`` of a request target; the path percent-decoded."""
    if not target.startswith(b"/"):
        if target == b"*":
            return "*", b"*", b""
        # The absolute form (RFC 9112 §3.2.2), which a server must accept.
        url = httptools.parse_url(target)
        target = (url.path or b"/") + (b"?" + url.query if url.query else b"")
    raw_path, _, query = target.partition(b"?")
    path = raw_path.decode("latin-1")
    if "%" in path:
        path = unquote(path, encoding="utf-8", errors="replace")
    return path, raw_path, query


def _address(address: Any) -> tuple[str, int] | None:
    if isinstance(address, tuple) and len(address) >= 2:
        return str(address[0]), int(address[1])
    return None
