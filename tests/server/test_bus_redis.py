"""The Redis event bus against the machine's real Redis, each test under a key prefix of its own.

Two ``RedisBus`` objects on one prefix stand for two replicas. What is checked: every event once
and in order, across buses; a subscriber starting from a snapshot's version gets exactly the
later events, also while events are being published; the reader task's lifetime; many
subscriptions; streams' caps and times to live; late and retried publishes. Then end to end:
two servers sharing a PostgreSQL schema and a Redis prefix, a task started on one and followed
or continued on the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from redis.asyncio import Redis

from peerwire import Agent
from peerwire.cluster.redis_bus import RedisBus
from peerwire.errors import InternalError
from peerwire.protocol import fold_events
from peerwire.server.app import open_bus
from peerwire.server.bus import MemoryBus, Subscription
from peerwire.server.stores.postgres import PostgresTaskStore
from peerwire.types import (
    Artifact,
    Part,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    from_builtins,
)

from ._agents import ask_for, workbench
from ._rpc import Rpc, serving, state_of, status_text, user_message
from ._services import PG_DSN, REDIS_URL, fresh_prefix, fresh_schema

pytestmark = pytest.mark.services
WAIT_S = 20.0
READER_TASKS = ("peerwire redis bus reader", "peerwire redis bus waker")


def chunk(task_id: str, n: int) -> TaskArtifactUpdateEvent:
    return TaskArtifactUpdateEvent(
        task_id=task_id,
        context_id="ctx",
        artifact=Artifact(artifact_id="log", parts=[Part(text=str(n))]),
        append=n > 0,
    )


def status(task_id: str, state: TaskState) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(task_id=task_id, context_id="ctx", status=TaskStatus(state=state))


def folded(snapshot: dict[str, Any], events: list[dict[str, Any]]) -> Task:
    """What a stream observer reconstructs: the snapshot with the streamed events applied."""
    updates = [from_builtins(e, StreamResponse).payload for e in events]
    return fold_events(from_builtins(snapshot, Task), updates)  # type: ignore[arg-type]


def text_of(event: Any) -> str:
    return "".join(p.text or "" for p in event.artifact.parts)


async def collect(subscription: Subscription, after: int, count: int) -> list[tuple[int, Any]]:
    """``count`` events after version ``after``; fails if they do not all come in time."""
    got: list[tuple[int, Any]] = []
    with anyio.fail_after(WAIT_S):
        for _ in range(count):
            item = await subscription.next(after)
            assert item is not None
            got.append(item)
    return got


async def nothing_more(subscription: Subscription, after: int) -> None:
    """No further event arrives within a short while (a bound on what we wait for, no timing)."""
    assert await subscription.next(after, timeout=0.3) is None


@pytest.fixture
async def prefix() -> AsyncIterator[str]:
    async with fresh_prefix() as name:
        yield name


@contextlib.asynccontextmanager
async def opened(prefix: str, **options: Any) -> AsyncIterator[RedisBus]:
    bus = RedisBus(REDIS_URL, prefix=prefix, **{"block_seconds": 1.0, **options})
    async with bus:
        yield bus


@pytest.fixture
async def bus(prefix: str) -> AsyncIterator[RedisBus]:
    async with opened(prefix) as bus:
        yield bus


@pytest.fixture
async def redis() -> AsyncIterator[Redis]:
    client = Redis.from_url(REDIS_URL)
    yield client
    await client.aclose()


# -- order, once, across buses ----------------------------------------------------------------


async def test_events_arrive_once_in_order(bus: RedisBus) -> None:
    with bus.subscribe("t1") as subscription:
        for version in range(2, 52):
            await bus.publish("t1", version, chunk("t1", version))
        got = await collect(subscription, 1, 50)
        assert [v for v, _ in got] == list(range(2, 52))
        assert [text_of(e) for _, e in got] == [str(v) for v in range(2, 52)]
        await nothing_more(subscription, 1)


async def test_a_subscriber_on_one_bus_sees_what_another_publishes(prefix: str) -> None:
    async with opened(prefix) as a, opened(prefix) as b:
        with a.subscribe("t1") as on_a, b.subscribe("t1") as on_b:
            await b.publish("t1", 2, status("t1", TaskState.WORKING))
            await a.publish("t1", 3, chunk("t1", 0))
            await b.publish("t1", 4, status("t1", TaskState.COMPLETED))
            for subscription in (on_a, on_b):
                got = await collect(subscription, 1, 3)
                assert [v for v, _ in got] == [2, 3, 4]
                assert got[2][1].status.state is TaskState.COMPLETED
                await nothing_more(subscription, 1)


async def test_a_subscription_starts_after_its_first_version(prefix: str) -> None:
    """Replay from a snapshot's version: the earlier events are not delivered, later ones are."""
    async with opened(prefix) as a, opened(prefix) as b:
        for version in range(2, 11):
            await b.publish("t1", version, chunk("t1", version))
        with a.subscribe("t1") as late, a.subscribe("t1") as early:
            assert [v for v, _ in await collect(late, 7, 3)] == [8, 9, 10]
            assert [v for v, _ in await collect(early, 1, 9)] == list(range(2, 11))
            await b.publish("t1", 11, chunk("t1", 11))
            assert [v for v, _ in await collect(late, 7, 1)] == [11]
            assert [v for v, _ in await collect(early, 1, 1)] == [11]


