"""A handle that holds an older row than the store (another writer moved it on) never acts
on what it saw before: a cancel of it cancels the remote task the row now records, and the
row ends settled, not left open. A timed-out reason says its cause once."""

from __future__ import annotations

import pytest

from peerwire import TaskState
from peerwire.delegation import (
    Canceled,
    EntryStatus,
    Ledger,
    MemoryLedgerStore,
    TimedOut,
)
from peerwire.delegation.entries import LedgerEntry
from peerwire.testing import live_server

from ._garbage import unused_port
from ._peers import PeerAgent, remote_state


async def test_cancel_open_acts_on_the_stored_row_not_a_stale_cached_handle() -> None:
    peer = PeerAgent()
    async with live_server(peer.agent) as url, Ledger(MemoryLedgerStore(), scope="job") as ledger:
        stale = await ledger.delegate(url, "slow s1", key="s1", start=False)
        assert stale.entry.status is EntryStatus.INTENT
        # Another writer of the same scope (a second process, a replay) sends it.
        other = await ledger.for_scope("job").attach("s1")
        await other.start()
        assert other.remote_task_id and not stale.remote_task_id
        (outcome,) = await ledger.cancel_open("the job stops")
        assert isinstance(outcome, Canceled), outcome
        assert await remote_state(url, other.remote_task_id) is TaskState.CANCELED
        row = await ledger.store.find("", "job", "s1")
    assert row is not None and row.status is EntryStatus.CANCELED


async def test_a_stale_handle_that_loses_its_settle_cancels_what_the_row_now_is() -> None:
    peer = PeerAgent()
    async with live_server(peer.agent) as url, Ledger(MemoryLedgerStore(), scope="job") as ledger:
        stale = await ledger.delegate(url, "slow s2", key="s2", start=False)
        other = await ledger.for_scope("job").attach("s2")
        await other.start()
        outcome = await stale.cancel("stop")  # its row says INTENT, the store's OPEN
        assert isinstance(outcome, Canceled), outcome
        assert outcome.remote_task_id == other.remote_task_id
        assert await remote_state(url, other.remote_task_id) is TaskState.CANCELED
        row = await ledger.store.find("", "job", "s2")
    assert row is not None and row.status is EntryStatus.CANCELED


async def test_a_timed_out_reason_does_not_repeat_itself() -> None:
    nowhere = f"http://127.0.0.1:{unused_port()}"
    async with Ledger(MemoryLedgerStore(), scope="job", cancel_within=1) as ledger:
        d = await ledger.delegate(nowhere, "book t1", key="t1", deadline=0.3)
        await d._update(remote_task_id="gone-away", status=EntryStatus.OPEN)
        outcome = await d.result()
    assert isinstance(outcome, TimedOut), outcome
    assert outcome.reason.count("its deadline passed") == 1, outcome.reason


class FailingSaves(MemoryLedgerStore):
    """A store whose next save fails (an outage mid-write)."""

    def __init__(self) -> None:
        super().__init__()
        self.fail_next = False

    async def save(self, entry: LedgerEntry) -> LedgerEntry | None:
        if self.fail_next:
            self.fail_next = False
            raise OSError("the disk is away")
        return await super().save(entry)


async def test_a_handle_changes_only_once_its_save_succeeded() -> None:
    store = FailingSaves()
    async with Ledger(store, scope="job") as ledger:
        d = await ledger.delegate("http://127.0.0.1:9", "x", key="s3", start=False)
        before = d.entry
        store.fail_next = True
        with pytest.raises(OSError):
            await d.cancel("stop")
        assert d.entry == before == await store.get(before.id)
        outcome = await d.cancel("stop")  # the same cancel, the store back: it is written
        assert isinstance(outcome, Canceled)
        row = await store.get(before.id)
    assert row is not None and row.status is EntryStatus.CANCELED
