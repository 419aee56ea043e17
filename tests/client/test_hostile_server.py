"""The client against servers that attack it or break HTTP/1.1 on purpose.

A raw asyncio server on loopback runs a script per connection (the first connection
misbehaves, later ones answer properly, so each test also shows that the pool recovers on a
fresh connection). What is asserted:

* the typed error (the pool's ``H1Error`` subclass; ``peerwire.errors`` through the client);
* bounded memory: a server sending without end is stopped by the client near the limit, as
  the bytes the server managed to send before the client cut it show;
* the connection is closed (the server sees it end) and never reused;
* nothing leaks into the event loop: no exception reached its handler (no "Fatal error:
  protocol.data_received() call failed"), no task is left, no timer is left armed.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import socket
import struct
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from peerwire.bindings.sse import SSEEventTooLarge, SSEParser
from peerwire.client import CardCache, Client, ClientLimits
from peerwire.client.transports._exchange import PooledExchange
from peerwire.client.transports._h1 import (
    ConnectTimeout,
    Disconnected,
    H1Pool,
    LimitExceeded,
    MalformedResponse,
    ReadTimeout,
)
from peerwire.client.transports._http import sse_payloads
from peerwire.errors import (
    A2AConnectionError,
    A2ATimeoutError,
    ClientError,
    InvalidAgentCardError,
    InvalidResponseError,
)
from peerwire.server.card import CARD_PATH
from peerwire.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    encode,
)

LIVENESS_S = 10.0  # generous bound on anything that must end; tests take milliseconds
KIB = 1024
MIB = 1024 * KIB
# What a server can have in flight when the client cuts it: its socket buffer (set small
# below), the client's receive buffer, and one read. Some 200 KiB measured here; the attacks
# this guards against cost the client gigabytes.
SLACK = 4 * MIB
NO_HEADERS: dict[str, str] = {}


# -- the loop stays clean ----------------------------------------------------------------------


@pytest.fixture(autouse=True)
async def clean_loop() -> AsyncIterator[None]:
    """Fails the test if anything reached the loop's exception handler, or outlived it."""
    loop = asyncio.get_running_loop()
    seen: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    try:
        yield
        for _ in range(10):  # bounded: lets connection_lost callbacks and closes run
            await asyncio.sleep(0)
        gc.collect()  # "Task was destroyed but it is pending", unretrieved exceptions
        await asyncio.sleep(0)
        assert seen == []
        current = asyncio.current_task()
        assert [t for t in asyncio.all_tasks() if t is not current] == []
        timers = [h for h in loop._scheduled if not h.cancelled()]  # type: ignore[attr-defined]
        assert timers == []
    finally:
        loop.set_exception_handler(previous)


# -- a scripted server -------------------------------------------------------------------------


