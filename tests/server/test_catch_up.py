"""Subscriptions fill what the bus lost from the store (``server.catch_up``).

A real ``RedisBus`` (the machine's Redis, a key prefix of the test's own) over a real store:
the test appends a task's events to the store and publishes only some of them, as a process
that committed an event and died before publishing it would leave things. Every subscriber
must still get every event, in order, once, including a lost last event (found by the idle
check) and around the caller's own messages (versions that are never published). The
single-process path (``MemoryBus``) keeps plain subscriptions: nothing is read there.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from peerwire import Agent
from peerwire.cluster.redis_bus import RedisBus
from peerwire.errors import StreamEndedError
from peerwire.protocol import Event, fold_events
from peerwire.server import create_app
from peerwire.server.bus import BusEvent, MemoryBus, Subscription
from peerwire.server.catch_up import CatchingUpSubscription
from peerwire.server.stores import MemoryTaskStore, SQLiteTaskStore, TaskStore
from peerwire.server.stores.postgres import PostgresTaskStore
from peerwire.testing.store_suite import artifact_event, message, new_record, status_event
from peerwire.types import (
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
    from_builtins,
)

from ._agents import ask_for, workbench
from ._rpc import serving, state_of
from ._services import PG_DSN, REDIS_URL, fresh_prefix, fresh_schema

pytestmark = pytest.mark.services
S = TaskState
WAIT_S = 10.0
# Short idle checks, so a lost last event is found within the test's patience.
IDLE = {"idle_check": 0.1, "idle_check_max": 0.4}


@contextlib.asynccontextmanager
async def opened_store(kind: str, tmp_path: Path) -> AsyncIterator[TaskStore]:
    store: TaskStore
    async with contextlib.AsyncExitStack() as stack:
        if kind == "memory":
            store = MemoryTaskStore()
        elif kind == "sqlite":
            store = SQLiteTaskStore(tmp_path / "tasks.db")
        else:
            schema = await stack.enter_async_context(fresh_schema())
            store = PostgresTaskStore(PG_DSN, schema=schema, min_size=0, max_size=2)
        await store.open()
        stack.push_async_callback(store.close)
        yield store


@contextlib.asynccontextmanager
async def bus_over(store: TaskStore, **options: Any) -> AsyncIterator[RedisBus]:
    async with fresh_prefix() as prefix:
        bus = RedisBus(REDIS_URL, prefix=prefix, block_seconds=0.5, **{**IDLE, **options})
        bus.fill_gaps_from(store)
        async with bus:
            yield bus


class Writer:
    """Appends a task's events to the store and publishes those it is told to."""

    def __init__(self, store: TaskStore, bus: RedisBus, task_id: str) -> None:
        self.store, self.bus, self.task_id = store, bus, task_id

    async def write(self, *events: Event, publish: bool = True) -> int:
        version = await self.store.append(self.task_id, events)
        if publish:
            first = version - len(events) + 1
            for offset, event in enumerate(events):
                if not isinstance(event, TaskStatusUpdateEvent | TaskArtifactUpdateEvent):
                    continue  # the caller's own message: never published
                await self.bus.publish(self.task_id, first + offset, event)
        return version


async def take(subscription: Subscription, after: int, until: int) -> list[tuple[int, BusEvent]]:
    """What the subscription delivers after ``after`` until an event at ``until`` or later."""
    got: list[tuple[int, BusEvent]] = []
    with anyio.fail_after(WAIT_S):
        while not got or got[-1][0] < until:
            batch = await subscription.next_batch(after, 1.0)
            got.extend(batch or ())
    return got


def check_in_order(got: list[tuple[int, BusEvent]]) -> None:
    versions = [version for version, _ in got]
    assert versions == sorted(versions), versions
    statuses = [v for v, event in got if isinstance(event, TaskStatusUpdateEvent)]
    assert len(statuses) == len(set(statuses)), "one status per version"


def folded(snapshot: dict[str, Any], events: list[dict[str, Any]]) -> Task:
    """What a stream observer reconstructs: the snapshot with the streamed events applied."""
    updates = [from_builtins(e, StreamResponse).payload for e in events]
    return fold_events(from_builtins(snapshot, Task), updates)  # type: ignore[arg-type]


