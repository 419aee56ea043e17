"""A compensation's failed run is one transition: its outcome, the run counted and the next
run scheduled are written together, so a process that stops right after it leaves a row
that says what comes next (``RUN_ENDED_STATUSES``: recovery runs it again, or buries it)."""

from __future__ import annotations

from peerwire import Agent, Client, Task, TaskContext, TaskState
from peerwire.delegation import Completed, DelegationHub, EntryStatus, MemoryLedgerStore
from peerwire.delegation.entries import RUN_ENDED_STATUSES, LedgerEntry
from peerwire.testing import live_server

from ._peers import PeerAgent, wait_for


class RecordingStore(MemoryLedgerStore):
    """Every row as it was written."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[LedgerEntry] = []

    async def save(self, entry: LedgerEntry) -> LedgerEntry | None:
        stored = await super().save(entry)
        if stored is not None:
            self.written.append(stored)
        return stored


async def test_a_failed_undo_run_is_written_with_its_next_state() -> None:
    peer = PeerAgent()
    peer.release_failures = 2
    store = RecordingStore()
    hub = DelegationHub(store, compensation_attempts=3, compensation_backoff=0.05)
    async with live_server(peer.agent) as peer_url:
        orchestrator = Agent("Orchestrator")

        @orchestrator.skill()
        async def order(ctx: TaskContext) -> str:
            lock = await ctx.delegate(peer_url, "book s1", key="lock")
            assert isinstance(await lock.result(), Completed)
            await lock.compensate_with(peer_url, "release s1", key="release")
            raise RuntimeError("the order fails after its booking")

        async with live_server(orchestrator, delegations=hub) as url, Client.connect(url) as c:
            parent = await c.send("go")
            assert isinstance(parent, Task) and parent.status.state is TaskState.FAILED

            async def released() -> bool:
                entry = await store.find("", parent.id, "release")
                return entry is not None and entry.status is EntryStatus.COMPLETED

            await wait_for(released, limit=20, what="the release to complete")
    rows = [e for e in store.written if e.key == "release"]
    ended = [e for e in rows if e.status in RUN_ENDED_STATUSES]
    assert [e.runs for e in ended] == [1, 2], [(e.status, e.runs) for e in rows]
    assert all(e.next_attempt_at > e.updated_at for e in ended)
    # After a failed run comes the next run's claim, never a second write deciding it.
    after = [rows[rows.index(e) + 1].status for e in ended]
    assert after == [EntryStatus.INTENT, EntryStatus.INTENT]
    assert peer.releases["s1"] == 1
    assert rows[-1].status is EntryStatus.COMPLETED and rows[-1].runs == 2
