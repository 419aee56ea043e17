"""The lease holder re-checks its handlers against the store and the cancel marks, so control
messages are at least once: a follow-up or a cancel whose pub/sub message never arrived still
reaches the handler, and a handler whose lease another worker took stops.

In one process (``live_server`` with a ``RedisWorkQueue`` on a redis-server of the test's own,
local workers, short leases); the lost message is simulated by writing to the store, or to
Redis, what the replica would have written, and sending nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from server._agents import ask_for
from server._rpc import TIMEOUT_S, Rpc, state_of, user_message

from peerwire import Agent, TaskContext
from peerwire.cluster import RedisBus, RedisWorkQueue
from peerwire.protocol import TaskRecord
from peerwire.server.stores import MemoryTaskStore
from peerwire.testing import live_server
from peerwire.types import (
    Message,
    Part,
    Role,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    now_timestamp,
)

from ._cluster import RedisServer

pytestmark = pytest.mark.services

LEASE_TTL = 0.6  # renewals every 0.2 s
WAIT_S = 10.0


@dataclass
class Seen:
    asked: dict[str, int] = field(default_factory=dict)
    answers: dict[str, list[str]] = field(default_factory=dict)
    canceled: dict[str, int] = field(default_factory=dict)
    left: dict[str, int] = field(default_factory=dict)
    running: dict[str, asyncio.Event] = field(default_factory=dict)

    def started(self, task_id: str) -> asyncio.Event:
        return self.running.setdefault(task_id, asyncio.Event())


def workbench(seen: Seen) -> Agent:
    agent = Agent("Rechecked", description="Handlers the holder re-checks")

    @agent.skill("chat")
    async def chat(ctx: TaskContext) -> str:
        seen.asked[ctx.task_id] = seen.asked.get(ctx.task_id, 0) + 1
        answer = await ctx.ask("Who is asking?")
        seen.answers.setdefault(ctx.task_id, []).append(answer.text)
        return f"hello {answer.text}"

    @agent.skill("forever")
    async def forever(ctx: TaskContext) -> str:
        try:
            seen.started(ctx.task_id).set()
            await asyncio.sleep(60)
            return "nobody stopped me"
        finally:
            seen.left[ctx.task_id] = seen.left.get(ctx.task_id, 0) + 1

    @agent.on_cancel("forever")
    async def forever_canceled(ctx: TaskContext) -> None:
        seen.canceled[ctx.task_id] = seen.canceled.get(ctx.task_id, 0) + 1

    return agent


@dataclass
class Node:
    rpc: Rpc
    store: MemoryTaskStore
    queue: RedisWorkQueue
    redis: RedisServer
    seen: Seen


@contextlib.asynccontextmanager
async def node(tmp_path: Path) -> AsyncIterator[Node]:
    redis = RedisServer(tmp_path)
    await redis.start()
    try:
        seen = Seen()
        store = MemoryTaskStore()
        queue = RedisWorkQueue(redis.url, prefix="recheck", lease_ttl=LEASE_TTL, sweep_every=5)
        bus = RedisBus(redis.url, prefix="recheck", block_seconds=0.5)
        async with (
            live_server(workbench(seen), store=store, bus=bus, queue=queue) as url,
            httpx.AsyncClient(trust_env=False, timeout=TIMEOUT_S) as http,
        ):
            yield Node(Rpc(http, url), store, queue, redis, seen)
    finally:
        await redis.kill()


POLL_S = 0.02


async def until(condition: Callable[[], bool]) -> None:
    """Wait (bounded, polling: handlers here are not ours to signal from) for ``condition``."""
    for _ in range(round(WAIT_S / POLL_S)):
        if condition():
            return
        await asyncio.sleep(POLL_S)
    raise AssertionError("the condition did not come true")


async def until_state(n: Node, task_id: str, state: str) -> dict[str, Any]:
    for _ in range(round(WAIT_S / POLL_S)):
        task: dict[str, Any] = await n.rpc.get(task_id)
        if state_of(task) == state:
            return task
        await asyncio.sleep(POLL_S)
    raise AssertionError(f"{task_id} did not become {state}")


def status(task_id: str, context_id: str, state: TaskState) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(
        task_id=task_id,
        context_id=context_id,
        status=TaskStatus(state=state, timestamp=now_timestamp()),
    )


async def start_forever(n: Node) -> dict[str, Any]:
    task = await n.rpc.send(ask_for("forever"), returnImmediately=True)
    with anyio.fail_after(WAIT_S):
        await n.seen.started(task["id"]).wait()
    return task


async def test_a_follow_up_whose_message_was_lost_reaches_the_waiting_handler(
    tmp_path: Path,
) -> None:
    async with node(tmp_path) as n:
        task = await n.rpc.send(ask_for("chat"))
        assert state_of(task) == "TASK_STATE_INPUT_REQUIRED"
        task_id, context_id = task["id"], task["contextId"]
        # What a replica records for a follow-up; its "deliver" never arrives.
        answer = Message(
            message_id="m-ada",
            role=Role.USER,
            parts=[Part(text="Ada")],
            task_id=task_id,
            context_id=context_id,
        )
        await n.store.append(task_id, [answer, status(task_id, context_id, TaskState.WORKING)])
        final = await until_state(n, task_id, "TASK_STATE_COMPLETED")
        assert final["artifacts"][0]["parts"] == [{"text": "hello Ada"}]
        assert n.seen.answers[task_id] == ["Ada"]  # once
        assert n.seen.asked[task_id] == 1


async def test_a_cancel_recorded_elsewhere_stops_the_handler_and_its_hook_runs_once(
    tmp_path: Path,
) -> None:
    async with node(tmp_path) as n:
        task = await start_forever(n)
        task_id, context_id = str(task["id"]), str(task["contextId"])
        # A replica that gave up waiting for the holder records CANCELED itself.
        await n.store.append(task_id, [status(task_id, context_id, TaskState.CANCELED)])
        await until(lambda: n.seen.left.get(task_id) == 1)
        await asyncio.sleep(LEASE_TTL)  # a few more renewals: nothing runs twice
        assert n.seen.canceled == {task_id: 1}
        assert state_of(await n.rpc.get(task_id)) == "TASK_STATE_CANCELED"


async def test_a_cancel_mark_stops_the_handler_without_its_message(tmp_path: Path) -> None:
    async with node(tmp_path) as n:
        task = await start_forever(n)
        task_id = str(task["id"])
        client = n.redis.client()
        try:  # the mark a cancel leaves; its pub/sub message is lost
            await client.set(n.queue.cancel_key(task_id), 1)
        finally:
            await client.aclose()
        await until(lambda: n.seen.left.get(task_id) == 1)
        await until_state(n, task_id, "TASK_STATE_CANCELED")
        assert n.seen.canceled == {task_id: 1}


async def test_a_handler_whose_lease_another_worker_took_stops_silently(tmp_path: Path) -> None:
    async with node(tmp_path) as n:
        task = await start_forever(n)
        task_id = str(task["id"])
        client = n.redis.client()
        try:
            await client.set(n.queue.lease_key(task_id), "another-worker", px=60_000)
        finally:
            await client.aclose()
        await until(lambda: n.seen.left.get(task_id) == 1)
        await asyncio.sleep(LEASE_TTL)
        # Nothing recorded: the task is the other worker's to finish.
        assert state_of(await n.rpc.get(task_id)) == "TASK_STATE_WORKING"
        assert n.seen.canceled == {}


async def test_a_new_task_starts_from_its_job_without_a_store_read(tmp_path: Path) -> None:
    """The job of a new task carries it as created, and its first message's caller: the
    worker starts it without reading the store (neither the task nor its recorded callers);
    its later work (the answer, on the record) goes on as ever."""
    async with node(tmp_path) as n:
        read: list[str] = []
        load_many, load_callers = n.store.load_many, n.store.load_callers

        async def counted(tasks: Any) -> Any:
            read.extend(task_id for task_id, _ in tasks)
            return await load_many(tasks)

        async def counted_callers(task_id: str) -> dict[str, bytes]:
            read.append(f"callers of {task_id}")
            return await load_callers(task_id)

        n.store.load_many = counted  # type: ignore[method-assign]
        n.store.load_callers = counted_callers  # type: ignore[method-assign]
        task = await n.rpc.send(ask_for("chat"))
        assert state_of(task) == "TASK_STATE_INPUT_REQUIRED"
        assert read == []
        answered = await n.rpc.send(user_message("Grace", taskId=task["id"]))
        assert state_of(answered) == "TASK_STATE_COMPLETED"
        assert n.seen.answers[task["id"]] == ["Grace"]


async def test_a_job_carrying_an_unreadable_task_is_run_from_the_store(tmp_path: Path) -> None:
    async with node(tmp_path) as n:
        first = Message(
            message_id="m-first",
            role=Role.USER,
            parts=[Part(text="")],
            metadata={"skill": "chat"},
            task_id="t-carried-badly",
            context_id="c-1",
        )
        record = TaskRecord(
            "t-carried-badly",
            "c-1",
            TaskStatus(state=TaskState.SUBMITTED, timestamp=now_timestamp()),
            history=[first],
            version=1,
        )
        await n.store.create(record, tenant="", owner="")
        await n.queue.enqueue(record.id, "", "", "start", task=b"{not a task")
        await until_state(n, record.id, "TASK_STATE_INPUT_REQUIRED")
        assert n.seen.asked[record.id] == 1
