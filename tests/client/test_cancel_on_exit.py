"""``cancel_on_exit``: a call left before its task settled cancels the task at the agent.

Real servers on loopback; every assertion is on the peer's own state (GetTask from a second
client), never on what the leaving client believes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from peerwire import Agent, Client, Task, TaskContext, TaskState
from peerwire.errors import A2ATimeoutError
from peerwire.testing import live_server
from peerwire.types import Binding

from .conftest import SHUTDOWN_GRACE_S, Gates

WAIT_S = 10.0
BINDINGS = [Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC]


@contextlib.asynccontextmanager
async def peer(agent: Agent, **options: Any) -> AsyncIterator[tuple[str, Client]]:
    """The agent on loopback (all three bindings) and an observer client of its own."""
    async with (
        live_server(agent, shutdown_grace=SHUTDOWN_GRACE_S, grpc_port=0, **options) as url,
        Client.connect(url) as observer,
    ):
        yield url, observer


async def only_task(observer: Client) -> Task:
    with anyio.fail_after(WAIT_S):
        while True:
            tasks = await observer.list_tasks()
            if tasks:
                [task] = tasks
                return task
            await anyio.sleep(0.02)


async def until_state(observer: Client, task_id: str, state: TaskState) -> Task:
    """The peer's task once it is in ``state`` (bounded in time)."""
    with anyio.fail_after(WAIT_S):
        while True:
            task = await observer.get_task(task_id)
            if task.status.state is state:
                return task
            await anyio.sleep(0.02)


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_cancelled_send_cancels_the_remote_task(
    agent: Agent, gates: Gates, binding: str
) -> None:
    async with (
        peer(agent) as (url, observer),
        Client.connect(url, bindings=[binding], cancel_on_exit=True) as client,
    ):
        call = asyncio.ensure_future(client.send("work", skill="slow"))
        with anyio.fail_after(WAIT_S):
            await gates.started.wait()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        task = await only_task(observer)
        await until_state(observer, task.id, TaskState.CANCELED)


async def test_a_send_that_times_out_names_and_cancels_its_task(agent: Agent, gates: Gates) -> None:
    async with (
        peer(agent) as (url, observer),
        Client.connect(url, timeout=0.5, cancel_on_exit=True) as client,
    ):
        with pytest.raises(A2ATimeoutError) as raised:
            await client.send("work", skill="slow")
        task_id = raised.value.task_id
        assert task_id is not None, "the timeout says which task the send made"
        assert [t.id for t in await observer.list_tasks()] == [task_id]
        await until_state(observer, task_id, TaskState.CANCELED)


async def test_without_cancel_on_exit_a_timeout_still_names_the_task(
    agent: Agent, gates: Gates
) -> None:
    async with peer(agent) as (url, observer), Client.connect(url, timeout=0.5) as client:
        with pytest.raises(A2ATimeoutError) as raised:
            await client.send("work", skill="slow")
        task_id = raised.value.task_id
        assert task_id is not None
        task = await observer.get_task(task_id)
        assert task.status.state is TaskState.WORKING, "not canceled unless asked"
        await observer.cancel_task(task_id)


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_stream_closed_early_cancels_the_remote_task(
    agent: Agent, gates: Gates, binding: str
) -> None:
    async with (
        peer(agent) as (url, observer),
        Client.connect(url, bindings=[binding]) as client,
    ):
        events = client.stream("work", skill="slow", cancel_on_exit=True)
        first = await anext(events)
        assert isinstance(first, Task)
        await events.aclose()  # type: ignore[attr-defined]
        await until_state(observer, first.id, TaskState.CANCELED)


async def test_a_stream_left_by_break_without_the_option_leaves_the_task(
    agent: Agent, gates: Gates
) -> None:
    async with peer(agent) as (url, observer), Client.connect(url) as client:
        async with contextlib.aclosing(client.stream("work", skill="slow")) as events:
            async for first in events:
                assert isinstance(first, Task)
                break
        await asyncio.sleep(0.2)
        task = await observer.get_task(first.id)
        assert task.status.state is TaskState.WORKING
        await observer.cancel_task(first.id)


async def test_a_subscription_that_times_out_cancels_the_task(agent: Agent, gates: Gates) -> None:
    async with (
        peer(agent) as (url, observer),
        Client.connect(url, stream_idle_timeout=0.3, cancel_on_exit=True) as client,
    ):
        started = await client.send("work", skill="slow", return_immediately=True)
        assert isinstance(started, Task)
        with pytest.raises(A2ATimeoutError) as raised:
            async for _ in client.subscribe(started.id):
                pass
        assert raised.value.task_id == started.id
        await until_state(observer, started.id, TaskState.CANCELED)


async def test_a_finished_stream_cancels_nothing(agent: Agent) -> None:
    async with peer(agent) as (url, observer), Client.connect(url, cancel_on_exit=True) as client:
        payloads = [p async for p in client.stream("hello", skill="echo")]
        assert isinstance(payloads[0], Task)
        task = await observer.get_task(payloads[0].id)
        assert task.status.state is TaskState.COMPLETED


async def test_an_agent_that_does_not_deduplicate_is_sent_a_stream(
    agent: Agent, gates: Gates
) -> None:
    """Without the idempotent-send extension, a blocking send with cancel_on_exit goes as a
    stream: the first event names the task, so a timeout can say which and cancel it."""
    async with (
        peer(agent, message_retention=None) as (url, observer),
        Client.connect(url, timeout=0.5, cancel_on_exit=True) as client,
    ):
        assert not client.deduplicates
        done = await client.send("hello", skill="echo")
        assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED
        assert done.artifacts, "the answer is the whole task, as a send's"
        with pytest.raises(A2ATimeoutError) as raised:
            await client.send("work", skill="slow")
        task_id = raised.value.task_id
        assert task_id is not None
        await until_state(observer, task_id, TaskState.CANCELED)


async def test_a_caller_cancelled_while_its_cancel_is_sent_ends_cancelled() -> None:
    """The CancelTask of a timed-out send is under way (the agent's ``on_cancel`` holds its
    answer) when the caller itself is cancelled: the caller ends cancelled at once, not with
    the timeout, and the CancelTask still reaches the agent."""
    agent = Agent("Slow to cancel")
    started, cleaning, release = asyncio.Event(), asyncio.Event(), asyncio.Event()

    @agent.skill()
    async def slow(ctx: TaskContext) -> None:
        started.set()
        await anyio.sleep_forever()

    @agent.on_cancel("slow")
    async def clean_up(ctx: TaskContext) -> None:
        cleaning.set()
        await release.wait()  # CancelTask is answered once the handler has stopped

    async with (
        peer(agent) as (url, observer),
        Client.connect(url, timeout=0.5, cancel_on_exit=True) as client,
    ):
        call = asyncio.ensure_future(client.send("work", skill="slow"))
        with anyio.fail_after(WAIT_S):
            await cleaning.wait()  # the send timed out and its CancelTask is being answered
        call.cancel()
        with anyio.fail_after(WAIT_S), pytest.raises(asyncio.CancelledError):
            await call
        assert started.is_set()
        release.set()
        task = await only_task(observer)
        await until_state(observer, task.id, TaskState.CANCELED)
