"""One connection fed by hand, so that every byte boundary can be tried: a pipeline cut at
any byte and then closed (FIN) or reset, a stray byte at any offset, the same bytes whole or
one at a time. No socket: an in-memory transport stands in for one (it honours pause and
resume like a real one), which makes a few thousand cases take about a second.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

from peerwire.httpd._connection import ConnectionSet, H1Connection

from ._hostile import POST, Answer, EchoApp, chunked, get, parse, post, request_tasks

TE = b"transfer-encoding: chunked\r\n"
REQUESTS = [
    get(b"/1"),
    post(b"abc", b"/2"),
    POST.replace(b"/", b"/3", 1) + TE + b"\r\n" + chunked(b"de", b"f", trailers=b"x-t: 1\r\n"),
    get(b"/4", b"content-length: 0\r\nexpect: 100-continue\r\n"),
]
DATA = b"".join(REQUESTS)
# Offsets at which a request ends.
BOUNDARIES = list(itertools.accumulate(len(r) for r in REQUESTS))
EXPECTED = [("/1", 0), ("/2", 3), ("/3", 3), ("/4", 0)]


class MemoryTransport(asyncio.Transport):
    """What H1Connection uses of a transport, in memory."""

    def __init__(self, protocol: H1Connection) -> None:
        super().__init__()
        self.protocol = protocol
        self.out = bytearray()
        self.closing = False
        self.paused = False
        self.eof_written = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 80), "peername": ("127.0.0.1", 5000)}.get(name, default)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        assert not self.eof_written, "a write after write_eof"
        self.out += data

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        self.eof_written = True

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self._lost(None)

    def abort(self) -> None:
        self._lost(None)

    def reset(self) -> None:
        self._lost(ConnectionResetError())

    def _lost(self, exc: Exception | None) -> None:
        if not self.closing:
            self.closing = True
            asyncio.get_running_loop().call_soon(self.protocol.connection_lost, exc)

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False


async def run(
    pieces: list[bytes], ending: str, app: EchoApp | None = None
) -> tuple[list[Answer], EchoApp, ConnectionSet]:
    """Feed ``pieces`` (waiting while reading is paused, as a socket would), then end as
    ``ending`` says: "fin", "rst", or "answers" (wait for the answers, then FIN)."""
    app = app or EchoApp()
    shared = ConnectionSet(app, scheme="http")
    loop = asyncio.get_running_loop()
    connection = H1Connection(shared, loop)
    transport = MemoryTransport(connection)
    connection.connection_made(transport)
    for piece in pieces:
        for _ in range(1000):
            if not transport.paused or transport.closing:
                break
            await asyncio.sleep(0)
        assert not transport.paused or transport.closing, "reading stayed paused"
        if transport.closing:
            break
        connection.data_received(piece)
        await asyncio.sleep(0)
    if ending == "answers":
        for _ in range(1000):
            answered = parse(bytes(transport.out), complete=False)[0]
            if transport.closing or len(answered) >= len(EXPECTED):
                break
            await asyncio.sleep(0)
        ending = "fin"
    if not transport.closing:
        if ending == "fin":
            if not connection.eof_received():
                transport.close()
        else:
            transport.reset()
    for _ in range(2000):
        if not shared.connections and not request_tasks():
            break
        await asyncio.sleep(0)
    assert not shared.connections, "the connection never closed"
    assert not request_tasks(), "a request task still runs"
    answers = [a for a in parse(bytes(transport.out))[0] if a.status >= 200]
    # Every request the app saw has ended, one way or the other.
    assert len(app.ends) == app.started
    return answers, app, shared


def echoed(answers: list[Answer]) -> list[tuple[str, int]]:
    return [(a.echo["path"], a.echo["length"]) for a in answers if a.status == 200]


DIRECT = pytest.mark.parametrize("direct", [False, True], ids=["asgi", "direct"])


@DIRECT
async def test_whole_or_byte_by_byte_the_answers_are_the_same(direct: bool) -> None:
    whole, _, _ = await run([DATA], "answers", EchoApp(direct=direct))
    single, _, _ = await run(
        [DATA[i : i + 1] for i in range(len(DATA))], "answers", EchoApp(direct=direct)
    )
    assert echoed(whole) == echoed(single) == EXPECTED


@DIRECT
async def test_cut_at_any_byte_then_fin(direct: bool) -> None:
    for cut in range(len(DATA) + 1):
        answers, _, _ = await run([DATA[:cut]], "fin", EchoApp(direct=direct))
        complete = sum(1 for b in BOUNDARIES if b <= cut)
        assert echoed(answers) == EXPECTED[:complete], cut
        # A request cut short is refused (it says why), and nothing follows it.
        cut_short = cut not in BOUNDARIES and cut > 0
        assert [a.status for a in answers] == [200] * complete + [400] * cut_short, cut


@DIRECT
async def test_cut_at_any_byte_then_reset(direct: bool) -> None:
    for cut in range(len(DATA) + 1):
        answers, app, _ = await run([DATA[:cut]], "rst", EchoApp(direct=direct))
        assert all(a.status == 200 for a in answers), cut
        assert set(app.ends) <= {"answered", "disconnect"}


@pytest.mark.parametrize("stray", [b"\x00", b"\n"])
async def test_a_stray_byte_anywhere_refuses_from_there(stray: bytes) -> None:
    for offset in range(len(DATA) + 1):
        data = DATA[:offset] + stray + DATA[offset:]
        answers, _, _ = await run([data[:offset], data[offset:]], "answers")
        before = sum(1 for b in BOUNDARIES if b <= offset)
        statuses = [a.status for a in answers]
        # The requests before the byte are answered as usual; from there on, at most one
        # refusal ends the connection (a byte inside a body is data, and may shift the rest).
        assert statuses[:before] == [200] * before, (offset, statuses)
        rest = statuses[before:]
        assert all(s == 200 for s in rest[:-1]), (offset, statuses)
        assert len(echoed(answers)) <= len(EXPECTED), (offset, statuses)
