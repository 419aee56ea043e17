"""Worker SIGKILL, again and again: no subscriber misses an event.

2 replicas and 2 workers. Tasks stream artifacts (the agent's ``marks`` skill: each event an
artifact of its own, so the finished task holds every event any run committed); each is followed
twice, by the SendStreamingMessage that started it on replica A and by a SubscribeToTask on
replica B. Meanwhile a worker is SIGKILLed (and started again) ``KILLS`` times, alternately,
while handlers write: some die between committing an event and publishing it, so Redis never
carries that event. Every stream must still end at its task's terminal state, normally, and
what each subscriber folded from its events must be the task PostgreSQL holds (GetTask).

``KILLS`` is 10 in CI; the ``slow`` variant (100 kills) runs on demand (``-m slow`` or
``PEERWIRE_SLOW=1``, see conftest.py).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest
from server._agents import ask_for
from server._rpc import TIMEOUT_S, Rpc, RpcError, state_of

from peerwire.types import Task, from_builtins

from ._cluster import assert_no_repeats, cluster, folded, follow

pytestmark = pytest.mark.services

KILLS = 10
LONG_KILLS = 100
TASKS_PER_KILL = 3
# 40 artifacts, 5 ms apart: a handler writes an event every few milliseconds for about half a
# second, so a SIGKILL often lands between a commit and its publication.
MARKS = "40 0.005"
SETTLE_S = 120.0


async def started_and_followed(a: Rpc, b: Rpc) -> list[tuple[str, dict[str, Any], Any]]:
    """Start a task on replica ``a`` and follow it there and from replica ``b``: per
    subscriber ``(task id, first snapshot, what it followed)``."""
    async with a.send_stream(ask_for("marks", MARKS)) as stream:
        snapshot = (await stream.next())["task"]
        task_id = snapshot["id"]
        other = asyncio.ensure_future(subscribed(b, task_id))
        try:
            followed = await follow(stream, SETTLE_S)
        except BaseException:
            other.cancel()
            raise
    subscribers = [(task_id, snapshot, followed)]
    on_b = await other
    if on_b is not None:
        subscribers.append((task_id, *on_b))
    return subscribers


async def until_busy(running: Any, pid: int) -> None:
    """Wait (at most 10 s: a loaded machine starts handlers late) until the process ``pid``
    runs a handler, so that killing it lands on work in progress."""
    for _ in range(200):
        if any(pid in pids for pids in running.running_handlers().values()):
            await asyncio.sleep(0.1)  # and has written some of its events
            return
        await asyncio.sleep(0.05)


async def subscribed(replica: Rpc, task_id: str) -> tuple[dict[str, Any], Any] | None:
    """Follow ``task_id`` on ``replica``; None if it finished before the subscription."""
    try:
        async with replica.subscribe(task_id) as stream:
            snapshot = (await stream.next())["task"]
            return snapshot, await follow(stream, SETTLE_S)
    except RpcError as refused:  # a finished task has nothing to subscribe to
        assert "TASK_STATE_COMPLETED" in str(refused), refused
        return None


async def kill_workers_while_streaming(tmp_path: Path, kills: int) -> None:
    async with (
        cluster(tmp_path, replicas=2, workers=2) as running,
        # Keep-alive connections let go before the server's 5 s idle timeout could close one
        # under a request just sent on it.
        httpx.AsyncClient(
            trust_env=False, timeout=TIMEOUT_S, limits=httpx.Limits(keepalive_expiry=1.0)
        ) as http,
    ):
        a, b = (Rpc(http, replica.rpc.url) for replica in running.replicas if replica.rpc)
        flows: list[asyncio.Future[list[tuple[str, dict[str, Any], Any]]]] = []
        try:
            for kill in range(kills):
                for _ in range(TASKS_PER_KILL):
                    flows.append(asyncio.ensure_future(started_and_followed(a, b)))
                victim = running.workers[kill % 2]
                await until_busy(running, victim.pid)  # kill it while it writes
                await running.restart(victim)  # SIGKILL, then a new one
            results = await asyncio.wait_for(asyncio.gather(*flows), SETTLE_S)
        finally:
            for flow in flows:
                flow.cancel()
        subscribers = [subscriber for result in results for subscriber in result]
        assert len(subscribers) >= kills * TASKS_PER_KILL
        tasks: dict[str, Task] = {}
        for task_id, snapshot, followed in subscribers:
            assert followed.ended is None, f"task {task_id}: stream ended early {followed.ended}"
            last = followed.events[-1]["statusUpdate"]
            assert state_of(last) == "TASK_STATE_COMPLETED", (task_id, last)
            assert_no_repeats(followed.events)
            if task_id not in tasks:
                tasks[task_id] = from_builtins(await a.get(task_id), Task)
            # What this subscriber saw is what the store holds: no event missing.
            assert folded(snapshot, followed.events) == tasks[task_id], task_id
        # The kills did land on handlers at work: some tasks ran again elsewhere.
        assert any(len(running.runs(task_id)) > 1 for task_id in tasks)
        assert running.exited() == []


async def test_no_subscriber_misses_an_event_while_workers_are_killed(tmp_path: Path) -> None:
    await kill_workers_while_streaming(tmp_path, KILLS)


@pytest.mark.slow
async def test_no_subscriber_misses_an_event_over_many_kills(tmp_path: Path) -> None:
    await kill_workers_while_streaming(tmp_path, LONG_KILLS)
