"""The memory store's own behaviour: finished tasks compacted after a window of later ones,
snapshots read straight from the compacted form (or handed over encoded), and the
``SnapshotReader`` default."""

from __future__ import annotations

from typing import cast

import pytest

from peerwire.errors import IllegalTransitionError
from peerwire.protocol import ListQuery, TaskRecord, list_query, sort_key
from peerwire.server.stores import MemoryTaskStore, TaskStore
from peerwire.server.stores.base import snapshot_reader
from peerwire.testing.store_suite import (
    artifact_event,
    message,
    new_record,
    status_event,
    timestamp,
)
from peerwire.types import Encoded, ListTasksRequest, Role, Task, TaskState, encode

S = TaskState
pytestmark = pytest.mark.asyncio


async def _finished_task(store: TaskStore, *, at: int = 1, owner: str = "") -> TaskRecord:
    """A task with history (the user's message, then a follow-up) and an artifact, completed."""
    record = new_record(at=0)
    await store.create(record, tenant="", owner=owner)
    follow_up = message("more", task_id=record.id, context_id=record.context_id)
    await store.append(record.id, [status_event(record, S.WORKING, at=at, text="on it")])
    await store.append(record.id, [follow_up, artifact_event(record, "a-1", "out")])
    await store.append(record.id, [status_event(record, S.COMPLETED, at=at, text="done")])
    return record


async def _snapshots(store: MemoryTaskStore, task_id: str) -> list[bytes]:
    """The task as every read path gives it, encoded: ``load`` and ``load_snapshot``, full and
    with a trimmed history."""
    loaded = await store.load(task_id, tenant="")
    assert loaded is not None
    read: list[bytes] = [encode(loaded.snapshot()), encode(loaded.snapshot(history_length=2))]
    for history_length in (None, 2):
        snapshot = await store.load_snapshot(
            task_id, tenant="", owner=None, history_length=history_length
        )
        assert snapshot is not None
        read.append(encode(snapshot))
    return read


async def test_compacting_a_finished_task_changes_nothing_a_reader_sees() -> None:
    store = MemoryTaskStore(expanded_finished=1)
    first = await _finished_task(store)
    expanded = await _snapshots(store, first.id)
    version = first.version
    await _finished_task(store)  # pushes the first task out of the window: compacted
    assert await _snapshots(store, first.id) == expanded
    assert expanded[0] == expanded[2] and expanded[1] == expanded[3]
    loaded = await store.load(first.id, tenant="")
    assert loaded is not None and loaded is not first and loaded.version == version
    assert [m.role for m in loaded.history] == [Role.USER, Role.AGENT, Role.USER, Role.AGENT]


async def test_a_compacted_task_stays_listed_scoped_and_final() -> None:
    store = MemoryTaskStore(expanded_finished=0)
    record = await _finished_task(store, at=5, owner="alice")
    assert await store.load(record.id, tenant="", owner="bob") is None
    assert await store.load_snapshot(record.id, tenant="t", owner=None, history_length=None) is None
    tasks, _, total = await store.list_tasks(_all_tasks(), tenant="", owner="alice")
    assert total == 1 and tasks[0].id == record.id and tasks[0].status.state is S.COMPLETED
    assert (await store.unfinished()) == []
    with pytest.raises(IllegalTransitionError):
        await store.append(record.id, [status_event(record, S.WORKING)])


async def test_a_task_removed_by_retention_is_not_brought_back_by_compaction() -> None:
    store = MemoryTaskStore(expanded_finished=1)
    doomed = await _finished_task(store, at=1)
    assert await store.delete_terminal_before(sort_key(timestamp(2))) == 1
    await _finished_task(store, at=3)  # compacts the window's oldest: the deleted task
    assert await store.load(doomed.id, tenant="") is None
    tasks, _, total = await store.list_tasks(_all_tasks(), tenant="", owner=None)
    assert total == 1 and tasks[0].id != doomed.id


async def test_retention_removes_compacted_and_expanded_finished_tasks() -> None:
    store = MemoryTaskStore(expanded_finished=1)
    compacted = await _finished_task(store, at=1)
    expanded = await _finished_task(store, at=2)
    live = new_record(at=0)
    await store.create(live, tenant="", owner="")
    assert await store.delete_terminal_before(sort_key(timestamp(10))) == 2
    assert await store.load(compacted.id, tenant="") is None
    assert await store.load(expanded.id, tenant="") is None
    assert await store.load(live.id, tenant="") is not None


async def test_a_finished_task_is_handed_over_encoded_before_and_after_compaction() -> None:
    store = MemoryTaskStore(expanded_finished=1)
    first = await _finished_task(store, owner="alice")
    whole = await store.load_snapshot(first.id, tenant="", owner="alice", history_length=None)
    assert whole is not None
    expanded = await store.load_encoded_snapshot(first.id, tenant="", owner="alice")
    assert isinstance(expanded, Encoded) and expanded.json == encode(whole)
    await _finished_task(store)  # compacts the first
    compacted = await store.load_encoded_snapshot(first.id, tenant="", owner="alice")
    assert isinstance(compacted, Encoded) and compacted.json == encode(whole)
    assert compacted.decode() == whole


async def test_an_unfinished_task_is_handed_over_as_a_task() -> None:
    store = MemoryTaskStore()
    record = new_record(at=0)
    await store.create(record, tenant="", owner="")
    await store.append(record.id, [status_event(record, S.WORKING, at=1)])
    read = await store.load_encoded_snapshot(record.id, tenant="", owner=None)
    assert isinstance(read, Task) and read == record.snapshot()


@pytest.mark.parametrize("expanded_finished", [0, 1])
async def test_encoded_snapshots_are_scoped_like_every_read(expanded_finished: int) -> None:
    store = MemoryTaskStore(expanded_finished=expanded_finished)
    record = await _finished_task(store, owner="alice")
    assert await store.load_encoded_snapshot(record.id, tenant="", owner="bob") is None
    assert await store.load_encoded_snapshot(record.id, tenant="t", owner=None) is None
    assert await store.load_encoded_snapshot("ghost", tenant="", owner=None) is None
    assert await store.load_encoded_snapshot(record.id, tenant="", owner=None) is not None


async def test_the_memory_store_reads_its_own_snapshots() -> None:
    store = MemoryTaskStore()
    assert snapshot_reader(store) is store


class _RecordsOnly:
    """A store as a store without snapshot reads of its own looks: ``load`` only."""

    def __init__(self, inner: TaskStore) -> None:
        self._inner = inner

    async def load(
        self, task_id: str, *, tenant: str, owner: str | None = None
    ) -> TaskRecord | None:
        return await self._inner.load(task_id, tenant=tenant, owner=owner)


async def test_the_default_snapshot_reader_snapshots_what_load_returns() -> None:
    store = MemoryTaskStore()
    record = await _finished_task(store, owner="alice")
    reader = snapshot_reader(cast(TaskStore, _RecordsOnly(store)))
    assert not isinstance(reader, _RecordsOnly)
    snapshot = await reader.load_snapshot(record.id, tenant="", owner="alice", history_length=1)
    assert snapshot == record.snapshot(history_length=1)
    assert (
        await reader.load_snapshot(record.id, tenant="", owner="bob", history_length=None) is None
    )
    # Nothing encoded to hand over: the whole task, as a Task.
    whole = await reader.load_encoded_snapshot(record.id, tenant="", owner="alice")
    assert isinstance(whole, Task) and whole == record.snapshot()
    assert await reader.load_encoded_snapshot(record.id, tenant="", owner="bob") is None


def _all_tasks() -> ListQuery:
    return list_query(ListTasksRequest())
