"""Delegating to an agent served by the official a2a-sdk (in its own venv and process):
completion with artifacts, a stall answered on the same remote task, and the parent's cancel
reaching the SDK agent's task."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from peerwire import Agent, Client, Task, TaskContext, TaskState
from peerwire.delegation import Completed, Ledger, Stalled
from peerwire.testing import live_server
from tests.interop.sdk_harness import SdkServer, start_glossary_server

from ._peers import remote_state, wait_for


@pytest.fixture(scope="module")
def sdk_agent() -> Iterator[SdkServer]:
    with start_glossary_server() as server:
        yield server


async def test_completed_and_stalled_then_answered(sdk_agent: SdkServer) -> None:
    async with Ledger("memory", scope="sdk") as ledger:
        record = await ledger.delegate(sdk_agent.base_url, "record", key="record", deadline=30)
        outcome = await record.result()
        assert isinstance(outcome, Completed), outcome
        assert (
            outcome.text
            == "A record is a final class that is a transparent carrier for its components."
        )
        ask = await ledger.delegate(sdk_agent.base_url, "", key="ask", deadline=30)
        stalled = await ask.result()
        assert (
            isinstance(stalled, Stalled) and stalled.question_text == "Which term should I define?"
        )
        await ask.answer("sealed class")
        answered = await ask.result()
        assert isinstance(answered, Completed), answered
        assert "sealed class restricts" in answered.text


async def test_parent_cancel_reaches_the_sdk_agent(sdk_agent: SdkServer) -> None:
    remote: list[str] = []
    orchestrator = Agent("Orchestrator")

    @orchestrator.skill()
    async def order(ctx: TaskContext) -> None:
        d = await ctx.delegate(sdk_agent.base_url, "slow", key="slow")
        remote.append(d.remote_task_id)
        await d.result()

    async with live_server(orchestrator) as url, Client.connect(url) as client:
        parent = await client.send("go", return_immediately=True)
        assert isinstance(parent, Task)

        async def sent() -> bool:
            return bool(remote and remote[0])

        await wait_for(sent, what="the delegation to the SDK agent")
        await client.cancel_task(parent.id)
        assert await remote_state(sdk_agent.base_url, remote[0]) is TaskState.CANCELED
