"""A worker takes the jobs of one read together (``RedisWorkQueue.take_jobs``): every job
acknowledged, the lease of each task taken unless another worker holds it, each task's cancel
mark looked at in the same step. Against the machine's Redis, under a key prefix of its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from server._services import REDIS_URL, fresh_prefix

from peerwire.cluster import RedisWorkQueue

pytestmark = pytest.mark.services


@pytest.fixture
async def queue() -> AsyncIterator[RedisWorkQueue]:
    async with fresh_prefix() as prefix:
        queue = RedisWorkQueue(REDIS_URL, prefix=prefix, block_seconds=0.2)
        await queue.open()
        try:
            yield queue
        finally:
            await queue.close()


@pytest.fixture
async def client() -> AsyncIterator[Redis]:
    client = Redis.from_url(REDIS_URL)
    try:
        yield client
    finally:
        await client.aclose()


async def test_one_read_is_taken_in_one_step(queue: RedisWorkQueue, client: Redis) -> None:
    for task_id in ("free", "held", "marked", "free"):  # "free" twice: a duplicate job
        await queue.enqueue(task_id, "acme", "alice", "start")
    await client.set(queue.lease_key("held"), "another-worker", px=60_000)
    await client.set(queue.cancel_key("marked"), 1, px=60_000)
    jobs = await queue.read(10)
    assert [job.task_id for job in jobs] == ["free", "held", "marked", "free"]

    taken = await queue.take_jobs(jobs, ["free", "held", "marked"])

    # Another worker's task is left out; the marked one is ours, and said to be canceled.
    assert taken == {"free": False, "marked": True}
    assert await queue.lease_holder("free") == queue.consumer
    assert await queue.lease_holder("marked") == queue.consumer
    assert await queue.lease_holder("held") == "another-worker"
    # Every job of the read is acknowledged, the duplicate and the one left out too.
    pending = await client.xpending(queue.jobs_key, queue.group)
    assert pending["pending"] == 0
    assert await queue.read(10) == []


async def test_a_task_held_here_already_is_still_ours(queue: RedisWorkQueue, client: Redis) -> None:
    assert await queue.take_lease("mine")
    await queue.enqueue("mine", "", "", "continue")
    jobs = await queue.read(10)
    assert await queue.take_jobs(jobs, ["mine"]) == {"mine": False}
    assert await queue.lease_holder("mine") == queue.consumer
    # Leases given back together: each only by its holder.
    await client.set(queue.lease_key("theirs"), "another-worker", px=60_000)
    await queue.release_leases(["mine", "theirs"])
    assert await queue.lease_holder("mine") is None
    assert await queue.lease_holder("theirs") == "another-worker"


async def test_jobs_not_taken_after_all_go_back_to_the_queue(queue: RedisWorkQueue) -> None:
    await queue.enqueue("again", "acme", "alice", "recover")
    (job,) = await queue.read(10)
    await queue.take_jobs([job], ["again"])
    await queue.requeue([job])
    (back,) = await queue.read(10)
    assert (back.task_id, back.tenant, back.owner, back.kind) == (
        "again",
        "acme",
        "alice",
        "recover",
    )
    assert back.entry_id != job.entry_id
