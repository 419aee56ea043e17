"""The harness itself: a cluster comes up and runs tasks, a worker restarts, Redis restarts
empty (its own redis-server, never the machine's)."""

from __future__ import annotations

from pathlib import Path

import pytest
from server._agents import ask_for
from server._rpc import state_of

from ._cluster import cluster, follow

pytestmark = pytest.mark.services


async def test_the_harness_runs_tasks_restarts_a_worker_and_empties_redis(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, replicas=1, workers=1) as running:
        (a,) = running.replicas
        (worker,) = running.workers
        assert a.rpc is not None and running.redis.port != 6379
        for _ in range(2):
            async with a.rpc.send_stream(ask_for("steps", "3 0.01")) as stream:
                followed = await follow(stream)
            assert followed.ended is None
            assert state_of(followed.events[-1]["statusUpdate"]) == "TASK_STATE_COMPLETED"
            task_id = followed.events[-1]["statusUpdate"]["taskId"]
            assert [run.pid for run in running.runs(task_id)] == [worker.pid]
            assert all(run.ended for run in running.runs(task_id))
            old_pid = worker.pid
            await running.restart(worker)
            assert worker.pid != old_pid and worker.alive
        client = running.redis.client()
        try:
            await client.set("x", 1)
            await running.redis.restart()
            assert await client.get("x") is None  # a new, empty server on the same port
        finally:
            await client.aclose()
        assert running.exited() == []
        assert running.running_handlers() == {}
