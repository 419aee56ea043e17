"""A hostile HTTP/1.1 client on raw sockets, the small app it talks to, and the checks after
each case: no connection, request task or file descriptor of the server left behind.

The same client and app also run against uvicorn with h11 (``h11_server``), the framing
reference: a case peerwire accepts must not be one h11 refuses.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import struct
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

from peerwire.httpd import (
    DISCONNECT_EXTENSION,
    HTTPLimits,
    HTTPServer,
    answer_whole,
    drained,
    take_whole_body,
    write_part,
)

# Generous liveness bounds, never performance thresholds.
TIMEOUT_S = 5.0
SETTLE_S = 3.0

POST = b"POST / HTTP/1.1\r\nhost: x\r\n"
# Appended to a case: answered only if the server is still in step after it.
SENTINEL = b"GET /sentinel HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"


def get(path: bytes = b"/", extra: bytes = b"") -> bytes:
    return b"GET %b HTTP/1.1\r\nhost: x\r\n%b\r\n" % (path, extra)


def post(body: bytes, path: bytes = b"/", extra: bytes = b"") -> bytes:
    return b"POST %b HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n%b\r\n%b" % (
        path,
        len(body),
        extra,
        body,
    )


def chunked(*parts: bytes, trailers: bytes = b"") -> bytes:
    return b"".join(b"%x\r\n%b\r\n" % (len(p), p) for p in parts) + b"0\r\n" + trailers + b"\r\n"


# -- the app ----------------------------------------------------------------------------------


class _Runner:
    shutdown_grace = 0.5

    async def drain(self) -> None:
        return None


class _Dispatcher:
    runner = _Runner()


class EchoApp:
    """A tiny ASGI app (with what HTTPServer needs of a served app).

    ``/`` (any other path too) reads the whole body and answers 200 with JSON: the method,
    path, version, body length and header names it saw. ``/early`` answers without reading
    the body; ``/slow`` answers after ``slow_s`` seconds; ``/stream`` sends ``parts``
    chunks, one every ``part_s`` seconds, unless the client goes; ``/fail`` raises.
    ``ends`` records how each request ended: ``answered``, ``disconnect`` (receive() said
    so) or ``gone`` (a stream heard the client leave). ``direct``: the body, the answer and
    the stream's parts go through the server's direct calls (``take_whole_body``,
    ``answer_whole``, ``write_part``, what A2AApp uses) wherever they apply, ASGI messages
    elsewhere.
    """

    def __init__(
        self,
        *,
        slow_s: float = 0.3,
        parts: int = 5,
        part_s: float = 0.01,
        direct: bool = False,
    ) -> None:
        self.direct = direct
        self.dispatcher = _Dispatcher()
        self.slow_s = slow_s
        self.parts = parts
        self.part_s = part_s
        self.ends: list[str] = []
        self.started = 0

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        yield

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        self.started += 1
        path = scope["path"]
        if path == "/fail":
            raise RuntimeError("boom")
        if path == "/stream":
            await self._stream(scope, send)
            return
        length = 0
        whole = take_whole_body(receive) if self.direct and path != "/early" else None
        if whole is not None:
            length = len(whole)
        elif path != "/early":
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    self.ends.append("disconnect")
                    return
                length += len(message.get("body", b""))
                if not message.get("more_body", False):
                    break
        if path == "/slow":
            await asyncio.sleep(self.slow_s)
        echo = {
            "method": scope["method"],
            "path": path,
            "version": scope["http_version"],
            "length": length,
            "headers": [name.decode("latin-1") for name, _ in scope["headers"]],
        }
        body = json.dumps(echo).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        paused = answer_whole(send, 200, headers, body) if self.direct else None
        if paused is None:
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
        elif paused:
            await drained(send)
        self.ends.append("answered")

    async def _stream(self, scope: dict[str, Any], send: Any) -> None:
        gone = asyncio.Event()
        watch = scope["extensions"].get(DISCONNECT_EXTENSION) if scope.get("extensions") else None
        unwatch = watch(gone.set) if watch is not None else None
        try:
            await send({"type": "http.response.start", "status": 200, "headers": []})
            for i in range(self.parts):
                if gone.is_set():
                    self.ends.append("gone")
                    return
                part = b"part %d\n" % i
                paused = write_part(send, part) if self.direct else None
                if paused is None:
                    await send({"type": "http.response.body", "body": part, "more_body": True})
                elif paused:
                    await drained(send)
                await asyncio.sleep(self.part_s)
            await send({"type": "http.response.body", "body": b""})
            self.ends.append("gone" if gone.is_set() else "answered")
        finally:
            if unwatch is not None:
                unwatch()


# -- servers ----------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def serving(app: Any, **options: Any) -> AsyncIterator[tuple[HTTPServer, int]]:
    """peerwire's HTTPServer on 127.0.0.1, port 0, in this event loop."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    server = HTTPServer(app, limits=HTTPLimits(**options))
    task = asyncio.get_running_loop().create_task(server.serve(sock=sock))
    try:
        await asyncio.wait_for(server.started.wait(), TIMEOUT_S)
        yield server, sock.getsockname()[1]
    finally:
        server.request_exit()
        await asyncio.wait_for(task, TIMEOUT_S * 2)
        sock.close()


