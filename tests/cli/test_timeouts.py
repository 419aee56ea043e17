"""A ``--timeout`` that runs out while the task runs: the task's id is printed with how to
follow it, and the exit code is 5 (still running).

Over a streaming agent (the Glossary Agent's ``slow`` works 5 s) the first event names the
task. Over an agent that does not stream, a blocking send of a new message knows the id only
from a peerwire agent (it deduplicates messages, so the client asks it which task the message
made); from another agent (here: one with that turned off) it cannot (the agent says it only
in its answer): that is an error saying so. A continued task's id is known
(``A2ATimeoutError.task_id``), and is printed as it stands.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from peerwire import Agent, Client, Message, Task, TaskContext
from peerwire.testing import live_server
from peerwire.types import SendMessageResponse, StreamResponse, TaskState, decode

from .conftest import SHUTDOWN_GRACE_S, assert_one_error_line, invoke

pytestmark = pytest.mark.asyncio(loop_scope="module")

SHORT = "0.3"  # seconds: far below the 5 s ``slow`` works
HINT = re.compile(r"Follow it with: peerwire subscribe (\S+) (\S+) \(or: peerwire get \1 \2\)")
WORK_S = 10.0  # how long the Desk Agent's tasks work (the tests stop waiting long before)


def desk_agent() -> Agent:
    """An agent that does not stream: ``wait`` works WORK_S s, ``ask`` asks, then works."""
    agent = Agent("Desk Agent", description="Slow and without streams", streaming=False)

    @agent.router
    def route(message: Message) -> str:
        return "ask" if message.text == "ask" else "wait"

    @agent.skill("wait", description="Works a while")
    async def wait(ctx: TaskContext) -> None:
        await ctx.start_work("waiting")
        await asyncio.sleep(WORK_S)
        await ctx.complete("waited")

    @agent.skill("ask", description="Asks, then works a while")
    async def ask(ctx: TaskContext) -> None:
        await ctx.ask("How long?")
        await ctx.update("working on it")
        await asyncio.sleep(WORK_S)
        await ctx.complete("done")

    return agent


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def desk_url() -> AsyncIterator[str]:
    async with live_server(desk_agent(), shutdown_grace=SHUTDOWN_GRACE_S) as url:
        yield url


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def plain_desk_url() -> AsyncIterator[str]:
    """The Desk Agent without idempotent sends: like an agent of another framework."""
    async with live_server(
        desk_agent(), shutdown_grace=SHUTDOWN_GRACE_S, message_retention=None
    ) as url:
        yield url


def followed(err: str, url: str) -> str:
    """The task id the note on stderr says to follow (checking it names this agent)."""
    assert err.startswith("note: "), err
    found = HINT.search(" ".join(err.split()))
    assert found is not None, err
    assert found[1] == url
    return found[2]


async def still_running(url: str, task_id: str) -> None:
    async with Client.connect(url) as client:
        task = await client.get_task(task_id)
    assert task.status.state in (TaskState.SUBMITTED, TaskState.WORKING)


async def test_a_send_that_times_out_prints_the_task_id(glossary_url: str) -> None:
    ran = await invoke("send", glossary_url, "slow", "--timeout", SHORT)
    assert ran.code == 5, (ran.out, ran.err)
    task_id = followed(ran.err, glossary_url)
    assert "still working" in ran.err or "still submitted" in ran.err
    assert ran.out.startswith(f"Task {task_id}  ")
    await still_running(glossary_url, task_id)


async def test_as_json_the_task_as_it_stood(glossary_url: str) -> None:
    ran = await invoke("send", glossary_url, "slow", "--timeout", SHORT, "--json")
    assert ran.code == 5, ran.err
    task = decode(ran.out, SendMessageResponse).task
    assert task is not None and task.status.state in (TaskState.SUBMITTED, TaskState.WORKING)
    assert followed(ran.err, glossary_url) == task.id


async def test_a_stream_without_events_for_the_timeout(glossary_url: str) -> None:
    ran = await invoke("send", glossary_url, "slow", "--stream", "--json", "--timeout", SHORT)
    assert ran.code == 5, ran.err
    first = decode(ran.out.splitlines()[0], StreamResponse).task
    assert first is not None and followed(ran.err, glossary_url) == first.id
    assert "no event for 0.3 s" in ran.err


async def test_a_subscription_without_events_for_the_timeout(glossary_url: str) -> None:
    async with Client.connect(glossary_url) as client:
        task = await client.send("slow", return_immediately=True)
    assert isinstance(task, Task)
    ran = await invoke("subscribe", glossary_url, task.id, "--timeout", SHORT)
    assert ran.code == 5, ran.err
    assert followed(ran.err, glossary_url) == task.id


async def test_a_blocking_send_of_a_new_task_cannot_know_its_id(plain_desk_url: str) -> None:
    ran = await invoke("send", plain_desk_url, "wait", "--timeout", SHORT)
    assert_one_error_line(ran, "gave no answer within 0.3 s", "--no-wait", "--state working")


async def test_a_peerwire_agent_says_which_task_a_timed_out_send_made(desk_url: str) -> None:
    ran = await invoke("send", desk_url, "wait", "--timeout", SHORT)
    assert ran.code == 5, (ran.out, ran.err)
    assert ran.out.startswith("Task ") and "  working" in ran.out.splitlines()[0]
    task_id = ran.out.split()[1]
    assert f"Follow it with: peerwire get {desk_url} {task_id}" in " ".join(ran.err.split())
    await still_running(desk_url, task_id)


async def test_a_blocking_send_on_a_known_task_prints_it_as_it_stands(desk_url: str) -> None:
    asked = await invoke("send", desk_url, "ask", "--json")
    assert asked.code == 3, asked.err
    task = decode(asked.out, SendMessageResponse).task
    assert task is not None
    ran = await invoke("send", desk_url, "ten minutes", "--task", task.id, "--timeout", SHORT)
    assert ran.code == 5, (ran.out, ran.err)
    assert ran.out.startswith(f"Task {task.id}  working")
    # The agent does not stream: the way to follow it is get.
    assert f"Follow it with: peerwire get {desk_url} {task.id}" in " ".join(ran.err.split())
