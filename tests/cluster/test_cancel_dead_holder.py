"""CancelTask while the worker holding the task is dead (``on_restart="resume"``).

The sweeper resumes the task on the other worker while the cancel waits for the dead one. What
must hold: the answer is CANCELED, the task is CANCELED, no handler of it runs anywhere
afterwards, and its ``on_cancel`` hook ran exactly once (in the worker that took it over).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import anyio
import pytest
from server._agents import ask_for
from server._rpc import state_of

from ._cluster import SETTLE_S, cluster, follow, until_running

pytestmark = pytest.mark.services

# Longer than a lease renewal (lease-ttl 2 s / 3) and a sweep (1 s): anything that would still
# stop a handler or run a hook has had its chance.
SETTLE_AFTER_S = 3.0


async def test_cancel_while_the_holder_is_dead(tmp_path: Path) -> None:
    async with cluster(tmp_path) as running:
        a, b = (m.rpc for m in running.replicas)
        assert a is not None and b is not None
        async with a.send_stream(ask_for("forever")) as stream:
            task_id = (await stream.next())["task"]["id"]
            holder_pid = await until_running(stream)
            holder = next(w for w in running.workers if w.pid == holder_pid)
            other = next(w for w in running.workers if w is not holder)
            await running.kill(holder)  # SIGKILL: its lease lives on for up to 2 s
            # From the other replica, while the holder is dead and still holds the lease.
            canceled = await b.result("CancelTask", {"id": task_id})
            assert state_of(canceled) == "TASK_STATE_CANCELED"
            rest = await follow(stream, SETTLE_S)
        assert rest.ended is None
        assert state_of(rest.events[-1]["statusUpdate"]) == "TASK_STATE_CANCELED"
        await asyncio.sleep(SETTLE_AFTER_S)
        assert state_of(await a.get(task_id)) == "TASK_STATE_CANCELED"
        assert running.running_handlers() == {}
        # The task changed hands during the cancel: its hook ran once, where it went.
        assert running.cancel_hooks(task_id) == [other.pid]
        assert running.exited() == []


async def test_cancel_after_the_task_was_resumed_elsewhere(tmp_path: Path) -> None:
    async with cluster(tmp_path) as running:
        a, b = (m.rpc for m in running.replicas)
        assert a is not None and b is not None
        async with a.send_stream(ask_for("forever")) as stream:
            task_id = (await stream.next())["task"]["id"]
            holder_pid = await until_running(stream)
            holder = next(w for w in running.workers if w.pid == holder_pid)
            other = next(w for w in running.workers if w is not holder)
            await running.kill(holder)
            # The sweeper resumes it on the other worker (lease 2 s + two sweeps of 1 s).
            with anyio.fail_after(SETTLE_S):
                assert await until_running(stream) == other.pid
            canceled = await b.result("CancelTask", {"id": task_id})
            assert state_of(canceled) == "TASK_STATE_CANCELED"
            rest = await follow(stream, SETTLE_S)
        assert state_of(rest.events[-1]["statusUpdate"]) == "TASK_STATE_CANCELED"
        await asyncio.sleep(SETTLE_AFTER_S)
        assert running.running_handlers() == {}
        assert running.cancel_hooks(task_id) == [other.pid]
        assert [run.pid for run in running.runs(task_id)] == [holder.pid, other.pid]
        assert running.exited() == []
