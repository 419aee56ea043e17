"""The ``LedgerStore`` conformance suite: what every delegation ledger store must do.

Subclass ``LedgerStoreSuite`` and give it a ``ledger`` fixture that yields an opened, empty
store (and closes it afterwards)::

    import pytest
    from peerwire.testing.ledger_suite import LedgerStoreSuite

    class TestMyLedger(LedgerStoreSuite):
        @pytest.fixture
        async def ledger(self, tmp_path):
            store = MyLedgerStore(tmp_path / "ledger")
            await store.open()
            yield store
            await store.close()

The rules covered: ``insert`` is idempotent on (tenant, scope, key) and returns the entry
stored (a replay gets the recorded one, even when inserted concurrently); ``seq`` counts per
(tenant, scope) from 1; ``save`` replaces an entry whole (bytes and optional numbers
round-trip) and only on the version it read (a compare-and-set: one of two racing writers
wins, the other gets ``None``); ``get``, ``find`` and ``entries`` (filters by tenant, scope
and statuses, ordered by tenant, scope, seq) see what was committed.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from ..delegation import EntryStatus, LedgerEntry, LedgerStore

__all__ = ["LedgerStoreSuite", "entry"]


def entry(key: str, *, scope: str = "s1", tenant: str = "", entry_id: str = "") -> LedgerEntry:
    """A step's intent, as ``Delegations.delegate`` records it (for the suite's tests)."""
    now = time.time()
    return LedgerEntry(
        id=entry_id or f"id-{tenant}-{scope}-{key}",
        tenant=tenant,
        scope=scope,
        key=key,
        kind="step",
        agent="http://127.0.0.1:1",
        message=b'{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}',
        message_id="m",
        context_id="c",
        status=EntryStatus.INTENT,
        seq=0,
        created_at=now,
        updated_at=now,
        deadline_at=now + 5,
    )


@pytest.mark.asyncio
class LedgerStoreSuite:
    """The rules of ``LedgerStore``; needs a ``ledger`` fixture (an opened, empty store)."""

    async def test_insert_returns_the_entry_stored_with_its_seq(self, ledger: LedgerStore) -> None:
        first = await ledger.insert(entry("a"))
        assert first.seq == 1, "the first entry of a scope has seq 1"
        second = await ledger.insert(entry("b"))
        assert second.seq == 2, "seq counts up within a scope"
        assert (await ledger.get(first.id)) == first

    async def test_insert_of_a_recorded_key_returns_the_recorded_entry(
        self, ledger: LedgerStore
    ) -> None:
        first = await ledger.insert(entry("a"))
        again = await ledger.insert(entry("a", entry_id="another").replace(agent="http://x"))
        assert again == first, "a replayed insert gets the recorded entry back, unchanged"
        assert await ledger.get("another") is None, "and stores nothing of its own"

    async def test_concurrent_inserts_of_one_key_store_one_entry(self, ledger: LedgerStore) -> None:
        inserted = await asyncio.gather(
            *(ledger.insert(entry("k", entry_id=f"id-{n}")) for n in range(8))
        )
        assert len({e.id for e in inserted}) == 1, "every concurrent insert gets the one stored"
        assert len(await ledger.entries(scope="s1")) == 1

    async def test_seq_is_per_tenant_and_scope(self, ledger: LedgerStore) -> None:
        await ledger.insert(entry("a"))
        other_scope = await ledger.insert(entry("a", scope="s2"))
        other_tenant = await ledger.insert(entry("a", tenant="t2"))
        assert (other_scope.seq, other_tenant.seq) == (1, 1)
        assert await ledger.find("t2", "s1", "a") == other_tenant
        assert await ledger.find("", "s1", "missing") is None

    async def test_save_replaces_the_whole_entry(self, ledger: LedgerStore) -> None:
        stored = await ledger.insert(entry("a"))
        changed = stored.replace(
            status=EntryStatus.OPEN,
            remote_task_id="r-1",
            remote_state="TASK_STATE_WORKING",
            observed_at=123.5,
            deadline_at=None,
            paused_left=2.25,
            result=b"\x00\xff binary",
            result_kind="task",
            reason="why",
            cause="unreachable",
            attempts=2,
            runs=1,
            answers=3,
        )
        saved = await ledger.save(changed)
        assert saved == changed.replace(version=stored.version + 1), "saved as the next version"
        assert await ledger.get(stored.id) == saved, "every field round-trips"

    async def test_save_is_a_compare_and_set_on_the_version(self, ledger: LedgerStore) -> None:
        stored = await ledger.insert(entry("a"))
        first = await ledger.save(stored.replace(status=EntryStatus.COMPLETED, reason="first"))
        assert first is not None
        late = await ledger.save(stored.replace(status=EntryStatus.CANCELED, reason="late"))
        assert late is None, "a write on a version read before another write is refused"
        assert await ledger.get(stored.id) == first, "and the first write stands"
        racing = await asyncio.gather(
            *(ledger.save(first.replace(reason=f"racer {n}")) for n in range(6))
        )
        winners = [saved for saved in racing if saved is not None]
        assert len(winners) == 1, "of writers racing on one version, exactly one wins"
        assert await ledger.get(stored.id) == winners[0]
        assert await ledger.save(entry("missing", entry_id="nowhere")) is None

    async def test_entries_filter_and_order(self, ledger: LedgerStore) -> None:
        a = await ledger.insert(entry("a", scope="s2"))
        b = await ledger.insert(entry("b", scope="s1"))
        c = await ledger.insert(entry("c", scope="s1"))
        await ledger.save(c.replace(status=EntryStatus.DEAD))
        assert [e.key for e in await ledger.entries()] == ["b", "c", "a"], "by scope, then seq"
        assert [e.key for e in await ledger.entries(scope="s1")] == ["b", "c"]
        dead = await ledger.entries(statuses=[EntryStatus.DEAD])
        assert [e.key for e in dead] == ["c"]
        assert await ledger.entries(statuses=[]) == []
        assert await ledger.entries(tenant="nobody") == []
        assert {e.id for e in await ledger.entries(tenant="")} == {a.id, b.id, c.id}

    async def test_entries_leave_out_the_end_row_unless_asked(self, ledger: LedgerStore) -> None:
        step = await ledger.insert(entry("a", scope="s3"))
        end = await ledger.insert(entry("", scope="s3", entry_id="end-s3").replace(kind="end"))
        assert [e.id for e in await ledger.entries(scope="s3")] == [step.id]
        with_end = await ledger.entries(scope="s3", with_end=True)
        assert [e.id for e in with_end] == [step.id, end.id]
        assert await ledger.entries(statuses=[end.status], scope="s3", with_end=True) == with_end
