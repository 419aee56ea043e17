"""Subscriptions that fill what their bus lost from the store, the source of truth.

A bus between processes (``peerwire.cluster.RedisBus``) can lose an event the store has: the
process that committed it died before publishing it, Redis restarted empty, or a stream was
trimmed past a slow reader. Such a bus hands out ``CatchingUpSubscription``s once it knows
the store (``GapFilling.fill_gaps_from``, which the dispatcher calls), so no stream and no
blocking send ends with a hole in it. ``MemoryBus`` needs none: its publisher is this very
process, which publishes every event it commits, so the single-process path pays nothing.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import deque
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from ..errors import StreamEndedError
from ..protocol import TERMINAL
from ..types import (
    Artifact,
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from .bus import BusEvent, Subscription
from .stores.base import EventsAfter

__all__ = ["CatchingUpSubscription", "EventSource", "GapFilling"]

log = logging.getLogger("peerwire.bus")


class EventSource(Protocol):
    """Where a subscription reads what its bus lost: the task store (any ``TaskStore``)."""

    async def events_after(self, task_id: str, version: int) -> EventsAfter | None:
        """The task's events after ``version`` (``TaskStore.events_after``)."""


@runtime_checkable
class GapFilling(Protocol):
    """A bus whose subscriptions can fill its gaps from the store once told which it is."""

    def fill_gaps_from(self, source: EventSource) -> None:
        """Fill the gaps of every subscription opened from now on from ``source``."""


