"""Redis killed and restarted empty under a running cluster (2 replicas + 2 workers).

What must hold: no process exits; every task ends (COMPLETED: its handler kept running), its
handler ran exactly once (no resume of a task whose holder lived); every stream either went on
to the task's end or ended with ``StreamEndedError`` (cause ``outage``) and a resubscription
finished it; no subscriber missed or got twice an event, judged against GetTask (the store).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from server._agents import ask_for
from server._rpc import Rpc, RpcError, Stream, state_of, status_text

from peerwire.types import Task, from_builtins

from ._cluster import (
    SETTLE_S,
    Cluster,
    Followed,
    artifact_text,
    assert_no_repeats,
    cluster,
    folded,
    follow,
    until_terminal,
)

pytestmark = pytest.mark.services

STEP_COUNT = 60
STEP_PAUSE = 0.05  # a steps task emits for about 3 s: Redis goes away in the middle
DOWN_S = 1.5
RESUBSCRIBES = 5
SWEEP_S = 1.0  # the harness's --sweep-every


@dataclass
class Segment:
    """One stream of a task, from its first event (a snapshot) to its end."""

    snapshot: dict[str, Any]
    followed: Followed


@dataclass
class Observed:
    """Everything one subscriber of a task saw, across resubscriptions."""

    task_id: str
    segments: list[Segment] = field(default_factory=list)


async def until_working(stream: Stream) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The stream's snapshot and its events up to the handler saying where it runs."""
    snapshot = (await stream.next())["task"]
    events: list[dict[str, Any]] = []
    while True:
        event = await stream.next()
        events.append(event)
        if "statusUpdate" in event and status_text(event["statusUpdate"]).startswith("running"):
            return snapshot, events


async def rest_of(observed: Observed, rpc: Rpc) -> None:
    """Resubscribe (through ``rpc``) after each outage end, until a stream ends normally or
    the task has finished (SubscribeToTask then refuses it)."""
    for _ in range(RESUBSCRIBES):
        last = observed.segments[-1].followed
        if last.ended is None:
            return
        assert last.cause == "outage", last.ended
        try:
            async with rpc.subscribe(observed.task_id) as stream:
                snapshot = (await stream.next())["task"]
                observed.segments.append(Segment(snapshot, await follow(stream)))
        except RpcError:  # finished meanwhile: GetTask has the rest
            return
    raise AssertionError(f"{observed.task_id}: still ending after {RESUBSCRIBES} resubscriptions")


def check(observed: Observed, final: dict[str, Any]) -> None:
    """No event missing or doubled on this subscriber, against the stored task."""
    expected = from_builtins(final, Task)
    for segment in observed.segments:
        events = segment.followed.events
        assert_no_repeats(events)
        seen = folded(segment.snapshot, events)
        if segment.followed.ended is None:
            assert seen == expected, describe(observed.task_id, seen, expected, events)
        else:
            # Cut short by the outage: what it got is the task as it was at some version.
            assert_prefix(seen, expected, observed.task_id)


def describe(task_id: str, seen: Task, expected: Task, events: list[dict[str, Any]]) -> str:
    """Where a subscriber's view and the stored task differ (for the failure message)."""
    texts = [[p.text for p in a.parts] for a in seen.artifacts]
    wanted = [[p.text for p in a.parts] for a in expected.artifacts]
    return (
        f"{task_id}: state {seen.status.state} vs {expected.status.state}; "
        f"history {len(seen.history)} vs {len(expected.history)}; "
        f"artifacts {texts} vs {wanted}; {len(events)} events"
    )


def assert_prefix(seen: Task, expected: Task, task_id: str) -> None:
    assert expected.history[: len(seen.history)] == seen.history, task_id
    final_artifacts = {a.artifact_id: a for a in expected.artifacts}
    for artifact in seen.artifacts:
        parts = final_artifacts[artifact.artifact_id].parts
        assert parts[: len(artifact.parts)] == artifact.parts, task_id


async def test_redis_restarted_empty_mid_run(tmp_path: Path) -> None:
    async with cluster(tmp_path) as running:
        await run_through_a_restart(running, holds=12, steps=12)


async def test_redis_restarted_empty_under_replicas_with_local_workers(tmp_path: Path) -> None:
    async with cluster(tmp_path, workers=0, local_workers=True) as running:
        await run_through_a_restart(running, holds=6, steps=6)


@pytest.mark.slow
@pytest.mark.parametrize("local_workers", [False, True])
async def test_redis_restarted_again_and_again(tmp_path: Path, local_workers: bool) -> None:
    workers = 0 if local_workers else 2
    async with cluster(tmp_path, workers=workers, local_workers=local_workers) as running:
        for _ in range(5):
            await run_through_a_restart(running, holds=16, steps=16)