async def test_snapshot_then_events_is_gapless_while_publishing(prefix: str) -> None:
    """Subscribers join while another replica publishes: each gets exactly what its snapshot
    (the version stored when it looked) lacks, none twice, in order."""
    last = 300
    stored = 1  # what a store would say the task is at; published right after it moves
    progress = asyncio.Condition()

    async def publisher(bus: RedisBus) -> None:
        nonlocal stored
        for version in range(2, last + 1):
            stored = version
            await bus.publish("t1", version, chunk("t1", version))
            async with progress:
                progress.notify_all()

    async def follower(bus: RedisBus, join_at: int) -> list[int]:
        async with progress:
            await progress.wait_for(lambda: stored >= join_at)
        with bus.subscribe("t1") as subscription:
            snapshot = stored  # subscribe first, then read the snapshot: the Dispatcher's order
            got = await collect(subscription, snapshot, last - snapshot)
            await nothing_more(subscription, snapshot)
        versions = [v for v, _ in got]
        assert versions == list(range(snapshot + 1, last + 1)), (join_at, snapshot)
        return versions

    async with opened(prefix) as a, opened(prefix) as b:
        with anyio.fail_after(WAIT_S * 2):
            results = await asyncio.gather(
                publisher(b), *(follower(a, join_at) for join_at in range(1, last, 23))
            )
    assert all(results[1:])


async def test_joining_further_back_while_events_arrive_skips_nothing(prefix: str) -> None:
    """A subscriber joins at an early version just as an event arrives for one that is caught
    up: the read in flight started after the newcomer's position, so it must not be handed
    its entries (that would skip the ones between), and the next read catches it up."""
    async with opened(prefix) as a, opened(prefix) as b:
        with a.subscribe("t1") as ahead:
            version = 1
            for round_ in range(30):
                version += 1
                await b.publish("t1", version, chunk("t1", version))
                await collect(ahead, 1, 1)  # caught up: the reader waits after ``version``
                joined_at = max(1, version - 5)
                with a.subscribe("t1") as newcomer:
                    version += 1
                    first = asyncio.ensure_future(newcomer.next(joined_at))
                    await b.publish("t1", version, chunk("t1", version))
                    with anyio.fail_after(WAIT_S):
                        got = [await first]
                    got += await collect(newcomer, joined_at, version - joined_at - 1)
                    assert [v for v, _ in got] == list(range(joined_at + 1, version + 1)), round_
                await collect(ahead, 1, 1)
            await nothing_more(ahead, 1)


async def test_a_subscription_started_while_the_reader_blocks_is_read_at_once(
    prefix: str,
) -> None:
    """The wake-up: with a 60 s block, only waking the reader lets this pass in time."""
    async with opened(prefix, block_seconds=60.0) as bus:
        with bus.subscribe("idle") as idle:
            await nothing_more(idle, 0)  # the reader now blocks on idle's stream
            await bus.publish("t2", 2, chunk("t2", 2))
            with bus.subscribe("t2") as subscription:
                assert [v for v, _ in await collect(subscription, 1, 1)] == [2]