async def stored(store: TaskStore, task_id: str) -> Task:
    record = await store.load(task_id, tenant="")
    assert record is not None
    return record.snapshot()


KINDS = ["memory", "sqlite", "postgres"]


@pytest.mark.parametrize("kind", KINDS)
async def test_an_event_the_bus_lost_is_read_from_the_store(kind: str, tmp_path: Path) -> None:
    async with opened_store(kind, tmp_path) as store, bus_over(store) as bus:
        record = new_record()
        await store.create(record, tenant="", owner="")
        start = await stored(store, record.id)
        writer = Writer(store, bus, record.id)
        with bus.subscribe(record.id) as subscription:
            assert isinstance(subscription, CatchingUpSubscription)
            working = status_event(record, S.WORKING, at=1)
            lost = artifact_event(record, "out", "a", name="out")
            after = artifact_event(record, "out", "b", append=True)
            await writer.write(working)
            await writer.write(lost, publish=False)  # committed, never published
            await writer.write(after)
            got = await take(subscription, 1, 4)
            done = status_event(record, S.COMPLETED, at=2)
            await writer.write(done)
            got += await take(subscription, 1, 5)
        check_in_order(got)
        assert got[-1] == (5, done)
        final = await stored(store, record.id)
        assert fold_events(start, [event for _, event in got]) == final
        if kind != "memory":  # the store still held the events one by one
            assert got == [(2, working), (3, lost), (4, after), (5, done)]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_lost_last_event_is_found_when_nothing_comes(kind: str, tmp_path: Path) -> None:
    """Nothing follows a lost terminal event to show the gap: the idle check finds it."""
    async with opened_store(kind, tmp_path) as store, bus_over(store) as bus:
        record = new_record()
        await store.create(record, tenant="", owner="")
        start = await stored(store, record.id)
        writer = Writer(store, bus, record.id)
        with bus.subscribe(record.id) as subscription:
            await writer.write(status_event(record, S.WORKING, at=1))
            await writer.write(artifact_event(record, "out", "x"))
            await writer.write(status_event(record, S.COMPLETED, at=2), publish=False)
            got = await take(subscription, 1, 4)
        check_in_order(got)
        last = got[-1][1]
        assert isinstance(last, TaskStatusUpdateEvent) and last.status.state is S.COMPLETED
        assert fold_events(start, [event for _, event in got]) == await stored(store, record.id)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_the_callers_messages_are_no_gap(kind: str, tmp_path: Path) -> None:
    """A follow-up takes a version but is not published: the store's copy skips it, and the
    events around it come once each."""
    async with opened_store(kind, tmp_path) as store, bus_over(store) as bus:
        record = new_record()
        await store.create(record, tenant="", owner="")
        writer = Writer(store, bus, record.id)
        asked = status_event(record, S.INPUT_REQUIRED, at=1, text="Colour?")
        await writer.write(asked)
        with bus.subscribe(record.id) as subscription:
            answer = message("red", task_id=record.id, context_id=record.context_id)
            working = status_event(record, S.WORKING, at=2)
            await writer.write(answer, working)
            chunk = artifact_event(record, "out", "red")
            await writer.write(chunk)
            got = await take(subscription, 2, 5)
        assert got == [(4, working), (5, chunk)]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_events_published_out_of_order_come_in_order_once(kind: str, tmp_path: Path) -> None:
    """Two processes commit 2 then 3 but publish 3 first: the subscriber reads 2 from the
    store and drops its late publication."""
    async with opened_store(kind, tmp_path) as store, bus_over(store) as bus:
        record = new_record()
        await store.create(record, tenant="", owner="")
        writer = Writer(store, bus, record.id)
        with bus.subscribe(record.id) as subscription:
            first = status_event(record, S.WORKING, at=1)
            second = artifact_event(record, "out", "x")
            await writer.write(first, publish=False)
            await writer.write(second)
            await bus.publish(record.id, 2, first)  # late
            got = await take(subscription, 1, 3)
            third = status_event(record, S.COMPLETED, at=2)
            await writer.write(third)
            got += await take(subscription, 1, 4)
        assert got == [(2, first), (3, second), (4, third)]


