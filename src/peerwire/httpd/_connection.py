"""HTTP/1.1 for an ASGI application: one asyncio protocol per connection, httptools parsing.

peerwire's own thin HTTP server (``server.py`` listens and shuts down; this module is a
connection). Measured on the bench (docs/PERFORMANCE.md), uvicorn's protocol cost about a
third of a GetTask; this one does only what serving an ASGI ``http`` app takes, and holds a
hostile client to h11's framing rules or stricter ones (tests/httpd/test_framing.py runs
each case against both, and names the few leniencies RFC 9112 allows where h11 is stricter):

* keep-alive (HTTP/1.1 by default, HTTP/1.0 on request) and pipelining: requests on one
  connection are answered one after the other, in order; a client that half-closes still
  gets every answer; a malformed request behind valid ones is refused after their answers
  (400, 408, 413, 414, 431, 501 or 505, with a one-line text), the connection then closes,
  and nothing after it is read;
* request bodies of any framing (httptools decodes chunked), handed over whole when they
  arrived with the head (the usual case: one ``receive()``, no wait), else streamed with
  flow control (reading pauses while more than ``HIGH_WATER`` bytes wait unread);
  ``Expect: 100-continue`` answered when the app first asks for a body not yet sent;
* framing rules beyond httptools': exactly one ``Host`` on HTTP/1.1 (at most one on 1.0, no
  list), ``Transfer-Encoding`` only ``chunked`` (501 for other codings, 400 when chunked is
  not last or repeated), HTTP/1.0 with a ``Transfer-Encoding`` closed after its answer
  (RFC 9112 §6.1), versions other than 1.0 and 1.1 refused, trailer fields read and dropped
  (they never reach ``scope["headers"]``), ``Upgrade`` answered as plain HTTP with its body
  and the requests after it (as h11 does when the app does not switch), ``CONNECT`` refused
  (501); httptools itself refuses ``Content-Length`` with ``Transfer-Encoding``, a repeated
  or malformed length, obs-fold, bare LF, control bytes in fields and unknown methods;
* limits checked as bytes arrive, not when a field ends: a request line and head (a chunked
  body's trailers count with it) of at most ``max_head_bytes`` (414 for the target, 431),
  ``max_headers`` fields (431), chunk lines of at most ``max_head_bytes`` in a row (431), a
  body of at most ``max_body_bytes`` (413, before the app runs when the length is declared);
  time limits: a head complete within ``head_timeout`` seconds of its first byte (408), a
  body never silent for ``body_timeout`` seconds (408), a keep-alive connection idle for
  ``idle_timeout`` seconds closed;
* every request ends: a client that half-closes or resets at any byte, a body cut short or
  malformed, a limit or a timeout, each makes the app's ``receive()`` return
  ``http.disconnect`` (what it sends then is dropped), answers what can still be answered
  (400 for a request cut short by a FIN), and closes the connection;
* a close after an answer the client may still be sending to (a refusal, a body the app did
  not read) half-closes first and drops what still comes for ``_LINGER_S`` seconds at most:
  closing with bytes unread resets the connection, and the client would lose the answer;
* responses with the app's ``Content-Length``, else one computed for a single-part body,
  else chunked (close-delimited for HTTP/1.0); nothing after the head for ``HEAD``; writes
  wait while the transport is paused (a slow reader holds back a stream, not memory);
* ``http.disconnect`` when the client goes away, so an abandoned stream stops following its
  task; the app failing before its answer gives 500, during it a closed connection;
* TLS: the ASGI TLS extension (``scope["extensions"]["tls"]``) on every request of a TLS
  connection, so mutual TLS maps the client certificate to a principal.

What only malformed or slow input needs costs little on the common path (a whole request in
one read): the usual head skips the rare rules, and the byte counting and the clocks run
only for a head or body still incomplete when a read ends.
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
    "BODY_TIMEOUT",
    "DISCONNECT_EXTENSION",
    "HEAD_TIMEOUT",
    "HIGH_WATER",
    "IDLE_TIMEOUT",
    "MAX_BODY_BYTES",
    "MAX_HEADERS",
    "MAX_HEAD_BYTES",
    "ConnectionSet",
    "H1Connection",
    "answer_whole",
    "drained",
    "take_whole_body",
    "write_part",
]

log = logging.getLogger("peerwire.server")

ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]

HIGH_WATER = 64 * 1024
# A request line and head, a chunked body's trailers counting with its head: 414 / 431 beyond.
MAX_HEAD_BYTES = 64 * 1024
MAX_HEADERS = 128
# A backstop for any app; A2AApp refuses larger bodies itself first (10 MiB by default, with
# a JSON-RPC or REST error), and HTTPServer raises this to the app's own limit when larger.
MAX_BODY_BYTES = 64 * 1024 * 1024
# Seconds: a head from its first byte to its end; a body between two of its reads; a
# keep-alive connection between the end of an answer and the next request's first byte.
HEAD_TIMEOUT = 10.0
BODY_TIMEOUT = 30.0
IDLE_TIMEOUT = 5.0
# Requests parsed ahead of the one being answered before reading pauses.
_MAX_PIPELINED = 8
# Seconds a connection closing after an answer reads on (and drops) what the client sends.
_LINGER_S = 2.0

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
_COMMA = ord(",")
_METHODS = {m.encode(): m for m in ("GET", "POST", "HEAD", "PUT", "DELETE", "PATCH", "OPTIONS")}
# Header names whose values decide the framing (or a 100 Continue): looked at as they come.
_FRAMING_NAMES = frozenset(
    (b"host", b"content-length", b"transfer-encoding", b"expect", b"upgrade")
)


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

    def __init__(
        self,
        app: ASGIApp,
        *,
        scheme: str,
        idle_timeout: float = IDLE_TIMEOUT,
        head_timeout: float = HEAD_TIMEOUT,
        body_timeout: float = BODY_TIMEOUT,
        max_head_bytes: int = MAX_HEAD_BYTES,
        max_headers: int = MAX_HEADERS,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        for name, value in (
            ("idle_timeout", idle_timeout),
            ("head_timeout", head_timeout),
            ("body_timeout", body_timeout),
            ("max_head_bytes", max_head_bytes),
            ("max_headers", max_headers),
            ("max_body_bytes", max_body_bytes),
        ):
            if not value > 0:
                raise ValueError(f"{name} must be positive, not {value!r}")
        self.app = app
        self.scheme = scheme
        self.idle_timeout = idle_timeout
        self.head_timeout = head_timeout
        self.body_timeout = body_timeout
        self.max_head_bytes = max_head_bytes
        self.max_headers = max_headers
        self.max_body_bytes = max_body_bytes
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
        "received",
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
    ) -> None:
        self.connection = connection
        self.scope = scope
        self.keep_alive = keep_alive
        self.continue_wanted = False  # Expect: 100-continue, not yet answered
        self.head_only = scope["method"] == "HEAD"
        self.body: list[bytes] = []
        self.buffered = 0  # body bytes waiting for the app
        self.received = 0  # body bytes so far
        self.complete = False  # the whole body has been parsed
        self.body_done = False  # ... and handed to the app
        # The client is gone, or the request cannot be read on: receive() says
        # http.disconnect, and what the app sends is dropped.
        self.disconnected = False
        self.response_started = False
        self.response_head: tuple[int, Iterable[tuple[bytes, bytes]]] | None = None
        self.response_done = False
        self.chunked = False  # the response is chunked
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
                if self.connection._read_paused:  # the usual body never paused reading
                    self.connection.body_consumed(self)
                return {"type": "http.request", "body": body, "more_body": not self.complete}
            if not self.complete and self.continue_wanted:
                self.continue_wanted = False
                self.connection.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self.waiter = self.connection.loop.create_future()
            await self.waiter

    # -- direct calls for an app served here (see ``take_whole_body``, ``answer_whole``) ------

    def take_whole_body(self) -> bytes | None:
        """The body, when all of it is here and the app has read none of it (the usual
        request: it came with its head): what ``receive()`` would give in one message, without
        a message. ``None``: read it with ``receive()``."""
        if not self.complete or self.body_done or self.disconnected or self.response_done:
            return None
        body = self.body[0] if len(self.body) == 1 else b"".join(self.body)
        self.body.clear()
        self.buffered = 0
        self.body_done = True
        if self.connection._read_paused:
            self.connection.body_consumed(self)
        return body

    def answer_whole(
        self, status: int, headers: Iterable[tuple[bytes, bytes]], body: bytes
    ) -> bool:
        """A whole response at once: what ``http.response.start`` and one final
        ``http.response.body`` would send, in one write. True: the app waits for ``drained``."""
        if self.response_started:
            raise RuntimeError("ASGI: http.response.start sent twice")
        self.response_started = True
        self.response_done = True
        if self.disconnected:
            return False  # the client is gone, or the server answered for the app
        self.response_head = (status, headers)
        connection = self.connection
        connection.write(self._head(body, False))
        if self.waiter is not None:
            self.wake()  # a receive() waiting for more now learns the exchange is over
        return connection.write_paused

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
        if self._write_body(message.get("body", b""), message.get("more_body", False)):
            await self.connection.drained()

    def write_part(self, body: bytes) -> bool:
        """One more part of a response that began (``http.response.body`` with ``more_body``,
        without a message). True: the app waits for ``drained`` before the next."""
        if not self.response_started or self.response_done:
            raise RuntimeError("ASGI: http.response.body outside a response")
        return self._write_body(body, True)

    def _write_body(self, body: bytes, more: bool) -> bool:
        """Write a part of the response (the last unless ``more``); whether writing paused."""
        connection = self.connection
        if self.disconnected:
            # The client is gone (a stream hears of it from the disconnect watch), or the
            # server answered for the app (a body cut short): drop writes.
            if not more:
                self.response_done = True
            return False
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
        if not more and self.waiter is not None:
            self.wake()  # a receive() waiting for more now learns the exchange is over
        return connection.write_paused

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
        if self.connection.closing or not self.complete:
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


def take_whole_body(receive: Callable[[], Awaitable[Any]]) -> bytes | None:
    """For an app served by this server: the request's whole body when it is all here and
    unread (no ``http.request`` message, no await), given the ``receive`` the app was called
    with. ``None``: use ``receive()`` (another server, a wrapped ``receive``, a body still
    coming or partly read)."""
    request = _request_of(receive)
    return None if request is None else request.take_whole_body()


def answer_whole(
    send: Callable[[Any], Awaitable[None]],
    status: int,
    headers: Iterable[tuple[bytes, bytes]],
    body: bytes,
) -> bool | None:
    """For an app served by this server: send a whole response (a head and its complete body)
    in one write, given the ``send`` the app was called with. ``None``: not sent, use the two
    ASGI messages (another server, or a wrapped ``send``: an access log, a middleware); else
    whether the app must ``await drained(send)`` before answering more (flow control)."""
    request = _request_of(send)
    return None if request is None else request.answer_whole(status, headers, body)


def write_part(send: Callable[[Any], Awaitable[None]], body: bytes) -> bool | None:
    """For an app served by this server: one more part of a response that began, written at
    once, given the ``send`` the app was called with. ``None``: not written, send the
    ``http.response.body`` message (another server, a wrapped ``send``); else whether the app
    must ``await drained(send)`` before the next part."""
    request = _request_of(send)
    return None if request is None else request.write_part(body)


async def drained(send: Callable[[Any], Awaitable[None]]) -> None:
    """Wait until the connection of ``send`` (this server's) may be written to again."""
    request = _request_of(send)
    if request is not None:
        await request.connection.drained()


def _request_of(callable_: object) -> _Request | None:
    """The request whose own ``send``/``receive`` this is (a bound method of it), else None:
    another server's, or a wrapper's (a middleware, the access log)."""
    request = getattr(callable_, "__self__", None)
    return request if type(request) is _Request else None


class H1Connection(asyncio.Protocol):
    """One HTTP/1.1 connection serving ``shared.app``."""

    # Slots: with this many attributes an instance dict stops sharing its keys (CPython
    # shares at most 30), and every ``self._x`` on the hot path would take the slower lookup.
    __slots__ = (
        "_active", "_body_at", "_body_seen", "_broken", "_client_address", "_continue_wanted",
        "_drain_waiter", "_eof", "_error", "_extensions", "_framing", "_head_at",
        "_head_bytes", "_head_open", "_head_partial", "_headers", "_hosts", "_idle_since",
        "_idle_timeout", "_linger_until", "_lingering", "_lost", "_max_body_bytes",
        "_max_head_bytes", "_max_headers", "_on_lost", "_parser", "_parsing", "_pending_body",
        "_pending_head", "_pipeline", "_read_paused", "_reframe_head", "_reframing",
        "_refusal", "_server_address", "_special", "_task", "_timer", "_timer_at", "_tls",
        "_transfer_codings", "_transport", "_upgrade_asked", "_url", "closing", "loop",
        "shared", "write_paused",
    )  # fmt: skip

    def __init__(self, shared: ConnectionSet, loop: asyncio.AbstractEventLoop) -> None:
        self.shared = shared
        self.loop = loop
        self._max_head_bytes = shared.max_head_bytes
        self._max_headers = shared.max_headers
        self._max_body_bytes = shared.max_body_bytes
        self._idle_timeout = shared.idle_timeout
        self._parser = httptools.HttpRequestParser(self)
        self._transport: asyncio.Transport | None = None
        self._server_address: tuple[str, int] | None = None
        self._client_address: tuple[str, int] | None = None
        self._extensions: dict[str, Any] = {}
        self._tls = False
        # What ``watch_disconnect`` registered: called once the connection is lost.
        self._on_lost: list[Callable[[], None]] = []
        # The request whose body is being parsed, the one being answered (the same one while
        # its body streams in), and complete ones waiting between them.
        self._parsing: _Request | None = None
        self._active: _Request | None = None
        self._pipeline: collections.deque[_Request] = collections.deque()
        self._task: asyncio.Task[None] | None = None
        # The head being parsed: what httptools reported of it so far.
        self._head_open = False  # begun, not yet complete
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._head_bytes = 0  # the target and the completed field lines (trailers too)
        self._hosts = 0
        # Set by a field the complete head must look at again (Transfer-Encoding, Expect,
        # Upgrade): the three below are then read and reset; the usual head skips them.
        self._special = False
        self._transfer_codings: list[bytes] | None = None
        self._continue_wanted = False
        self._upgrade_asked = False
        # Counted when a read ends mid-request: the head then incomplete (its field list),
        # the bytes of its line still incomplete; the body then coming, its length when the
        # previous read ended, the bytes since its last body byte (chunk lines, trailers).
        self._pending_head: list[tuple[bytes, bytes]] | None = None
        self._head_partial = 0
        self._pending_body: _Request | None = None
        self._body_seen = 0
        self._framing = 0
        # An Upgrade request with a body: httptools stops at its head, so a
        # fresh parser is given this head to read the body with the same framing.
        self._reframe_head: bytes | None = None
        self._reframing = False
        # Why a callback refused the request: (status, text).
        self._refusal: tuple[int, str] | None = None
        # How the connection ends. Broken: what the client sends is no longer read (a
        # refusal, a timeout, a FIN mid-request), with ``_error`` the answer still owed once
        # the requests before it are answered. EOF: the client sent FIN. Lingering: FIN sent,
        # waiting for the client's (see _close). Closing: a shutdown, after the answer.
        # Lost: the transport is gone.
        self._broken = False
        self._error: tuple[int, str] | None = None
        self._eof = False
        self._lingering = False
        self._linger_until = 0.0
        self.closing = False
        self._lost = False
        self._read_paused = False
        self.write_paused = False
        self._drain_waiter: asyncio.Future[None] | None = None
        # One timer for every time limit, re-armed when it fires early (see _deadline).
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._idle_since = 0.0
        self._head_at = 0.0
        self._body_at = 0.0

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
        self._arm_idle()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._broken = True
        self._head_open = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for request in (self._active, self._parsing, *self._pipeline):
            if request is not None:
                request.disconnected = True
                request.wake()
        self._parsing = None
        self._pipeline.clear()
        if self._drain_waiter is not None and not self._drain_waiter.done():
            self._drain_waiter.set_result(None)
        callbacks, self._on_lost = self._on_lost, []
        for callback in callbacks:
            callback()
        self.shared.closed(self)

    def data_received(self, data: bytes) -> None:
        if self._broken:
            return  # after a refusal nothing more is read (the stream is out of step)
        while True:
            try:
                self._parser.feed_data(data)
                break
            except httptools.HttpParserUpgrade as exc:
                # httptools stops after an Upgrade head. No protocol switches here:
                # the request is plain HTTP, its body and what follows it are read on.
                data = data[exc.args[0] :]
                self._reframe()
            except httptools.HttpParserError as exc:
                self._parse_failed(exc)
                return
        if self._parsing is not None:
            self._body_pending(data)
        elif self._head_open:
            self._head_pending(data)

    def eof_received(self) -> bool | None:
        # A client that half-closes after its requests still gets their answers; closing for
        # writing too happens once nothing is being answered. A request cut short cannot
        # complete: it ends now. (TLS cannot half-close: the transport closes.)
        self._eof = True
        if self._lingering:
            return None  # the client has read the answer and closed: so do we
        if not self._broken:
            if self._parsing is not None:
                self._fail(400, "Bad Request: the connection closed before the body ended")
            elif self._head_open:
                self._fail(400, "Bad Request: the connection closed inside a request head")
        transport = self._transport
        if self._tls or transport is None or transport.is_closing():
            return None
        if self._active is None and not self._pipeline:
            return None
        return True

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        if self._drain_waiter is not None and not self._drain_waiter.done():
            self._drain_waiter.set_result(None)

    # -- httptools callbacks ------------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._head_open = True
        self._url = b""
        self._headers = []
        self._head_bytes = 0
        self._hosts = 0

    def on_url(self, url: bytes) -> None:
        # Called with each piece of the target as it arrives, not only at its end.
        self._url += url
        self._head_bytes += len(url)
        if self._head_bytes > self._max_head_bytes:
            raise self._refuse(414, "URI Too Long")

    def on_header(self, name: bytes, value: bytes) -> None:
        # Trailers come here too, after the head: a chunked request's go to a list of their
        # own (see _special_fields), counted with its head, then dropped.
        size = self._head_bytes = self._head_bytes + len(name) + len(value) + 4
        headers = self._headers
        if size > self._max_head_bytes or len(headers) >= self._max_headers:
            raise self._refuse(431, "Request Header Fields Too Large")
        name = name.lower()
        if name in _FRAMING_NAMES:
            if name == b"content-length" and self._parsing is None:
                # Every POST has one: checked here, without a call. httptools has checked
                # the digits and refused a second Content-Length.
                try:
                    length = int(value)
                except ValueError:
                    raise self._refuse(400, "Bad Request: invalid Content-Length") from None
                if length > self._max_body_bytes:
                    raise self._too_large()
            elif name == b"host":
                # A list ("a, b") names two hosts, as two fields do (RFC 9112 §3.2: 400 both).
                # The byte's value, not b",": CPython's bytes ``in`` first tries its operand
                # as an integer, making and dropping a TypeError for a bytes one.
                self._hosts += 1 if _COMMA not in value else 2
            else:
                self._framing_header(name, value)
        headers.append((name, value))

    def on_headers_complete(self) -> None:
        self._head_open = False
        parser = self._parser
        version = parser.get_http_version()
        if self._special or self._hosts != 1 or version != "1.1":
            if self._reframing:  # the stand-in head of _reframe (it has no Host)
                self._reframing = False
                return
            self._check_head(version)
        raw_method = parser.get_method()
        method = _METHODS.get(raw_method) or self._other_method(raw_method)
        try:
            path, raw_path, query = _split_target(self._url)
        except ValueError:
            raise self._refuse(400, "Bad Request: invalid request target") from None
        scope: dict[str, Any] = {
            "type": "http",
            "asgi": _ASGI,
            "http_version": version,
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
        request = self._parsing = _Request(self, scope, keep_alive=keep_alive)
        if self._special:
            self._special_fields(request, version)

    def on_body(self, body: bytes) -> None:
        request = self._parsing
        assert request is not None
        request.body.append(body)
        request.buffered += len(body)
        request.received += len(body)
        if request.received > self._max_body_bytes:  # a chunked body (a length is checked first)
            raise self._too_large()
        if request.buffered > HIGH_WATER:
            self._pause_reading()  # the app reads it first (body_consumed resumes)
        if request.waiter is not None:  # a body in one read arrives before anyone waits
            request.wake()

    def on_message_complete(self) -> None:
        if self._reframe_head is not None:
            return  # an Upgrade request's body is still to come (_reframe)
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

    # -- the framing rules httptools leaves to us ---------------------------------------------

    def _framing_header(self, name: bytes, value: bytes) -> None:
        if self._parsing is not None or name == b"content-length":
            return  # a trailer frames nothing; a Content-Length is on_header's
        self._special = True
        if name == b"transfer-encoding":
            if self._transfer_codings is None:
                self._transfer_codings = []
            self._transfer_codings += (c.strip().lower() for c in value.split(b","))
        elif name == b"expect":
            self._continue_wanted = value.lower() == b"100-continue"
        else:
            self._upgrade_asked = True

    def _check_head(self, version: str) -> None:
        """The rules a complete head is held to beyond httptools' (the usual head, HTTP/1.1
        with one Host and none of the special fields, skips this)."""
        if version != "1.1" and version != "1.0":
            if version >= "2":
                raise self._refuse(505, "HTTP Version Not Supported")
            raise self._refuse(400, f"Bad Request: HTTP/{version} is not supported")
        hosts = self._hosts
        if hosts != 1 and (hosts or version == "1.1"):
            raise self._refuse(400, "Bad Request: a request needs exactly one Host header")
        if self._transfer_codings is not None:
            self._check_codings()

    def _other_method(self, raw_method: bytes) -> str:
        if raw_method == b"CONNECT":
            # A tunnel is no ASGI ``http`` exchange (h11 would switch protocols after a 2xx).
            raise self._refuse(501, "Not Implemented: CONNECT")
        return raw_method.decode("ascii")

    def _special_fields(self, request: _Request, version: str) -> None:
        """What Transfer-Encoding, Expect and Upgrade change for the request; reset after."""
        self._special = False
        codings, self._transfer_codings = self._transfer_codings, None
        request.continue_wanted, self._continue_wanted = self._continue_wanted, False
        if codings is not None:
            # Trailers are read into a list of their own and dropped (RFC 9110 §6.5.1 lets a
            # recipient discard them): merged into the head, a trailer would pass for a
            # header the app trusts (Authorization, A2A-Version).
            self._headers = []
            if version == "1.0":
                request.keep_alive = False  # RFC 9112 §6.1: such a message's framing is suspect
        if self._upgrade_asked:
            self._upgrade_asked = False
            if self._parser.should_upgrade():
                self._reframe_head = _reframe_head(request, chunked=codings is not None)

    def _check_codings(self) -> None:
        """``Transfer-Encoding`` is ``chunked`` alone: RFC 9112 §6.3 wants 400 when chunked is
        not the last coding (the length is unknowable), §6.1 501 for a coding not known here;
        h11 takes nothing else either."""
        codings = self._transfer_codings
        assert codings is not None
        if codings == [b"chunked"]:
            return
        if codings[-1] != b"chunked" or codings.count(b"chunked") > 1:
            raise self._refuse(400, "Bad Request: chunked must be the last transfer coding, once")
        unknown = b", ".join(c for c in codings if c != b"chunked").decode("latin-1")
        raise self._refuse(501, f"Not Implemented: transfer coding {unknown}")

    def _reframe(self) -> None:
        """After httptools stopped at an Upgrade head: a fresh parser for the bytes after it,
        first given a stand-in head with the request's framing if a body is due."""
        self._parser = httptools.HttpRequestParser(self)
        head, self._reframe_head = self._reframe_head, None
        if head is not None:
            self._reframing = True  # its callbacks feed the Upgrade request (on_header: trailers)
            self._parser.feed_data(head)

    def _too_large(self) -> _Refused:
        return self._refuse(413, f"Content Too Large: the limit is {self._max_body_bytes} bytes")

    def _refuse(self, status: int, text: str) -> _Refused:
        """What a callback raises to refuse the request (httptools wraps it in its own)."""
        self._refusal = (status, text)
        return _Refused(text)

    def _parse_failed(self, exc: httptools.HttpParserError) -> None:
        refusal, self._refusal = self._refusal, None
        if refusal is None:
            if isinstance(exc, httptools.HttpParserCallbackError):
                log.error("peerwire: HTTP parsing failed", exc_info=exc.__context__ or exc)
                refusal = (500, "Internal Server Error")
            else:
                refusal = (400, f"Bad Request: {exc}")
        self._fail(*refusal)

    # -- what is read when a read ends mid-request --------------------------------------------

    def _head_pending(self, data: bytes) -> None:
        """A head still incomplete when a read ends: count what httptools holds of it (it
        reports a field only at its end) and start its clock."""
        if self._pending_head is not self._headers:
            # Begun in this read: the lines it completed are counted, the rest waits a read.
            self._pending_head = self._headers
            self._head_partial = 0
            self._head_at = self.loop.time()
            self._arm(max(self._head_at, self._idle_since) + self.shared.head_timeout)
            return
        # Every byte of this read is the head's: completed lines were counted by on_header,
        # the line after the last LF is still held.
        nl = data.rfind(b"\n")
        partial = self._head_partial = (
            self._head_partial + len(data) if nl < 0 else len(data) - nl - 1
        )
        # Before its first field the line held may be the request line, which on_url counted.
        held = self._head_bytes + partial if self._headers else max(self._head_bytes, partial)
        if held > self._max_head_bytes:
            self._fail(431, "Request Header Fields Too Large")

    def _body_pending(self, data: bytes) -> None:
        """A body still coming when a read ends: let the app stream it, bound the bytes that
        are not body (chunk lines, trailers: httptools holds them), and restart its clock."""
        request = self._parsing
        assert request is not None
        if self._active is None:
            self._start(request)
        if self._pending_body is not request:  # the head's read
            self._pending_body = request
            self._body_seen = request.received
            self._framing = 0
        elif request.received == self._body_seen:  # not one byte of body in this read
            self._framing += len(data)
            if self._framing > self._max_head_bytes:
                self._fail(431, "Request Header Fields Too Large: chunk lines or trailers")
                return
        else:
            self._body_seen = request.received
            self._framing = 0
        self._body_at = self.loop.time()
        self._arm(self._body_at + self.shared.body_timeout)

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
        if request.waiter is not None:
            request.wake()
        if self._lost:
            return
        if not request.keep_alive or not request.complete or self.closing:
            # A body the app did not read to its end leaves the connection mid-message.
            self._close(linger=True)
            return
        if self._pipeline:
            self._start(self._pipeline.popleft())
        elif self._parsing is not None:
            self._start(self._parsing)
        elif self._broken or self._eof:
            if self._error is not None:
                self._answer_error()  # for the request after this one
            else:
                self._close()
            return
        else:
            self._arm_idle()
        self._resume_reading()

    def body_consumed(self, request: _Request) -> None:
        if self._read_paused and request is self._active and not self._pipeline:
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

    # -- ending -------------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Close when idle; a request being answered finishes first."""
        self.closing = True
        if self._active is None:
            self._close()

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    def _fail(self, status: int, text: str) -> None:
        """The bytes from the client cannot be read on (malformed, over a limit, too slow, cut
        short): the request they belong to ends with ``status``, after the answers to those
        before it (its own app hears ``http.disconnect``; if its answer had begun, the
        connection just closes); then the connection closes."""
        self._broken = True
        self._head_open = False
        self._pause_reading()
        request, self._parsing = self._parsing, None
        if request is not None:
            request.disconnected = True
            request.wake()
            if request is self._active:
                if not request.response_started or request.response_head is not None:
                    self.write(_plain_response(status, text))  # nothing of its answer is out
                    self._close(linger=True)
                else:
                    self._close()
                return
        self._error = (status, text)
        if self._active is None:
            self._answer_error()

    def _answer_error(self) -> None:
        assert self._error is not None
        self.write(_plain_response(*self._error))
        self._error = None
        self._close(linger=True)

    def _close(self, *, linger: bool = False) -> None:
        """Close; ``linger``: after an answer, when the client may still be sending. Closing
        with bytes unread makes the kernel reset the connection, and the client may lose the
        answer: so FIN first, then what still comes is read and dropped until the client
        closes too, for ``_LINGER_S`` at most. (TLS has no half-close: it just closes.)"""
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        if not linger or self._eof or self._tls or not transport.can_write_eof():
            transport.close()  # a lingering connection too (a shutdown, the timer)
            return
        if self._lingering:
            return
        transport.write_eof()
        self._lingering = True
        self._broken = True  # data_received drops what comes
        self._linger_until = self.loop.time() + _LINGER_S
        self._arm(self._linger_until)
        if self._read_paused:
            self._read_paused = False
            transport.resume_reading()

    # -- time limits --------------------------------------------------------------------------

    def _arm_idle(self) -> None:
        since = self._idle_since = self.loop.time()
        deadline = since + self._idle_timeout
        if self._timer is None or self._timer_at > deadline:
            self._arm(deadline)

    def _arm(self, deadline: float) -> None:
        # Keep-alive connections go idle after every answer: an earlier timer is kept (it
        # re-arms itself when it fires early) rather than one new timer per request.
        timer = self._timer
        if timer is not None:
            if self._timer_at <= deadline:
                return
            timer.cancel()
        self._timer_at = deadline
        self._timer = self.loop.call_at(deadline, self._on_timer)

    def _deadline(self) -> float | None:
        """When the connection's current wait runs out; None: the app is at work."""
        if self._broken:
            return self._linger_until if self._lingering else None
        if self._parsing is not None:  # a body on its way (unless this server holds it back)
            return None if self._read_paused else self._body_at + self.shared.body_timeout
        if self._active is not None or self._pipeline:
            return None  # armed again when the answers are done
        if self._head_open:
            return max(self._head_at, self._idle_since) + self.shared.head_timeout
        return self._idle_since + self._idle_timeout

    def _on_timer(self) -> None:
        self._timer = None
        if self._lost:
            return
        deadline = self._deadline()
        if deadline is None:
            return
        if self.loop.time() < deadline:
            self._timer_at = deadline
            self._timer = self.loop.call_at(deadline, self._on_timer)
        elif self._lingering:
            self._close()
        elif self._parsing is not None:
            self._fail(408, f"Request Timeout: no body for {self.shared.body_timeout:g} s")
        elif self._head_open:
            self._fail(408, f"Request Timeout: no complete head in {self.shared.head_timeout:g} s")
        else:
            self._close()  # idle keep-alive: no answer owed

    # -- flow control -------------------------------------------------------------------------

    def _pause_reading(self) -> None:
        if not self._read_paused and self._transport is not None and not self._lost:
            self._read_paused = True
            self._transport.pause_reading()

    def _resume_reading(self) -> None:
        if not self._read_paused or self._transport is None:
            return
        if self._broken or self._eof or self.closing or len(self._pipeline) >= _MAX_PIPELINED:
            return
        self._read_paused = False
        self._transport.resume_reading()
        if self._parsing is not None:  # the body clock starts again: the pause was ours
            self._body_at = self.loop.time()
            self._arm(self._body_at + self.shared.body_timeout)


class _Refused(Exception):
    pass


def _nothing() -> None:
    pass


def _plain_response(status: int, text: str) -> bytes:
    """A complete answer from the server itself, then ``connection: close``."""
    body = text.encode("latin-1", "replace")
    return (
        b"%b%bcontent-type: text/plain; charset=utf-8\r\ncontent-length: %d\r\n"
        % (
            _STATUS_LINES[status],
            _clock.date_line(),
            len(body),
        )
        + b"connection: close\r\n\r\n%b" % body
    )


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


def _reframe_head(request: _Request, *, chunked: bool) -> bytes | None:
    """The stand-in head that gives an Upgrade request's body to a fresh parser."""
    if chunked:
        return b"PUT / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n"
    for name, value in request.scope["headers"]:
        if name == b"content-length" and int(value):
            return b"PUT / HTTP/1.1\r\ncontent-length: %d\r\n\r\n" % int(value)
    return None


def _split_target(target: bytes) -> tuple[str, bytes, bytes]:
    """``(path, raw_path, query_string)`` of a request target; the path percent-decoded.
    ValueError: a target of no form RFC 9112 §3.2 allows here (the authority form is
    CONNECT's)."""
    known = _TARGETS.get(target)
    if known is not None:
        return known  # an agent's clients send a handful of targets, again and again
    split = _split_new_target(target)
    if len(target) <= _MAX_CACHED_TARGET:
        if len(_TARGETS) >= _MAX_CACHED_TARGETS:
            _TARGETS.clear()
        _TARGETS[target] = split
    return split


# The targets seen lately and what they split into (immutable values: shared safely).
_TARGETS: dict[bytes, tuple[str, bytes, bytes]] = {}
_MAX_CACHED_TARGETS = 256
_MAX_CACHED_TARGET = 256


def _split_new_target(target: bytes) -> tuple[str, bytes, bytes]:
    if not target.startswith(b"/"):
        if target == b"*":
            return "*", b"*", b""
        # The absolute form (RFC 9112 §3.2.2), which a server must accept.
        try:
            url = httptools.parse_url(target)
        except httptools.HttpParserError:
            raise ValueError(target) from None
        if not url.schema or not url.host:
            raise ValueError(target)
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
