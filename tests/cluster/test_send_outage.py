"""Answers mean what they say: SendMessage while the work queue's Redis is down.

The task is stored in PostgreSQL before its job is queued. With Redis away, the replica cannot
queue the job: it answers with the task it created, SUBMITTED, and the sweeper queues it once
Redis is back. So every answer is a task that exists (and runs later) or an error that
created nothing: a caller retrying on an error never makes a duplicate. A stream started
during the outage follows its task to the end once Redis is back.

2 replicas and 2 workers on a redis-server of the test's own (the harness), killed for the
sends and started again, empty, afterwards.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from server._agents import ask_for
from server._rpc import state_of

from ._cluster import all_tasks, cluster, follow, until_terminal

pytestmark = pytest.mark.services

SENDS = 6


async def test_a_send_during_a_redis_outage_answers_with_the_task_it_created(
    tmp_path: Path,
) -> None:
    async with cluster(tmp_path, replicas=2, workers=2) as running:
        rpcs = [replica.rpc for replica in running.replicas]
        assert rpcs[0] is not None and rpcs[1] is not None
        await running.redis.kill()
        outcomes = await asyncio.gather(
            *(
                rpcs[i % 2].call(  # type: ignore[union-attr]
                    "SendMessage", {"message": ask_for("steps", "3 0.01")}, request_id=i
                )
                for i in range(SENDS)
            )
        )
        async with rpcs[1].send_stream(ask_for("steps", "3 0.01")) as stream:
            first = await stream.next()
            answered = [outcome["result"]["task"] for outcome in outcomes if "result" in outcome]
            refused = [outcome["error"] for outcome in outcomes if "error" in outcome]
            for task in answered:
                assert state_of(task) == "TASK_STATE_SUBMITTED", task  # stored, not queued
            # Every error created nothing: the store holds exactly the tasks answered.
            stored = {task["id"] for task in await all_tasks(rpcs[0])}
            assert stored == {task["id"] for task in answered} | {first["task"]["id"]}, refused
            await running.redis.start()  # empty: the jobs are gone; the store has the tasks
            followed = await follow(stream)
        assert followed.ended is None, followed.ended
        assert state_of(followed.events[-1]["statusUpdate"]) == "TASK_STATE_COMPLETED"
        done = await until_terminal(rpcs[0], stored)
        assert all(state_of(task) == "TASK_STATE_COMPLETED" for task in done.values()), done
        assert running.exited() == []