# -- many subscriptions -------------------------------------------------------------------------


async def test_many_subscriptions(prefix: str) -> None:
    tasks = [f"t{i}" for i in range(150)]
    async with opened(prefix) as a, opened(prefix) as b:
        subscriptions = [a.subscribe(task) for task in tasks]
        twice = [a.subscribe(task) for task in tasks[:20]]  # two subscribers of one task
        try:
            for version in (2, 3, 4):
                await asyncio.gather(*(b.publish(t, version, chunk(t, version)) for t in tasks))
            for task, subscription in zip(tasks, subscriptions, strict=True):
                got = await collect(subscription, 1, 3)
                assert [(v, e.task_id) for v, e in got] == [(v, task) for v in (2, 3, 4)]
            for subscription in twice:
                assert [v for v, _ in await collect(subscription, 2, 2)] == [3, 4]
            assert a.followed_tasks == len(tasks)
        finally:
            for subscription in subscriptions + twice:
                subscription.close()
        assert a.followed_tasks == 0


async def test_a_subscription_never_read_costs_nothing(bus: RedisBus) -> None:
    subscription = bus.subscribe("t1")
    assert bus.followed_tasks == 1
    subscription.close()
    assert bus.followed_tasks == 0


# -- lifetime ---------------------------------------------------------------------------------


def _reader_tasks() -> list[asyncio.Task[Any]]:
    return [t for t in asyncio.all_tasks() if t.get_name() in READER_TASKS and not t.done()]


async def test_the_reader_stops_cleanly(prefix: str) -> None:
    before = len(_reader_tasks())
    bus = RedisBus(REDIS_URL, prefix=prefix, block_seconds=30.0)
    await bus.open()
    assert len(_reader_tasks()) == before + 2
    subscription = bus.subscribe("t1")
    await nothing_more(subscription, 0)  # the reader is inside a 30 s XREAD now
    with anyio.fail_after(WAIT_S):
        await bus.close()
    assert len(_reader_tasks()) == before
    with pytest.raises(StopAsyncIteration):
        await subscription.next(0, timeout=1.0)
    with pytest.raises(RuntimeError, match="not open"):
        bus.subscribe("t1")
    with pytest.raises(RuntimeError, match="not open"):
        await bus.publish("t1", 2, chunk("t1", 2))
    await bus.close()  # twice is fine


async def test_an_unreachable_redis_fails_at_open(prefix: str) -> None:
    bus = RedisBus("redis://127.0.0.1:1", prefix=prefix, socket_timeout=2.0)
    with anyio.fail_after(WAIT_S), pytest.raises(OSError, match=r"127\.0\.0\.1:1\b"):
        await bus.open()
    await bus.close()


async def test_a_publish_that_fails_is_a_typed_error(prefix: str, redis: Redis) -> None:
    async with opened(prefix) as bus:
        await redis.set(bus.stream_key("t1"), b"not a stream")
        with pytest.raises(InternalError, match="could not publish version 2 of task t1"):
            await bus.publish("t1", 2, chunk("t1", 2))


# -- what Redis keeps ---------------------------------------------------------------------------


async def test_streams_expire_sooner_once_terminal(prefix: str, redis: Redis) -> None:
    async with opened(prefix, stream_ttl=3600.0, terminal_ttl=30.0) as bus:
        key = bus.stream_key("t1")
        await bus.publish("t1", 2, status("t1", TaskState.WORKING))
        assert 30_000 < await redis.pttl(key) <= 3_600_000
        await bus.publish("t1", 3, status("t1", TaskState.FAILED))
        assert 0 < await redis.pttl(key) <= 30_000
        assert [entry_id for entry_id, _ in await redis.xrange(key)] == [b"2-0", b"3-0"]


async def test_streams_are_capped(prefix: str, redis: Redis) -> None:
    async with opened(prefix, max_stream_length=10) as bus:
        for version in range(2, 402):
            await bus.publish("t1", version, chunk("t1", version))
        # MAXLEN ~ trims whole nodes of the stream (100 entries by default), never below 10.
        assert 10 <= await redis.xlen(bus.stream_key("t1")) < 250