@contextlib.contextmanager
def h11_server() -> Iterator[int]:
    """uvicorn with ``--http h11`` serving an EchoApp, in a thread of its own; its port."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        EchoApp(),
        http="h11",
        ws="none",
        lifespan="off",
        log_level="critical",
        access_log=False,
        timeout_keep_alive=2,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(500):
            if server.started:
                break
            thread.join(0.01)
        assert server.started, "uvicorn did not start"
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(TIMEOUT_S * 2)
        sock.close()


def request_tasks() -> list[asyncio.Task[Any]]:
    """The server's request tasks still running in this loop."""
    return [
        task
        for task in asyncio.all_tasks()
        if getattr(task.get_coro(), "__qualname__", "") == "H1Connection._run"
    ]


async def settled(server: HTTPServer, within: float = SETTLE_S) -> None:
    """Every connection of ``server`` closed and every request task done, within a bound."""
    connections = server._connections.connections
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while connections or request_tasks():
        if loop.time() > deadline:
            raise AssertionError(
                f"still open after {within} s: {len(connections)} connections, "
                f"{len(request_tasks())} request tasks"
            )
        await asyncio.sleep(0.01)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


# -- the client -------------------------------------------------------------------------------


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def echo(self) -> dict[str, Any]:
        echoed: dict[str, Any] = json.loads(self.body)
        return echoed


def parse(data: bytes, *, complete: bool = True) -> tuple[list[Answer], bytes]:
    """The responses in ``data`` and what follows them; ``complete``: the tail must be empty."""
    answers: list[Answer] = []
    rest = data
    while rest:
        head, sep, after = rest.partition(b"\r\n\r\n")
        if not sep:
            break
        status_line, *lines = head.decode("latin-1").split("\r\n")
        status = int(status_line.split(" ")[1])
        headers: dict[str, str] = {}
        for line in lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if status < 200 or status in (204, 304):
            body = b""
        elif "content-length" in headers:
            length = int(headers["content-length"])
            if len(after) < length:
                break
            body, after = after[:length], after[length:]
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            decoded = _dechunk(after)
            if decoded is None:
                break
            body, after = decoded
        elif complete:
            body, after = after, b""  # close-delimited
        else:
            break
        answers.append(Answer(status, headers, body))
        rest = after
    if complete and rest:
        raise AssertionError(f"bytes that are no response: {rest[:200]!r}")
    return answers, rest


