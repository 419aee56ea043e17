"""The direct calls peerwire's HTTP server offers the app it serves (``take_whole_body``,
``answer_whole``, ``write_part``, ``drained``): the same bytes on the wire as the ASGI
messages they stand for, ``None`` wherever they do not apply (a ``send``/``receive`` that is
not the server's own, a body still coming), and the ASGI rules kept (one answer per request).
Real sockets on loopback, on asyncio's loop and uvloop's."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from peerwire.httpd import answer_whole, take_whole_body, write_part

from ._hostile import (
    TIMEOUT_S,
    EchoApp,
    chunked,
    client,
    get,
    parse,
    post,
    serving,
    settled,
)

BOTH_LOOPS = True


@pytest.mark.parametrize("direct", [False, True], ids=["asgi", "direct"])
async def test_the_same_bytes_either_way_keep_alive_and_pipelined(direct: bool) -> None:
    """Three pipelined requests (a streamed answer among them) on one connection: the answers
    come in order, framed alike, and the connection stays open for a fourth."""
    app = EchoApp(parts=3, part_s=0.0, direct=direct)
    async with serving(app) as (server, port), client(port) as conn:
        await conn.send(post(b"abc") + get(b"/stream") + post(b"de", b"/x"))
        answers = await conn.read_answers(3, TIMEOUT_S)
        assert [a.status for a in answers] == [200, 200, 200]
        assert answers[0].echo["length"] == 3
        assert answers[1].body == b"part 0\npart 1\npart 2\n"
        assert answers[2].echo == {**answers[2].echo, "path": "/x", "length": 2}
        await conn.send(post(b"again"))
        (fourth,) = await conn.read_answers(1, TIMEOUT_S)
        assert fourth.echo["length"] == 5
    await settled(server)
    assert app.ends == ["answered"] * 4


async def test_a_chunked_body_still_coming_is_read_with_receive() -> None:
    """A body whose end has not arrived is not whole: the app reads it with ``receive()``."""
    app = EchoApp(direct=True)
    async with serving(app) as (server, port), client(port) as conn:
        head = b"POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n"
        await conn.send(head + b"3\r\nabc\r\n")
        await asyncio.sleep(0.05)
        await conn.send(chunked(b"defg"))
        (answer,) = await conn.read_answers(1, TIMEOUT_S)
        assert answer.echo["length"] == 7
    await settled(server)


class _Probe:
    """An app that tries the direct calls in ways they must refuse or decline."""

    def __init__(self) -> None:
        self.dispatcher = EchoApp().dispatcher
        self.seen: dict[str, Any] = {}

    def lifespan(self) -> Any:
        return EchoApp().lifespan()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return

        async def wrapped_send(message: dict[str, Any]) -> None:
            await send(message)

        async def wrapped_receive() -> dict[str, Any]:
            return await receive()  # type: ignore[no-any-return]

        # Not the server's own callables (a middleware's): declined, nothing written.
        self.seen["wrapped_body"] = take_whole_body(wrapped_receive)
        self.seen["wrapped_answer"] = answer_whole(wrapped_send, 200, [], b"x")
        self.seen["wrapped_part"] = write_part(wrapped_send, b"x")
        # A part before any answer began is an ASGI error, as the message would be.
        try:
            write_part(send, b"x")
        except RuntimeError as exc:
            self.seen["early_part"] = str(exc)
        body = take_whole_body(receive)
        self.seen["body"] = body
        self.seen["body_again"] = take_whole_body(receive)  # read already: not twice
        paused = answer_whole(send, 200, [(b"content-length", b"2")], b"ok")
        self.seen["paused"] = paused
        try:
            answer_whole(send, 200, [], b"twice")
        except RuntimeError as exc:
            self.seen["twice"] = str(exc)
        # After the answer, receive() says the exchange is over.
        self.seen["after"] = (await receive())["type"]


async def test_the_direct_calls_decline_what_is_not_theirs_and_keep_the_asgi_rules() -> None:
    app = _Probe()
    async with serving(app) as (server, port), client(port) as conn:
        await conn.send(post(b"hello"))
        (answer,) = await conn.read_answers(1, TIMEOUT_S)
    await settled(server)
    assert answer.status == 200
    assert answer.body == b"ok"
    seen = app.seen
    assert seen["wrapped_body"] is None
    assert seen["wrapped_answer"] is None
    assert seen["wrapped_part"] is None
    assert "outside a response" in seen["early_part"]
    assert seen["body"] == b"hello"
    assert seen["body_again"] is None
    assert seen["paused"] is False
    assert "twice" in seen["twice"]
    assert seen["after"] == "http.disconnect"


def test_every_call_declines_outside_peerwires_server() -> None:
    async def send(message: dict[str, Any]) -> None:
        raise AssertionError("not called")

    async def receive() -> dict[str, Any]:
        raise AssertionError("not called")

    assert take_whole_body(receive) is None
    assert answer_whole(send, 200, [], b"") is None
    assert write_part(send, b"") is None
    assert parse(b"")[0] == []