async def test_jobs_redis_lost_are_queued_again_exactly_once(tmp_path: Path) -> None:
    async with cluster(tmp_path, workers=0) as running:
        a, b = (m.rpc for m in running.replicas)
        assert a is not None and b is not None
        tasks = [
            await (a, b)[i % 2].send(ask_for("steps", "2 0.01"), returnImmediately=True)
            for i in range(6)
        ]
        assert {state_of(task) for task in tasks} == {"TASK_STATE_SUBMITTED"}
        await running.redis.restart()  # the queued jobs are gone
        client = running.redis.client()
        try:
            # Both replicas' sweepers find every task unheld (nobody consumes yet): one job
            # each is queued again, not one per sweeper.
            jobs = f"{running.prefix}:jobs"
            with anyio.fail_after(SETTLE_S):
                while await client.xlen(jobs) < len(tasks):  # noqa: ASYNC110 - Redis, polled
                    await asyncio.sleep(0.1)
            await asyncio.sleep(SWEEP_S * 1.2)  # every sweeper has swept again meanwhile
            assert await client.xlen(jobs) == len(tasks)
        finally:
            await client.aclose()
        running.release_all()
        for _ in range(2):
            await running.add_worker()
        finals = await until_terminal(a, [task["id"] for task in tasks])
        assert {state_of(final) for final in finals.values()} == {"TASK_STATE_COMPLETED"}
        for task in tasks:
            assert len(running.runs(task["id"])) == 1
        assert running.exited() == []


async def run_through_a_restart(running: Cluster, *, holds: int, steps: int) -> None:
    replicas = [m.rpc for m in running.replicas]
    assert all(replicas)
    rpcs: list[Rpc] = [r for r in replicas if r is not None]
    started = 0
    all_started = asyncio.Event()
    restarted = asyncio.Event()
    observed: list[Observed] = []
    kinds: dict[str, str] = {}

    async def one(i: int, skill: str) -> None:
        nonlocal started
        home, other = rpcs[i % 2], rpcs[(i + 1) % 2]
        text = f"{STEP_COUNT} {STEP_PAUSE}" if skill == "steps" else f"task {i}"
        async with contextlib.AsyncExitStack() as streams:
            stream = await streams.enter_async_context(home.send_stream(ask_for(skill, text)))
            snapshot, events = await until_working(stream)
            sender = Observed(snapshot["id"])
            kinds[sender.task_id] = skill
            observed.append(sender)
            watcher: Observed | None = None
            if i % 3 == 0:  # a third of the tasks are followed from the other replica too
                watch = await streams.enter_async_context(other.subscribe(sender.task_id))
                watcher = Observed(sender.task_id)
                observed.append(watcher)
                watch_snapshot = (await watch.next())["task"]
            started += 1
            if started == holds + steps:
                all_started.set()
            rest = await follow(stream)
            sender.segments.append(Segment(snapshot, Followed(events + rest.events, rest.ended)))
            if watcher is not None:
                watcher.segments.append(Segment(watch_snapshot, await follow(watch)))
        await restarted.wait()
        await rest_of(sender, home)
        if watcher is not None:
            await rest_of(watcher, other)

    with anyio.fail_after(SETTLE_S * 2):
        async with anyio.create_task_group() as group:
            for i in range(holds):
                group.start_soon(one, i, "hold")
            for i in range(holds, holds + steps):
                group.start_soon(one, i, "steps")
            with anyio.fail_after(SETTLE_S):
                await all_started.wait()
            # Half the held tasks finish as Redis goes away (their last publish meets the
            # outage), the rest once it is back.
            holds = [task_id for task_id, kind in kinds.items() if kind == "hold"]
            for task_id in holds[: len(holds) // 2]:
                running.release(task_id)
            await running.redis.restart(down_for=DOWN_S)
            restarted.set()
            for task_id in holds[len(holds) // 2 :]:
                running.release(task_id)

    assert running.exited() == []
    finals = await until_terminal(rpcs[0], kinds)
    for task_id, final in finals.items():
        assert state_of(final) == "TASK_STATE_COMPLETED", (status_text(final), final)
        runs = running.runs(task_id)
        assert len(runs) == 1 and runs[0].ended, (task_id, runs)
        if kinds[task_id] == "steps":
            expected = "".join(f"{i}," for i in range(STEP_COUNT))
            assert artifact_text(final, "steps") == expected
    for one_observed in observed:
        check(one_observed, finals[one_observed.task_id])
    assert running.running_handlers() == {}
    assert running.exited() == []
