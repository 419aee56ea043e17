"""Writes of one turn of the loop go to Redis together (``_coalesce.Coalescer``), and lose
nothing for it: the publishes of several tasks in one pipeline, also after a Redis restart
(which loses the publish script: reloaded, then sent again), and each publish still once; the
jobs queued by several requests in one XADD pipeline, each read once, in order.

On a ``redis-server`` of the test's own (restarted here), never the machine's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from peerwire._coalesce import Coalescer
from peerwire.cluster.redis_bus import RedisBus
from peerwire.cluster.work_queue import Job, RedisWorkQueue
from peerwire.server.bus import Subscription
from peerwire.types import Artifact, Part, TaskArtifactUpdateEvent

from ._cluster import RedisServer

pytestmark = pytest.mark.services
WAIT_S = 20.0
TASKS = [f"t{n}" for n in range(6)]


def chunk(task_id: str, n: int) -> TaskArtifactUpdateEvent:
    return TaskArtifactUpdateEvent(
        task_id=task_id,
        context_id="ctx",
        artifact=Artifact(artifact_id="log", parts=[Part(text=str(n))]),
        append=n > 0,
    )


@pytest.fixture
async def redis(tmp_path: Path) -> AsyncIterator[RedisServer]:
    server = RedisServer(tmp_path)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def counted(bus: RedisBus) -> list[int]:
    """The size of every batch the bus publishes from now on."""
    sizes: list[int] = []
    publish_batch = bus._publish_batch

    async def flush(batch: list[Any]) -> list[None]:
        sizes.append(len(batch))
        return await publish_batch(batch)

    bus._publishes = Coalescer(flush)
    return sizes


async def versions(subscription: Subscription, after: int, count: int) -> list[int]:
    got = []
    with anyio.fail_after(WAIT_S):
        for _ in range(count):
            item = await subscription.next(after)
            assert item is not None
            got.append(item[0])
    return got


async def test_publishes_of_one_turn_share_a_round_trip(redis: RedisServer) -> None:
    async with RedisBus(redis.url, prefix="grouped", block_seconds=0.5) as bus:
        sizes = counted(bus)
        subscriptions = [bus.subscribe(task_id) for task_id in TASKS]
        try:
            # Two events (one append) for each task, then one more, every task in one turn.
            await asyncio.gather(
                *(bus.publish_many(t, 2, (chunk(t, 0), chunk(t, 1))) for t in TASKS)
            )
            await asyncio.gather(*(bus.publish(t, 4, chunk(t, 2)) for t in TASKS))
            assert sizes == [len(TASKS), len(TASKS)]
            # Published again (a retry after an unknown outcome): not added twice.
            await asyncio.gather(*(bus.publish(t, 4, chunk(t, 2)) for t in TASKS))
            for subscription in subscriptions:
                assert await versions(subscription, 1, 3) == [2, 3, 4]
            client = redis.client()
            try:
                for task_id in TASKS:
                    assert await client.xlen(bus.stream_key(task_id)) == 3
            finally:
                await client.aclose()

            # Redis restarts empty: its scripts are gone. A grouped publish loads the script
            # again and goes through; subscribers get what comes next.
            await redis.restart()
            await asyncio.gather(*(bus.publish(t, 5, chunk(t, 3)) for t in TASKS))
            assert sizes[-1] == len(TASKS)
            for subscription in subscriptions:
                assert await versions(subscription, 4, 1) == [5]
        finally:
            for subscription in subscriptions:
                subscription.close()


async def test_jobs_queued_in_one_turn_share_a_round_trip(redis: RedisServer) -> None:
    queue = RedisWorkQueue(redis.url, prefix="grouped", block_seconds=0.5)
    await queue.open()
    try:
        sizes: list[int] = []
        enqueue_batch = queue._enqueue_batch

        async def flush(jobs: list[Job]) -> list[None]:
            sizes.append(len(jobs))
            return await enqueue_batch(jobs)

        queue._enqueues = Coalescer(flush)
        await asyncio.gather(*(queue.enqueue(t, "tenant", "owner", "start") for t in TASKS))
        await queue.enqueue("alone", "tenant", "owner", "continue")
        assert sizes == [len(TASKS), 1]
        read: list[Job] = []
        with anyio.fail_after(WAIT_S):
            while len(read) < len(TASKS) + 1:
                read += await queue.read(64)
        assert [(j.task_id, j.tenant, j.owner, j.kind) for j in read] == [
            *((t, "tenant", "owner", "start") for t in TASKS),
            ("alone", "tenant", "owner", "continue"),
        ]
    finally:
        await queue.close()