def _dechunk(data: bytes) -> tuple[bytes, bytes] | None:
    parts = []
    rest = data
    while True:
        line, sep, after = rest.partition(b"\r\n")
        if not sep:
            return None
        size = int(line.split(b";")[0], 16)
        if len(after) < size + 2:
            return None
        if size == 0:
            _, sep, after = after.partition(b"\r\n")  # no trailers from a server
            return b"".join(parts), after
        parts.append(after[:size])
        rest = after[size + 2 :]


class NotClosed(AssertionError):
    pass


class Client:
    """One raw connection: bytes out, bytes in, half-close (FIN) or reset (RST)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.received = b""

    @classmethod
    async def connect(cls, port: int) -> Client:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port), TIMEOUT_S
        )
        return cls(reader, writer)

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    def half_close(self) -> None:
        self.writer.write_eof()

    def reset(self) -> None:
        """Close with an RST: SO_LINGER on, zero seconds."""
        sock = self.writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()

    async def read_answers(self, count: int, timeout: float = TIMEOUT_S) -> list[Answer]:
        """The next ``count`` final responses on a connection that stays open, within
        ``timeout`` (no more may have come)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            answers, rest = parse(self.received, complete=False)
            finals = [a for a in answers if a.status >= 200]
            if len(finals) >= count:
                assert len(finals) == count, f"more than {count} answers came"
                self.received = rest
                return finals
            remaining = deadline - loop.time()
            assert remaining > 0, f"{count} answers never came; got {self.received[:300]!r}"
            try:
                chunk = await asyncio.wait_for(self.reader.read(65536), remaining)
            except TimeoutError:
                continue
            assert chunk, f"the server closed; got {self.received[:300]!r}"
            self.received += chunk

    async def read_to_end(self, timeout: float = TIMEOUT_S, *, strict: bool = True) -> list[Answer]:
        """Every response until the server closes (which it must, within ``timeout``);
        ``strict``: nothing else may come (else an incomplete response is dropped)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise NotClosed(f"the server did not close; got {self.received[:300]!r}")
            try:
                chunk = await asyncio.wait_for(self.reader.read(65536), remaining)
            except TimeoutError:
                continue
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                return parse(self.received, complete=strict)[0]
            self.received += chunk

    async def answers(self, count: int, timeout: float = TIMEOUT_S) -> list[Answer]:
        """The first ``count`` responses (the connection may stay open)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            answers, _ = parse(self.received, complete=False)
            if len(answers) >= count:
                return answers
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise AssertionError(f"{len(answers)} of {count} answers: {self.received!r}")
            with contextlib.suppress(TimeoutError):
                chunk = await asyncio.wait_for(self.reader.read(65536), remaining)
                if not chunk:
                    raise AssertionError(f"closed after {len(answers)} of {count} answers")
                self.received += chunk

    async def closed(self, timeout: float = TIMEOUT_S) -> bool:
        """Whether the server closes (EOF or RST) within ``timeout``; bytes read are kept."""
        try:
            await self.read_to_end(timeout, strict=False)
        except NotClosed:
            return False
        return True

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()


@contextlib.asynccontextmanager
async def client(port: int) -> AsyncIterator[Client]:
    conn = await Client.connect(port)
    try:
        yield conn
    finally:
        await conn.close()


async def exchange(
    port: int, data: bytes, *, timeout: float = TIMEOUT_S, reference: bool = False
) -> list[Answer]:
    """Send ``data``; the responses until the server closes, which it must within
    ``timeout``. ``reference``: a server (h11) still waiting then is sent a FIN, and has
    ``timeout`` more to answer and close; what is not a complete response is dropped."""
    async with client(port) as conn:
        with contextlib.suppress(ConnectionError):
            await conn.send(data)
        if not reference:
            return await conn.read_to_end(timeout)
        try:
            return await conn.read_to_end(timeout, strict=False)
        except NotClosed:
            with contextlib.suppress(OSError):
                conn.half_close()
            return await conn.read_to_end(timeout, strict=False)
