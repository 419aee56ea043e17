"""ctx.delegate inside a skill, against real peerwire agents on loopback."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from peerwire import Agent, Client, Task, TaskContext, TaskState
from peerwire.delegation import (
    Call,
    Canceled,
    Completed,
    EntryStatus,
    Failed,
    Stalled,
    TimedOut,
)
from peerwire.testing import live_server

from ._peers import PeerAgent, remote_state, wait_for


async def test_delegate_completes_and_the_ledger_records_it() -> None:
    peer = PeerAgent()
    seen: list[object] = []
    async with live_server(peer.agent) as peer_url:
        orchestrator = Agent("Orchestrator")

        @orchestrator.skill()
        async def order(ctx: TaskContext) -> str:
            d = await ctx.delegate(peer_url, "book seat-1", key="book")
            outcome = await d.result()
            seen.append(outcome)
            seen.append(await ctx.delegations.entries())
            assert isinstance(outcome, Completed)
            return outcome.text

        async with live_server(orchestrator) as url, Client.connect(url) as client:
            task = await client.send("go")
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    assert task.artifacts[0].text == "booked seat-1"
    outcome, entries = seen
    assert isinstance(outcome, Completed) and outcome.remote_task_id
    assert [e.status for e in entries] == [EntryStatus.COMPLETED]  # type: ignore[attr-defined]
    assert peer.bookings["seat-1"] == 1


async def test_cancel_of_the_parent_cancels_every_remote_task() -> None:
    peer = PeerAgent()
    remote: dict[str, str] = {}
    async with live_server(peer.agent) as peer_url:
        orchestrator = Agent("Orchestrator")

        @orchestrator.skill()
        async def order(ctx: TaskContext) -> None:
            first = await ctx.delegate(peer_url, "slow a", key="a")
            second = await ctx.delegate(peer_url, "slow b", key="b")
            remote.update(a=first.remote_task_id, b=second.remote_task_id)
            await asyncio.gather(first.result(), second.result())

        async with live_server(orchestrator) as url, Client.connect(url) as client:
            parent = await client.send("go", return_immediately=True)
            assert isinstance(parent, Task)

            async def both_sent() -> bool:
                return len(remote) == 2

            await wait_for(both_sent, what="both delegations sent")
            canceled = await client.cancel_task(parent.id)
            assert canceled.status.state is TaskState.CANCELED
            # The cascade ran before the parent's CANCELED was recorded: the peer has both.
            assert await remote_state(peer_url, remote["a"]) is TaskState.CANCELED
            assert await remote_state(peer_url, remote["b"]) is TaskState.CANCELED
    assert peer.cancels == {"slow a": 1, "slow b": 1}


async def test_time_limit_cancels_remote_tasks_and_compensates_in_reverse() -> None:
    peer = PeerAgent()
    remote: dict[str, str] = {}
    async with live_server(peer.agent) as peer_url:
        orchestrator = Agent("Orchestrator", task_timeout=1.5)

        @orchestrator.skill()
        async def order(ctx: TaskContext) -> None:
            for item in ("x", "y"):
                step = await ctx.delegate(peer_url, f"book {item}", key=f"book-{item}")
                assert isinstance(await step.result(), Completed)
                await step.compensate_with(peer_url, f"release {item}")
            slow = await ctx.delegate(peer_url, "slow z", key="slow")
            remote["slow"] = slow.remote_task_id
            await slow.result()

        async with live_server(orchestrator) as url, Client.connect(url) as client:
            parent = await client.send("go")
            assert isinstance(parent, Task) and parent.status.state is TaskState.FAILED
            assert await remote_state(peer_url, remote["slow"]) is TaskState.CANCELED

            async def undone() -> bool:
                return sum(peer.releases.values()) == 2

            await wait_for(undone, what="both compensations")
    assert [m for m in peer.received if m.startswith("release")] == ["release y", "release x"]
    assert peer.bookings == {"x": 1, "y": 1}


async def test_fan_out_deadline_and_cancel_rest() -> None:
    peer = PeerAgent()
    results: list[object] = []
    async with live_server(peer.agent) as peer_url:
        orchestrator = Agent("Orchestrator")

        @orchestrator.skill()
        async def order(ctx: TaskContext) -> str:
            outcomes = await ctx.delegate_all(
                [
                    Call(peer_url, "book q", key="quick"),
                    Call(peer_url, "slow s", key="slow", deadline=0.5),
                    Call(peer_url, "slow t", key="other"),
                ],
                deadline=30,
                on_failure="cancel_rest",
            )
            results.extend(outcomes)
            return "done"

        async with live_server(orchestrator) as url, Client.connect(url) as client:
            await client.send("go")
        quick, slow, other = results
        assert isinstance(quick, Completed)
        assert isinstance(slow, TimedOut) and slow.state is TaskState.WORKING
        assert isinstance(other, Canceled) and "slow" in other.reason
        assert await remote_state(peer_url, slow.remote_task_id) is TaskState.CANCELED
        assert await remote_state(peer_url, other.remote_task_id) is TaskState.CANCELED


async def test_stalled_remote_surfaces_the_question_and_is_answered() -> None:
    peer = PeerAgent()
    async with live_server(peer.agent) as peer_url:
        orchestrator = Agent("Orchestrator")

        @orchestrator.skill()
        async def order(ctx: TaskContext) -> str:
            risk = await ctx.delegate(peer_url, "ask order-7", key="risk", deadline=30)
            outcome = await risk.result()
            assert isinstance(outcome, Stalled)
            assert outcome.state is TaskState.INPUT_REQUIRED
            answer = await ctx.ask(f"the risk agent asks: {outcome.question_text}")
            await risk.answer(answer)
            final = await risk.result()
            assert isinstance(final, Completed), final
            return final.text

        async with live_server(orchestrator) as url, Client.connect(url) as client:
            parent = await client.send("go")
            assert isinstance(parent, Task)
            assert parent.status.state is TaskState.INPUT_REQUIRED
            assert parent.status.message is not None
            assert "approve order-7?" in parent.status.message.text
            done = await client.send("approved", task_id=parent.id)
            assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED
            assert done.artifacts[0].text == "order-7: approved"


@pytest.mark.parametrize("case", ["down", "garbage", "refused"])
async def test_remote_faults_end_in_recorded_explained_states(case: str) -> None:
    from ._garbage import garbage_server, unused_port

    results: list[object] = []
    orchestrator = Agent("Orchestrator")

    async with garbage_server() as garbage_url:
        target = {
            "down": f"http://127.0.0.1:{unused_port()}",
            "garbage": garbage_url,
        }

        peer = PeerAgent()
        async with live_server(peer.agent) as peer_url:
            target["refused"] = peer_url

            @orchestrator.skill()
            async def order(ctx: TaskContext) -> str:
                message = "frobnicate" if case == "refused" else "book a"
                d = await ctx.delegate(target[case], message, key="step", deadline=5)
                results.append(await d.result())
                results.append(await ctx.delegations.entries())
                return "handled"

            async with live_server(orchestrator) as url, Client.connect(url) as client:
                task = await client.send("go")
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
    outcome, entries = results
    if case == "refused":
        # The peer made a task and failed it (an unknown verb): the remote failure, recorded.
        assert isinstance(outcome, Failed) and outcome.cause == "task_failed"
        assert "unknown verb" in outcome.reason
        return
    assert isinstance(outcome, Failed)
    assert outcome.cause == ("unreachable" if case == "down" else "invalid_response")
    assert entries[0].reason  # type: ignore[index]


async def test_the_ask_replay_rule_does_not_send_a_delegation_again(tmp_path: Path) -> None:
    """The server restarts while the handler waits in ``ctx.ask``; the answer runs the
    handler again from the start (the replay rule): its first delegation is found in the
    ledger, not sent again, and only the step after the question is new."""
    peer = PeerAgent()
    db = tmp_path / "orchestrator.db"
    async with live_server(peer.agent) as peer_url:
        orchestrator = Agent("Orchestrator")

        @orchestrator.skill()
        async def order(ctx: TaskContext) -> str:
            first = await ctx.delegate(peer_url, "book a1", key="first")
            assert isinstance(await first.result(), Completed)
            answer = await ctx.ask("book the second one too?")
            second = await ctx.delegate(peer_url, f"book {answer.text}", key="second")
            outcome = await second.result()
            assert isinstance(outcome, Completed)
            return outcome.text

        async with (
            live_server(orchestrator, store=f"sqlite:{db}") as url,
            Client.connect(url) as client,
        ):
            parent = await client.send("go")
        assert isinstance(parent, Task) and parent.status.state is TaskState.INPUT_REQUIRED
        async with (
            live_server(orchestrator, store=f"sqlite:{db}") as url,
            Client.connect(url) as client,
        ):
            done = await client.send("b2", task_id=parent.id)
    assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED
    assert done.artifacts[0].text == "booked b2"
    assert peer.bookings == {"a1": 1, "b2": 1}
