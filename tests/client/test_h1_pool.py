"""The native HTTP/1.1 pool (``transports/_h1.py``) against servers on loopback that misbehave
on purpose: raw asyncio servers in the test's loop, and blocking socket servers in a thread of
their own where the client must not see the server act (a close its event loop has not
noticed yet). What is checked is what the server saw: connections, requests, closes."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from peerwire.client import CardCache, Client, ClientLimits
from peerwire.client.transports._exchange import PooledExchange
from peerwire.client.transports._h1 import (
    ConnectFailed,
    ConnectTimeout,
    Disconnected,
    H1Pool,
    InvalidURL,
    MalformedResponse,
    PoolTimeout,
    ReadTimeout,
)
from peerwire.client.transports._http import client_error
from peerwire.client.transports._proxy import EnvironmentProxies
from peerwire.client.transports.base import CallOptions
from peerwire.client.transports.jsonrpc import JsonRpcTransport
from peerwire.errors import A2AConnectionError, A2ATimeoutError, InvalidResponseError
from peerwire.server.card import CARD_PATH
from peerwire.types import GetTaskRequest, Task, encode

from .conftest import TIMEOUT_S, peer_card

NO_HEADERS: dict[str, str] = {}


# -- a raw server in the test's loop -----------------------------------------------------------


@dataclass
class Request:
    line: str
    headers: dict[str, str]
    body: bytes
    connection: int  # which connection (1, 2, ...) it came on


async def read_request(reader: asyncio.StreamReader, connection: int) -> Request | None:
    """One request off the wire; ``None`` once the client has closed the connection."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for header in lines:
        if header:
            name, _, value = header.partition(":")
            headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return Request(line, headers, body, connection)


def ok(body: bytes, *extra: str) -> bytes:
    head = "".join(f"{h}\r\n" for h in extra)
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%b\r\n%b" % (len(body), head.encode(), body)


