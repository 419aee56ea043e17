"""Event fan-out: every observer of a task gets every later event once, in order.

A stream subscribes *before* it reads the task's snapshot, then asks for the events above the
snapshot's version (``Subscription.next(after_version)``), so nothing falls between the
snapshot and the live events. The ``EventBus`` interface is what a distributed bus
(``peerwire.cluster.RedisBus``) implements too; ``MemoryBus`` serves one process.

On a bus that keeps each task's recent events (Redis), the *first* ``next`` call decides where
the subscription starts reading: just after ``after_version``. So every consumer passes the
version its view of the task is at (a snapshot's, or the version it continued the task from),
never a smaller one later; ``MemoryBus`` delivers what is published after ``subscribe`` and
filters by the same rule, so both give the same events.

A bus between processes can lose an event the store has (its publisher died between commit
and publish); its subscriptions fill such gaps from the store (``catch_up``).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Protocol

from ..types import TaskArtifactUpdateEvent, TaskStatusUpdateEvent

__all__ = ["BusEvent", "EventBus", "MemoryBus", "Subscription"]

BusEvent = TaskStatusUpdateEvent | TaskArtifactUpdateEvent


_TIMED_OUT = object()


def _expire(waiter: asyncio.Future[object]) -> None:
    if not waiter.done():
        waiter.set_result(_TIMED_OUT)


class Subscription:
    """A queue of ``(version, event)`` for one task; iterate it, close it when done."""

    __slots__ = ("_closed", "_items", "_loop", "_on_close", "_on_start", "_waiter", "task_id")

    def __init__(
        self,
        task_id: str,
        on_close: Callable[[Subscription], None] | None = None,
        on_start: Callable[[Subscription, int], None] | None = None,
    ) -> None:
        self.task_id = task_id
        self._items: deque[tuple[int, BusEvent]] = deque()
        self._waiter: asyncio.Future[object] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._on_close = on_close
        # A replaying bus learns here, at the first ``next``, which version to read after.
        self._on_start = on_start

    def put(self, version: int, event: BusEvent) -> None:
        self._items.append((version, event))
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def next(
        self, after_version: int = 0, timeout: float | None = None
    ) -> tuple[int, BusEvent] | None:
        """The next event with a version above ``after_version``.

        Returns ``None`` if ``timeout`` seconds pass first; raises ``StopAsyncIteration`` once
        the subscription is closed and drained. The first call fixes where a replaying bus
        starts (see the module docstring): later calls must not pass a smaller version.
        """
        self._begin(after_version)
        while True:
            while self._items:
                version, event = self._items.popleft()
                if version > after_version:
                    return version, event
            if self._closed:
                raise StopAsyncIteration
            if not await self._wait(timeout):
                return None

    async def next_batch(
        self, after_version: int = 0, timeout: float | None = None
    ) -> list[tuple[int, BusEvent]] | None:
        """Every queued event above ``after_version`` (at least one), waiting only when none
        is: ``next`` for a consumer that handles what piled up in one go (a stream's writer).

        ``None`` and ``StopAsyncIteration`` as from ``next``.
        """
        self._begin(after_version)
        items = self._items
        while True:
            if items:
                batch = [item for item in items if item[0] > after_version]
                items.clear()
                if batch:
                    return batch
            if self._closed:
                raise StopAsyncIteration
            if not await self._wait(timeout):
                return None

    async def wait_for(self, after_version: int, wanted: Callable[[BusEvent], bool]) -> bool:
        """Wait for an event above ``after_version`` that ``wanted`` accepts; False if the
        subscription closes first. The events before it are dropped.

        ``next`` in a loop, for a caller that waits for one kind of event: the events already
        queued are checked in one pass, not one call each.
        """
        self._begin(after_version)
        items = self._items
        while True:
            while items:
                version, event = items.popleft()
                if version > after_version and wanted(event):
                    return True
            if self._closed:
                return False
            await self._wait(None)

    def _begin(self, after_version: int) -> None:
        on_start = self._on_start
        if on_start is not None:
            self._on_start = None
            if not self._closed:
                on_start(self, after_version)

    async def _wait(self, timeout: float | None) -> bool:
        """Wait for the next ``put`` or the close; False if ``timeout`` passed first."""
        loop = self._loop
        if loop is None:
            # Looked up once: asyncio.get_running_loop() makes a getpid() system call.
            loop = self._loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        timer = None if timeout is None else loop.call_later(timeout, _expire, waiter)
        try:
            await waiter
        finally:
            self._waiter = None
            if timer is not None:
                timer.cancel()
        return waiter.result() is not _TIMED_OUT

    def __aiter__(self) -> AsyncIterator[tuple[int, BusEvent]]:
        return self

    async def __anext__(self) -> tuple[int, BusEvent]:
        item = await self.next()
        assert item is not None  # no timeout was given
        return item

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._on_close is not None:
            self._on_close(self)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class EventBus(Protocol):
    async def open(self) -> None:
        """Connect and start any background work; called once before use (the app does)."""

    def subscribe(self, task_id: str) -> Subscription:
        """Start receiving the task's events (close the subscription to stop)."""

    async def publish(self, task_id: str, version: int, event: BusEvent) -> None:
        """Deliver ``event`` (the task's state at ``version``) to every subscriber."""

    async def close(self) -> None:
        """Stop background work and close every subscription."""


class MemoryBus:
    """Fan-out within one process."""

    # Every event it delivers was published in this process: a runner that publishes all of
    # its tasks' events knows all that a subscriber would (``Runner.sees_every_event``).
    process_local = True

    def __init__(self) -> None:
        self._subscribers: dict[str, list[Subscription]] = {}

    async def open(self) -> None:
        return None

    def subscribe(self, task_id: str) -> Subscription:
        subscription = Subscription(task_id, self._remove)
        self._subscribers.setdefault(task_id, []).append(subscription)
        return subscription

    async def publish(self, task_id: str, version: int, event: BusEvent) -> None:
        for subscription in self._subscribers.get(task_id, ()):
            subscription.put(version, event)

    def _remove(self, subscription: Subscription) -> None:
        subscribers = self._subscribers.get(subscription.task_id)
        if subscribers is None:
            return
        subscribers.remove(subscription)
        if not subscribers:
            del self._subscribers[subscription.task_id]

    async def close(self) -> None:
        for subscribers in list(self._subscribers.values()):
            for subscription in list(subscribers):
                subscription.close()