class CatchingUpSubscription(Subscription):
    """A subscription that fills the gaps its bus leaves from ``source``, the store.

    Every event carries the task's version, and the subscription knows the last version it
    delivered. An event that skips ahead means the bus lost what lies between: the
    subscription reads the task's events after its last version from the store (one read) and
    delivers them first. A lost *last* event (the terminal one: nothing follows to show the
    gap) is found by asking the store whether the task moved on once nothing came for
    ``idle_check`` seconds, then after twice as long, and so on up to every ``idle_check_max``
    seconds until an event comes (each interval spread by up to a quarter either way, so that
    subscriptions opened together do not ask together): one indexed read per interval, only
    for subscriptions idle that long.

    The caller's own messages take a version but are not published: the store's copy skips
    them. Where the store keeps the missed events only folded into the task's snapshot (it
    settled meanwhile, or rewrote its snapshot), the subscription catches up with the task
    itself: each of its artifacts whole (``append`` false) unless delivered whole and
    unchanged since, then its status unless that is the last one delivered, all at the
    task's version; the bus's copies of what that covers are dropped. A store that cannot be
    read to fill a gap ends the subscription with ``StreamEndedError`` (cause ``outage``)
    rather than hand out the events after the hole; once closed, nothing is filled and only
    the events before the first gap come out.
    """

    __slots__ = (
        "_artifacts",
        "_check_at",
        "_delivered",
        "_idle",
        "_idle_check",
        "_idle_max",
        "_last_status",
        "_ready",
        "_source",
    )

    def __init__(
        self,
        task_id: str,
        source: EventSource,
        on_close: Callable[[Subscription], None] | None = None,
        on_start: Callable[[Subscription, int], None] | None = None,
        *,
        idle_check: float = 5.0,
        idle_check_max: float = 60.0,
    ) -> None:
        if idle_check <= 0:
            raise ValueError(f"idle_check must be positive, got {idle_check}")
        super().__init__(task_id, on_close, on_start)
        self._source = source
        # The last version delivered (or skipped: a caller's message); -1 until started.
        self._delivered = -1
        # Events taken in version order, gaps filled, not handed out yet.
        self._ready: deque[tuple[int, BusEvent]] = deque()
        self._idle_check = idle_check
        self._idle_max = max(idle_check_max, idle_check)
        self._idle = idle_check
        self._check_at = 0.0
        self._last_status: TaskStatus | None = None
        # Each artifact as last delivered whole (None: grown by chunks since), so a catch-up
        # with the task does not send again what the subscriber has already.
        self._artifacts: dict[str, Artifact | None] = {}

    # -- what consumers call (``Subscription``'s three ways of reading) ----------------------

    async def next(
        self, after_version: int = 0, timeout: float | None = None
    ) -> tuple[int, BusEvent] | None:
        batch = await self._take(after_version, timeout)
        if batch is None:
            return None
        self._ready.extendleft(reversed(batch[1:]))
        return batch[0]

    async def next_batch(
        self, after_version: int = 0, timeout: float | None = None
    ) -> list[tuple[int, BusEvent]] | None:
        return await self._take(after_version, timeout)

    async def wait_for(self, after_version: int, wanted: Callable[[BusEvent], bool]) -> bool:
        while True:
            try:
                batch = await self._take(after_version, None)
            except StopAsyncIteration:
                return False
            assert batch is not None  # no timeout was given
            for index, (_, event) in enumerate(batch):
                if wanted(event):
                    self._ready.extendleft(reversed(batch[index + 1 :]))
                    return True

    # -- taking events in order -------------------------------------------------------------

    def _begin(self, after_version: int) -> None:
        if self._delivered < 0:
            self._delivered = max(after_version, 0)
            self._check_at = self._clock() + self._idle * _spread()
        super()._begin(after_version)

    def _clock(self) -> float:
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        return loop.time()

    async def _take(
        self, after_version: int, timeout: float | None
    ) -> list[tuple[int, BusEvent]] | None:
        """The events above ``after_version`` ready now (at least one), gaps filled; waits
        for some (``None`` once ``timeout`` passed), asking the store when idle too long."""
        self._begin(after_version)
        give_up = None if timeout is None else self._clock() + timeout
        ready = self._ready
        while True:
            if self._items:
                await self._admit()
            if ready:
                batch = [item for item in ready if item[0] > after_version]
                ready.clear()
                if batch:
                    self._idle = self._idle_check
                    self._check_at = self._clock() + self._idle
                    return batch
                continue
            if self._closed:
                raise StopAsyncIteration
            now = self._clock()
            if now >= self._check_at:
                await self._catch_up(gap=False)
                self._idle = min(self._idle * 2, self._idle_max)
                self._check_at = self._clock() + self._idle * _spread()
                continue
            wait = self._check_at - now
            if give_up is not None:
                if now >= give_up:
                    return None
                wait = min(wait, give_up - now)
            await self._wait(wait)

    async def _admit(self) -> None:
        """Move what the bus delivered to ``_ready`` in version order, filling gaps."""
        items = self._items
        while items:
            version, event = items[0]
            if version <= self._delivered:
                items.popleft()  # a late or repeated publication, or covered by the store
                continue
            if version > self._delivered + 1:
                if self._closed:
                    items.clear()  # after a hole nothing is handed out
                    return
                await self._catch_up(gap=True)
                if self._delivered >= version:
                    continue
                # The store does not have it (the task is gone): the bus's word stands.
                log.debug(
                    "peerwire: task %s: version %d is not in the store", self.task_id, version
                )
            items.popleft()
            self._accept(version, event)

    def _accept(self, version: int, event: BusEvent) -> None:
        self._ready.append((version, event))
        self._delivered = version
        if isinstance(event, TaskStatusUpdateEvent):
            self._last_status = event.status
        else:
            self._artifacts[event.artifact.artifact_id] = None if event.append else event.artifact

    async def _catch_up(self, *, gap: bool) -> None:
        """Take from the store what it has after the last version delivered: for a ``gap``
        the bus showed, or on an idle check."""
        try:
            found = await self._source.events_after(self.task_id, self._delivered)
        except Exception as exc:
            if not gap:  # the bus may still bring it; the next check asks again
                log.warning("peerwire: task %s: checking the store failed: %s", self.task_id, exc)
                return
            log.warning(
                "peerwire: task %s: the store could not fill a gap after version %d: %s",
                self.task_id,
                self._delivered,
                exc,
            )
            self.close()
            raise StreamEndedError(task_id=self.task_id, cause=StreamEndedError.OUTAGE) from exc
        if found is None or found.version <= self._delivered:
            return
        if not gap:
            log.info(
                "peerwire: task %s: caught up from version %d to %d from the store",
                self.task_id,
                self._delivered,
                found.version,
            )
        if found.events is not None:
            for version, event in found.events:
                if version <= self._delivered:
                    continue
                if isinstance(event, Message):
                    self._delivered = version  # the caller's own: not something to publish
                else:
                    self._accept(version, event)
        elif found.task is not None:
            self._catch_up_with(found.task, found.version)
        self._delivered = max(self._delivered, found.version)

    def _catch_up_with(self, task: Task, version: int) -> None:
        """Deliver ``task`` (at ``version``) as events: its artifacts whole, then its status."""
        finished = task.status.state in TERMINAL
        for artifact in task.artifacts:
            if self._artifacts.get(artifact.artifact_id) == artifact:
                continue  # delivered whole, unchanged since
            self._accept(
                version,
                TaskArtifactUpdateEvent(
                    task_id=task.id,
                    context_id=task.context_id,
                    artifact=artifact,
                    last_chunk=finished,
                ),
            )
        if task.status != self._last_status:
            self._accept(
                version,
                TaskStatusUpdateEvent(
                    task_id=task.id, context_id=task.context_id, status=task.status
                ),
            )


def _spread() -> float:
    """A factor of 0.75 to 1.25 for an idle interval: subscriptions opened together (a
    replica's clients all coming back at once) do not all ask the store at the same moment."""
    return 0.75 + random.random() / 2  # timing, not secrecy
