"""A parent's end is one decision, recorded once in the ledger: whichever of complete, fail or
cancel records it first decides whether the compensations run, and the other path takes that
end as its own. A cancel arriving as the handler returns is either refused (the task stays
COMPLETED and nothing is undone) or recorded (the task ends CANCELED and every booking is
released); never a mix. Each case holds the completing path at one moment with a ledger that
pauses one write, and counts at the peer what was booked and released."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import pytest

from peerwire import Agent, Client, Task, TaskContext, TaskState
from peerwire.delegation import (
    Completed,
    DelegationHub,
    EntryStatus,
    LedgerEntry,
    MemoryLedgerStore,
    Undo,
)
from peerwire.errors import TaskNotCancelableError
from peerwire.testing import live_server

from ._peers import PeerAgent, wait_for


class PausingLedger(MemoryLedgerStore):
    """A memory ledger that, once armed, holds the first caller of the chosen operation
    until released (``reached`` says it got there); every other call goes through."""

    def __init__(self) -> None:
        super().__init__()
        self.armed_for = ""
        self.reached = asyncio.Event()
        self.release = asyncio.Event()

    async def _hold(self, operation: str) -> None:
        if self.armed_for == operation:
            self.armed_for = ""
            self.reached.set()
            await self.release.wait()

    async def entries(
        self,
        *,
        tenant: str | None = None,
        scope: str | None = None,
        statuses: Iterable[EntryStatus] | None = None,
        with_end: bool = False,
    ) -> list[LedgerEntry]:
        await self._hold("any")
        return await super().entries(
            tenant=tenant, scope=scope, statuses=statuses, with_end=with_end
        )

    async def insert(self, entry: LedgerEntry) -> LedgerEntry:
        await self._hold("any")
        return await super().insert(entry)

    async def save(self, entry: LedgerEntry) -> LedgerEntry | None:
        await self._hold("any")
        stored = await super().save(entry)
        if entry.status is EntryStatus.DISCARDED:
            await self._hold("after discarding")
        return stored


def _orchestrator(peer_url: str, ledger: PausingLedger, arm: str) -> Agent:
    agent = Agent("Orchestrator")

    @agent.skill()
    async def order(ctx: TaskContext) -> str:
        booking = await ctx.delegate(
            peer_url, "book x", key="book", compensate=Undo(peer_url, "release x")
        )
        assert isinstance(await booking.result(), Completed)
        ledger.armed_for = arm  # the handler returns now: its path pauses at ``arm``
        return "ordered"

    return agent


async def _final(client: Client, task_id: str) -> Task:
    async def ended() -> bool:
        task: Task = await client.get_task(task_id)
        return task.status.state in (TaskState.COMPLETED, TaskState.CANCELED)

    await wait_for(ended, what="the parent to end")
    found: Task = await client.get_task(task_id)
    return found


async def test_a_cancel_after_the_completion_was_decided_is_refused_and_undoes_nothing() -> None:
    """The completing path has settled its delegations (the undo discarded) and not yet
    recorded COMPLETED when the cancel comes: the cancel is refused, the task completes, the
    booking stands."""
    peer = PeerAgent()
    ledger = PausingLedger()
    async with live_server(peer.agent) as peer_url:
        agent = _orchestrator(peer_url, ledger, "after discarding")
        hub = DelegationHub(ledger)
        async with live_server(agent, delegations=hub) as url, Client.connect(url) as client:
            parent = await client.send("go", return_immediately=True)
            assert isinstance(parent, Task)
            await asyncio.wait_for(ledger.reached.wait(), 10)
            with pytest.raises(TaskNotCancelableError, match="COMPLETED"):
                await client.cancel_task(parent.id)
            ledger.release.set()
            final = await _final(client, parent.id)
            undo = await ledger.find("", parent.id, "book/undo")
    assert final.status.state is TaskState.COMPLETED
    assert undo is not None and undo.status is EntryStatus.DISCARDED
    assert peer.bookings == {"x": 1} and peer.releases == {}, "the booking stands"


async def test_a_cancel_recorded_first_ends_the_task_canceled_and_undoes_the_booking() -> None:
    """The cancel comes between the handler's return and its path's first ledger write: the
    cancel records the end first, so the task ends CANCELED (the handler's result is not
    kept) and the booking is released, once."""
    peer = PeerAgent()
    ledger = PausingLedger()
    async with live_server(peer.agent) as peer_url:
        agent = _orchestrator(peer_url, ledger, "any")
        hub = DelegationHub(ledger)
        async with live_server(agent, delegations=hub) as url, Client.connect(url) as client:
            parent = await client.send("go", return_immediately=True)
            assert isinstance(parent, Task)
            await asyncio.wait_for(ledger.reached.wait(), 10)
            canceled = await client.cancel_task(parent.id)
            ledger.release.set()
            final = await _final(client, parent.id)

            async def released() -> bool:
                return peer.releases == {"x": 1}

            await wait_for(released, what="the undo")
            end = await ledger.find("", parent.id, "")
    assert canceled.status.state is TaskState.CANCELED
    assert final.status.state is TaskState.CANCELED and not final.artifacts
    assert end is not None and end.status is EntryStatus.CANCELED
    assert peer.bookings == {"x": 1}
