"""Cluster metrics: lease renewals, the work queue's length and the sweeper's actions, on the
machine's Redis (a key prefix of this test's own) with the work queue shared in one process.

A task the store holds but no process runs (its job was lost: written to the store, never
queued) is found by the sweeper on two sweeps in a row and queued again: one
``requeued_start`` action, and then it runs.
"""

from __future__ import annotations

import asyncio
import socket
import uuid

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from peerwire import Agent, Client, TaskContext
from peerwire.cluster import RedisBus, RedisWorkQueue
from peerwire.protocol import TaskRecord
from peerwire.server.stores import MemoryTaskStore
from peerwire.testing import live_server
from peerwire.types import Binding, Message, Part, Role, TaskState, TaskStatus, now_timestamp

pytestmark = pytest.mark.services

REDIS = "redis://127.0.0.1:6379"
WAIT_S = 15.0


async def page(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    async with httpx.AsyncClient(timeout=10, trust_env=False) as http:
        text = (await http.get(url + "/metrics")).text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def test_renewals_queue_length_and_sweeper_actions_are_counted() -> None:
    release = asyncio.Event()
    agent = Agent("Clustered Agent")

    @agent.skill()
    async def hold(ctx: TaskContext) -> str:
        await ctx.start_work()
        await release.wait()
        return "done"

    prefix = f"metrics-{uuid.uuid4().hex[:8]}"
    store = MemoryTaskStore()
    queue = RedisWorkQueue(REDIS, prefix=prefix, lease_ttl=0.6, sweep_every=0.3)
    bus = RedisBus(REDIS, prefix=prefix, block_seconds=0.5)
    try:
        await _run(agent, store, bus, queue, release)
    finally:
        await _forget(prefix)


async def _forget(prefix: str) -> None:
    """Remove this test's keys from the machine's Redis (only those under its prefix)."""
    from redis.asyncio import Redis

    client = Redis.from_url(REDIS)
    try:
        keys = [key async for key in client.scan_iter(match=f"{prefix}*", count=500)]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


async def _run(
    agent: Agent,
    store: MemoryTaskStore,
    bus: RedisBus,
    queue: RedisWorkQueue,
    release: asyncio.Event,
) -> None:
    async with live_server(agent, store=store, bus=bus, queue=queue) as url:
        async with Client.connect(url, bindings=[Binding.JSONRPC]) as client:
            running = await client.send("go", return_immediately=True)
        # A task whose job was lost: in the store, SUBMITTED, never queued.
        lost = str(uuid.uuid4())
        context = str(uuid.uuid4())
        message = Message(
            message_id=str(uuid.uuid4()),
            role=Role.USER,
            parts=[Part(text="lost")],
            task_id=lost,
            context_id=context,
        )
        record = TaskRecord(
            lost,
            context,
            TaskStatus(state=TaskState.SUBMITTED, timestamp=now_timestamp()),
            history=[message],
            version=1,
        )
        await store.create(record, tenant="", owner="")
        deadline = asyncio.get_running_loop().time() + WAIT_S
        while True:
            found = await page(url)
            renewals = found.get(("peerwire_lease_renewals_total", ()), 0)
            requeued = found.get(
                ("peerwire_sweeper_actions_total", (("action", "requeued_start"),)), 0
            )
            if renewals >= 2 and requeued >= 1 and ("peerwire_work_queue_jobs", ()) in found:
                break
            assert asyncio.get_running_loop().time() < deadline, found
            await asyncio.sleep(0.1)
        assert found[("peerwire_handlers_working", ())] >= 1
        release.set()
        async with Client.connect(url, bindings=[Binding.JSONRPC]) as client:
            for task_id in (running.id, lost):  # type: ignore[union-attr]
                for _ in range(100):
                    task = await client.get_task(task_id)
                    if task.status.state is TaskState.COMPLETED:
                        break
                    await asyncio.sleep(0.05)
                assert task.status.state is TaskState.COMPLETED


async def test_a_worker_serves_its_metrics_on_its_metrics_port() -> None:
    from peerwire.cluster import run_worker

    agent = Agent("Worked Agent")

    @agent.skill()
    async def echo(text: str) -> str:
        return text

    prefix = f"metrics-{uuid.uuid4().hex[:8]}"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    stop = asyncio.Event()
    worker = asyncio.create_task(
        run_worker(
            agent,
            store=MemoryTaskStore(),
            bus=RedisBus(REDIS, prefix=prefix, block_seconds=0.5),
            queue=RedisWorkQueue(REDIS, prefix=prefix, lease_ttl=0.6, sweep_every=0.3),
            stop=stop,
            metrics_port=port,
            metrics_token="w0rker",
        )
    )
    try:
        deadline = asyncio.get_running_loop().time() + WAIT_S
        async with httpx.AsyncClient(timeout=10, trust_env=False) as http:
            while True:
                try:
                    refused = await http.get(f"http://127.0.0.1:{port}/metrics")
                    break
                except httpx.TransportError:
                    assert not worker.done(), worker
                    assert asyncio.get_running_loop().time() < deadline
                    await asyncio.sleep(0.05)
            assert refused.status_code == 401
            answer = await http.get(
                f"http://127.0.0.1:{port}/metrics", headers={"Authorization": "Bearer w0rker"}
            )
        assert answer.status_code == 200
        assert "peerwire_work_queue_jobs" in answer.text
        assert "peerwire_handlers_working 0.0" in answer.text
    finally:
        stop.set()
        await asyncio.wait_for(worker, WAIT_S)
        await _forget(prefix)


async def test_queue_wait_and_the_oldest_queued_jobs_age_are_measured() -> None:
    """Jobs an accepting-only replica queued wait untaken (their age shows on its page) until
    a worker starts and takes them (its page has how long each waited)."""
    from peerwire.cluster import run_worker

    agent = Agent("Queued Agent")

    @agent.skill()
    async def echo(text: str) -> str:
        return text

    prefix = f"metrics-{uuid.uuid4().hex[:8]}"
    store = MemoryTaskStore()  # one store for both, in this process
    waited = 0.4

    def queue() -> RedisWorkQueue:
        return RedisWorkQueue(REDIS, prefix=prefix, lease_ttl=0.6, sweep_every=0.2)

    def bus() -> RedisBus:
        return RedisBus(REDIS, prefix=prefix, block_seconds=0.5)

    oldest = ("peerwire_work_queue_oldest_age_seconds", ())
    stop = asyncio.Event()
    worker: asyncio.Task[None] | None = None
    try:
        async with live_server(
            agent, store=store, bus=bus(), queue=queue(), local_workers=False
        ) as url:
            async with Client.connect(url, bindings=[Binding.JSONRPC]) as client:
                for text in ("one", "two"):
                    await client.send(text, return_immediately=True)
            deadline = asyncio.get_running_loop().time() + WAIT_S
            while True:
                found = await page(url)
                if found.get(oldest, 0) >= waited:
                    break
                assert asyncio.get_running_loop().time() < deadline, found
                await asyncio.sleep(0.1)
            # Two jobs, or more: the sweeper queues again what nobody holds.
            assert found[("peerwire_work_queue_jobs", ())] >= 2
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = int(sock.getsockname()[1])
            worker = asyncio.create_task(
                run_worker(
                    agent, store=store, bus=bus(), queue=queue(), stop=stop, metrics_port=port
                )
            )
            deadline = asyncio.get_running_loop().time() + WAIT_S
            count = ("peerwire_work_queue_wait_seconds_count", ())
            while True:
                try:
                    taken = await page(f"http://127.0.0.1:{port}")
                except httpx.TransportError:
                    taken = {}
                if taken.get(count, 0) >= 2:
                    break
                assert not worker.done(), worker
                assert asyncio.get_running_loop().time() < deadline, taken
                await asyncio.sleep(0.1)
            assert taken[("peerwire_work_queue_wait_seconds_sum", ())] >= 2 * waited
            # Taken: nothing is left waiting, and the replica's page says so.
            deadline = asyncio.get_running_loop().time() + WAIT_S
            while (await page(url)).get(oldest, 1) != 0:
                assert asyncio.get_running_loop().time() < deadline
                await asyncio.sleep(0.1)
    finally:
        stop.set()
        if worker is not None:
            await asyncio.wait_for(worker, WAIT_S)
        await _forget(prefix)
