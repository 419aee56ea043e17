"""Any sequence of appends leaves the SQLite store exactly where the memory store ends up.

Hypothesis drives both stores with the same random batches of status, artifact and message
events (legal and illegal): each batch must have the same outcome in both (new version, or the
same error), and the final task must be identical — also after the SQLite file is reopened.
Snapshots every three events put snapshot boundaries everywhere.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from peerwire.protocol import Event, TaskRecord
from peerwire.server.stores import MemoryTaskStore, SQLiteTaskStore, TaskStore
from peerwire.testing.store_suite import artifact_event, message, new_record, status_event
from peerwire.types import TaskState

# Weighted towards the states a task can leave, so sequences run long before they end.
STATES = [s for s in TaskState if s is not TaskState.UNSPECIFIED] + [TaskState.WORKING] * 6

status_spec = st.tuples(st.just("status"), st.sampled_from(STATES), st.booleans())
artifact_spec = st.tuples(
    st.just("artifact"), st.sampled_from(["a", "b", "c"]), st.booleans(), st.booleans()
)
message_spec = st.tuples(st.just("message"))
batches = st.lists(
    st.lists(st.one_of(status_spec, artifact_spec, message_spec), min_size=1, max_size=3),
    max_size=20,
)


def build(record: TaskRecord, spec: tuple[Any, ...], n: int) -> Event:
    if spec[0] == "status":
        _, state, says = spec
        return status_event(record, state, at=n, text=f"status {n}" if says else None)
    if spec[0] == "artifact":
        _, artifact_id, append, last = spec
        return artifact_event(record, artifact_id, f"part {n}", append=append, last_chunk=last)
    return message(f"user {n}", task_id=record.id, context_id=record.context_id)


async def outcome(store: TaskStore, task_id: str, events: list[Event]) -> object:
    try:
        return await store.append(task_id, events)
    except Exception as exc:  # compared by type: both stores must refuse the same batches
        return type(exc)


async def run(plan: list[list[tuple[Any, ...]]], directory: Path) -> None:
    record = new_record(task_id="the-task")
    memory = MemoryTaskStore()
    sqlite = SQLiteTaskStore(directory / "tasks.db", snapshot_every=3, settled_cache=0)
    await sqlite.open()
    try:
        # Each store gets its own copy: stores keep (and fold into) the record they are given.
        await memory.create(TaskRecord.from_task(record.snapshot(), 1), tenant="", owner="")
        await sqlite.create(TaskRecord.from_task(record.snapshot(), 1), tenant="", owner="")
        n = 0
        for batch in plan:
            events = []
            for spec in batch:
                n += 1
                events.append(build(record, spec, n))
            expected = await outcome(memory, record.id, events)
            assert await outcome(sqlite, record.id, events) == expected, (batch, expected)
        wanted = await memory.load(record.id, tenant="")
        got = await sqlite.load(record.id, tenant="")
        assert wanted is not None and got is not None
        assert (got.version, got.snapshot()) == (wanted.version, wanted.snapshot())
    finally:
        await sqlite.close()
    reopened = SQLiteTaskStore(directory / "tasks.db")
    await reopened.open()
    try:
        again = await reopened.load(record.id, tenant="")
        assert again is not None
        assert (again.version, again.snapshot()) == (wanted.version, wanted.snapshot())
    finally:
        await reopened.close()


@settings(max_examples=40, deadline=None)
@given(batches)
def test_sqlite_matches_memory(plan: list[list[tuple[Any, ...]]]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(run(plan, Path(directory)))
