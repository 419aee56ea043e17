"""One HTTP/1.1 client connection (an asyncio protocol fed to httptools) and the exchange of
one request and its response on it; the pool (``_h1``) hands these out.

An ``Exchange`` records what the parser saw (status, raw headers, body chunks, the end) and
wakes the one coroutine waiting on it: for a unary request only at the end, for a stream at
the head and at every chunk. It also knows whether its request can be sent again safely: not
when the whole request left this process, nor when any byte of an answer came back.

Whatever the server sends ends in a defined state: bytes the parser refuses, a response past
one of the ``ClientLimits``, a protocol switch (``101``) or bytes nobody asked for fail the
exchange in flight with a ``MalformedResponse`` (never an exception inside asyncio) and the
connection is cut at once (``abort``), so that nothing more of it is read or ever reused. The
limits cost the common path almost nothing: the head is measured only while it is still
incomplete after a read (as h11 does), the body by a running count.
"""

from __future__ import annotations

import asyncio
import select
from collections.abc import Callable, Iterator, Mapping
from typing import Any, cast

import httptools

from ._limits import ClientLimits

__all__ = [
    "ConnectFailed",
    "ConnectTimeout",
    "Connection",
    "Disconnected",
    "Exchange",
    "H1Error",
    "H1Timeout",
    "InvalidURL",
    "LimitExceeded",
    "MalformedResponse",
    "PoolTimeout",
    "ReadTimeout",
    "Response",
    "ResponseHeaders",
]

# -- errors -----------------------------------------------------------------------------------


class H1Error(Exception):
    """A request that did not get through (the transports map these to peerwire errors)."""


class InvalidURL(H1Error):
    """A URL this client cannot send a request to."""


class ConnectFailed(H1Error):
    """No connection could be made (refused, unreachable, TLS handshake failed)."""


class Disconnected(H1Error):
    """The connection ended before the response did."""


class MalformedResponse(H1Error):
    """The server answered something that is not HTTP/1.1 this client can read."""


class LimitExceeded(MalformedResponse):
    """The response passed one of the client's limits (``ClientLimits``); the message names it."""


class H1Timeout(H1Error):
    """A deadline passed; the subclass names the step that was waiting."""


class PoolTimeout(H1Timeout):
    """No connection of the pool became free in time."""


class ConnectTimeout(H1Timeout):
    """Connecting (TCP and TLS handshake) took too long."""


class ReadTimeout(H1Timeout):
    """The response (or, in a stream, its next chunk) did not come in time."""


_STREAM_HIGH_WATER = 256 * 1024  # buffered bytes of a stream at which reading pauses
# Pieces of a unary body kept apart before they are copied into one buffer: each is an object
# of its own (some 40 bytes besides its content), and a server sending chunks of a byte or two
# would otherwise make a body within max_body_size cost twenty times that in memory.
_MAX_PIECES = 64
_poll = getattr(select, "poll", None)  # not on Windows; select() there


# -- responses --------------------------------------------------------------------------------


class ResponseHeaders(Mapping[str, str]):
    """Response headers by lower-case name (repeated ones joined by ", "), decoded on first use.

    Most responses are read by status and body alone, so the raw pairs stay raw until asked.
    """

    __slots__ = ("_by_name", "_raw")

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        self._raw = raw
        self._by_name: dict[str, str] | None = None

    def _decoded(self) -> dict[str, str]:
        if self._by_name is None:
            by_name: dict[str, str] = {}
            for raw_name, raw_value in self._raw:
                name = raw_name.decode("latin-1").lower()
                value = raw_value.decode("latin-1").strip()
                by_name[name] = f"{by_name[name]}, {value}" if name in by_name else value
            self._by_name = by_name
        return self._by_name

    def __getitem__(self, name: str) -> str:
        return self._decoded()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._decoded())

    def __len__(self) -> int:
        return len(self._decoded())

    def __repr__(self) -> str:
        return f"ResponseHeaders({self._decoded()!r})"


