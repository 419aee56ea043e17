"""peerwire's HTTP/1.1 server on the wire: raw bytes over a real loopback socket.

What a client library hides is checked here byte by byte, with the A2A app: keep-alive and
pipelining, body framings (Content-Length, chunked, 100-continue), response framings
(Content-Length, chunked streams, HEAD), limits (431, 413, idle connections), malformed
requests (400), trailers that try to pass for headers, an app that fails (500), and the
shutdown order (a blocked caller gets its task's outcome). Hostile clients against a small
app: test_framing.py (with h11 as the reference), test_lifecycle.py, test_every_byte.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from peerwire import Agent, Message, TaskContext
from peerwire.httpd import CannotListenError, HTTPLimits, HTTPServer
from peerwire.server import create_app
from peerwire.server.asgi import A2AApp

from ._hostile import settled

TIMEOUT_S = 10.0

agent = Agent("Echo")
# The event "wait" messages wait for; a new one per test (an event belongs to one loop).
gate: list[asyncio.Event] = []


@agent.skill("echo")
async def echo(message: Message, ctx: TaskContext) -> str:
    if message.text == "wait":
        await gate[-1].wait()
    chunks = (message.metadata or {}).get("chunks", 0)
    for i in range(int(chunks)):
        await ctx.add_artifact(f"part {i}", artifact_id="a", append=i > 0)
    return message.text


def rpc(method: str, params: dict[str, Any], request_id: int = 1) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    ).encode()


def send_params(text: str, **metadata: Any) -> dict[str, Any]:
    message: dict[str, Any] = {
        "messageId": f"m-{text}",
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }
    if metadata:
        message["metadata"] = metadata
    return {"message": message}


def post(body: bytes, *, extra: bytes = b"", path: bytes = b"/") -> bytes:
    return (
        b"POST %b HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\na2a-version: 1.0\r\n"
        b"content-length: %d\r\n%b\r\n%b" % (path, len(body), extra, body)
    )


class Wire:
    """A raw connection: write bytes, read responses as (status, headers, body)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def response(self, *, head_only: bool = False) -> tuple[int, dict[str, str], bytes]:
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), TIMEOUT_S)
        status_line, *lines = head.decode("latin-1").split("\r\n")[:-2]
        status = int(status_line.split(" ")[1])
        headers: dict[str, str] = {}
        for line in lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if head_only or status in (100, 204, 304):
            return status, headers, b""
        if "content-length" in headers:
            body = await asyncio.wait_for(
                self.reader.readexactly(int(headers["content-length"])), TIMEOUT_S
            )
        elif headers.get("transfer-encoding") == "chunked":
            body = await self._chunks()
        else:
            body = await asyncio.wait_for(self.reader.read(), TIMEOUT_S)
        return status, headers, body

    async def _chunks(self) -> bytes:
        parts = []
        for _ in range(10_000):
            size = int((await asyncio.wait_for(self.reader.readline(), TIMEOUT_S)).strip(), 16)
            data = await asyncio.wait_for(self.reader.readexactly(size + 2), TIMEOUT_S)
            if size == 0:
                return b"".join(parts)
            parts.append(data[:-2])
        raise AssertionError("too many chunks")

    async def closed(self) -> bool:
        """Whether the server closed the connection (EOF within the timeout)."""
        return await asyncio.wait_for(self.reader.read(1), TIMEOUT_S) == b""


@contextlib.asynccontextmanager
async def serving(app: Any, **options: Any) -> AsyncIterator[tuple[HTTPServer, int]]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    server = HTTPServer(app, limits=HTTPLimits(**options))
    task = asyncio.get_running_loop().create_task(server.serve(sock=sock))
    try:
        await asyncio.wait_for(server.started.wait(), TIMEOUT_S)
        yield server, sock.getsockname()[1]
    finally:
        server.request_exit()
        await asyncio.wait_for(task, TIMEOUT_S * 3)
        sock.close()


@contextlib.asynccontextmanager
async def wire(port: int) -> AsyncIterator[Wire]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        yield Wire(reader, writer)
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


@pytest.fixture(autouse=True)
def fresh_gate() -> None:
    gate.append(asyncio.Event())


@pytest.fixture
async def port() -> AsyncIterator[int]:
    async with serving(create_app(agent, shutdown_grace=2.0)) as (_, bound):
        yield bound