async def test_late_and_retried_publishes(prefix: str, redis: Redis) -> None:
    """Two writers may publish 3 before 2; a retried publish must not add an entry twice."""
    async with opened(prefix) as bus:
        with bus.subscribe("t1") as subscription:
            await bus.publish("t1", 3, chunk("t1", 3))
            await bus.publish("t1", 2, chunk("t1", 2))  # late: appended after 3, not lost
            await bus.publish("t1", 3, chunk("t1", 3))  # retries: no new entry
            await bus.publish("t1", 2, chunk("t1", 2))
            await bus.publish("t1", 4, chunk("t1", 4))
            got = await collect(subscription, 1, 3)
            assert [v for v, _ in got] == [3, 2, 4]
            await nothing_more(subscription, 1)
        assert await redis.xlen(bus.stream_key("t1")) == 3
        with bus.subscribe("t1") as after_three:
            # Joining with a snapshot at 3: the late 2 is in the snapshot already.
            assert [v for v, _ in await collect(after_three, 3, 1)] == [4]
            await nothing_more(after_three, 3)


async def test_foreign_entries_are_skipped(prefix: str, redis: Redis) -> None:
    async with opened(prefix) as bus:
        with bus.subscribe("t1") as subscription:
            await redis.xadd(bus.stream_key("t1"), {"e": b"{not json"}, id="2-0")
            await bus.publish("t1", 3, chunk("t1", 3))
            assert [v for v, _ in await collect(subscription, 1, 1)] == [3]


# -- the spec -----------------------------------------------------------------------------------


def test_open_bus() -> None:
    assert isinstance(open_bus("memory"), MemoryBus)
    bus = open_bus("redis://127.0.0.1:6379/0?prefix=app_a")
    assert isinstance(bus, RedisBus)
    assert bus.prefix == "app_a" and bus.url == "redis://127.0.0.1:6379/0"
    assert isinstance(open_bus("redis://127.0.0.1"), RedisBus)
    for bad in ("kafka://x", "", "redis", "redis:"):
        with pytest.raises(ValueError):
            open_bus(bad)


# -- end to end: two replicas sharing a PostgreSQL schema and a Redis prefix -------------------


@contextlib.asynccontextmanager
async def two_replicas(agent: Agent) -> AsyncIterator[tuple[Rpc, Rpc]]:
    """The agent served twice, each server with its own store and bus objects (as two
    processes would have) on one schema and one key prefix."""
    async with fresh_schema() as schema, fresh_prefix() as prefix:

        def backends() -> dict[str, Any]:
            return {
                "store": PostgresTaskStore(PG_DSN, schema=schema, min_size=0, max_size=4),
                "bus": RedisBus(REDIS_URL, prefix=prefix, block_seconds=1.0),
                "shutdown_grace": 1.0,
            }

        async with serving(agent, **backends()) as a, serving(agent, **backends()) as b:
            yield a, b


async def test_a_task_on_one_replica_followed_on_the_other() -> None:
    agent, controls = workbench()
    async with two_replicas(agent) as (a, b):
        async with a.send_stream(ask_for("progress", "e2e")) as on_a:
            task = (await on_a.next())["task"]
            await controls.started("e2e")
            async with b.subscribe(task["id"]) as on_b:
                snapshot = (await on_b.next())["task"]
                controls.release("e2e")
                seen_on_b = await on_b.rest()
            seen_on_a = await on_a.rest()
        # B joined at its snapshot's version: what A saw after that, B saw too, identically.
        assert seen_on_b == seen_on_a[len(seen_on_a) - len(seen_on_b) :]
        # The WORKING the runner records for a skill function may come after B's snapshot
        # (it is stored with the handler's first step): B then sees it first, without text.
        texts = [status_text(e["statusUpdate"]) for e in seen_on_b if "statusUpdate" in e]
        assert [text for text in texts if text][:3] == ["step 0", "step 1", "step 2"]
        assert state_of(seen_on_b[-1]["statusUpdate"]) == "TASK_STATE_COMPLETED"
        on_a_now, on_b_now = await a.get(task["id"]), await b.get(task["id"])
        assert on_a_now == on_b_now
        assert folded(snapshot, seen_on_b) == from_builtins(on_b_now, Task)
        listed = (await b.result("ListTasks", {"includeArtifacts": True}))["tasks"]
        assert listed == [on_a_now]