@dataclass
class Peer:
    """One connection, as the script sees it."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    number: int
    server: Hostile
    sent: int = 0

    async def request(self) -> bytes | None:
        """The head and body of one request; ``None`` once the client has closed."""
        try:
            head = await self.reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            body = await self.reader.readexactly(length)
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        self.server.requests.append((self.number, head + body))
        return head + body

    async def head_only(self) -> bytes:
        """The head of a request, its body left unread."""
        head = await self.reader.readuntil(b"\r\n\r\n")
        self.server.requests.append((self.number, head))
        return head

    async def send(self, data: bytes) -> None:
        try:
            self.writer.write(data)
            await self.writer.drain()
        except ConnectionError:
            self.server.ended(self.number, cut=True)
            raise
        self.sent += len(data)

    async def flood(self, first: bytes, more: bytes, cap: int = 64 * MIB) -> None:
        """``first``, then ``more`` again and again, until the client cuts the connection
        (which the server records) or ``cap`` bytes went out (the client never did)."""
        with contextlib.suppress(ConnectionError):
            await self.send(first)
            while self.sent < cap:
                await self.send(more)

    async def until_closed(self) -> None:
        """Until the client ends the connection (bounded), recording that it did."""
        with contextlib.suppress(ConnectionError):
            async with asyncio.timeout(LIVENESS_S):
                while await self.reader.read(1 << 20):
                    pass
        self.server.ended(self.number, cut=True)

    def reset(self) -> None:
        """End the connection with a TCP reset instead of an orderly close."""
        sock = self.writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()


Script = Callable[[Peer], Awaitable[None]]


@dataclass
class Hostile:
    script: Script
    url: str = ""
    connections: int = 0
    requests: list[tuple[int, bytes]] = field(default_factory=list)
    cut: list[int] = field(default_factory=list)  # connections the client ended
    gone: set[int] = field(default_factory=set)  # connections over, whoever ended them
    peers: list[Peer] = field(default_factory=list)
    change: asyncio.Event = field(default_factory=asyncio.Event)

    def ended(self, number: int, *, cut: bool) -> None:
        if cut and number not in self.cut:
            self.cut.append(number)
        self.gone.add(number)
        self.change.set()

    async def until_gone(self, number: int) -> None:
        async with asyncio.timeout(LIVENESS_S):
            while number not in self.gone:
                self.change.clear()
                await self.change.wait()

    @property
    def sent(self) -> int:
        return sum(peer.sent for peer in self.peers)


@contextlib.asynccontextmanager
async def hostile(script: Script) -> AsyncIterator[Hostile]:
    server = Hostile(script)
    handlers: set[asyncio.Task[None]] = set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        server.connections += 1
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * KIB)
        peer = Peer(reader, writer, server.connections, server)
        server.peers.append(peer)
        try:
            await server.script(peer)
        except ConnectionError:
            pass
        finally:
            server.ended(peer.number, cut=False)
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    listener = await asyncio.start_server(serve, "127.0.0.1", 0)
    server.url = f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}"
    try:
        yield server
    finally:
        listener.close()
        for peer in server.peers:
            peer.writer.transport.abort()
        if handlers:
            await asyncio.wait(handlers, timeout=LIVENESS_S)
        await listener.wait_closed()


def ok(body: bytes, *headers: bytes) -> bytes:
    extra = b"".join(h + b"\r\n" for h in headers)
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%b\r\n%b" % (len(body), extra, body)


def then_answering(misbehave: Script) -> Script:
    """Connection 1 runs ``misbehave``; later ones answer every request with ``fine``."""

    async def script(peer: Peer) -> None:
        if peer.number == 1:
            await misbehave(peer)
            return
        while await peer.request() is not None:
            await peer.send(ok(b"fine"))

    return script


@contextlib.asynccontextmanager
async def pool(**limits: Any) -> AsyncIterator[H1Pool]:
    made = H1Pool(limits=ClientLimits(**limits))
    try:
        yield made
    finally:
        await made.aclose()


async def get(http: H1Pool, url: str, timeout: float = LIVENESS_S) -> bytes:
    response = await http.request("GET", url, headers=NO_HEADERS, timeout=timeout)
    return response.body


async def recovers(http: H1Pool, server: Hostile) -> None:
    """The next request gets a fresh connection, and the misbehaving one ends."""
    assert await get(http, server.url) == b"fine"
    assert server.connections == 2
    assert [number for number, _ in server.requests][-1] == 2
    await server.until_gone(1)


# -- what a server may send: the limits ------------------------------------------------------


async def test_endless_header_lines_stop_at_the_header_count() -> None:
    async def endless_headers(peer: Peer) -> None:
        await peer.request()
        await peer.flood(b"HTTP/1.1 200 OK\r\n", b"X-Pad: %b\r\n" % (b"p" * 50))

    async with hostile(then_answering(endless_headers)) as server, pool() as http:
        with pytest.raises(LimitExceeded, match=r"max_header_count \(128\)|max_head_size"):
            await get(http, server.url)
        await recovers(http, server)
    assert server.cut[0] == 1
    assert server.peers[0].sent < 64 * KIB + SLACK


async def test_one_endless_header_stops_at_the_head_size() -> None:
    async def endless_value(peer: Peer) -> None:
        await peer.request()
        await peer.flood(b"HTTP/1.1 200 OK\r\nX-Long: ", b"v" * 16 * KIB)

    async with hostile(then_answering(endless_value)) as server, pool() as http:
        with pytest.raises(LimitExceeded, match=r"ClientLimits\.max_head_size \(65536 bytes\)"):
            await get(http, server.url)
        await recovers(http, server)
    assert server.peers[0].sent < 64 * KIB + SLACK


async def test_many_headers_at_once_pass_the_header_count() -> None:
    head = b"HTTP/1.1 200 OK\r\n" + b"X-H: 1\r\n" * 12 + b"Content-Length: 2\r\n\r\nhi"

    async def many(peer: Peer) -> None:
        await peer.request()
        await peer.send(head)
        await peer.until_closed()

    async with hostile(then_answering(many)) as server, pool(max_header_count=10) as http:
        with pytest.raises(LimitExceeded, match=r"more than ClientLimits\.max_header_count \(10\)"):
            await get(http, server.url)
        await recovers(http, server)


async def test_an_endless_status_line_stops_at_its_limit() -> None:
    async def endless_reason(peer: Peer) -> None:
        await peer.request()
        await peer.flood(b"HTTP/1.1 200 ", b"O" * 4 * KIB)

    async with hostile(then_answering(endless_reason)) as server, pool() as http:
        with pytest.raises(LimitExceeded, match=r"ClientLimits\.max_status_line \(8192 bytes\)"):
            await get(http, server.url)
        await recovers(http, server)
    assert server.peers[0].sent < 8 * KIB + SLACK


async def test_endless_informational_responses_stop_at_the_head_size() -> None:
    async def always_continue(peer: Peer) -> None:
        await peer.request()
        await peer.flood(b"", b"HTTP/1.1 100 Continue\r\n\r\n" * 100)

    async with hostile(then_answering(always_continue)) as server, pool() as http:
        with pytest.raises(LimitExceeded, match="max_head_size"):
            await get(http, server.url)
        await recovers(http, server)


@pytest.mark.parametrize("framing", ["chunked", "until close", "content-length"])
async def test_an_endless_unary_body_stops_at_the_body_size(framing: str) -> None:
    chunk = b"b" * 64 * KIB
    first, more = {
        "chunked": (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"%x\r\n%b\r\n" % (len(chunk), chunk),
        ),
        "until close": (b"HTTP/1.0 200 OK\r\n\r\n", chunk),
        "content-length": (b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n", chunk),
    }[framing]

    async def endless_body(peer: Peer) -> None:
        await peer.request()
        await peer.flood(first, more)

    async with (
        hostile(then_answering(endless_body)) as server,
        pool(max_body_size=1 * MIB) as http,
    ):
        with pytest.raises(LimitExceeded, match=r"ClientLimits\.max_body_size \(1048576 bytes\)"):
            await get(http, server.url)
        await recovers(http, server)
    assert server.cut[0] == 1
    assert server.peers[0].sent < 1 * MIB + SLACK


async def test_a_body_in_tiny_chunks_costs_its_size_not_twenty_times_it() -> None:
    pieces = b"2\r\nxx\r\n" * 4096  # 8 KiB of body in 2-byte chunks, per write

    async def tiny_chunks(peer: Peer) -> None:
        await peer.request()
        await peer.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in range(64):
            await peer.send(pieces)
        await peer.send(b"0\r\n\r\n")
        await peer.until_closed()

    async with hostile(tiny_chunks) as server, pool() as http:
        tracemalloc.start()
        try:
            body = await get(http, server.url)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert body == b"xx" * 4096 * 64
    # Half a MiB kept as a quarter million objects of two bytes would take some 11 MiB.
    assert peak < 5 * MIB


async def test_the_default_body_size_is_16_mib() -> None:
    body = b"x" * (16 * MIB)

    async def sized(peer: Peer) -> None:
        while (request := await peer.request()) is not None:
            await peer.send(ok(body if b"/fits" in request else body + b"!"))

    async with hostile(sized) as server, pool() as http:
        assert len(await get(http, server.url + "/fits")) == 16 * MIB
        with pytest.raises(LimitExceeded, match="max_body_size"):
            await get(http, server.url + "/over")
        assert len(await get(http, server.url + "/fits")) == 16 * MIB
    assert [number for number, _ in server.requests] == [1, 1, 2]  # the refused one was cut


async def test_a_body_read_whole_from_a_stream_keeps_to_the_body_size() -> None:
    async def endless_error(peer: Peer) -> None:
        await peer.request()
        await peer.flood(
            b"HTTP/1.1 500 Oops\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n",
            b"4000\r\n%b\r\n" % (b"e" * 0x4000),
        )

    async with (
        hostile(then_answering(endless_error)) as server,
        pool(max_body_size=256 * KIB) as http,
    ):
        stream = await http.open_stream(
            "GET", server.url, headers=NO_HEADERS, timeout=LIVENESS_S, idle_timeout=LIVENESS_S
        )
        with pytest.raises(LimitExceeded, match="max_body_size"):
            await stream.read()
        await stream.aclose()
        await recovers(http, server)
    assert server.peers[0].sent < 256 * KIB + SLACK


def sse_head() -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%b\r\n" % (len(data), data)


@pytest.mark.parametrize(
    ("first", "more"),
    [
        (b"data: {", b"data: " + b"d" * 8 * KIB + b"\n"),  # data lines, never a blank one
        (b": ", b"c" * 8 * KIB),  # a comment line that never ends
        (b"data: {", b"d" * 8 * KIB),  # one data line that never ends
    ],
    ids=["data-lines", "endless-comment", "endless-line"],
)
async def test_an_endless_sse_event_stops_at_the_event_size(first: bytes, more: bytes) -> None:
    async def endless_event(peer: Peer) -> None:
        await peer.request()
        await peer.send(sse_head() + chunk(b"data: whole\n\n"))
        await peer.flood(chunk(first), chunk(more))

    async with (
        hostile(then_answering(endless_event)) as server,
        pool(max_sse_event_size=256 * KIB) as http,
    ):
        stream = await http.open_stream(
            "GET", server.url, headers=NO_HEADERS, timeout=LIVENESS_S, idle_timeout=LIVENESS_S
        )
        events = []
        with pytest.raises(InvalidResponseError, match=r"ClientLimits\.max_sse_event_size"):
            async for data in sse_payloads(stream, server.url, "SendStreamingMessage"):
                events.append(data)
        await stream.aclose()
        assert events == [b"whole"]  # what came whole before is not lost
        await recovers(http, server)
    assert server.peers[0].sent < 256 * KIB + SLACK


def test_the_sse_parser_bounds_an_event_however_it_is_split() -> None:
    parser = SSEParser(max_event_size=100)
    assert parser.feed(b"data: " + b"a" * 90 + b"\n\n") == [b"a" * 90]
    for _ in range(9):  # 11 bytes each, with the line feed that joins them
        assert parser.feed(b"data: " + b"b" * 10 + b"\n") == []
    with pytest.raises(SSEEventTooLarge, match="an SSE event is larger than the limit of 100"):
        parser.feed(b"data: " + b"b" * 10 + b"\n")
    parser = SSEParser(max_event_size=100)
    assert parser.feed(b": a comment that never ends") == []
    with pytest.raises(SSEEventTooLarge, match="an SSE line"):
        for _ in range(10):
            parser.feed(b"x" * 10)
    parser = SSEParser(max_event_size=100)
    with pytest.raises(SSEEventTooLarge, match="an SSE line") as caught:
        parser.feed(b"data: done\n\n: " + b"c" * 200)
    assert caught.value.events == [b"done"]  # the whole event before it is not lost
    with pytest.raises(SSEEventTooLarge, match="an SSE line"):
        parser.feed(b"\n\ndata: after\n\n")  # out of step from there: refused for good
    # Keep-alive comments between events cost nothing, however many.
    parser = SSEParser(max_event_size=100)
    assert parser.feed(b": keep-alive\n\n" * 1000 + b"data: x\n\n") == [b"x"]


def test_limits_are_checked_when_made() -> None:
    assert ClientLimits().max_body_size == 16 * MIB
    for bad in ({"max_head_size": 0}, {"max_body_size": -1}, {"max_header_count": 1.5}):
        with pytest.raises(ValueError, match="must be a positive int"):
            ClientLimits(**bad)
    with pytest.raises(ValueError, match="connect_timeout"):
        ClientLimits(connect_timeout=0)


# -- 1xx and protocol switches -----------------------------------------------------------------


@pytest.mark.parametrize(
    "switch",
    [
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n\x00\x00\x12\x04\x00",
    ],
    ids=["websocket", "bare", "h2c-with-frames"],
)
async def test_a_protocol_switch_is_an_invalid_response_and_cuts_the_connection(
    switch: bytes,
) -> None:
    async def switching(peer: Peer) -> None:
        await peer.request()
        await peer.send(switch)
        await peer.until_closed()

    async with hostile(then_answering(switching)) as server, pool() as http:
        with pytest.raises(MalformedResponse, match=r"switched protocols \(101\)"):
            await get(http, server.url)
        await recovers(http, server)
    assert server.cut == [1]


async def test_a_protocol_switch_reaches_the_public_client_as_invalid_response() -> None:
    async def switching(peer: Peer) -> None:
        while (request := await peer.request()) is not None:
            if request.startswith(b"GET " + CARD_PATH.encode()):
                await peer.send(ok(encode(card(peer.server.url + "/"))))
            else:
                await peer.send(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n")
                await peer.until_closed()
                return

    async with (
        hostile(switching) as server,
        Client.connect(server.url, card_cache=CardCache()) as client,
    ):
        with pytest.raises(InvalidResponseError, match="switched protocols"):
            await client.get_task("t1")


async def test_informational_responses_are_skipped() -> None:
    async def informing(peer: Peer) -> None:
        while await peer.request() is not None:
            await peer.send(
                b"HTTP/1.1 100 Continue\r\n\r\n"
                b"HTTP/1.1 103 Early Hints\r\nLink: </x>; rel=preload\r\n\r\n"
                b"HTTP/1.1 102 Processing\r\n\r\n"
            )
            await peer.send(ok(b"final", b"X-Final: yes"))

    async with hostile(informing) as server, pool() as http:
        response = await http.request("GET", server.url, headers=NO_HEADERS, timeout=LIVENESS_S)
        assert (response.status, response.body) == (200, b"final")
        assert dict(response.headers) == {"content-length": "5", "x-final": "yes"}
        assert await get(http, server.url) == b"final"
    assert server.connections == 1  # kept alive across them


async def test_a_status_below_100_is_refused() -> None:
    async def odd(peer: Peer) -> None:
        await peer.request()
        await peer.send(b"HTTP/1.1 099 Odd\r\nContent-Length: 0\r\n\r\n")
        await peer.until_closed()

    async with hostile(then_answering(odd)) as server, pool() as http:
        with pytest.raises(MalformedResponse, match="no valid status"):
            await get(http, server.url)
        await recovers(http, server)


# -- bodies and their ends ---------------------------------------------------------------------


async def test_204_and_304_carry_no_body_and_keep_the_connection() -> None:
    async def empty(peer: Peer) -> None:
        while (request := await peer.request()) is not None:
            if b"/204" in request:
                await peer.send(b"HTTP/1.1 204 No Content\r\n\r\n")
            else:
                await peer.send(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 1234\r\n\r\n")

    async with hostile(empty) as server, pool() as http:
        for path, status in (("/204", 204), ("/304", 304), ("/204", 204)):
            response = await http.request(
                "GET", server.url + path, headers=NO_HEADERS, timeout=LIVENESS_S
            )
            assert (response.status, response.body) == (status, b"")
    assert server.connections == 1


async def test_a_body_after_204_is_not_read_as_the_next_answer() -> None:
    async def body_after_204(peer: Peer) -> None:
        await peer.request()
        await peer.send(b"HTTP/1.1 204 No Content\r\n\r\n" + ok(b"smuggled"))
        await peer.until_closed()

    async with hostile(then_answering(body_after_204)) as server, pool() as http:
        response = await http.request("GET", server.url, headers=NO_HEADERS, timeout=LIVENESS_S)
        assert (response.status, response.body) == (204, b"")
        await recovers(http, server)  # "fine", never "smuggled"


@pytest.mark.parametrize(
    ("sent", "expected"),
    [
        (b"", "before any response came"),
        (b"HTTP/1.1 200 OK\r\nContent-Le", "before the response ended"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", "before the response ended"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "before the response ended"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", "response ended"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", "ended"),
    ],
    ids=["no-answer", "mid-head", "after-head", "short-body", "mid-chunk", "no-last-chunk"],
)
async def test_a_server_closing_early_is_a_disconnect_never_a_short_success(
    sent: bytes, expected: str
) -> None:
    async def closing(peer: Peer) -> None:
        await peer.request()
        await peer.send(sent)  # and the script ends: the connection closes in order

    async with hostile(then_answering(closing)) as server, pool() as http:
        with pytest.raises(Disconnected, match=f"closed the connection {expected}|{expected}"):
            await http.request("POST", server.url, headers=NO_HEADERS, body=b"{}", timeout=5)
        await recovers(http, server)


@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\npart\r\n",
        b"HTTP/1.0 200 OK\r\n\r\npart",  # until close: a reset is no close
    ],
    ids=["content-length", "chunked", "until-close"],
)
async def test_a_reset_mid_body_is_a_disconnect(head: bytes) -> None:
    async def resetting(peer: Peer) -> None:
        await peer.request()
        await peer.send(head)
        await asyncio.sleep(0.05)  # so that the client has read the part before the reset
        peer.reset()

    async with hostile(then_answering(resetting)) as server, pool() as http:
        with pytest.raises(Disconnected, match="reset the connection before the response ended"):
            await get(http, server.url)
        await recovers(http, server)


async def test_http_1_0_bodies_end_at_the_close_and_are_not_reused() -> None:
    async def old(peer: Peer) -> None:
        await peer.request()
        await peer.send(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nall of ")
        await peer.send(b"it")

    async with hostile(old) as server, pool() as http:
        assert await get(http, server.url) == b"all of it"
        assert await get(http, server.url) == b"all of it"
    assert server.connections == 2


async def test_a_head_then_close_without_length_is_an_empty_body() -> None:
    async def head_only(peer: Peer) -> None:
        await peer.request()
        await peer.send(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")

    async with hostile(head_only) as server, pool() as http:
        assert await get(http, server.url) == b""


async def test_a_second_answer_to_one_request_is_never_read_as_the_next() -> None:
    async def twice(peer: Peer) -> None:
        await peer.request()
        await peer.send(ok(b"first") + ok(b"second"))
        await peer.until_closed()

    async with hostile(then_answering(twice)) as server, pool() as http:
        assert await get(http, server.url) == b"first"
        await recovers(http, server)  # "fine": the second answer went with its connection


async def test_bytes_on_an_idle_connection_close_it() -> None:
    async def chatty(peer: Peer) -> None:
        await peer.request()
        await peer.send(ok(b"one"))
        await asyncio.sleep(0.01)
        await peer.send(ok(b"unasked"))
        await peer.until_closed()

    async with hostile(then_answering(chatty)) as server, pool() as http:
        assert await get(http, server.url) == b"one"
        await server.until_gone(1)  # cut by the client as the unasked answer came
        assert server.cut == [1]
        await recovers(http, server)


async def test_a_server_that_never_answers_times_out() -> None:
    async def mute(peer: Peer) -> None:
        await peer.request()
        await peer.until_closed()

    async with hostile(then_answering(mute)) as server, pool() as http:
        with pytest.raises(ReadTimeout):
            await get(http, server.url, timeout=0.2)
        await recovers(http, server)


async def test_a_server_trickling_its_answer_is_bounded_by_the_call_timeout() -> None:
    async def trickling(peer: Peer) -> None:
        await peer.request()
        await peer.send(b"HTTP/1.1 200 OK\r\n")
        for _ in range(1000):  # bounded; one header byte every 10 ms keeps "reading" busy
            await peer.send(b"X")
            await asyncio.sleep(0.01)

    async with hostile(then_answering(trickling)) as server, pool() as http:
        with pytest.raises(ReadTimeout):
            await get(http, server.url, timeout=0.3)
        await recovers(http, server)


@pytest.mark.parametrize(
    ("answer", "match"),
    [
        (b"SSH-2.0-OpenSSH_9.6\r\n", "not valid HTTP/1.1"),
        (b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", "not valid HTTP/1.1"),
        (b"HTTP/1.1 2000 OK\r\n\r\n", "not valid HTTP/1.1"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunk size"),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffff\r\n",
            "overflow",
        ),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhiXX", "not valid"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nhi", "Duplicate"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Content-Length"),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\nhi",
            "not valid",
        ),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nxx", "transfer coding 'gzip'"),
        (b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 0\r\n\r\n", "br-encoded"),
    ],
    ids=[
        "ssh-banner",
        "tls-record",
        "four-digit-status",
        "bad-chunk-size",
        "chunk-size-overflow",
        "chunk-without-crlf",
        "two-lengths",
        "negative-length",
        "length-and-chunked",
        "unasked-transfer-coding",
        "unasked-content-coding",
    ],
)
async def test_garbage_is_a_malformed_response(answer: bytes, match: str) -> None:
    async def garbage(peer: Peer) -> None:
        await peer.request()
        await peer.send(answer)
        await peer.until_closed()

    async with hostile(then_answering(garbage)) as server, pool() as http:
        with pytest.raises(MalformedResponse, match=match):
            await get(http, server.url)
        await recovers(http, server)


async def test_an_answer_before_the_request_was_sent_whole_ends_the_connection() -> None:
    big = b"x" * (32 * MIB)  # more than loopback buffers take while the server does not read

    async def early(peer: Peer) -> None:
        await peer.head_only()
        await peer.send(ok(b"too big, not reading it"))  # keep-alive, body left unread
        await peer.until_closed()

    async with hostile(then_answering(early)) as server, pool() as http:
        response = await http.request(
            "POST", server.url, headers=NO_HEADERS, body=big, timeout=LIVENESS_S
        )
        assert response.body == b"too big, not reading it"
        # The rest of the body must not follow as if it were the next request.
        await recovers(http, server)
    assert server.cut[0] == 1


async def test_an_early_answer_ending_at_its_close_stops_the_request_being_sent() -> None:
    big = b"x" * (32 * MIB)

    async def refusing(peer: Peer) -> None:
        await peer.head_only()
        await peer.send(b"HTTP/1.1 413 Content Too Large\r\n\r\ntoo big")  # ends at the close
        peer.writer.write_eof()  # an orderly FIN, still reading (a close would reset)
        await peer.until_closed()

    async with hostile(then_answering(refusing)) as server, pool() as http:
        response = await http.request(
            "POST", server.url, headers=NO_HEADERS, body=big, timeout=LIVENESS_S
        )
        assert (response.status, response.body) == (413, b"too big")
        await recovers(http, server)
    assert server.cut[0] == 1


# -- connecting --------------------------------------------------------------------------------


async def test_connecting_is_bounded_by_the_connect_timeout() -> None:
    async def never_handshakes(peer: Peer) -> None:
        await peer.until_closed()

    async with hostile(never_handshakes) as server, pool(connect_timeout=0.2) as http:
        https = server.url.replace("http:", "https:")
        with pytest.raises(ConnectTimeout, match=r"ClientLimits\.connect_timeout: 0\.2 s"):
            async with asyncio.timeout(LIVENESS_S / 2):  # well before the call's own timeout
                await get(http, https, timeout=3 * LIVENESS_S)


# -- through the public client -----------------------------------------------------------------


def card(url: str, binding: str = "JSONRPC") -> AgentCard:
    return AgentCard(
        name="Hostile",
        description="Answers badly on purpose",
        version="1",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding=binding, protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="s", name="s", description="s", tags=["t"])],
    )


def agent(binding: str, answer: Callable[[Peer, bytes], Awaitable[None]]) -> Script:
    """Serves its card, and answers every other request with ``answer``."""

    async def script(peer: Peer) -> None:
        while (request := await peer.request()) is not None:
            if request.startswith(b"GET " + CARD_PATH.encode()):
                await peer.send(ok(encode(card(peer.server.url + "/", binding))))
            else:
                await answer(peer, request)
                return

    return script


async def endless_result(peer: Peer, request: bytes) -> None:
    identifier = json.loads(request.partition(b"\r\n\r\n")[2])["id"]
    await peer.flood(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
        + chunk(b'{"jsonrpc":"2.0","id":%d,"result":{"x":"' % identifier),
        chunk(b"r" * 64 * KIB),
    )


@pytest.mark.parametrize("over", ["native", "httpx"])
async def test_the_client_refuses_an_endless_answer(over: str) -> None:
    limits = ClientLimits(max_body_size=512 * KIB)
    async with contextlib.AsyncExitStack() as stack:
        server = await stack.enter_async_context(hostile(agent("JSONRPC", endless_result)))
        http_client = None
        if over == "httpx":
            http_client = await stack.enter_async_context(httpx.AsyncClient())
        client = await stack.enter_async_context(
            Client.connect(
                server.url, card_cache=CardCache(), limits=limits, http_client=http_client
            )
        )
        with pytest.raises(InvalidResponseError, match=r"ClientLimits\.max_body_size") as caught:
            await client.get_task("t1")
        assert caught.value.url == server.url + "/"
    assert server.sent < 512 * KIB + SLACK


async def test_an_endless_card_is_an_invalid_card() -> None:
    async def endless_card(peer: Peer) -> None:
        await peer.request()
        await peer.flood(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n" + chunk(b'{"name":"'),
            chunk(b"n" * 64 * KIB),
        )

    limits = ClientLimits(max_body_size=256 * KIB)
    async with hostile(endless_card) as server:
        with pytest.raises(InvalidAgentCardError, match=r"ClientLimits\.max_body_size"):
            await Client.connect(server.url, card_cache=CardCache(), limits=limits)
    assert server.sent < 256 * KIB + SLACK


async def endless_sse_event(peer: Peer, request: bytes) -> None:
    await peer.flood(sse_head() + chunk(b"data: {"), chunk(b"e" * 64 * KIB))


@pytest.mark.parametrize("over", ["native", "httpx"])
@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_the_client_refuses_an_endless_stream_event(over: str, binding: str) -> None:
    limits = ClientLimits(max_sse_event_size=512 * KIB)
    async with contextlib.AsyncExitStack() as stack:
        server = await stack.enter_async_context(hostile(agent(binding, endless_sse_event)))
        http_client = None
        if over == "httpx":
            http_client = await stack.enter_async_context(httpx.AsyncClient())
        client = await stack.enter_async_context(
            Client.connect(
                server.url, card_cache=CardCache(), limits=limits, http_client=http_client
            )
        )
        with pytest.raises(InvalidResponseError, match=r"ClientLimits\.max_sse_event_size"):
            async for _ in client.stream("hi"):
                pass
    assert server.sent < 512 * KIB + SLACK


async def test_endless_headers_over_httpx_end_in_a_client_error() -> None:
    async def endless_headers(peer: Peer, request: bytes) -> None:
        await peer.flood(b"HTTP/1.1 200 OK\r\n", b"X-Pad: %b\r\n" % (b"p" * 50))

    async with (
        hostile(agent("JSONRPC", endless_headers)) as server,
        httpx.AsyncClient() as http_client,
        Client.connect(server.url, card_cache=CardCache(), http_client=http_client) as client,
    ):
        with pytest.raises(ClientError):  # httpx's own head limit (100 KiB)
            await client.get_task("t1")
    assert server.sent < 100 * KIB + SLACK


async def test_the_client_maps_timeouts_and_disconnects() -> None:
    async def mute(peer: Peer, request: bytes) -> None:
        await peer.until_closed()

    async def closing(peer: Peer, request: bytes) -> None:
        await peer.send(b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{")

    async with (
        hostile(agent("JSONRPC", mute)) as server,
        Client.connect(server.url, card_cache=CardCache(), timeout=0.2) as client,
    ):
        with pytest.raises(A2ATimeoutError):
            await client.get_task("t1")
    async with (
        hostile(agent("JSONRPC", closing)) as server,
        Client.connect(server.url, card_cache=CardCache()) as client,
    ):
        with pytest.raises(A2AConnectionError, match="before the response ended"):
            await client.get_task("t1")


async def test_a_proxied_pool_applies_the_limits_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """URLs the environment proxies go through httpx: the body limit is counted the same."""

    async def proxy(peer: Peer) -> None:  # a "proxy" that answers itself, endlessly
        await peer.request()
        await peer.flood(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", chunk(b"p" * 64 * KIB)
        )

    async with hostile(proxy) as server:
        monkeypatch.setenv("HTTP_PROXY", server.url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        http = PooledExchange(limits=ClientLimits(max_body_size=256 * KIB))
        try:
            with pytest.raises(LimitExceeded, match="max_body_size"):
                await http.request(
                    "GET", "http://agent.invalid/", headers=NO_HEADERS, timeout=LIVENESS_S
                )
        finally:
            await http.aclose()
    assert server.sent < 256 * KIB + SLACK
