"""The push outbox shared by replicas: two PostgreSQL stores on one schema claim at the same
moment and never take the same row, nor two rows of one config; one replica's claim is the
other's lease. (The single-store rules are the public suite's, which the PostgreSQL store runs
in ``test_postgres_store``.)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from peerwire.server.stores.base import OutboxRow
from peerwire.server.stores.postgres import PostgresTaskStore
from peerwire.testing.store_suite import artifact_event, new_record, status_event
from peerwire.types import TaskPushNotificationConfig, TaskState

from .._services import PG_DSN, fresh_schema

pytestmark = pytest.mark.services

CONFIGS = ("c1", "c2", "c3")


@pytest.fixture
async def replicas() -> AsyncIterator[tuple[PostgresTaskStore, PostgresTaskStore]]:
    async with fresh_schema() as schema:
        first = PostgresTaskStore(PG_DSN, schema=schema, min_size=0, max_size=4)
        second = PostgresTaskStore(PG_DSN, schema=schema, min_size=0, max_size=4)
        await first.open()
        try:
            await second.open()
            try:
                yield first, second
            finally:
                await second.close()
        finally:
            await first.close()


async def _tasks_with_rows(store: PostgresTaskStore, tasks: int, events: int) -> list[str]:
    ids = []
    for _ in range(tasks):
        record = new_record()
        await store.create(record, tenant="", owner="")
        await store.append(record.id, [status_event(record, TaskState.WORKING, at=1)])
        for config_id in CONFIGS:
            await store.save_push_config(
                TaskPushNotificationConfig(
                    id=config_id, task_id=record.id, url="https://hooks.example/h"
                )
            )
        for n in range(events):
            await store.append(record.id, [artifact_event(record, f"a{n}", str(n))])
        ids.append(record.id)
    return ids


async def test_replicas_claiming_at_once_never_share_a_row_or_a_config(
    replicas: tuple[PostgresTaskStore, PostgresTaskStore],
) -> None:
    a, b = replicas
    await _tasks_with_rows(a, tasks=4, events=3)
    now = time.time() + 1
    claims = await asyncio.gather(
        *(store.claim_due(now, limit=5, lease=60) for store in (a, b, a, b))
    )
    claimed: list[OutboxRow] = [row for claim in claims for row in claim]
    ids = [row.id for row in claimed]
    assert len(ids) == len(set(ids)), "a row was claimed twice"
    heads = [(row.task_id, row.config_id) for row in claimed]
    assert len(heads) == len(set(heads)), "two rows of one config were in flight"
    assert len(claimed) == 4 * len(CONFIGS), "every config's first row was claimed once"
    assert {row.seq for row in claimed} == {3}
    # Leased: neither replica hands them (or their configs' later rows) out again.
    assert await a.claim_due(now, limit=100, lease=60) == []
    assert await b.claim_due(now, limit=100, lease=60) == []


async def test_a_row_delivered_by_one_replica_lets_the_other_take_the_next(
    replicas: tuple[PostgresTaskStore, PostgresTaskStore],
) -> None:
    a, b = replicas
    [task_id] = await _tasks_with_rows(a, tasks=1, events=2)
    now = time.time() + 1
    [row] = await a.claim_due(now, limit=1, lease=60)
    assert (row.config_id, row.seq) == ("c1", 3), "oldest first"
    await a.mark_delivered(row.id)
    taken = await b.claim_due(now, limit=10, lease=60)
    assert sorted((r.config_id, r.seq) for r in taken) == [("c1", 4), ("c2", 3), ("c3", 3)]
    states = {r.id: r.state for r in await b.outbox(task_id)}
    assert states[row.id] == "delivered"
