"""A delegation's ``messageId`` and context are drawn by the ledger, never taken from the
message a skill forwards: the caller's ids are the caller's choice. Every delegation goes out
under the orchestrator's one identity, so trusting them would let a caller reuse another's
``messageId`` and get that caller's remote task back (the remote deduplicates by it), or plant
a task under ids it then sends the orchestrator. The peer counts what it really did."""

from __future__ import annotations

from pathlib import Path

from peerwire import Agent, Client, Message, Part, Role, Task, TaskContext
from peerwire.delegation import Completed, Ledger
from peerwire.testing import live_server

from ._peers import PeerAgent


def _forwarder(peer_url: str) -> Agent:
    agent = Agent("Forwarder")

    @agent.skill()
    async def forward(ctx: TaskContext) -> str:
        d = await ctx.delegate(peer_url, ctx.message.replace(task_id=""), key="forward")
        outcome = await d.result()
        assert isinstance(outcome, Completed), outcome.describe()
        return outcome.text

    return agent


def _message(text: str, message_id: str, context_id: str = "") -> Message:
    return Message(
        message_id=message_id, context_id=context_id, role=Role.USER, parts=[Part(text=text)]
    )


async def _text(client: Client, message: Message) -> str:
    task = await client.send(message)
    assert isinstance(task, Task)
    return "\n".join(artifact.text for artifact in task.artifacts)


async def test_a_reused_message_id_does_not_get_another_callers_result() -> None:
    peer = PeerAgent()
    # The orchestrator deduplicates nothing itself: two callers' messages both reach the
    # skill, as two principals' would.
    async with (
        live_server(peer.agent) as peer_url,
        live_server(_forwarder(peer_url), message_retention=None) as url,
        Client.connect(url) as client,
    ):
        alice = await _text(client, _message("book alice-seat", "shared-id"))
        bob = await _text(client, _message("book bob-seat", "shared-id"))
    assert (alice, bob) == ("booked alice-seat", "booked bob-seat")
    assert peer.bookings == {"alice-seat": 1, "bob-seat": 1}


async def test_a_caller_cannot_plant_the_task_a_delegation_gets(tmp_path: Path) -> None:
    peer = PeerAgent()
    async with live_server(peer.agent) as peer_url:
        # The caller first sends the remote a harmless message under ids of its choosing...
        async with Client.connect(peer_url) as direct:
            await direct.send(_message("book decoy", "planted-id", "planted-context"))
        # ... then the orchestrator the real request, with the same ids.
        async with live_server(_forwarder(peer_url)) as url, Client.connect(url) as client:
            real = await _text(client, _message("book real", "planted-id", "planted-context"))
        # Recovery looks for a sent message by the ids recorded: never the caller's.
        async with Ledger(f"sqlite:{tmp_path / 'l.db'}") as ledger:
            d = await ledger.delegate(
                peer_url, _message("book job", "planted-id", "planted-context"), key="job"
            )
            assert d.entry.message_id != "planted-id"
            assert d.entry.context_id != "planted-context"
            assert isinstance(await d.result(), Completed)
    assert real == "booked real"
    assert peer.bookings == {"decoy": 1, "real": 1, "job": 1}