@dataclass
class Peer:
    """What one connection's handler works with."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    number: int
    server: RawServer

    async def request(self) -> Request | None:
        request = await read_request(self.reader, self.number)
        if request is not None:
            self.server.requests.append(request)
            self.server.arrived.set()
        return request

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()


Handler = Callable[[Peer], Awaitable[None]]


@dataclass
class RawServer:
    handler: Handler
    url: str = ""
    connections: int = 0
    open: int = 0
    most_open: int = 0
    requests: list[Request] = field(default_factory=list)
    ended: asyncio.Event = field(default_factory=asyncio.Event)  # set as a connection ends
    arrived: asyncio.Event = field(default_factory=asyncio.Event)  # set as a request comes

    async def until_requests(self, count: int) -> None:
        """Until ``count`` requests have come in (bounded)."""
        async with asyncio.timeout(TIMEOUT_S):
            while len(self.requests) < count:
                self.arrived.clear()
                await self.arrived.wait()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        try:
            await self.handler(Peer(reader, writer, self.connections, self))
        except ConnectionError:
            pass  # the client went away: what some tests want
        finally:
            self.open -= 1
            writer.close()
            self.ended.set()

    async def until_closed(self) -> None:
        """Until every connection has ended (bounded)."""
        async with asyncio.timeout(TIMEOUT_S):
            while self.open:
                self.ended.clear()
                await self.ended.wait()


@contextlib.asynccontextmanager
async def raw_server(
    handler: Handler, *, tls: ssl.SSLContext | None = None
) -> AsyncIterator[RawServer]:
    server = RawServer(handler)
    writers: list[asyncio.StreamWriter] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        await server.serve(reader, writer)

    listener = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=tls)
    port = listener.sockets[0].getsockname()[1]
    server.url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    try:
        yield server
    finally:
        listener.close()
        for writer in writers:
            writer.close()
        with contextlib.suppress(TimeoutError):
            await server.until_closed()
        await listener.wait_closed()


async def answering(peer: Peer) -> None:
    """Keep-alive: answers every request with its own request line."""
    while (request := await peer.request()) is not None:
        await peer.send(ok(request.line.encode()))


@contextlib.asynccontextmanager
async def pool(
    limits: ClientLimits | None = None, ssl_context: ssl.SSLContext | None = None
) -> AsyncIterator[H1Pool]:
    made = H1Pool(limits=limits or ClientLimits(), ssl_context=ssl_context)
    try:
        yield made
    finally:
        await made.aclose()


async def get(http: H1Pool, url: str, timeout: float | None = TIMEOUT_S) -> bytes:
    response = await http.request("GET", url, headers=NO_HEADERS, timeout=timeout)
    assert response.status == 200
    return response.body


# -- keep-alive and bodies ----------------------------------------------------------------------


async def test_sequential_requests_share_one_kept_alive_connection() -> None:
    async with raw_server(answering) as server, pool() as http:
        for i in range(5):
            assert await get(http, f"{server.url}/n/{i}?q=1") == f"GET /n/{i}?q=1 HTTP/1.1".encode()
    assert server.connections == 1
    assert [r.headers["host"] for r in server.requests] == [server.url[7:]] * 5


async def test_bodies_by_length_chunked_and_until_close() -> None:
    async def chunked(peer: Peer) -> None:
        while await peer.request() is not None:
            await peer.send(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"5\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\n\r\n"
            )

    async def until_close(peer: Peer) -> None:
        await peer.request()
        await peer.send(b"HTTP/1.1 200 OK\r\n\r\nall of ")
        await peer.send(b"it, until the end")

    async with pool() as http:
        async with raw_server(chunked) as server:
            assert await get(http, server.url) == b"hello world"
            assert await get(http, server.url) == b"hello world"
            assert server.connections == 1
        async with raw_server(until_close) as server:
            assert await get(http, server.url) == b"all of it, until the end"
            assert await get(http, server.url) == b"all of it, until the end"
            assert server.connections == 2  # such a connection cannot be reused


async def test_informational_responses_are_skipped_and_empty_ones_read() -> None:
    async def informing(peer: Peer) -> None:
        while (request := await peer.request()) is not None:
            await peer.send(b"HTTP/1.1 100 Continue\r\n\r\n")
            if request.line.startswith("DELETE"):
                await peer.send(b"HTTP/1.1 204 No Content\r\n\r\n")
            else:
                await peer.send(ok(b"{}", "Content-Type: application/json", "X-Twice: a"))

    async with raw_server(informing) as server, pool() as http:
        response = await http.request("DELETE", server.url + "/x", headers={}, timeout=TIMEOUT_S)
        assert (response.status, response.body) == (204, b"")
        response = await http.request(
            "POST", server.url, headers={"Content-Type": "text/plain"}, body=b"hi", timeout=5
        )
        assert response.status == 200 and response.body == b"{}"
        assert response.headers["content-type"] == "application/json"
        assert response.headers.get("x-twice") == "a"
    assert server.connections == 1
    assert server.requests[1].body == b"hi"
    assert server.requests[1].headers["content-length"] == "2"


async def test_a_response_asking_to_close_is_not_reused() -> None:
    async def closing(peer: Peer) -> None:
        while await peer.request() is not None:
            await peer.send(ok(b"bye", "Connection: close"))
            return

    async with raw_server(closing) as server, pool() as http:
        assert await get(http, server.url) == b"bye"
        assert await get(http, server.url) == b"bye"
    assert server.connections == 2


async def test_a_second_response_to_one_request_drops_the_connection() -> None:
    async def doubling(peer: Peer) -> None:
        while await peer.request() is not None:
            await peer.send(ok(b"one") + ok(b"two"))

    async with raw_server(doubling) as server, pool() as http:
        assert await get(http, server.url) == b"one"
        assert await get(http, server.url) == b"one"
    assert server.connections == 2


# -- connections per origin and the line of callers --------------------------------------------


def holding(permits: asyncio.Queue[None]) -> Handler:
    """Answers each request once the test puts a permit in ``permits``."""

    async def handler(peer: Peer) -> None:
        while (request := await peer.request()) is not None:
            await permits.get()
            await peer.send(ok(request.line.split()[1].encode()))

    return handler


async def settle() -> None:
    for _ in range(20):  # bounded: lets started tasks reach their first real wait
        await asyncio.sleep(0)


async def test_callers_beyond_max_connections_wait_in_line() -> None:
    permits: asyncio.Queue[None] = asyncio.Queue()
    async with (
        raw_server(holding(permits)) as server,
        pool(limits=ClientLimits(max_connections=2)) as http,
    ):
        calls = []
        for i in range(6):
            calls.append(asyncio.create_task(get(http, f"{server.url}/{i}")))
            await settle()  # so that each caller is in line before the next comes
        await server.until_requests(2)
        for _ in range(6):
            permits.put_nowait(None)
        bodies = await asyncio.wait_for(asyncio.gather(*calls), TIMEOUT_S)
    assert bodies == [f"/{i}".encode() for i in range(6)]
    assert server.most_open == 2
    # First come, first served: the server got them in the order they were made.
    assert [r.line.split()[1] for r in server.requests] == [f"/{i}" for i in range(6)]


async def test_a_caller_waiting_too_long_for_a_connection_times_out() -> None:
    permits: asyncio.Queue[None] = asyncio.Queue()
    async with (
        raw_server(holding(permits)) as server,
        pool(limits=ClientLimits(max_connections=1)) as http,
    ):
        first = asyncio.create_task(get(http, server.url + "/first"))
        await settle()
        with pytest.raises(PoolTimeout):
            await get(http, server.url + "/second", timeout=0.2)
        # A caller that gave up while waiting does not lose the connection for the others.
        waiting = asyncio.create_task(get(http, server.url + "/gives-up"))
        await settle()
        last = asyncio.create_task(get(http, server.url + "/last"))
        await settle()
        waiting.cancel()
        permits.put_nowait(None)
        permits.put_nowait(None)
        assert await asyncio.wait_for(first, TIMEOUT_S) == b"/first"
        assert await asyncio.wait_for(last, TIMEOUT_S) == b"/last"
    assert server.connections == 1
    assert [r.line.split()[1] for r in server.requests] == ["/first", "/last"]


async def test_a_cancelled_request_closes_its_connection_and_frees_its_slot() -> None:
    permits: asyncio.Queue[None] = asyncio.Queue()
    async with (
        raw_server(holding(permits)) as server,
        pool(limits=ClientLimits(max_connections=1)) as http,
    ):
        stuck = asyncio.create_task(get(http, server.url + "/stuck"))
        await settle()
        after = asyncio.create_task(get(http, server.url + "/after"))
        await settle()
        stuck.cancel()
        permits.put_nowait(None)
        permits.put_nowait(None)
        assert await asyncio.wait_for(after, TIMEOUT_S) == b"/after"
        with pytest.raises(asyncio.CancelledError):
            await stuck
    assert server.connections == 2  # half an exchange: that connection was not reused


# -- streams ----------------------------------------------------------------------------------


async def test_a_stream_arrives_as_sent_and_its_connection_is_reused() -> None:
    second_part = asyncio.Event()

    async def streaming(peer: Peer) -> None:
        await peer.request()
        await peer.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n")
        await second_part.wait()
        await peer.send(b"6\r\nsecond\r\n0\r\n\r\n")
        await answering(peer)

    async with raw_server(streaming) as server, pool() as http:
        stream = await http.open_stream(
            "GET", server.url, headers={}, timeout=TIMEOUT_S, idle_timeout=TIMEOUT_S
        )
        chunks = stream.chunks()
        assert await anext(chunks) == b"first"  # before the server sent the rest
        second_part.set()
        assert [chunk async for chunk in chunks] == [b"second"]
        await stream.aclose()
        assert await get(http, server.url) == b"GET / HTTP/1.1"
    assert server.connections == 1


async def test_an_abandoned_stream_closes_its_connection() -> None:
    async def stalling(peer: Peer) -> None:
        request = await peer.request()
        assert request is not None
        if request.line.startswith("GET /stream"):
            await peer.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n")
            await peer.reader.read()  # until the client closes
            return
        await peer.send(ok(b"plain"))

    async with raw_server(stalling) as server, pool() as http:
        stream = await http.open_stream(
            "GET", server.url + "/stream", headers={}, timeout=TIMEOUT_S, idle_timeout=TIMEOUT_S
        )
        assert await anext(stream.chunks()) == b"a"
        await stream.aclose()
        await server.until_closed()  # the client closed it
        assert await get(http, server.url) == b"plain"
    assert server.connections == 2


async def test_a_silent_stream_times_out_after_its_idle_time() -> None:
    async def silent(peer: Peer) -> None:
        await peer.request()
        await peer.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n")
        await peer.reader.read()

    async with raw_server(silent) as server, pool() as http:
        stream = await http.open_stream(
            "GET", server.url, headers={}, timeout=0.2, idle_timeout=0.3
        )
        chunks = stream.chunks()
        assert await anext(chunks) == b"a"
        with pytest.raises(ReadTimeout, match=r"nothing for 0\.3 s"):
            await anext(chunks)
        await stream.aclose()
        await server.until_closed()


async def test_a_slow_answer_times_out_and_its_connection_is_closed() -> None:
    async def mute(peer: Peer) -> None:
        await peer.request()
        await peer.reader.read()

    async with raw_server(mute) as server, pool() as http:
        with pytest.raises(ReadTimeout):
            await get(http, server.url, timeout=0.2)
        await server.until_closed()


# -- connecting -------------------------------------------------------------------------------


async def test_refused_connections_and_bad_urls() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # bound, not listening: connections are refused
        port = sock.getsockname()[1]
        async with pool() as http:
            with pytest.raises(ConnectFailed, match=f"127.0.0.1:{port}"):
                await get(http, f"http://127.0.0.1:{port}/")
            for url in ("ftp://x/", "http:///nohost", "http://x:port/"):
                with pytest.raises(InvalidURL):
                    await get(http, url)


async def test_connecting_is_bounded_by_the_timeout() -> None:
    async def never_handshakes(peer: Peer) -> None:
        await peer.reader.read()

    async with raw_server(never_handshakes) as server, pool() as http:
        https = server.url.replace("http:", "https:")
        with pytest.raises(ConnectTimeout):
            await get(http, https, timeout=0.3)


# -- servers closing kept-alive connections ---------------------------------------------------


@dataclass
class ThreadedServer:
    """A blocking server in a thread: ``script(sock, number)`` runs per connection."""

    script: Callable[[socket.socket, int], None]
    url: str = ""
    requests: list[Request] = field(default_factory=list)
    connections: int = 0


def recv_request(sock: socket.socket, number: int, server: ThreadedServer) -> Request | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines)}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(1 << 20)
        if not chunk:
            return None
        body += chunk
    request = Request(line, headers, body, number)
    server.requests.append(request)
    return request


@contextlib.contextmanager
def threaded_server(script: Callable[[socket.socket, int], None]) -> Iterator[ThreadedServer]:
    server = ThreadedServer(script)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(TIMEOUT_S)
    server.url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop = threading.Event()

    def accept() -> None:
        threads = []
        while not stop.is_set():
            try:
                sock, _ = listener.accept()
            except OSError:
                break
            if stop.is_set():  # the wake-up call below
                sock.close()
                break
            server.connections += 1
            sock.settimeout(TIMEOUT_S)

            def run(sock: socket.socket = sock, number: int = server.connections) -> None:
                with sock, contextlib.suppress(OSError):
                    script(sock, number)

            thread = threading.Thread(target=run, daemon=True)
            thread.start()
            threads.append(thread)
        for thread in threads:
            thread.join(TIMEOUT_S)

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield server
    finally:
        stop.set()
        # accept() is not interrupted by closing the socket: wake it with a connection.
        with contextlib.suppress(OSError), socket.create_connection(listener.getsockname()):
            pass
        acceptor.join(TIMEOUT_S)
        listener.close()


def script_closing_after_first(
    server: Callable[[], ThreadedServer], closed: threading.Event, close_now: threading.Event
) -> Callable[[socket.socket, int], None]:
    """Connection 1: answers one request, closes when told (and says so). Later ones: answer
    everything."""

    def script(sock: socket.socket, number: int) -> None:
        while (request := recv_request(sock, number, server())) is not None:
            sock.sendall(ok(f"{request.line} #{number}".encode()))
            if number == 1:
                close_now.wait(TIMEOUT_S)
                sock.close()
                closed.set()
                return

    return script


async def test_a_close_noticed_while_idle_costs_nothing() -> None:
    closed, close_now = threading.Event(), threading.Event()
    servers: list[ThreadedServer] = []
    with threaded_server(script_closing_after_first(lambda: servers[0], closed, close_now)) as s:
        servers.append(s)
        async with pool() as http:
            assert await get(http, s.url + "/a") == b"GET /a HTTP/1.1 #1"
            close_now.set()
            assert await asyncio.to_thread(closed.wait, TIMEOUT_S)  # the loop runs meanwhile
            await asyncio.sleep(0.05)
            assert await get(http, s.url + "/b") == b"GET /b HTTP/1.1 #2"
    assert [r.connection for r in s.requests] == [1, 2]


async def test_a_close_the_loop_has_not_seen_is_found_before_reuse() -> None:
    closed, close_now = threading.Event(), threading.Event()
    servers: list[ThreadedServer] = []
    with threaded_server(script_closing_after_first(lambda: servers[0], closed, close_now)) as s:
        servers.append(s)
        async with pool() as http:
            assert await get(http, s.url + "/a") == b"GET /a HTTP/1.1 #1"
            close_now.set()
            # Blocking on purpose: the event loop must not process the close, and the
            # connection must look idle long enough to be checked before reuse.
            assert closed.wait(TIMEOUT_S)
            time.sleep(1.2)  # noqa: ASYNC251
            assert await get(http, s.url + "/b") == b"GET /b HTTP/1.1 #2"
    assert [r.connection for r in s.requests] == [1, 2]


async def test_a_request_that_could_not_be_sent_whole_is_sent_again_once() -> None:
    closed, close_now = threading.Event(), threading.Event()
    servers: list[ThreadedServer] = []
    big = b"x" * (48 << 20)  # more than loopback socket buffers take: the write stays pending
    with threaded_server(script_closing_after_first(lambda: servers[0], closed, close_now)) as s:
        servers.append(s)
        async with pool() as http:
            assert await get(http, s.url + "/a") == b"GET /a HTTP/1.1 #1"
            close_now.set()
            assert closed.wait(TIMEOUT_S)  # blocking: the loop has not seen the close
            time.sleep(0.05)  # noqa: ASYNC251 (the close reaches this socket, not the loop)
            response = await http.request(
                "POST", s.url + "/big", headers={}, body=big, timeout=TIMEOUT_S
            )
            assert response.body == b"POST /big HTTP/1.1 #2"
    assert [(r.connection, len(r.body)) for r in s.requests] == [(1, 0), (2, len(big))]


async def test_a_request_the_server_may_have_acted_on_is_never_sent_again() -> None:
    servers: list[ThreadedServer] = []

    def script(sock: socket.socket, number: int) -> None:
        request = recv_request(sock, number, servers[0])
        assert request is not None
        sock.sendall(ok(b"first"))
        recv_request(sock, number, servers[0])  # the second request: read, then no answer

    with threaded_server(script) as s:
        servers.append(s)
        async with pool() as http:
            assert await get(http, s.url + "/a") == b"first"
            with pytest.raises(Disconnected, match="before any response came"):
                await http.request("POST", s.url + "/b", headers={}, body=b"{}", timeout=5)
    assert [(r.line, r.connection) for r in s.requests] == [
        ("GET /a HTTP/1.1", 1),
        ("POST /b HTTP/1.1", 1),
    ]
    assert s.connections == 1


async def test_garbage_is_an_invalid_response() -> None:
    async def garbage(peer: Peer) -> None:
        await peer.request()
        await peer.send(b"SMTP ready\r\n\r\n")

    async with raw_server(garbage) as server, pool() as http:
        with pytest.raises(MalformedResponse) as caught:
            await get(http, server.url)
    error = client_error(caught.value, server.url, "GetTask")
    assert isinstance(error, InvalidResponseError)


async def test_unasked_content_codings_are_refused() -> None:
    async def gzipping(peer: Peer) -> None:
        request = await peer.request()
        assert request is not None and request.headers["accept-encoding"] == "identity"
        await peer.send(ok(b"\x1f\x8b...", "Content-Encoding: gzip"))

    async with raw_server(gzipping) as server, pool() as http:
        with pytest.raises(MalformedResponse, match="gzip"):
            await get(http, server.url)


async def test_headers_that_would_split_the_request_are_refused() -> None:
    async with raw_server(answering) as server, pool() as http:
        for headers in ({"X-A": "1\r\nX-Injected: 1"}, {"X A": "1"}, {"X-A": "é"}, {"X": "\0"}):
            with pytest.raises(ValueError):
                await http.request("GET", server.url, headers=headers, timeout=TIMEOUT_S)
        # Framing headers are this client's own: a caller's are dropped, not doubled.
        await http.request(
            "GET", server.url, headers={"Host": "evil", "Content-Length": "9"}, timeout=5
        )
    assert server.requests[-1].headers["host"] == server.url[7:]
    assert "content-length" not in server.requests[-1].headers


# -- closing ----------------------------------------------------------------------------------


async def test_closing_the_pool_closes_its_connections() -> None:
    async def busy_or_not(peer: Peer) -> None:
        while (request := await peer.request()) is not None:
            if request.line.startswith("GET /busy"):
                await peer.reader.read()  # never answers; until the client closes
                return
            await peer.send(ok(b"idle"))

    async with raw_server(busy_or_not) as server:
        http = H1Pool()
        busy = asyncio.create_task(get(http, server.url + "/busy"))
        await server.until_requests(1)
        assert await get(http, server.url + "/idle") == b"idle"  # on a second connection
        await http.aclose()
        with pytest.raises(Disconnected):
            await asyncio.wait_for(busy, TIMEOUT_S)
        await server.until_closed()
        assert server.connections == 2
        with pytest.raises(RuntimeError, match="closed"):
            await get(http, server.url)


# -- TLS --------------------------------------------------------------------------------------


async def test_https_with_the_system_store_or_a_given_context(tmp_path: Path) -> None:
    from security._pki import make_pki

    pki = make_pki(tmp_path)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(pki.directory / "server.pem", pki.directory / "server.key")
    server_tls.load_verify_locations(pki.client_ca_file)
    server_tls.verify_mode = ssl.CERT_OPTIONAL
    subjects: list[object] = []

    async def answering_with_peer(peer: Peer) -> None:
        subjects.append(peer.writer.get_extra_info("peercert"))
        await answering(peer)

    async with raw_server(answering_with_peer, tls=server_tls) as server:
        async with pool() as http:  # the system's trust store does not know the test CA
            with pytest.raises(ConnectFailed) as refused:
                await get(http, server.url)
            error = client_error(refused.value, server.url, "GetTask")
            assert isinstance(error, A2AConnectionError)
            assert "TLS handshake failed" in error.message
        trusting = ssl.create_default_context(cafile=pki.server_ca_file)
        async with pool(ssl_context=trusting) as http:
            assert await get(http, server.url + "/anonymous") == b"GET /anonymous HTTP/1.1"
        alice = pki.client("alice").ssl_context()
        async with pool(ssl_context=alice) as http:
            assert await get(http, server.url + "/alice") == b"GET /alice HTTP/1.1"
    assert subjects[-2] is None or subjects[-2] == {}
    alice_cert = subjects[-1]
    assert isinstance(alice_cert, dict)
    assert ((("commonName", "alice"),) in alice_cert["subject"]) is True


# -- proxies ----------------------------------------------------------------------------------


def test_which_urls_the_environment_proxies() -> None:
    proxies = EnvironmentProxies(
        {"http": "http://proxy:3128", "no": "internal.example, .corp, 10.0.0.1, localhost"}
    )
    assert proxies.applies_to("http://agent.example/a2a")
    assert not proxies.applies_to("https://agent.example/a2a")  # only http:// is proxied
    assert not proxies.applies_to("http://internal.example/")
    assert not proxies.applies_to("http://api.internal.example/")
    assert proxies.applies_to("http://corp/")  # ".corp" exempts subdomains only
    assert not proxies.applies_to("http://a.corp/")
    assert not proxies.applies_to("http://10.0.0.1:8080/")
    assert not proxies.applies_to("http://localhost:8000/")
    assert proxies.applies_to("http://10.0.0.2/")
    everything = EnvironmentProxies({"all": "socks5://proxy:1080", "https": "http://p:1"})
    assert everything.applies_to("https://agent.example/")
    assert not EnvironmentProxies({"all": "http://p:1", "no": "*"}).any
    assert not EnvironmentProxies({}).any


async def test_proxied_urls_go_through_httpx_and_the_rest_directly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def proxy(peer: Peer) -> None:
        while (request := await peer.request()) is not None:
            await peer.send(ok(b"via proxy: " + request.line.encode()))

    async with raw_server(proxy) as proxy_server, raw_server(answering) as direct:
        monkeypatch.setenv("HTTP_PROXY", proxy_server.url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        http = PooledExchange()
        try:
            reply = await http.request(
                "GET", "http://agent.example/a2a", headers={}, timeout=TIMEOUT_S
            )
            assert reply.body == b"via proxy: GET http://agent.example/a2a HTTP/1.1"
            reply = await http.request("GET", direct.url + "/x", headers={}, timeout=TIMEOUT_S)
            assert reply.body == b"GET /x HTTP/1.1"
        finally:
            await http.aclose()
        assert http.is_closed
    assert len(direct.requests) == 1


# -- through a transport and the client: peerwire's errors, closing --------------------------

TASK = b'{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}'


def rpc_result(request: Request, result: bytes) -> bytes:
    identifier = request.body.split(b'"id":', 1)[1].split(b",", 1)[0]
    return ok(b'{"jsonrpc":"2.0","id":%b,"result":%b}' % (identifier, result))


async def test_the_transport_maps_pool_failures_to_peerwire_errors() -> None:
    async def answers_then_stalls(peer: Peer) -> None:
        request = await peer.request()
        assert request is not None
        await peer.send(rpc_result(request, TASK))
        await peer.request()
        await peer.reader.read()  # never answers the second

    async with raw_server(answers_then_stalls) as server:
        http = PooledExchange()
        transport = JsonRpcTransport(server.url + "/", http, timeout=0.3)
        try:
            request = GetTaskRequest(id="t1")
            task = await transport.call("GetTask", request, Task, CallOptions())
            assert task.id == "t1"
            with pytest.raises(A2ATimeoutError, match=r"GetTask .* timed out"):
                await transport.call("GetTask", request, Task, CallOptions())
        finally:
            await http.aclose()
        await server.until_closed()
    assert server.connections == 1


async def test_a_client_closes_its_connections_when_it_closes() -> None:
    async def agent(peer: Peer) -> None:
        while (request := await peer.request()) is not None:
            if request.line.startswith("GET " + CARD_PATH):
                await peer.send(ok(encode(peer_card(peer.server.url + "/"))))
            else:
                await peer.send(rpc_result(request, TASK))

    async with raw_server(agent) as server:
        async with Client.connect(server.url, card_cache=CardCache(), timeout=TIMEOUT_S) as client:
            assert (await client.get_task("t1")).id == "t1"
            assert (await client.get_task("t1")).id == "t1"
            assert server.open == 1  # the card and both calls: one kept-alive connection
        await server.until_closed()
    assert [r.line.split()[0] for r in server.requests] == ["GET", "POST", "POST"]


async def test_the_card_follows_redirects_keeping_credentials_at_home() -> None:
    async def elsewhere(peer: Peer) -> None:
        while await peer.request() is not None:
            await peer.send(ok(encode(peer_card(peer.server.url + "/"))))

    async with raw_server(elsewhere) as other:

        async def redirecting(peer: Peer) -> None:
            while (request := await peer.request()) is not None:
                if request.line.startswith("GET /moved"):
                    await peer.send(
                        b"HTTP/1.1 307 Temporary Redirect\r\nLocation: %b%b\r\n"
                        b"Content-Length: 0\r\n\r\n" % (other.url.encode(), CARD_PATH.encode())
                    )
                else:
                    await peer.send(
                        b"HTTP/1.1 301 Moved\r\nLocation: /moved\r\nContent-Length: 0\r\n\r\n"
                    )

        async with raw_server(redirecting) as home:
            http = PooledExchange()
            try:
                card = await CardCache().fetch(
                    http, home.url + CARD_PATH, headers={"Authorization": "Bearer s3cret"}
                )
            finally:
                await http.aclose()
    assert card.supported_interfaces[0].url == other.url + "/"
    assert [r.headers.get("authorization") for r in home.requests] == ["Bearer s3cret"] * 2
    assert [r.headers.get("authorization") for r in other.requests] == [None]
