"""Both built-in stores pass the public conformance suite (``peerwire.testing.store_suite``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from peerwire.server.stores import MemoryTaskStore, SQLiteTaskStore, TaskStore
from peerwire.testing.store_suite import StoreSuite


class TestMemoryStore(StoreSuite):
    @pytest.fixture
    async def store(self) -> AsyncIterator[TaskStore]:
        store = MemoryTaskStore()
        await store.open()
        yield store
        await store.close()


class TestMemoryStoreCompactingAtOnce(StoreSuite):
    """Every finished task compacted as it finishes: each read takes the compacted path."""

    @pytest.fixture
    async def store(self) -> AsyncIterator[TaskStore]:
        store = MemoryTaskStore(expanded_finished=0)
        await store.open()
        yield store
        await store.close()


class TestSQLiteStore(StoreSuite):
    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[TaskStore]:
        store = SQLiteTaskStore(tmp_path / "tasks.db")
        await store.open()
        yield store
        await store.close()


class TestSQLiteStoreWithTinyCaches(StoreSuite):
    """Snapshots every 2 events and no settled cache: every read and write goes to the file."""

    @pytest.fixture
    async def store(self, tmp_path: Path) -> AsyncIterator[TaskStore]:
        store = SQLiteTaskStore(tmp_path / "tasks.db", snapshot_every=2, settled_cache=0)
        await store.open()
        yield store
        await store.close()