def task_of(body: bytes) -> dict[str, Any]:
    reply = json.loads(body)
    assert "result" in reply, reply
    task: dict[str, Any] = reply["result"]["task"]
    return task


async def test_keep_alive_serves_several_requests_on_one_connection(port: int) -> None:
    async with wire(port) as conn:
        for i in range(3):
            await conn.send(post(rpc("SendMessage", send_params(f"hi {i}"), i)))
            status, headers, body = await conn.response()
            assert status == 200
            assert headers["content-type"] == "application/json"
            assert "date" in headers and "connection" not in headers
            assert task_of(body)["artifacts"][0]["parts"][0]["text"] == f"hi {i}"


async def test_pipelined_requests_are_answered_in_order(port: int) -> None:
    async with wire(port) as conn:
        await conn.send(
            b"".join(post(rpc("SendMessage", send_params(f"p{i}"), i)) for i in range(5))
        )
        for i in range(5):
            status, _, body = await conn.response()
            assert status == 200
            assert json.loads(body)["id"] == i
            assert task_of(body)["artifacts"][0]["parts"][0]["text"] == f"p{i}"


async def test_http_1_0_closes_after_the_answer(port: int) -> None:
    async with wire(port) as conn:
        await conn.send(b"GET /.well-known/agent-card.json HTTP/1.0\r\n\r\n")
        status, headers, body = await conn.response()
        assert status == 200 and json.loads(body)["name"] == "Echo"
        assert headers["connection"] == "close"
        assert await conn.closed()


async def test_connection_close_is_honoured(port: int) -> None:
    async with wire(port) as conn:
        await conn.send(
            b"GET /.well-known/agent-card.json HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
        )
        status, headers, _ = await conn.response()
        assert status == 200 and headers["connection"] == "close"
        assert await conn.closed()


async def test_a_chunked_request_body_is_read_whole(port: int) -> None:
    body = rpc("SendMessage", send_params("chunked"))
    head = (
        b"POST / HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\na2a-version: 1.0\r\n"
        b"transfer-encoding: chunked\r\n\r\n"
    )
    async with wire(port) as conn:
        await conn.send(head)
        for i in range(0, len(body), 7):  # in pieces, each in its own write
            piece = body[i : i + 7]
            await conn.send(b"%x\r\n%b\r\n" % (len(piece), piece))
            await asyncio.sleep(0)
        await conn.send(b"0\r\n\r\n")
        status, _, reply = await conn.response()
        assert status == 200
        assert task_of(reply)["artifacts"][0]["parts"][0]["text"] == "chunked"


