"""Framing and smuggling, byte by byte, against peerwire and against uvicorn with h11.

Each case is one write: a request (or a few) followed by a sentinel request that is answered
only if the server is still in step. peerwire's answers must be exactly the expected ones,
and at least as strict as h11's: it refuses (4xx or 5xx, or no answer) whatever h11 refuses,
and never answers more requests than h11 does. ``vs_h11`` records the relation: "same",
"stricter" (peerwire refuses what h11 takes, each with its reason) or "laxer" (the few cases
where h11 is stricter on purpose: leniencies RFC 9112 allows that cannot desynchronise a
peer, each with its reason). After each case the server holds no connection or task.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import pytest

from ._hostile import (
    POST,
    SENTINEL,
    Answer,
    EchoApp,
    chunked,
    exchange,
    get,
    h11_server,
    post,
    serving,
    settled,
)


class Case(NamedTuple):
    id: str
    data: bytes
    statuses: list[int]  # peerwire's answers, the sentinel's included
    vs_h11: str = "same"
    why: str = ""


CL = b"content-length: 3\r\n"
TE = b"transfer-encoding: chunked\r\n"
EMPTY = b"\r\n0\r\n\r\n"  # the end of a head, then an empty chunked body
OK = [200, 200]  # the case, then the sentinel
STRICTER = "stricter"
LAXER = "laxer"


def te(value: bytes) -> bytes:
    """A POST head with this Transfer-Encoding, not yet ended."""
    return POST + b"transfer-encoding: " + value + b"\r\n"


def cl(value: bytes) -> bytes:
    return POST + b"content-length: " + value + b"\r\n\r\n"


def field(line: bytes) -> bytes:
    """A GET with one more field line."""
    return get(extra=line + b"\r\n")


def line(request_line: bytes, head: bytes = b"host: x\r\n") -> bytes:
    return request_line + b"\r\n" + head + b"\r\n"


# Each case's bytes; the test appends the sentinel.
CASES = [
    # -- well-formed, as a baseline ---------------------------------------------------------
    Case("content-length", post(b"abc"), OK),
    Case("chunked", POST + TE + b"\r\n" + chunked(b"ab", b"c"), OK),
    Case("chunk extensions", POST + TE + b"\r\n1;a=b\r\nx\r\n0\r\n\r\n", OK),
    Case("te with odd whitespace", te(b"\t chunked ") + EMPTY, OK),
    Case("te in capitals", te(b"CHUNKED") + EMPTY, OK),
    Case("cl with trailing space", cl(b"3 ") + b"abc", OK),
    Case("obs-text in a value", field(b"x-a: caf\xe9"), OK),
    Case("get with a body", field(b"content-length: 2") + b"ab", OK),
    Case("absolute form", line(b"GET http://x/a?b=1 HTTP/1.1"), OK),
    Case("asterisk form", line(b"OPTIONS * HTTP/1.1"), OK),
    Case("empty host", line(b"GET / HTTP/1.1", b"host:\r\n"), OK),
    Case("http/1.0 without host closes", line(b"GET / HTTP/1.0", b""), [200]),
    Case(
        "http/1.0 keep-alive",
        line(b"GET / HTTP/1.0", b"connection: keep-alive\r\n"),
        OK,
        LAXER,
        "h11 closes every HTTP/1.0 connection; keep-alive asked for is kept (RFC 9112 §9.3)",
    ),
    Case(
        "http/1.0 with te closes after its answer",
        line(b"POST / HTTP/1.0", b"connection: keep-alive\r\n" + TE) + chunked(b"a"),
        [200],
    ),
    Case("data after connection: close", field(b"connection: close"), [200]),
    Case(
        "upgrade is plain http, body and all",
        POST + b"connection: upgrade\r\nupgrade: h2c\r\n" + CL + b"\r\nabc",
        OK,
    ),
    Case(
        "upgrade with a chunked body",
        POST + b"connection: upgrade\r\nupgrade: x\r\n" + TE + b"\r\n" + chunked(b"abc"),
        OK,
    ),
    # -- Content-Length ---------------------------------------------------------------------
    Case("cl and te", POST + CL + TE + EMPTY, [400], STRICTER, "h11: TE wins"),
    Case("te and cl", POST + TE + CL + EMPTY, [400], STRICTER, "h11: TE wins"),
    Case("cl twice, equal", POST + CL + CL + b"\r\nabc", [400], STRICTER, "h11 takes one"),
    Case("cl list", cl(b"3, 3") + b"abc", [400], STRICTER, "h11 takes one"),
    Case("cl twice, different", POST + CL + b"content-length: 4\r\n\r\nabcd", [400]),
    Case("cl negative", cl(b"-3") + b"abc", [400]),
    Case("cl signed", cl(b"+3") + b"abc", [400]),
    Case("cl not a number", cl(b"abc") + b"abc", [400]),
    Case("cl overflow", cl(b"99999999999999999999999"), [400]),
    # h11 has no body limit: it waits for the body, then closes unanswered.
    Case("cl over the body limit", cl(b"1000000000000"), [413]),
    # -- Transfer-Encoding ------------------------------------------------------------------
    Case("te gzip, chunked", te(b"gzip, chunked") + EMPTY, [501]),
    Case("te chunked, identity", te(b"chunked, identity") + EMPTY, [400]),
    Case("te identity", te(b"identity") + b"\r\nabc", [400]),
    Case("te gzip", te(b"gzip") + b"\r\nabc", [400]),
    Case("te xchunked", te(b"xchunked") + EMPTY, [400]),
    Case("te chunked, chunked", te(b"chunked, chunked") + EMPTY, [400]),
    Case("te with an empty element", te(b"chunked,") + EMPTY, [400]),
    Case("te in two fields", te(b"gzip") + TE + EMPTY, [501]),
    Case("te chunked twice", POST + TE + TE + EMPTY, [400]),
    Case("te obs-fold", te(b"gzip,\r\n chunked") + EMPTY, [400]),
    Case(
        "te folded onto its own line", te(b"\r\n chunked") + EMPTY, [400], STRICTER, "h11 unfolds"
    ),
    Case("te space before the colon", POST + b"transfer-encoding : chunked\r\n" + EMPTY, [400]),
    # -- chunks -----------------------------------------------------------------------------
    # h11 takes up to 20 hex digits, waits for the chunk, then closes unanswered.
    Case("chunk size overflow", POST + TE + b"\r\nffffffffffffffffff\r\n", [400]),
    Case("chunk size not hex", POST + TE + b"\r\nzz\r\nab\r\n0\r\n\r\n", [400]),
    Case(
        "chunk size, then a space",
        POST + TE + b"\r\n1 \r\na\r\n0\r\n\r\n",
        [400],
        STRICTER,
        "h11 takes it",
    ),
    Case("chunk data too long", POST + TE + b"\r\n3\r\nabcX\r\n0\r\n\r\n", [400]),
    Case("chunk without its crlf", POST + TE + b"\r\n3\r\nabc0\r\n\r\n", [400]),
    Case(
        "chunk size of 25 digits",
        POST + TE + b"\r\n" + b"0" * 24 + b"1\r\na\r\n0\r\n\r\n",
        OK,
        LAXER,
        "h11 caps a chunk size at 20 hex digits; leading zeros leave no doubt about its value",
    ),
    # -- fields -----------------------------------------------------------------------------
    Case(
        "obs-fold",
        POST + b"x-a: 1\r\n 2\r\n" + cl(b"0")[len(POST) :],
        [400],
        STRICTER,
        "h11 unfolds",
    ),
    Case("bare lf", b"GET / HTTP/1.1\nhost: x\n\n", [400], STRICTER, "h11 takes LF"),
    Case(
        "bare lf in the head", b"GET / HTTP/1.1\r\nhost: x\n\r\n", [400], STRICTER, "h11 takes LF"
    ),
    Case("nul in a value", field(b"x-a: a\x00b"), [400]),
    Case("cr in a value", field(b"x-a: a\rb"), [400]),
    Case("control byte in a value", field(b"x-a: a\x01b"), [400], STRICTER, "h11 takes it"),
    Case("del in a value", field(b"x-a: a\x7fb"), [400], STRICTER, "h11 takes it"),
    Case("field without a colon", field(b"x-a"), [400]),
    Case("whitespace in a name", field(b"x-a\t: 1"), [400]),
    Case("empty name", field(b": 1"), [400]),
    Case(
        "200 fields",
        get(extra=b"".join(b"x-%d: v\r\n" % i for i in range(200))),
        [431],
        STRICTER,
        "h11 has no count limit",
    ),
    # -- Host -------------------------------------------------------------------------------
    Case("no host", line(b"GET / HTTP/1.1", b""), [400]),
    Case("two hosts", field(b"host: y"), [400]),
    Case("two hosts on http/1.0", line(b"GET / HTTP/1.0", b"host: x\r\nhost: y\r\n"), [400]),
    Case("host list", line(b"GET / HTTP/1.1", b"host: x, y\r\n"), [400], STRICTER, "h11 takes it"),
    # -- the request line -------------------------------------------------------------------
    Case("http/0.9", b"GET /\r\n\r\n", [400]),
    Case("http/2.0", line(b"GET / HTTP/2.0"), [505], STRICTER, "h11 takes any version"),
    Case("http/1.2", line(b"GET / HTTP/1.2"), [400], STRICTER, "h11 takes any version"),
    Case("method in lower case", line(b"get / HTTP/1.1"), [400], STRICTER, "h11: any token"),
    Case("unknown method", line(b"FROB / HTTP/1.1"), [400], STRICTER, "h11: any token"),
    Case("space in the target", line(b"GET /a b HTTP/1.1"), [400]),
    Case("authority form", line(b"GET x:80 HTTP/1.1"), [400], STRICTER, "h11: any target"),
    # h11 answers a 2xx to CONNECT without a body and switches protocols: no tunnels here.
    Case("connect", line(b"CONNECT x:443 HTTP/1.1"), [501]),
    Case(
        "empty line before the request",
        b"\r\n" + get(),
        OK,
        LAXER,
        "RFC 9112 §2.2: a server SHOULD ignore an empty line before a request line",
    ),
    Case("empty line between requests", get() + b"\r\n", OK, LAXER, "RFC 9112 §2.2, as above"),
    # -- pipelines --------------------------------------------------------------------------
    Case("three, then garbage", get() * 3 + b"BAD\r\n\r\n", [200, 200, 200, 400]),
    Case(
        "two, then a smuggling pair",
        get() * 2 + POST + CL + TE + EMPTY,
        [200, 200, 400],
        STRICTER,
        "h11: TE wins",
    ),
]


def outcome(answers: list[Answer]) -> tuple[bool, int]:
    """(refused: an error status or no answer at all, how many requests were answered)."""
    answered = sum(1 for a in answers if 200 <= a.status < 300)
    refused = not answers or any(a.status >= 400 for a in answers)
    return refused, answered


@pytest.fixture(scope="module")
def h11_port() -> Iterator[int]:
    with h11_server() as port:
        yield port


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_framing(case: Case, h11_port: int) -> None:
    app = EchoApp()
    async with serving(app) as (server, port):
        answers = await exchange(port, case.data + SENTINEL)
        assert [a.status for a in answers if a.status >= 200] == case.statuses
        for answer in answers:
            if answer.status >= 400:
                assert answer.headers["connection"] == "close"
                assert answer.body  # says why
        await settled(server)
    reference = await exchange(h11_port, case.data + SENTINEL, timeout=0.5, reference=True)
    refused, answered = outcome(answers)
    h11_refused, h11_answered = outcome(reference)
    statuses = [a.status for a in reference]
    if case.vs_h11 == LAXER:
        assert (h11_refused and not refused) or h11_answered < answered, statuses
        return
    assert answered <= h11_answered, statuses
    assert refused or not h11_refused, statuses
    if case.vs_h11 == STRICTER:
        assert (refused and not h11_refused) or answered < h11_answered, statuses
    else:
        assert (refused, answered) == (h11_refused, h11_answered), statuses


async def test_trailers_never_reach_the_headers(h11_port: int) -> None:
    body = chunked(b"abc", trailers=b"authorization: Bearer x\r\na2a-version: 9.9\r\n")
    data = POST + TE + b"\r\n" + body + SENTINEL
    async with serving(EchoApp()) as (server, port):
        answers = await exchange(port, data)
        await settled(server)
    assert [a.status for a in answers] == OK
    assert answers[0].echo["headers"] == ["host", "transfer-encoding"]
    assert answers[0].echo["length"] == 3
    reference = await exchange(h11_port, data, reference=True)
    assert reference[0].echo["headers"] == ["host", "transfer-encoding"]


async def test_expect_100_continue_on_both(h11_port: int) -> None:
    data = POST + b"expect: 100-continue\r\n" + CL + b"\r\nabc" + SENTINEL
    for port_of in ("peerwire", "h11"):
        if port_of == "h11":
            answers = await exchange(h11_port, data, reference=True)
        else:
            async with serving(EchoApp()) as (server, port):
                answers = await exchange(port, data)
                await settled(server)
        assert [a.status for a in answers if a.status >= 200] == OK, port_of
        assert answers[-2].echo["length"] == 3
