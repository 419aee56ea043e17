"""SSE framing and parsing (peerwire.bindings.sse), against the WHATWG rules that apply here."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from peerwire.bindings.sse import KEEPALIVE, SSEParser, event_framer, frame, iter_events
from peerwire.types import Encoded, encode


def test_frame_is_one_data_line() -> None:
    assert frame(b'{"a":1}') == b'data: {"a":1}\n\n'
    assert frame(b"{}", b"error") == b"event: error\ndata: {}\n\n"
    assert KEEPALIVE.startswith(b":") and KEEPALIVE.endswith(b"\n\n")


def test_an_event_framer_wraps_each_encoded_event_in_its_envelope() -> None:
    framed = event_framer(b'{"wrap":', b"}")
    assert framed({"n": 1}) == b'data: {"wrap":{"n":1}}\n\n'
    assert framed(Encoded(b'{"n":2}', dict)) == b'data: {"wrap":{"n":2}}\n\n'
    assert event_framer()([1, "x"]) == frame(encode([1, "x"]))
    assert SSEParser().feed(framed({"n": 3}) + framed({"n": 4})) == [
        b'{"wrap":{"n":3}}',
        b'{"wrap":{"n":4}}',
    ]


def test_framed_events_parse_back() -> None:
    payloads = [b'{"n":%d}' % i for i in range(5)]
    stream = b"".join([frame(p) if i % 2 else KEEPALIVE + frame(p) for i, p in enumerate(payloads)])
    assert SSEParser().feed(stream) == payloads


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64])
def test_events_split_anywhere_parse_the_same(size: int) -> None:
    stream = frame(b'{"x":"a"}') + KEEPALIVE + b"data: one\r\ndata: two\r\n\r\n" + frame(b"last")
    parser = SSEParser()
    events = []
    for start in range(0, len(stream), size):
        events += parser.feed(stream[start : start + size])
    assert events == [b'{"x":"a"}', b"one\ntwo", b"last"]


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_every_line_ending(newline: bytes) -> None:
    stream = b"data: a" + newline + b"data: b" + newline + newline
    assert SSEParser().feed(stream) == [b"a\nb"]


def test_a_crlf_split_across_chunks_is_one_line_ending() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"\ndata: b\r") == []
    assert parser.feed(b"\n\r") == [b"a\nb"]
    assert parser.feed(b"\ndata: c\n\n") == [b"c"]


def test_an_event_ending_in_cr_is_delivered_without_waiting_for_more() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: a\r\r") == [b"a"]
    assert parser.feed(b"") == []
    assert parser.feed(b"\ndata: b\n\n") == [b"b"]


def test_comments_other_fields_and_empty_events_are_skipped() -> None:
    stream = (
        b": comment\n\n"
        b"event: update\nid: 7\nretry: 10\ndata: kept\n\n"
        b"id: 8\n\n"
        b"data:no-space\n\n"
        b"data:  two spaces\n\n"
        b"data\n\n"
    )
    # A bare "data" line is the field with an empty value: it makes an (empty) event.
    assert SSEParser().feed(stream) == [b"kept", b"no-space", b" two spaces", b""]


def test_an_unfinished_event_is_not_returned() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: half") == []
    assert parser.feed(b"\n") == []
    assert parser.feed(b"\n") == [b"half"]


async def test_iter_events_over_chunks() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for piece in (b"da", b"ta: 1\n", b"\ndata: 2\n\n", KEEPALIVE, b"data: 3\n\n"):
            yield piece

    assert [event async for event in iter_events(chunks())] == [b"1", b"2", b"3"]
