"""The in-process bus and ``Subscription``: ``next``, ``next_batch`` and ``wait_for``."""

from __future__ import annotations

import asyncio

import pytest

from peerwire.server.bus import BusEvent, MemoryBus
from peerwire.types import TaskState, TaskStatus, TaskStatusUpdateEvent

pytestmark = pytest.mark.asyncio


def status(state: TaskState) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(task_id="t", context_id="c", status=TaskStatus(state=state))


def is_completed(event: BusEvent) -> bool:
    return isinstance(event, TaskStatusUpdateEvent) and event.status.state is TaskState.COMPLETED


async def test_wait_for_returns_at_the_wanted_event_above_the_version() -> None:
    bus = MemoryBus()
    with bus.subscribe("t") as subscription:
        await bus.publish("t", 2, status(TaskState.COMPLETED))  # not above the version
        await bus.publish("t", 3, status(TaskState.WORKING))
        waiting = asyncio.ensure_future(subscription.wait_for(2, is_completed))
        await asyncio.sleep(0)
        assert not waiting.done()
        await bus.publish("t", 4, status(TaskState.COMPLETED))
        await bus.publish("t", 5, status(TaskState.FAILED))
        assert await asyncio.wait_for(waiting, 1) is True
        # The events up to the wanted one are consumed; the later ones are still queued.
        item = await subscription.next(4, timeout=0)
        assert item is not None and item[0] == 5


async def test_wait_for_checks_what_is_already_queued_without_waiting() -> None:
    bus = MemoryBus()
    with bus.subscribe("t") as subscription:
        for version, state in enumerate((TaskState.WORKING, TaskState.COMPLETED), start=2):
            await bus.publish("t", version, status(state))
        assert await asyncio.wait_for(subscription.wait_for(1, is_completed), 1) is True


async def test_wait_for_is_false_once_the_subscription_closes() -> None:
    bus = MemoryBus()
    subscription = bus.subscribe("t")
    waiting = asyncio.ensure_future(subscription.wait_for(0, is_completed))
    await bus.publish("t", 1, status(TaskState.WORKING))
    await asyncio.sleep(0)
    await bus.close()
    assert await asyncio.wait_for(waiting, 1) is False


async def test_next_times_out_then_delivers() -> None:
    bus = MemoryBus()
    with bus.subscribe("t") as subscription:
        assert await subscription.next(0, timeout=0.01) is None
        await bus.publish("t", 1, status(TaskState.WORKING))
        item = await subscription.next(0, timeout=1)
        assert item is not None and item[0] == 1
    with pytest.raises(StopAsyncIteration):
        await subscription.next(1)


async def test_next_batch_takes_every_queued_event_above_the_version() -> None:
    bus = MemoryBus()
    with bus.subscribe("t") as subscription:
        for version, state in enumerate((TaskState.SUBMITTED, TaskState.WORKING), start=1):
            await bus.publish("t", version, status(state))
        await bus.publish("t", 3, status(TaskState.COMPLETED))
        batch = await subscription.next_batch(1, timeout=0)
        assert batch is not None and [version for version, _ in batch] == [2, 3]
        assert await subscription.next_batch(1, timeout=0) is None  # nothing left: timed out


async def test_next_batch_waits_for_the_next_event() -> None:
    bus = MemoryBus()
    with bus.subscribe("t") as subscription:
        waiting = asyncio.ensure_future(subscription.next_batch(0))
        await asyncio.sleep(0)
        assert not waiting.done()
        await bus.publish("t", 1, status(TaskState.WORKING))
        await bus.publish("t", 2, status(TaskState.COMPLETED))
        batch = await asyncio.wait_for(waiting, 1)
        # Woken by the first event, it takes the second too: both were queued by then.
        assert batch is not None and [version for version, _ in batch] == [1, 2]


async def test_next_batch_ends_once_closed_and_drained() -> None:
    bus = MemoryBus()
    subscription = bus.subscribe("t")
    await bus.publish("t", 1, status(TaskState.WORKING))
    subscription.close()
    batch = await subscription.next_batch(0)
    assert batch is not None and len(batch) == 1
    with pytest.raises(StopAsyncIteration):
        await subscription.next_batch(0)
