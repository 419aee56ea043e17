"""The ledger stores (memory, SQLite, PostgreSQL) against the public conformance suite
(``peerwire.testing.ledger_suite``), what survives reopening, and a server's ledger in its
PostgreSQL schema."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from peerwire import Agent, Client, Task, TaskContext, TaskState
from peerwire.delegation import (
    EntryStatus,
    LedgerStore,
    MemoryLedgerStore,
    SQLiteLedgerStore,
    open_ledger_store,
)
from peerwire.delegation.postgres import PostgresLedgerStore
from peerwire.testing import live_server
from peerwire.testing.ledger_suite import LedgerStoreSuite, entry
from tests.server._services import PG_DSN, fresh_schema

from ._peers import PeerAgent, remote_state, wait_for


class TestMemoryLedger(LedgerStoreSuite):
    @pytest.fixture
    async def ledger(self) -> AsyncIterator[LedgerStore]:
        store = MemoryLedgerStore()
        await store.open()
        yield store
        await store.close()


class TestSQLiteLedger(LedgerStoreSuite):
    @pytest.fixture
    async def ledger(self, tmp_path: Path) -> AsyncIterator[LedgerStore]:
        store = SQLiteLedgerStore(tmp_path / "ledger.db")
        await store.open()
        yield store
        await store.close()


class TestPostgresLedger(LedgerStoreSuite):
    @pytest.fixture
    async def ledger(self) -> AsyncIterator[LedgerStore]:
        async with fresh_schema() as schema:
            store = open_ledger_store(f"{PG_DSN}?schema={schema}")
            await store.open()
            yield store
            await store.close()


async def _survives_reopening(make: Callable[[], LedgerStore]) -> None:
    store = make()
    await store.open()
    try:
        stored = await store.insert(entry("a"))
        await store.save(stored.replace(status=EntryStatus.OPEN, result=b"\x00\xff"))
    finally:
        await store.close()
    reopened = make()
    await reopened.open()
    try:
        found = await reopened.get(stored.id)
        assert found is not None and found.status is EntryStatus.OPEN
        assert found.result == b"\x00\xff" and found.deadline_at == stored.deadline_at
        # Opening again migrates nothing twice.
        assert await reopened.insert(entry("b")) is not None
    finally:
        await reopened.close()


async def test_sqlite_ledger_survives_reopening(tmp_path: Path) -> None:
    await _survives_reopening(lambda: SQLiteLedgerStore(tmp_path / "l.db"))


async def test_postgres_ledger_survives_reopening() -> None:
    async with fresh_schema() as schema:
        await _survives_reopening(lambda: open_ledger_store(f"{PG_DSN}?schema={schema}"))


def test_bad_specs_are_refused() -> None:
    for spec in ("", "sqlite:", "redis://x", "postgresql:nohost"):
        with pytest.raises(ValueError, match="unknown ledger"):
            open_ledger_store(spec)
    with pytest.raises(ValueError, match="schema"):
        PostgresLedgerStore(PG_DSN, schema="Bad-Name")


async def test_a_server_on_postgres_keeps_its_ledger_in_its_schema() -> None:
    peer = PeerAgent()
    async with fresh_schema() as schema, live_server(peer.agent) as peer_url:
        remote: list[str] = []
        orchestrator = Agent("Orchestrator")

        @orchestrator.skill()
        async def order(ctx: TaskContext) -> None:
            d = await ctx.delegate(peer_url, "slow p1", key="p1")
            remote.append(d.remote_task_id)
            await d.result()

        store = f"{PG_DSN}?schema={schema}"
        async with live_server(orchestrator, store=store) as url, Client.connect(url) as client:
            parent = await client.send("go", return_immediately=True)
            assert isinstance(parent, Task)

            async def sent() -> bool:
                return bool(remote)

            await wait_for(sent, what="the delegation")
            await client.cancel_task(parent.id)
            assert await remote_state(peer_url, remote[0]) is TaskState.CANCELED
        ledger = PostgresLedgerStore(PG_DSN, schema=schema)
        await ledger.open()
        try:
            (entry, end) = await ledger.entries(scope=parent.id, with_end=True)
        finally:
            await ledger.close()
        assert entry.status is EntryStatus.CANCELED and entry.remote_task_id == remote[0]
        assert (end.kind, end.status) == ("end", EntryStatus.CANCELED), "the end, recorded once"
