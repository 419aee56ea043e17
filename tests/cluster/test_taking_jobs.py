"""A worker takes the jobs of one read together (``RedisWorkQueue.take_jobs``): every job
acknowledged, the lease of each task taken unless another worker holds it, each task's cancel
mark looked at in the same step, and a job carrying its task as created said to be ``FRESH``
only when nothing can have changed the task since: first taker, young job, no follow-up
recorded. Against the machine's Redis, under a key prefix of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from server._services import REDIS_URL, fresh_prefix

from peerwire.cluster import RedisWorkQueue
from peerwire.cluster.work_queue import CANCELED, FRESH, OURS, Job

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

    taken = await queue.take_jobs(jobs, jobs[:3])

    # Another worker's task is left out; the marked one is ours, and said to be canceled.
    assert taken == {"free": OURS, "marked": CANCELED}
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
    assert await queue.take_jobs(jobs, jobs) == {"mine": OURS}
    assert await queue.lease_holder("mine") == queue.consumer
    # Leases given back together: each only by its holder.
    await client.set(queue.lease_key("theirs"), "another-worker", px=60_000)
    await queue.release_leases(["mine", "theirs"])
    assert await queue.lease_holder("mine") is None
    assert await queue.lease_holder("theirs") == "another-worker"


async def test_jobs_not_taken_after_all_go_back_to_the_queue(queue: RedisWorkQueue) -> None:
    await queue.enqueue("again", "acme", "alice", "recover")
    (job,) = await queue.read(10)
    await queue.take_jobs([job], [job])
    await queue.requeue([job])
    (back,) = await queue.read(10)
    assert (back.task_id, back.tenant, back.owner, back.kind) == (
        "again",
        "acme",
        "alice",
        "recover",
    )
    assert back.entry_id != job.entry_id


async def read_one(queue: RedisWorkQueue) -> Job:
    (job,) = await queue.read(10)
    return job


async def test_a_job_carrying_its_task_is_fresh_only_for_its_first_taker(
    queue: RedisWorkQueue, client: Redis
) -> None:
    await queue.enqueue("new", "acme", "alice", "start", task=b"{}")
    job = await read_one(queue)
    assert job.task == b"{}"
    assert await queue.take_jobs([job], [job]) == {"new": FRESH}
    # The same job again (a retried XADD): the task was taken before, by us or another.
    await queue.enqueue("new", "acme", "alice", "start", task=b"{}")
    again = await read_one(queue)
    assert await queue.take_jobs([again], [again]) == {"new": OURS}
    await queue.release_leases(["new"])  # e.g. its handler waits for its caller now
    await queue.enqueue("new", "acme", "alice", "start", task=b"{}")
    later = await read_one(queue)
    assert await queue.take_jobs([later], [later]) == {"new": OURS}


async def test_a_changed_or_old_task_is_read_from_the_store(
    queue: RedisWorkQueue, client: Redis
) -> None:
    # A follow-up was recorded before any worker took it.
    await queue.enqueue("followed", "", "", "start", task=b"{}")
    assert await queue.changed_then_holder("followed") is None
    job = await read_one(queue)
    assert await queue.take_jobs([job], [job]) == {"followed": OURS}
    # Canceled: said so, as ever.
    await queue.enqueue("canceled", "", "", "start", task=b"{}")
    await client.set(queue.cancel_key("canceled"), 1, px=60_000)
    job = await read_one(queue)
    assert await queue.take_jobs([job], [job]) == {"canceled": CANCELED}
    # Queued longer ago than ``fresh_for`` (by Redis's clock): a sweep may have come between.
    queue.fresh_for = 0.001
    await queue.enqueue("old", "", "", "start", task=b"{}")
    job = await read_one(queue)
    await asyncio.sleep(0.05)
    assert await queue.take_jobs([job], [job]) == {"old": OURS}
    # Without the task, or not a start: the store says what it is.
    queue.fresh_for = 5.0
    await queue.enqueue("plain", "", "", "start")
    await queue.enqueue("resumed", "", "", "recover", task=b"{}")
    jobs = await queue.read(10)
    assert await queue.take_jobs(jobs, jobs) == {"plain": OURS, "resumed": OURS}
    # And the first taker of a plain job is a taker all the same: a copy-carrying job that
    # comes after it is not fresh.
    await queue.release_leases(["plain"])
    await queue.enqueue("plain", "", "", "start", task=b"{}")
    job = await read_one(queue)
    assert await queue.take_jobs([job], [job]) == {"plain": OURS}


async def test_acknowledged_jobs_leave_the_stream_and_pending_ones_stay(
    queue: RedisWorkQueue, client: Redis
) -> None:
    """The sweeper's trim: what the group acknowledged goes, what a consumer still holds (it
    may be lost and reclaimed) and what no consumer was given yet stay."""
    assert await queue.trim_acknowledged() == 0  # no stream yet
    for n in range(6):
        await queue.enqueue(f"t{n}", "", "", "start")
    first = await queue.read(2)
    await queue.take_jobs(first, first)  # t0 and t1 acknowledged
    held = await queue.read(2)  # t2 and t3 given out, not acknowledged: pending
    assert [job.task_id for job in held] == ["t2", "t3"]
    assert await queue.trim_acknowledged() == 2
    left = [fields[b"task"].decode() for _, fields in await client.xrange(queue.jobs_key)]
    assert left == ["t2", "t3", "t4", "t5"]
    await queue.take_jobs(held, held)
    assert await queue.trim_acknowledged() == 2  # up to the last given out
    rest = await queue.read(10)
    assert [job.task_id for job in rest] == ["t4", "t5"], "the undelivered jobs are still read"
    await queue.take_jobs(rest, rest)
    assert await queue.trim_acknowledged() == 2
    assert await client.xlen(queue.jobs_key) == 0
    assert await queue.trim_acknowledged() == 0
