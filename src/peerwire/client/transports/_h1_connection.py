"""One HTTP/1.1 client connection (an asyncio protocol fed to httptools) and the exchange of
one request and its response on it; the pool (``_h1``) hands these out.

An ``Exchange`` records what the parser saw (status, raw headers, body chunks, the end) and
wakes the one coroutine waiting on it: for a unary request only at the end, for a stream at
the head and at every chunk. It also knows whether its request can be sent again safely: not
when the whole request left this process, nor when any byte of an answer came back.
"""

from __future__ import annotations

import asyncio
import select
from collections.abc import Callable, Iterator, Mapping
from typing import Any, cast

import httptools

__all__ = [
    "ConnectFailed",
    "ConnectTimeout",
    "Connection",
    "Disconnected",
    "Exchange",
    "H1Error",
    "H1Timeout",
    "InvalidURL",
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


class H1Timeout(H1Error):
    """A deadline passed; the subclass names the step that was waiting."""


class PoolTimeout(H1Timeout):
    """No connection of the pool became free in time."""


class ConnectTimeout(H1Timeout):
    """Connecting (TCP and TLS handshake) took too long."""


class ReadTimeout(H1Timeout):
    """The response (or, in a stream, its next chunk) did not come in time."""


_STREAM_HIGH_WATER = 256 * 1024  # buffered bytes of a stream at which reading pauses
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
        "keep_alive",
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
        self.chunks: list[bytes] = []
        self.size = 0
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
            self.error = error
            self.wake()

    def replayable(self) -> bool:
        """Whether sending the request again cannot repeat its effect: the server never had
        all of it, and never started answering."""
        return not self.sent and not self.received

    def body(self) -> bytes:
        chunks = self.chunks
        if len(chunks) == 1:
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
        self, loop: asyncio.AbstractEventLoop, on_lost: Callable[[Connection], None]
    ) -> None:
        self._on_lost = on_lost  # tells the pool
        self._parser = httptools.HttpResponseParser(self)
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
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()
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
        if exchange is None or exchange.complete:
            # Bytes nobody asked for: whatever they are, this connection is out of step.
            self.close()
            return
        exchange.received = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            exchange.fail(MalformedResponse(f"the response is not valid HTTP/1.1: {exc}"))
            self.close()

    def eof_received(self) -> bool | None:
        return None  # the transport closes itself; connection_lost decides what EOF meant

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        exchange = self.exchange
        if exchange is not None and not exchange.complete:
            if exchange.head_done and _ends_at_close(exchange):
                exchange.complete = True  # a body without length: the close is its end
                exchange.keep_alive = False
                exchange.wake()
            else:
                what = "the response ended" if exchange.received else "any response came"
                error = Disconnected(f"the server closed the connection before {what}")
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

    # -- httptools callbacks

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
        status = self._parser.get_status_code()
        if status < 200:
            return  # 1xx: informational, the real head follows
        exchange.status = status
        exchange.keep_alive = self._parser.should_keep_alive()
        exchange.head_done = True
        for name, value in exchange.raw_headers:
            if (
                len(name) == 16
                and name.lower() == b"content-encoding"
                and value.strip().lower() not in (b"", b"identity")
            ):
                coding = value.decode("latin-1")
                exchange.fail(MalformedResponse(f"the response is {coding}-encoded, unasked"))
                self.close()
                return
        if exchange.streaming:
            exchange.wake()

    def on_body(self, body: bytes) -> None:
        exchange = self.exchange
        assert exchange is not None
        exchange.chunks.append(body)
        if exchange.streaming:
            exchange.size += len(body)
            if exchange.size >= _STREAM_HIGH_WATER and not self._reading_paused:
                self._reading_paused = True
                assert self.transport is not None
                self.transport.pause_reading()
            exchange.wake()

    def on_message_complete(self) -> None:
        exchange = self.exchange
        assert exchange is not None
        if not exchange.head_done:
            exchange.raw_headers.clear()  # the end of a 1xx response
            return
        exchange.complete = True
        exchange.wake()


def _ends_at_close(exchange: Exchange) -> bool:
    """Whether the response's body is delimited by the end of the connection."""
    for name, value in exchange.raw_headers:
        lower = name.lower()
        if lower == b"content-length":
            return False
        if lower == b"transfer-encoding" and b"chunked" in value.lower():
            return False
    return exchange.status not in (204, 304)