class Response:
    """A response read to its end."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: ResponseHeaders, body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body


# -- one exchange on one connection -----------------------------------------------------------


class Exchange:
    """One request and its response on a connection: what the parser has seen so far."""

    __slots__ = (
        "chunks",
        "complete",
        "error",
        "head_done",
        "head_size",
        "keep_alive",
        "line_done",
        "raw_headers",
        "received",
        "sent",
        "size",
        "status",
        "streaming",
        "waiter",
    )

    def __init__(self, streaming: bool) -> None:
        self.streaming = streaming  # wake the reader at the head and every chunk, not the end
        self.status = 0
        self.raw_headers: list[tuple[bytes, bytes]] = []
        self.chunks: list[bytes | bytearray] = []  # a bytearray: pieces copied together
        self.size = 0  # body bytes: all of them (unary), those not yet taken (stream)
        self.head_size = 0  # bytes read while the head was still incomplete
        self.line_done = False  # the status line of an incomplete head ended
        self.head_done = False
        self.complete = False
        self.keep_alive = False
        self.received = False  # a byte of the response arrived
        self.sent = False  # the whole request left this process
        self.error: H1Error | None = None
        self.waiter: asyncio.Future[None] | None = None

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def fail(self, error: H1Error) -> None:
        if self.error is None and not self.complete:
            self.error = error  # a stream's reader still gets the chunks that came before
            self.wake()

    def replayable(self) -> bool:
        """Whether sending the request again cannot repeat its effect: the server never had
        all of it, and never started answering."""
        return not self.sent and not self.received

    def body(self) -> bytes:
        chunks = self.chunks
        if len(chunks) == 1 and type(chunks[0]) is bytes:
            return chunks[0]
        return b"".join(chunks)

    async def wait(self, loop: asyncio.AbstractEventLoop, deadline: float | None) -> None:
        """Until the parser has news for this exchange; ``ReadTimeout`` after ``deadline``."""
        waiter = loop.create_future()
        self.waiter = waiter
        timer = loop.call_at(deadline, _expire, waiter) if deadline is not None else None
        try:
            await waiter
        finally:
            self.waiter = None
            if timer is not None:
                timer.cancel()


def _expire(waiter: asyncio.Future[Any]) -> None:
    if not waiter.done():
        waiter.set_exception(ReadTimeout("no response in time"))


class Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: writes requests, feeds what arrives to its response parser."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        on_lost: Callable[[Connection], None],
        limits: ClientLimits,
    ) -> None:
        self._on_lost = on_lost  # tells the pool
        self._parser = httptools.HttpResponseParser(self)
        self._limits = limits
        self._max_body = limits.max_body_size
        self._max_headers = limits.max_header_count
        self.transport: asyncio.Transport | None = None
        self.exchange: Exchange | None = None
        self.closed = False
        self.idle_since = 0.0
        self.lost: asyncio.Future[None] = loop.create_future()
        self._reading_paused = False

    # -- what the pool and the exchanges do with it

    def start(self, request: bytes, streaming: bool) -> Exchange:
        """Send ``request``; the returned exchange follows its response."""
        exchange = Exchange(streaming)
        transport = self.transport
        if self.closed or transport is None or transport.is_closing():
            exchange.fail(Disconnected("the connection was closed before the request was sent"))
            return exchange
        self.exchange = exchange
        transport.write(request)
        # A failed write closes the transport at once (its buffer dropped): not sent then.
        exchange.sent = not transport.is_closing() and transport.get_write_buffer_size() == 0
        return exchange

    def finish(self) -> None:
        """The current exchange is over (its response read to the end)."""
        self.exchange = None

    def close(self) -> None:
        transport = self.transport
        if transport is not None and not transport.is_closing():
            if transport.get_write_buffer_size():
                # A request not yet fully sent: a close would wait for the server to read it.
                transport.abort()
            else:
                transport.close()
        self.closed = True

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()
        self.closed = True

    def peer_gone(self) -> bool:
        """Whether the server closed (or wrote to) this idle connection unnoticed so far."""
        assert self.transport is not None
        sock = self.transport.get_extra_info("socket")
        if sock is None:
            return False
        # An idle connection has nothing to read unless it is over.
        try:
            if _poll is None:
                return bool(select.select([sock.fileno()], [], [], 0)[0])
            poller = _poll()
            poller.register(sock.fileno(), select.POLLIN)
            return bool(poller.poll(0))
        except (OSError, ValueError):
            return True

    def consumed(self, exchange: Exchange) -> None:
        """A stream's reader took its buffered chunks: let more in if reading was paused."""
        if self._reading_paused and exchange.size < _STREAM_HIGH_WATER:
            self._reading_paused = False
            if self.transport is not None and not self.transport.is_closing():
                self.transport.resume_reading()

    # -- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        # Told when a request larger than the socket buffer has been fully written.
        self.transport.set_write_buffer_limits(high=0)

    def data_received(self, data: bytes) -> None:
        exchange = self.exchange
        if exchange is None or exchange.complete or exchange.error is not None:
            # Bytes nobody asked for: whatever they are, this connection is out of step.
            self.abort()
            return
        exchange.received = True
        try:
            self._parser.feed_data(data)
        except Exception as exc:  # the parser's errors, and what the callbacks below raise
            self._refuse(exchange, exc)
            return
        if not exchange.complete:  # more to come: what came so far must stay within bounds
            if not exchange.head_done:
                self._measure_head(exchange, data)
            elif len(exchange.chunks) > _MAX_PIECES and not exchange.streaming:
                _coalesce(exchange)  # (a stream's reader takes its pieces as they come)

    def eof_received(self) -> bool | None:
        exchange = self.exchange
        if (
            exchange is not None
            and not exchange.complete
            and exchange.error is None
            and exchange.head_done
            and _ends_at_close(exchange)
        ):
            # A body without length ends where the server closed its side: its FIN came
            # after all it sent. (A reset instead, or a close of ours, is no end of it.)
            exchange.complete = True
            exchange.keep_alive = False
            exchange.wake()
        return None  # the transport closes itself; connection_lost says what it cut short

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        exchange = self.exchange
        if exchange is not None and not exchange.complete and exchange.error is None:
            what = "the response ended" if exchange.received else "any response came"
            how = "reset" if exc is not None else "closed"
            error = Disconnected(f"the server {how} the connection before {what}")
            error.__cause__ = exc
            exchange.fail(error)
        if not self.lost.done():
            self.lost.set_result(None)
        self._on_lost(self)

    def pause_writing(self) -> None:
        pass  # the write buffer is unbounded; only resume_writing matters (below)

    def resume_writing(self) -> None:
        # The write buffer drained: the whole request has left this process.
        if self.exchange is not None:
            self.exchange.sent = True

    # -- checks, off the common path

    def _refuse(self, exchange: Exchange, exc: Exception) -> None:
        """The parser stopped on ``exc``: fail the exchange with why, and cut the connection."""
        cause = exc.__context__ if isinstance(exc, httptools.HttpParserCallbackError) else exc
        if isinstance(cause, H1Error):
            error = cause  # raised by a callback below, saying what was wrong
        else:
            error = MalformedResponse(f"the response is not valid HTTP/1.1: {exc}")
        exchange.fail(error)
        self.abort()

    def _measure_head(self, exchange: Exchange, data: bytes) -> None:
        """The head is still incomplete after ``data``: it must stay within the limits."""
        limits = self._limits
        before = exchange.head_size
        size = exchange.head_size = before + len(data)
        error = None
        if not exchange.line_done:
            end = data.find(b"\n")
            if end >= 0:
                exchange.line_done = True
            if (before + end if end >= 0 else size) > limits.max_status_line:
                error = LimitExceeded(
                    f"the response's status line is longer than ClientLimits.max_status_line "
                    f"({limits.max_status_line} bytes)"
                )
        if error is None and size > limits.max_head_size:
            error = LimitExceeded(
                f"the response head is larger than ClientLimits.max_head_size "
                f"({limits.max_head_size} bytes)"
            )
        if error is None and len(exchange.raw_headers) > self._max_headers:
            error = self._too_many_headers()
        if error is not None:
            exchange.fail(error)
            self.abort()

    def _too_many_headers(self) -> LimitExceeded:
        return LimitExceeded(
            f"the response has more than ClientLimits.max_header_count "
            f"({self._max_headers}) headers"
        )

    # -- httptools callbacks (an exception raised here stops the parser: see _refuse)

    def on_message_begin(self) -> None:
        exchange = self.exchange
        if exchange is not None and exchange.complete:
            # A second response to one request: stop parsing; the connection is dropped.
            raise MalformedResponse("the server sent more than one response")

    def on_header(self, name: bytes, value: bytes) -> None:
        assert self.exchange is not None
        self.exchange.raw_headers.append((name, value))

    def on_headers_complete(self) -> None:
        exchange = self.exchange
        assert exchange is not None
        if len(exchange.raw_headers) > self._max_headers:
            raise self._too_many_headers()
        status = self._parser.get_status_code()
        if status < 200:
            if status == 101:
                raise MalformedResponse(
                    "the server switched protocols (101), which this client never asks for"
                )
            if status < 100:
                raise MalformedResponse(f"the response has no valid status ({status:03d})")
            return  # 1xx: informational, the real head follows
        exchange.status = status
        exchange.keep_alive = self._parser.should_keep_alive()
        exchange.head_done = True
        for name, value in exchange.raw_headers:
            if 15 < len(name) < 18:  # Content-Encoding, Transfer-Encoding: cheap to rule out
                _check_coding(name, value)
        if exchange.streaming:
            exchange.wake()

    def on_body(self, body: bytes) -> None:
        exchange = self.exchange
        assert exchange is not None
        exchange.chunks.append(body)
        exchange.size += len(body)
        if exchange.streaming:
            if exchange.size >= _STREAM_HIGH_WATER and not self._reading_paused:
                self._reading_paused = True
                assert self.transport is not None
                self.transport.pause_reading()
            exchange.wake()
        elif exchange.size > self._max_body:
            raise LimitExceeded(
                f"the response body is larger than ClientLimits.max_body_size "
                f"({self._max_body} bytes)"
            )

    def on_message_complete(self) -> None:
        exchange = self.exchange
        assert exchange is not None
        if not exchange.head_done:
            exchange.raw_headers.clear()  # the end of a 1xx response
            return
        exchange.complete = True
        if not exchange.sent:
            # Answered before the request was all sent: the rest of it must not follow.
            exchange.keep_alive = False
        exchange.wake()


