"""A handler that records its task's end itself (``ctx.fail()``, ``ctx.complete()``, a
returned ``Message``) gets its delegations settled first, as one that raises or returns a
value does: a caller who sees the parent ended finds the remote tasks canceled and the
compensations discarded (or due) already. Checked at the moment the parent's final event is
observed, on the memory and the SQLite store; and the fan-out's ``Call(compensate=...)``,
registered before anything is sent."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from peerwire import Agent, Client, Message, Task, TaskContext, TaskState, TaskStatusUpdateEvent
from peerwire.delegation import (
    Call,
    Completed,
    DelegationHub,
    EntryStatus,
    Ledger,
    LedgerEntry,
    LedgerStore,
    MemoryLedgerStore,
    SQLiteLedgerStore,
    Undo,
)
from peerwire.errors import TaskNotCancelableError
from peerwire.testing import live_server

from ._peers import PeerAgent, remote_state, wait_for

TERMINAL = {TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED}


@pytest.fixture(params=["memory", "sqlite"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, LedgerStore]:
    """The parent's task store spec and its ledger store (the SQLite one in the same file,
    as ``create_app`` puts it); the test holds the ledger to read it."""
    if request.param == "memory":
        return "memory", MemoryLedgerStore()
    db = tmp_path / "orchestrator.db"
    return f"sqlite:{db}", SQLiteLedgerStore(db)


async def _until_final(client: Client, task_id: str, go: asyncio.Event) -> TaskState:
    """Subscribe to the parent, let its handler go on, and return at its final event (before
    anything else happens on this side)."""
    async for item in client.subscribe(task_id):
        if isinstance(item, Task):
            if item.status.state in TERMINAL:
                return item.status.state
            go.set()  # subscribed: the handler may now end its task
        elif isinstance(item, TaskStatusUpdateEvent) and item.status.state in TERMINAL:
            return item.status.state
    raise AssertionError("the subscription ended without the parent's final state")


async def _entries(ledger: LedgerStore, task_id: str) -> dict[str, LedgerEntry]:
    return {e.key: e for e in await ledger.entries(scope=task_id)}


async def test_ctx_fail_cancels_open_delegations_before_failed_is_seen(
    stores: tuple[str, LedgerStore],
) -> None:
    spec, ledger = stores
    peer = PeerAgent()
    remote: dict[str, str] = {}
    go = asyncio.Event()
    async with live_server(peer.agent) as peer_url:
        orchestrator = Agent("Orchestrator")

        @orchestrator.skill()
        async def order(ctx: TaskContext) -> None:
            slow = await ctx.delegate(peer_url, "slow a", key="a")
            remote["a"] = slow.remote_task_id
            await go.wait()
            await ctx.fail("giving up")
            # Cleaning up after the failure is recorded: the cascade must not wait for this.
            await asyncio.sleep(0.5)

        async with (
            live_server(orchestrator, store=spec, delegations=DelegationHub(ledger)) as url,
            Client.connect(url) as client,
            Client.connect(peer_url) as at_peer,
        ):
            parent = await client.send("go", return_immediately=True)
            assert isinstance(parent, Task)
            assert await _until_final(client, parent.id, go) is TaskState.FAILED
            # At the moment FAILED is observable, the remote task is CANCELED at its agent.
            found = await at_peer.get_task(remote["a"])
            assert found.status.state is TaskState.CANCELED
            entries = await _entries(ledger, parent.id)
            assert entries["a"].status is EntryStatus.CANCELED
            done = await client.get_task(parent.id)
            assert done.status.state is TaskState.FAILED
            assert done.status.message is not None and done.status.message.text == "giving up"
    assert peer.cancels == {"slow a": 1}


async def test_ctx_complete_discards_compensations_before_completed_is_seen(
    stores: tuple[str, LedgerStore],
) -> None:
    spec, ledger = stores
    peer = PeerAgent()
    remote: dict[str, str] = {}
    go = asyncio.Event()
    async with live_server(peer.agent) as peer_url:
        orchestrator = Agent("Orchestrator")

        @orchestrator.skill()
        async def order(ctx: TaskContext) -> None:
            book = await ctx.delegate(
                peer_url, "book x", key="book", compensate=Undo(peer_url, "release x")
            )
            assert isinstance(await book.result(), Completed)
            left_open = await ctx.delegate(peer_url, "slow y", key="slow")
            remote["slow"] = left_open.remote_task_id
            await go.wait()
            await ctx.complete("booked")
            await asyncio.sleep(0.5)

        async with (
            live_server(orchestrator, store=spec, delegations=DelegationHub(ledger)) as url,
            Client.connect(url) as client,
        ):
            parent = await client.send("go", return_immediately=True)
            assert isinstance(parent, Task)
            assert await _until_final(client, parent.id, go) is TaskState.COMPLETED
            entries = await _entries(ledger, parent.id)
            assert entries["book/undo"].status is EntryStatus.DISCARDED
            assert entries["book/undo"].reason == "the parent task completed"
            assert entries["slow"].status is EntryStatus.CANCELED
            assert await remote_state(peer_url, remote["slow"]) is TaskState.CANCELED
    assert peer.bookings == {"x": 1}
    assert not peer.releases  # completed: nothing undone


async def test_a_returned_message_settles_delegations_before_completed_is_seen() -> None:
    peer = PeerAgent()
    ledger = MemoryLedgerStore()
    remote: dict[str, str] = {}
    go = asyncio.Event()
    async with live_server(peer.agent) as peer_url:
        orchestrator = Agent("Orchestrator")

        @orchestrator.skill()
        async def order(ctx: TaskContext) -> Message | None:  # a task skill (not "-> Message")
            left_open = await ctx.delegate(
                peer_url, "slow m", key="slow", compensate=Undo(peer_url, "release m")
            )
            remote["slow"] = left_open.remote_task_id
            await go.wait()
            return ctx.agent_message("done")

        async with (
            live_server(orchestrator, delegations=DelegationHub(ledger)) as url,
            Client.connect(url) as client,
        ):
            parent = await client.send("go", return_immediately=True)
            assert isinstance(parent, Task)
            assert await _until_final(client, parent.id, go) is TaskState.COMPLETED
            entries = await _entries(ledger, parent.id)
            assert entries["slow"].status is EntryStatus.CANCELED
            assert entries["slow/undo"].status is EntryStatus.DISCARDED
            assert await remote_state(peer_url, remote["slow"]) is TaskState.CANCELED


async def test_ctx_reject_after_a_replay_cancels_what_the_earlier_run_left_open(
    tmp_path: Path,
) -> None:
    """The server restarts while the handler waits in ``ctx.ask`` with a delegation open;
    the answer runs the handler again, which rejects the task before it delegates again:
    the delegation its earlier run made is canceled before REJECTED is recorded."""
    peer = PeerAgent()
    db = tmp_path / "orchestrator.db"
    remote: dict[str, str] = {}
    async with live_server(peer.agent) as peer_url:
        orchestrator = Agent("Orchestrator")

        @orchestrator.skill()
        async def order(ctx: TaskContext) -> None:
            if ctx.latest_message.text == "never mind":
                await ctx.reject("the caller withdrew the order")
                return
            slow = await ctx.delegate(peer_url, "slow r", key="slow")
            remote["slow"] = slow.remote_task_id
            await ctx.ask("go on?")

        async with (
            live_server(orchestrator, store=f"sqlite:{db}") as url,
            Client.connect(url) as client,
        ):
            parent = await client.send("go")
        assert isinstance(parent, Task) and parent.status.state is TaskState.INPUT_REQUIRED
        # The handler parked in ``ask`` leaves its delegation running over the restart.
        assert await remote_state(peer_url, remote["slow"]) is TaskState.WORKING
        async with (
            live_server(orchestrator, store=f"sqlite:{db}") as url,
            Client.connect(url) as client,
        ):
            done = await client.send("never mind", task_id=parent.id)
            assert isinstance(done, Task) and done.status.state is TaskState.REJECTED
            assert await remote_state(peer_url, remote["slow"]) is TaskState.CANCELED
    assert peer.received.count("slow r") == 1


async def test_a_fan_out_call_registers_its_undo_before_anything_is_sent() -> None:
    peer = PeerAgent()
    ledger = MemoryLedgerStore()
    seen_at_send: list[dict[str, LedgerEntry]] = []
    parent_id: list[str] = []
    async with live_server(peer.agent) as peer_url:
        orchestrator = Agent("Orchestrator")

        @orchestrator.skill()
        async def order(ctx: TaskContext) -> None:
            parent_id.append(ctx.task_id)
            await ctx.delegate_all(
                [
                    Call(peer_url, "hold a", key="a", compensate=Undo(peer_url, "release a")),
                    Call(peer_url, "slow b", key="b"),
                ]
            )

        async with (
            live_server(orchestrator, delegations=DelegationHub(ledger)) as url,
            Client.connect(url) as client,
        ):
            parent = await client.send("go", return_immediately=True)
            assert isinstance(parent, Task)

            async def both_at_the_peer() -> bool:
                return {"hold a", "slow b"} <= set(peer.received)

            await wait_for(both_at_the_peer, what="both calls at the peer")
            seen_at_send.append(await _entries(ledger, parent.id))
            canceled = await client.cancel_task(parent.id)
            assert canceled.status.state is TaskState.CANCELED

            async def released() -> bool:
                return peer.releases["a"] == 1

            await wait_for(released, what="the release")
    (entries,) = seen_at_send
    undo = entries["a/undo"]
    assert undo.kind == "compensation" and undo.compensates == "a"
    assert undo.status is EntryStatus.REGISTERED
    assert "b/undo" not in entries
    # The hold was canceled after it was sent: it may have booked, so its undo ran.
    assert peer.bookings == {"a": 1}


async def test_compensate_takes_an_undo_only() -> None:
    async with Ledger("memory", scope="job") as ledger:
        with pytest.raises(TypeError, match="Undo"):
            await ledger.delegate_all(
                [Call("http://127.0.0.1:9", "lock 1", key="lock", compensate=("u", "m"))]  # type: ignore[arg-type]
            )
        assert await ledger.entries() == []


async def test_a_cancel_while_the_handler_completes_waits_for_the_settling() -> None:
    """``ctx.complete()`` is settling (the peer takes its time over the cascade's cancel)
    when a CancelTask for the parent arrives: it waits, finds the task COMPLETED and is
    refused, and the ledger agrees with that end (the undo discarded, not run)."""
    peer, cancel_started = _slow_to_cancel()
    ledger = MemoryLedgerStore()
    go = asyncio.Event()
    async with live_server(peer) as peer_url:
        orchestrator = Agent("Orchestrator")

        @orchestrator.skill()
        async def order(ctx: TaskContext) -> None:
            await ctx.delegate(peer_url, "w", key="w", compensate=Undo(peer_url, "undo w"))
            await go.wait()
            await ctx.complete("done")

        async with (
            live_server(orchestrator, delegations=DelegationHub(ledger)) as url,
            Client.connect(url) as client,
        ):
            parent = await client.send("go", return_immediately=True)
            assert isinstance(parent, Task)

            async def sent() -> bool:
                step = (await _entries(ledger, parent.id)).get("w")
                return step is not None and bool(step.remote_task_id)

            await wait_for(sent, what="the delegation sent")
            go.set()
            await asyncio.wait_for(cancel_started.wait(), 10)
            with pytest.raises(TaskNotCancelableError):
                await client.cancel_task(parent.id)
            done = await client.get_task(parent.id)
            assert done.status.state is TaskState.COMPLETED
            entries = await _entries(ledger, parent.id)
            assert entries["w"].status is EntryStatus.CANCELED
            assert entries["w/undo"].status is EntryStatus.DISCARDED


async def test_the_time_limit_does_not_strike_while_the_handler_completes() -> None:
    """The settling of ``ctx.complete()`` outlasts what is left of the task's time limit: the
    limit waits for it, and the task completes as its handler said (the undo discarded)."""
    peer, _ = _slow_to_cancel()
    ledger = MemoryLedgerStore()
    async with live_server(peer) as peer_url:
        orchestrator = Agent("Orchestrator", task_timeout=0.8)

        @orchestrator.skill()
        async def order(ctx: TaskContext) -> None:
            await ctx.delegate(peer_url, "w", key="w", compensate=Undo(peer_url, "undo w"))
            await ctx.complete("done")

        async with (
            live_server(orchestrator, delegations=DelegationHub(ledger)) as url,
            Client.connect(url) as client,
        ):
            done = await client.send("go")
            assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED
            entries = await _entries(ledger, done.id)
            assert entries["w"].status is EntryStatus.CANCELED
            assert entries["w/undo"].status is EntryStatus.DISCARDED


def _slow_to_cancel() -> tuple[Agent, asyncio.Event]:
    """A peer whose tasks work until canceled and take a second over their cancel (its
    ``on_cancel`` hook); the event is set as a cancel begins."""
    cancel_started = asyncio.Event()
    peer = Agent("Slow to cancel")

    @peer.skill()
    async def work(ctx: TaskContext) -> str:
        await ctx.start_work("working")
        await asyncio.sleep(120)
        return "done"

    @peer.on_cancel("work")
    async def slowly(ctx: TaskContext) -> None:
        cancel_started.set()
        await asyncio.sleep(1.0)

    return peer, cancel_started