async def test_expect_100_continue_gets_a_go_ahead_before_the_body(port: int) -> None:
    body = rpc("SendMessage", send_params("continued"))
    async with wire(port) as conn:
        await conn.send(post(body, extra=b"expect: 100-continue\r\n")[: -len(body)])
        status, _, _ = await conn.response(head_only=True)
        assert status == 100
        await conn.send(body)
        status, _, reply = await conn.response()
        assert status == 200
        assert task_of(reply)["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_a_stream_is_chunked_and_ends_with_the_last_chunk(port: int) -> None:
    async with wire(port) as conn:
        await conn.send(post(rpc("SendStreamingMessage", send_params("s", chunks=3))))
        status, headers, body = await conn.response()
        assert status == 200
        assert headers["content-type"] == "text/event-stream"
        assert headers["transfer-encoding"] == "chunked"
        events = [json.loads(line[5:]) for line in body.split(b"\n") if line.startswith(b"data:")]
        assert len(events) == 7  # task, working, 3 chunks, the returned text, completed
        assert events[-1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
        # The connection stays usable after the stream.
        await conn.send(b"GET /.well-known/agent-card.json HTTP/1.1\r\nhost: x\r\n\r\n")
        assert (await conn.response())[0] == 200


async def test_head_has_the_length_but_no_body(port: int) -> None:
    async with wire(port) as conn:
        await conn.send(b"HEAD /.well-known/agent-card.json HTTP/1.1\r\nhost: x\r\n\r\n")
        status, headers, _ = await conn.response(head_only=True)
        assert status == 200 and int(headers["content-length"]) > 0
        await conn.send(b"GET /.well-known/agent-card.json HTTP/1.1\r\nhost: x\r\n\r\n")
        status, headers, body = await conn.response()  # no stray body bytes in between
        assert status == 200 and len(body) == int(headers["content-length"])


async def test_a_malformed_request_gets_400_and_the_connection_closes(port: int) -> None:
    async with wire(port) as conn:
        await conn.send(b"NOT HTTP AT ALL\r\n\r\n")
        status, headers, _ = await conn.response()
        assert status == 400 and headers["connection"] == "close"
        assert await conn.closed()


async def test_an_oversized_head_gets_431(port: int) -> None:
    async with wire(port) as conn:
        await conn.send(b"GET / HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * 70_000 + b"\r\n\r\n")
        status, _, _ = await conn.response()
        assert status == 431
        assert await conn.closed()


async def test_too_many_header_lines_get_431(port: int) -> None:
    lines = b"".join(b"x-h%d: v\r\n" % i for i in range(200))
    async with wire(port) as conn:
        await conn.send(b"GET / HTTP/1.1\r\nhost: x\r\n" + lines + b"\r\n")
        assert (await conn.response())[0] == 431


async def test_a_body_over_the_limit_is_refused_without_reading_it() -> None:
    async with (
        serving(create_app(agent, max_body_bytes=1000)) as (_, port),
        wire(port) as conn,
    ):
        await conn.send(
            b"POST / HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            b"a2a-version: 1.0\r\ncontent-length: 5000000\r\n\r\n" + b"x" * 1000
        )
        status, headers, body = await conn.response()
        assert status == 413
        assert json.loads(body)["error"]["code"] == -32600
        # The rest of that body never comes: the connection cannot be reused, so it closes.
        assert headers["connection"] == "close"


async def test_a_percent_encoded_path_is_decoded_and_absolute_targets_work(port: int) -> None:
    async with wire(port) as conn:
        await conn.send(b"GET /.well-known/agent%2Dcard.json HTTP/1.1\r\nhost: x\r\n\r\n")
        assert (await conn.response())[0] == 200
        await conn.send(b"GET http://x/.well-known/agent-card.json HTTP/1.1\r\nhost: x\r\n\r\n")
        assert (await conn.response())[0] == 200
        await conn.send(b"GET /nowhere?x=1 HTTP/1.1\r\nhost: x\r\n\r\n")
        assert (await conn.response())[0] == 404


async def test_an_idle_connection_is_closed() -> None:
    async with (
        serving(create_app(agent), idle_timeout=0.2) as (_, port),
        wire(port) as conn,
    ):
        await conn.send(b"GET /.well-known/agent-card.json HTTP/1.1\r\nhost: x\r\n\r\n")
        assert (await conn.response())[0] == 200
        assert await conn.closed()  # after ~0.2 s of silence
    async with (
        serving(create_app(agent), idle_timeout=0.2, head_timeout=0.3) as (_, port),
        wire(port) as conn,
    ):
        await conn.send(b"GET / HTTP/1.1\r\nhost: x\r\n")  # a head that never completes
        status, headers, body = await conn.response()
        assert status == 408 and headers["connection"] == "close"
        assert body.startswith(b"Request Timeout")
        assert await conn.closed()


class Failing:
    """An agent app with a route that fails, before or after its answer started."""

    def __init__(self, base: A2AApp) -> None:
        self.base = base
        self.dispatcher = base.dispatcher

    def lifespan(self) -> contextlib.AbstractAsyncContextManager[None]:
        return self.base.lifespan()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["path"] == "/fail":
            raise RuntimeError("boom")
        if scope["path"] == "/silent":
            return
        if scope["path"] == "/half":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"partial", "more_body": True})
            raise RuntimeError("boom")
        await self.base(scope, receive, send)


@pytest.mark.parametrize("path", [b"/fail", b"/silent"])
async def test_an_app_that_does_not_answer_gives_500(path: bytes, caplog: Any) -> None:
    async with serving(Failing(create_app(agent))) as (_, port), wire(port) as conn:
        await conn.send(b"GET %b HTTP/1.1\r\nhost: x\r\n\r\n" % path)
        status, headers, body = await conn.response()
        assert status == 500 and body == b"Internal Server Error"
        assert headers["connection"] == "close"
    assert "peerwire" in caplog.text


async def test_an_app_failing_mid_answer_closes_the_connection() -> None:
    async with serving(Failing(create_app(agent))) as (_, port), wire(port) as conn:
        await conn.send(b"GET /half HTTP/1.1\r\nhost: x\r\n\r\n")
        head = await asyncio.wait_for(conn.reader.readuntil(b"\r\n\r\n"), TIMEOUT_S)
        assert b"transfer-encoding: chunked" in head
        rest = await asyncio.wait_for(conn.reader.read(), TIMEOUT_S)
        assert b"partial" in rest and not rest.endswith(b"0\r\n\r\n")  # no clean end


async def test_a_client_leaving_a_stream_does_not_disturb_the_server(port: int) -> None:
    async with wire(port) as conn:
        await conn.send(post(rpc("SendStreamingMessage", send_params("wait"))))
        head = await asyncio.wait_for(conn.reader.readuntil(b"\r\n\r\n"), TIMEOUT_S)
        assert b"text/event-stream" in head
    gate[-1].set()
    async with wire(port) as conn:
        await conn.send(post(rpc("SendMessage", send_params("after"))))
        status, _, body = await conn.response()
        assert status == 200 and task_of(body)["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_shutdown_answers_a_blocked_caller_then_closes() -> None:
    async with (
        serving(create_app(agent, shutdown_grace=0.5)) as (server, port),
        wire(port) as idle,
        wire(port) as busy,
    ):
        await idle.send(b"GET /.well-known/agent-card.json HTTP/1.1\r\nhost: x\r\n\r\n")
        assert (await idle.response())[0] == 200
        await busy.send(post(rpc("SendMessage", send_params("wait"))))
        await asyncio.sleep(0.1)  # the handler is waiting now
        server.request_exit()
        assert await idle.closed()  # an idle keep-alive connection goes at once
        status, headers, body = await busy.response()  # the blocked one gets its outcome
        assert status == 200 and headers["connection"] == "close"
        assert task_of(body)["status"]["state"] == "TASK_STATE_FAILED"


async def test_an_address_in_use_is_a_clear_error() -> None:
    taken = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        server = HTTPServer(create_app(agent))
        port = taken.getsockname()[1]
        with pytest.raises(CannotListenError, match=f"cannot listen on 127.0.0.1:{port}"):
            await asyncio.wait_for(server.serve(host="127.0.0.1", port=port), TIMEOUT_S)
    finally:
        taken.close()


async def test_a_trailer_cannot_pose_as_a_header(port: int) -> None:
    # A2A-Version 9.9 would be refused; sent as a trailer, it must not count.
    body = rpc("SendMessage", send_params("trailed"))
    async with wire(port) as conn:
        await conn.send(
            b"POST / HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            b"a2a-version: 1.0\r\ntransfer-encoding: chunked\r\n\r\n"
            b"%x\r\n%b\r\n0\r\na2a-version: 9.9\r\nauthorization: Bearer x\r\n\r\n"
            % (len(body), body)
        )
        status, _, reply = await conn.response()
        assert status == 200
        assert task_of(reply)["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_pipelined_calls_then_garbage_get_their_answers_then_400(port: int) -> None:
    async with wire(port) as conn:
        await conn.send(
            b"".join(post(rpc("SendMessage", send_params(f"g{i}"), i)) for i in range(3))
            + b"GARBAGE\r\n\r\n"
        )
        for i in range(3):
            status, _, body = await conn.response()
            assert status == 200 and json.loads(body)["id"] == i
        status, headers, _ = await conn.response()
        assert status == 400 and headers["connection"] == "close"
        assert await conn.closed()


async def test_clients_that_leave_a_body_unsent_leave_nothing_behind() -> None:
    body = rpc("SendMessage", send_params("never"))
    async with serving(create_app(agent)) as (server, port):
        conns = [await asyncio.open_connection("127.0.0.1", port) for _ in range(20)]
        for _, writer in conns:
            writer.write(post(body)[: -len(body) // 2])  # the head and half the body
            writer.write_eof()
        for reader, writer in conns:
            answer = await asyncio.wait_for(reader.read(), TIMEOUT_S)
            assert answer.startswith(b"HTTP/1.1 400 ")
            writer.close()
        await settled(server)
        async with wire(port) as conn:  # and the server serves on
            await conn.send(post(rpc("SendMessage", send_params("after"))))
            status, _, reply = await conn.response()
            assert status == 200 and task_of(reply)["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize(
    "bad",
    [
        {"head_timeout": 0},
        {"body_timeout": -1},
        {"max_head_bytes": 0},
        {"max_headers": 0},
        {"max_body_bytes": 0},
        {"idle_timeout": -0.1},
    ],
)
def test_http_limits_refuse_what_cannot_work(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="HTTPLimits"):
        HTTPLimits(**bad)  # type: ignore[arg-type]