def _coalesce(exchange: Exchange) -> None:
    """Copy the pieces of a unary body read so far into one buffer (amortized: each byte is
    copied about once more)."""
    chunks = exchange.chunks
    first = chunks[0]
    buffer = first if type(first) is bytearray else bytearray(first)
    for piece in chunks[1:]:
        buffer += piece
    exchange.chunks = [buffer]


def _check_coding(name: bytes, value: bytes) -> None:
    """Refuse a content or transfer coding this client did not ask for (it asks for none)."""
    lower = name.lower()
    coding = value.strip().lower()
    if lower == b"content-encoding" and coding not in (b"", b"identity"):
        shown = value.decode("latin-1")
        raise MalformedResponse(f"the response is {shown}-encoded, unasked")
    if lower == b"transfer-encoding" and coding != b"chunked":
        shown = value.decode("latin-1")
        raise MalformedResponse(f"the response has the transfer coding {shown!r}, unasked")


def _ends_at_close(exchange: Exchange) -> bool:
    """Whether the response's body is delimited by the end of the connection."""
    for name, value in exchange.raw_headers:
        lower = name.lower()
        if lower == b"content-length":
            return False
        if lower == b"transfer-encoding" and b"chunked" in value.lower():
            return False
    return exchange.status not in (204, 304)
