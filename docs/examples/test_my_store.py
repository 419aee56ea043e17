"""Proving a task store of your own with the conformance suite (run with pytest).

The store here is the memory store with one addition: it counts the events it stores.
Every write of events goes through ``append``, so wrapping it observes them all.
"""

from collections.abc import AsyncIterator, Callable, Sequence

import pytest

from peerwire.protocol import Event
from peerwire.server.stores import MemoryTaskStore, TaskStore
from peerwire.testing.store_suite import StoreSuite


class CountingStore(MemoryTaskStore):
    def __init__(self) -> None:
        super().__init__()
        self.events_stored = 0

    async def append(
        self,
        task_id: str,
        events: Sequence[Event],
        *,
        expected_version: int | None = None,
        on_durable: Callable[[int], None] | None = None,
    ) -> int:
        version = await super().append(
            task_id, events, expected_version=expected_version, on_durable=on_durable
        )
        self.events_stored += len(events)
        return version


class TestCountingStore(StoreSuite):
    @pytest.fixture
    async def store(self) -> AsyncIterator[TaskStore]:
        store = CountingStore()
        await store.open()
        yield store
        await store.close()
