"""Writes to a SQLite task store as fast as it can, reporting each acknowledged write.

Run as ``python sigkill_writer.py DB``; the test kills it with SIGKILL mid-stream. Each line on
stdout is ``TASK_ID VERSION`` once ``append`` (or ``create``) has returned for that version:
exactly the promise a server makes before it answers a client. Several tasks write at once so
group commit batches them.
"""

from __future__ import annotations

import asyncio
import sys

from peerwire.server.stores import SQLiteTaskStore
from peerwire.testing.store_suite import artifact_event, new_record, status_event
from peerwire.types import TaskState

WRITERS = 4


async def write_forever(store: SQLiteTaskStore, lane: int) -> None:
    for round_ in range(1_000_000):
        record = new_record(task_id=f"lane{lane}-task{round_:05d}", at=round_)
        await store.create(record, tenant="", owner="")
        print(record.id, 1, flush=True)
        version = await store.append(record.id, [status_event(record, TaskState.WORKING)])
        print(record.id, version, flush=True)
        for chunk in range(30):
            event = artifact_event(record, "out", f"{chunk};", append=chunk > 0)
            version = await store.append(record.id, [event])
            print(record.id, version, flush=True)
        version = await store.append(record.id, [status_event(record, TaskState.COMPLETED)])
        print(record.id, version, flush=True)


async def main(path: str) -> None:
    store = SQLiteTaskStore(path, snapshot_every=8)
    await store.open()
    await asyncio.gather(*(write_forever(store, lane) for lane in range(WRITERS)))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