async def test_a_conversation_moves_between_replicas() -> None:
    """A follow-up through replica B to a task A started: B reruns the handler with the
    recorded answers, and its blocking wait ends at the new question, not at the old one the
    task's event stream still holds."""
    agent, _ = workbench()
    async with two_replicas(agent) as (a, b):
        first = await a.send(ask_for("ask"))
        assert (state_of(first), status_text(first)) == ("TASK_STATE_INPUT_REQUIRED", "first?")
        second = await b.send(user_message("red", taskId=first["id"]))
        assert (state_of(second), status_text(second)) == ("TASK_STATE_INPUT_REQUIRED", "second?")
        done = await b.send(user_message("blue", taskId=first["id"]))
        assert state_of(done) == "TASK_STATE_COMPLETED"
        assert await a.get(first["id"]) == done
        assert "red + blue" in json.dumps(done["artifacts"])


async def test_a_blocking_answer_is_the_stored_task() -> None:
    """A blocking send over the Redis bus answers from the events its subscription got (no
    reload): chunks folded, status message in the history, exactly what GetTask reads."""
    agent, _ = workbench()
    async with two_replicas(agent) as (a, b):
        answered = await a.send(ask_for("chunks"))
        assert state_of(answered) == "TASK_STATE_COMPLETED"
        assert answered == await b.get(answered["id"])
        assert [part["text"] for part in answered["artifacts"][0]["parts"]] == ["c0", "c1", "c2"]
        assert status_text(answered) == "all chunks sent"
        cut = await a.send(ask_for("chunks"), historyLength=1)
        whole = await b.get(cut["id"])
        assert len(whole["history"]) > 1
        assert cut == {**whole, "history": whole["history"][-1:]}


async def test_a_blocking_answer_includes_a_message_the_bus_never_carried() -> None:
    """A caller's message to a task at work takes a version but is never published: the
    blocking send waiting on that task finds the hole and answers with the stored task,
    the message in its history."""
    agent, controls = workbench()
    async with two_replicas(agent) as (a, b):
        waiting = asyncio.ensure_future(a.send(ask_for("busy_then_ask", "gap")))
        await controls.started("gap")
        (task,) = (await b.result("ListTasks", {}))["tasks"]
        more = user_message("and this", taskId=task["id"])
        # Sent where the handler runs: in its inbox before the release, so its ask takes it
        # (through the other replica it arrives by the control channel, maybe after the ask).
        assert state_of(await a.send(more, returnImmediately=True)) == "TASK_STATE_WORKING"
        controls.release("gap")
        with anyio.fail_after(WAIT_S):
            answered = await waiting
        assert state_of(answered) == "TASK_STATE_COMPLETED"
        assert answered == await b.get(task["id"])
        texts = [part.get("text") for m in answered["history"] for part in m["parts"]]
        assert "and this" in texts


async def test_one_replica_on_postgres_and_redis_serves_the_usual_flows() -> None:
    agent, controls = workbench()
    async with (
        fresh_schema() as schema,
        fresh_prefix() as prefix,
        serving(
            agent,
            store=f"{PG_DSN}?schema={schema}",
            bus=f"{REDIS_URL}?prefix={prefix}",
            shutdown_grace=1.0,
        ) as rpc,
    ):
        async with rpc.send_stream(ask_for("chunks")) as stream:
            events = [await stream.next(), *await stream.rest()]
        task = events[0]["task"]
        assert folded(task, events[1:]) == from_builtins(await rpc.get(task["id"]), Task)
        echoed = await rpc.send(ask_for("echo", "hi"))
        assert state_of(echoed) == "TASK_STATE_COMPLETED"
        waiting = asyncio.ensure_future(rpc.send(ask_for("wait", "cancel-me")))
        await controls.started("cancel-me")
        running = [
            t
            for t in (await rpc.result("ListTasks", {}))["tasks"]
            if state_of(t) == "TASK_STATE_WORKING"
        ]
        canceled = await rpc.result("CancelTask", {"id": running[0]["id"]})
        assert state_of(canceled) == "TASK_STATE_CANCELED"
        with anyio.fail_after(WAIT_S):
            assert state_of(await waiting) == "TASK_STATE_CANCELED"
