"""Server-Sent Events framing (A2A spec §9, §11): one ``data:`` line per event, and a parser.

Our own framing, not sse-starlette: measured here, that library halved stream throughput.
Compact JSON never contains a raw newline, so every event is exactly one ``data:`` line.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from typing import Any, NoReturn

from ..errors import PeerwireError
from ..types import encode

__all__ = [
    "DEFAULT_MAX_EVENT_SIZE",
    "KEEPALIVE",
    "SSEEventTooLarge",
    "SSEParser",
    "event_framer",
    "frame",
    "iter_events",
]

KEEPALIVE = b": keep-alive\n\n"


def frame(payload: bytes, event: bytes = b"") -> bytes:
    """One SSE event carrying ``payload`` (a compact JSON document), named ``event`` if given."""
    if event:
        return b"event: %b\ndata: %b\n\n" % (event, payload)
    return b"data: %b\n\n" % payload


def event_framer(head: bytes = b"", tail: bytes = b"") -> Callable[[Any], bytes]:
    """What frames each event of a stream: an SSE event whose data is ``head``, the event's
    ProtoJSON, ``tail`` (the envelope a binding puts around every event of the stream)."""
    opening = b"data: " + head
    closing = tail + b"\n\n"

    def framed(item: Any) -> bytes:
        # One join: the envelope and the SSE framing cost one copy of the event, not one each.
        return b"".join((opening, encode(item), closing))

    return framed


class SSEEventTooLarge(PeerwireError, ValueError):
    """An event of a stream (or one line of it) passed the parser's ``max_event_size``.

    ``events`` are those the same chunk completed before it: they were whole, and are not lost.
    """

    def __init__(self, message: str, events: list[bytes]) -> None:
        super().__init__(message)
        self.events = events


DEFAULT_MAX_EVENT_SIZE = 16 * 1024 * 1024


class SSEParser:
    """Incremental SSE parser: feed bytes, get the ``data`` of each complete event.

    Follows the WHATWG rules that matter here: lines end in LF, CRLF or CR; ``data:`` lines of
    one event are joined with LF; comment lines (``:``) and other fields are ignored.

    Memory is bounded by ``max_event_size``: one event's ``data`` together, and the unfinished
    line held between chunks (any line: a comment or an unknown field too), may not pass it;
    ``feed`` raises ``SSEEventTooLarge`` when one does, and again on every later call (the
    stream is out of step from there). A server streaming a line that never ends, or
    ``data:`` lines that never make an event, is refused at that size.
    """

    def __init__(self, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        self.max_event_size = max_event_size
        self._partial: list[bytes] = []  # the start of a line that has not ended yet
        self._partial_size = 0
        self._data: list[bytes] = []
        self._data_size = 0
        self._refused: str | None = None  # why the stream was refused, once it was
        # A chunk that ended in CR ended a line; an LF opening the next chunk completes that
        # CRLF and is no line of its own. (Waiting for the next chunk instead would hold an
        # event back until the server sends something else.)
        self._after_cr = False

    def feed(self, chunk: bytes) -> list[bytes]:
        if self._refused is not None:
            self._refuse(self._refused, [])
        if self._after_cr and chunk:
            self._after_cr = False
            if chunk.startswith(b"\n"):
                chunk = chunk[1:]
        events: list[bytes] = []
        search = _EOL.search
        start = 0
        # Each line is cut out of the chunk once; only a line split across chunks is joined.
        while (match := search(chunk, start)) is not None:
            line = chunk[start : match.start()]
            start = match.end()
            if self._partial:
                self._partial.append(line)
                line = b"".join(self._partial)
                self._partial = []
                self._partial_size = 0
            if not line:
                if self._data:
                    events.append(b"\n".join(self._data))
                    self._data = []
                    self._data_size = 0
                continue
            if line.startswith(b"data:"):
                value = line[6:] if line[5:6] == b" " else line[5:]
            elif line == b"data":
                value = b""
            else:
                continue  # a comment (":...") or another field: nothing to keep
            self._data.append(value)
            self._data_size += len(value) + 1
            if self._data_size > self.max_event_size:
                self._refuse("an SSE event", events)
        if start < len(chunk):
            rest = chunk[start:] if start else chunk
            self._partial.append(rest)
            self._partial_size += len(rest)
            if self._partial_size + self._data_size > self.max_event_size:
                self._refuse("an SSE line", events)
        elif chunk.endswith(b"\r"):
            self._after_cr = True
        return events

    def _refuse(self, what: str, events: list[bytes]) -> NoReturn:
        self._refused = what  # what it held is dropped; nothing after is read as events
        self._partial = []
        self._partial_size = 0
        self._data = []
        self._data_size = 0
        raise SSEEventTooLarge(
            f"{what} is larger than the limit of {self.max_event_size} bytes per event", events
        )


_EOL = re.compile(rb"\r\n|\r|\n")


async def iter_events(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The ``data`` of each event in a byte stream."""
    parser = SSEParser()
    async for chunk in chunks:
        for event in parser.feed(chunk):
            yield event