async def test_a_store_that_cannot_fill_a_gap_ends_the_subscription(tmp_path: Path) -> None:
    """Events after a hole are not handed out: the subscriber hears of an outage."""
    async with opened_store("sqlite", tmp_path) as store, bus_over(store) as bus:
        record = new_record()
        await store.create(record, tenant="", owner="")
        writer = Writer(store, bus, record.id)
        with bus.subscribe(record.id) as subscription:
            await writer.write(status_event(record, S.WORKING, at=1))
            got = await take(subscription, 1, 2)
            assert [version for version, _ in got] == [2]
            await writer.write(artifact_event(record, "out", "a"), publish=False)
            after = artifact_event(record, "out", "b")
            await writer.write(after, publish=False)
            await store.close()  # the store is away when the gap shows
            await bus.publish(record.id, 4, after)
            with anyio.fail_after(WAIT_S), pytest.raises(StreamEndedError) as ended:
                await subscription.next_batch(1, 5.0)
            assert ended.value.cause == StreamEndedError.OUTAGE
            with pytest.raises(StopAsyncIteration):
                await subscription.next_batch(1, 0.1)


async def test_the_single_process_path_reads_nothing(tmp_path: Path) -> None:
    """With the in-process bus nothing is lost, so nothing is filled: plain subscriptions."""
    bus = MemoryBus()
    app = create_app(Agent("local"), store=MemoryTaskStore(), bus=bus)
    assert app is not None
    subscription = bus.subscribe("t")
    assert type(subscription) is Subscription
    subscription.close()


class LosingBus(RedisBus):
    """A replica's bus that never publishes its tasks' terminal events: as if the process died
    each time between committing one and publishing it."""

    async def publish(self, task_id: str, version: int, event: BusEvent) -> None:
        if isinstance(event, TaskStatusUpdateEvent) and event.status.state is S.COMPLETED:
            return
        await super().publish(task_id, version, event)


async def test_a_stream_on_another_replica_ends_at_the_unpublished_terminal_state() -> None:
    """End to end: replica A runs the task and loses its COMPLETED publication; replica B's
    stream of it still ends with COMPLETED, read from PostgreSQL."""
    agent, controls = workbench()
    async with fresh_schema() as schema, fresh_prefix() as prefix:

        def backends(bus: type[RedisBus]) -> dict[str, Any]:
            return {
                "store": PostgresTaskStore(PG_DSN, schema=schema, min_size=0, max_size=4),
                "bus": bus(REDIS_URL, prefix=prefix, block_seconds=0.5, **IDLE),
                "shutdown_grace": 1.0,
            }

        async with (
            serving(agent, **backends(LosingBus)) as a,
            serving(agent, **backends(RedisBus)) as b,
        ):
            task = await a.send(ask_for("progress", "lost"), returnImmediately=True)
            await controls.started("lost")
            async with b.subscribe(task["id"]) as on_b:
                snapshot = (await on_b.next())["task"]
                controls.release("lost")
                events = await on_b.rest()
            assert state_of(events[-1]["statusUpdate"]) == "TASK_STATE_COMPLETED"
            assert folded(snapshot, events) == from_builtins(await b.get(task["id"]), Task)


async def test_a_catch_up_from_the_snapshot_sends_only_what_changed(tmp_path: Path) -> None:
    """The store folded the missed events into its snapshot (here every 2 events): the
    subscriber gets the artifacts it lacks whole, not again those it has."""
    store = SQLiteTaskStore(tmp_path / "folded.db", snapshot_every=2)
    await store.open()
    try:
        async with bus_over(store) as bus:
            record = new_record()
            await store.create(record, tenant="", owner="")
            writer = Writer(store, bus, record.id)
            working = status_event(record, S.WORKING, at=1)
            a, b, c, d = (artifact_event(record, name, name) for name in "abcd")
            with bus.subscribe(record.id) as subscription:
                for event in (working, a, b):
                    await writer.write(event)
                got = await take(subscription, 1, 4)
                await writer.write(c, publish=False)
                await writer.write(d)
                got += await take(subscription, 1, 6)
                done = status_event(record, S.COMPLETED, at=2)
                await writer.write(done)
                got += await take(subscription, 1, 7)
            assert got == [(2, working), (3, a), (4, b), (6, c), (6, d), (7, done)]
    finally:
        await store.close()
