"""Fan-out of the backend's events to the pages listening (the ``/api/events`` stream).

Each listener has a bounded queue. One that falls too far behind (a page in a tab the browser
froze) is dropped rather than let the backend hold its events without end: its stream closes,
and the page, reconnecting, reloads the whole state (``/api/state``) and misses nothing.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

__all__ = ["EventHub", "Listener"]

MAX_QUEUED = 2000
_CLOSED = object()


class Listener:
    def __init__(self) -> None:
        self.queue: asyncio.Queue[object] = asyncio.Queue(MAX_QUEUED + 1)

    async def next(self) -> bytes | None:
        """The next event framed for SSE, or ``None`` once the listener is closed."""
        item = await self.queue.get()
        if item is _CLOSED:
            return None
        assert isinstance(item, bytes)
        return item


class EventHub:
    def __init__(self) -> None:
        self._listeners: set[Listener] = set()
        self.closed = False

    def listen(self) -> Listener:
        listener = Listener()
        if self.closed:
            listener.queue.put_nowait(_CLOSED)
        else:
            self._listeners.add(listener)
        return listener

    def forget(self, listener: Listener) -> None:
        self._listeners.discard(listener)

    def publish(self, event: dict[str, Any]) -> None:
        if not self._listeners:
            return
        framed = b"data: " + json.dumps(event, ensure_ascii=False).encode() + b"\n\n"
        for listener in list(self._listeners):
            if listener.queue.qsize() >= MAX_QUEUED:
                self._listeners.discard(listener)
                listener.queue.put_nowait(_CLOSED)
            else:
                listener.queue.put_nowait(framed)

    def close(self) -> None:
        """End every stream (the server is shutting down)."""
        self.closed = True
        for listener in self._listeners:
            listener.queue.put_nowait(_CLOSED)
        self._listeners.clear()
