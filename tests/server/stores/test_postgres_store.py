"""The PostgreSQL store against the machine's real PostgreSQL, each test in a fresh schema.

The public conformance suite runs twice (with the record cache, and with none and a snapshot
every two events, so every write takes the locked reload path). Then what only a shared
database has: two stores on one schema behave as two replicas (compare-and-swap across them,
stale caches caught), migrations are idempotent and safe to run concurrently, a busy pool
fails in bounded time, and events are appended rather than the task rewritten.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import anyio
import asyncpg
import pytest
from typer.testing import CliRunner

from peerwire._coalesce import Coalescer
from peerwire.cli import app
from peerwire.errors import (
    IllegalTransitionError,
    InternalError,
    ServiceUnavailableError,
    VersionConflictError,
)
from peerwire.protocol import list_query
from peerwire.server.stores import open_store
from peerwire.server.stores._sql import SCHEMA_VERSION
from peerwire.server.stores.postgres import PostgresTaskStore
from peerwire.testing.store_suite import (
    StoreSuite,
    artifact_event,
    new_record,
    status_event,
)
from peerwire.types import (
    ListTasksRequest,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

from .._services import PG_DSN, drop_schema, fresh_schema, unique_name

pytestmark = pytest.mark.services
S = TaskState
WAIT_S = 20.0


@pytest.fixture
async def schema() -> AsyncIterator[str]:
    async with fresh_schema() as name:
        yield name


def pg_store(schema: str, **options: Any) -> PostgresTaskStore:
    return PostgresTaskStore(PG_DSN, schema=schema, min_size=0, max_size=4, **options)


class TestPostgresStore(StoreSuite):
    @pytest.fixture
    async def store(self, schema: str) -> AsyncIterator[PostgresTaskStore]:
        store = pg_store(schema)
        await store.open()
        yield store
        await store.close()


class TestPostgresStoreWithoutCache(StoreSuite):
    """No record cache and a snapshot every 2 events: every append locks and reloads."""

    @pytest.fixture
    async def store(self, schema: str) -> AsyncIterator[PostgresTaskStore]:
        store = pg_store(schema, cache_size=0, snapshot_every=2)
        await store.open()
        yield store
        await store.close()


@pytest.fixture
async def replicas(schema: str) -> AsyncIterator[tuple[PostgresTaskStore, PostgresTaskStore]]:
    """Two stores on one schema: what two replicas of a service are to each other."""
    first, second = pg_store(schema), pg_store(schema)
    await first.open()
    try:
        await second.open()
        try:
            yield first, second
        finally:
            await second.close()
    finally:
        await first.close()


async def raw(schema: str) -> asyncpg.Connection:
    return await asyncpg.connect(PG_DSN, server_settings={"search_path": schema})


# -- two replicas ----------------------------------------------------------------------------


async def test_a_compare_and_swap_conflict_across_replicas(
    replicas: tuple[PostgresTaskStore, PostgresTaskStore],
) -> None:
    a, b = replicas
    record = new_record()
    await a.create(record, tenant="", owner="")
    assert (await b.load(record.id, tenant="")) is not None  # b caches it at version 1
    assert await a.append(record.id, [status_event(record, S.WORKING, at=1)]) == 2
    with pytest.raises(VersionConflictError) as caught:
        await b.append(record.id, [artifact_event(record, "x", "y")], expected_version=1)
    assert (caught.value.expected, caught.value.actual) == (1, 2)
    # Without an expected version, b's stale record is noticed, reloaded and written after a's.
    assert await b.append(record.id, [artifact_event(record, "x", "y")]) == 3
    assert await a.append(record.id, [status_event(record, S.COMPLETED, at=2)]) == 4
    for store in (a, b):
        loaded = await store.load(record.id, tenant="")
        assert loaded is not None and loaded.version == 4
        assert loaded.state is S.COMPLETED and [x.artifact_id for x in loaded.artifacts] == ["x"]


async def test_one_of_two_replicas_wins_a_race(
    replicas: tuple[PostgresTaskStore, PostgresTaskStore],
) -> None:
    a, b = replicas
    for round_ in range(5):
        record = new_record()
        await a.create(record, tenant="", owner="")
        await b.load(record.id, tenant="")
        outcomes = await asyncio.gather(
            a.append(record.id, [status_event(record, S.WORKING, at=1)], expected_version=1),
            b.append(record.id, [status_event(record, S.REJECTED, at=1)], expected_version=1),
            return_exceptions=True,
        )
        assert sorted(map(type, outcomes), key=str) == sorted([int, VersionConflictError], key=str)
        winner = S.WORKING if outcomes[0] == 2 else S.REJECTED
        for store in (a, b):
            loaded = await store.load(record.id, tenant="")
            assert loaded is not None and (loaded.version, loaded.state) == (2, winner), round_


async def test_replicas_appending_at_once_lose_nothing(
    replicas: tuple[PostgresTaskStore, PostgresTaskStore],
) -> None:
    a, b = replicas
    record = new_record()
    await a.create(record, tenant="", owner="")
    await b.append(record.id, [status_event(record, S.WORKING, at=1)])
    versions = await asyncio.gather(
        *(
            (a if i % 2 else b).append(record.id, [artifact_event(record, f"a{i:02d}", str(i))])
            for i in range(30)
        )
    )
    assert sorted(versions) == list(range(3, 33))
    for store in (a, b):
        loaded = await store.load(record.id, tenant="")
        assert loaded is not None and loaded.version == 32
        assert sorted(x.artifact_id for x in loaded.artifacts) == [f"a{i:02d}" for i in range(30)]


async def test_a_stale_cache_never_refuses_what_the_row_allows(
    replicas: tuple[PostgresTaskStore, PostgresTaskStore],
) -> None:
    """An illegal event is confirmed against the locked row, never refused on a stale copy."""
    a, b = replicas
    record = new_record()
    await a.create(record, tenant="", owner="")
    await b.load(record.id, tenant="")
    await a.append(record.id, [status_event(record, S.COMPLETED, at=1)])
    with pytest.raises(IllegalTransitionError):
        await b.append(record.id, [artifact_event(record, "late", "x")])
    loaded = await b.load(record.id, tenant="")
    assert loaded is not None and (loaded.version, loaded.artifacts) == (2, [])


async def test_reads_follow_the_other_replicas_writes(
    replicas: tuple[PostgresTaskStore, PostgresTaskStore],
) -> None:
    a, b = replicas
    record = new_record(at=1)
    await a.create(record, tenant="t", owner="o")
    query = list_query(ListTasksRequest(include_artifacts=True))
    for step in range(3):
        await a.append(record.id, [artifact_event(record, f"s{step}", str(step))])
        tasks, _, total = await b.list_tasks(query, tenant="t", owner="o")
        assert total == 1 and len(tasks[0].artifacts) == step + 1
        loaded = await b.load(record.id, tenant="t", owner="o")
        assert loaded is not None and loaded.version == step + 2


async def test_another_replicas_task_is_hidden_by_the_read_itself(
    replicas: tuple[PostgresTaskStore, PostgresTaskStore],
) -> None:
    """A task B's process never cached, and one it did, read for another owner: no row comes
    back (the scope is in the query), and the cached record is not thrown away for it."""
    a, b = replicas
    record = new_record()
    await a.create(record, tenant="t", owner="alice")
    assert await b.load(record.id, tenant="t", owner="bob") is None
    assert b.cached_tasks == 0  # nothing of Alice's was fetched for Bob
    assert await a.load(record.id, tenant="t", owner="bob") is None
    assert await a.load(record.id, tenant="other", owner="alice") is None
    assert a.cached_tasks == 1
    assert await a.load(record.id, tenant="t", owner="alice") is not None


async def test_the_durable_hook_hears_a_commit_whose_caller_was_cancelled(schema: str) -> None:
    store = pg_store(schema)
    await store.open()
    try:
        record = new_record()
        await store.create(record, tenant="", owner="")
        heard: list[int] = []
        committed = asyncio.Event()

        def durable(version: int) -> None:
            heard.append(version)
            committed.set()

        working = [status_event(record, S.WORKING, at=1)]
        appending = asyncio.ensure_future(store.append(record.id, working, on_durable=durable))
        await asyncio.sleep(0)  # the write is under way in a Task of its own
        appending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await appending
        with anyio.fail_after(WAIT_S):
            await committed.wait()
        assert heard == [2]
        loaded = await store.load(record.id, tenant="")
        assert loaded is not None and loaded.version == 2
    finally:
        await store.close()


async def test_appends_of_one_turn_share_a_statement(
    replicas: tuple[PostgresTaskStore, PostgresTaskStore], schema: str
) -> None:
    """Appends to several tasks issued in one turn of the loop go in one statement (group
    commit), settling and not, with push configs or not; one whose row another replica moved
    meanwhile is left out of it and written after a reload, and nothing is lost or doubled."""
    a, b = replicas
    flushed: list[int] = []
    swap_many = a._swap_many

    async def counted(swaps: list[Any]) -> list[bool]:
        flushed.append(len(swaps))
        return await swap_many(swaps)

    a._appends = Coalescer(counted)
    records = [new_record() for _ in range(6)]
    for record in records:
        await a.create(record, tenant="", owner="")
        await a.append(record.id, [status_event(record, S.WORKING, at=1)])
    await a.save_push_config(
        TaskPushNotificationConfig(id="c1", task_id=records[0].id, url="https://hooks.example/h")
    )
    moved = records[2]
    await b.append(moved.id, [artifact_event(moved, "from-b", "b")])  # a's cache is behind
    flushed.clear()
    batches = [
        # Settling: the snapshot is rewritten and absorbs the event rows.
        [artifact_event(r, "out", r.id), status_event(r, S.COMPLETED, at=2)]
        if i % 2 == 0
        # Not settling: event rows.
        else [artifact_event(r, "more", "x")]
        for i, r in enumerate(records)
    ]
    versions = await asyncio.gather(
        *(a.append(r.id, batch) for r, batch in zip(records, batches, strict=True))
    )
    assert flushed[0] == 6  # one statement for the turn; the stale one retried on its own
    assert versions == [4, 3, 5, 3, 4, 3]
    connection = await raw(schema)
    try:
        rows = await connection.fetch(
            "SELECT id, version, snapshot_version, state FROM tasks ORDER BY id"
        )
        by_id = {row["id"]: row for row in rows}
        for i, record in enumerate(records):
            row = by_id[record.id]
            assert row["version"] == versions[i]
            if i % 2 == 0:
                assert row["snapshot_version"] == versions[i]
                assert row["state"] == "TASK_STATE_COMPLETED"
            else:
                assert row["snapshot_version"] == 1 and row["state"] == "TASK_STATE_WORKING"
        event_rows = await connection.fetch("SELECT task_id, version FROM events")
        assert sorted((r["task_id"], r["version"]) for r in event_rows) == sorted(
            (r.id, v) for i, r in enumerate(records) if i % 2 for v in (2, 3)
        )
        # The push config's task: an outbox row per event of its batch.
        outbox = await connection.fetch("SELECT task_id, seq FROM push_outbox ORDER BY seq")
        assert [(r["task_id"], r["seq"]) for r in outbox] == [
            (records[0].id, 3),
            (records[0].id, 4),
        ]
    finally:
        await connection.close()
    for store in (a, b):
        for i, record in enumerate(records):
            loaded = await store.load(record.id, tenant="")
            assert loaded is not None and loaded.version == versions[i]
            assert len(loaded.artifacts) == (2 if record is moved else 1)


async def test_creates_of_one_turn_share_a_statement(schema: str) -> None:
    """``create_once`` calls of one turn go in one statement; a message id sent twice in it,
    or one claimed before, answers with its holder's task; a task id already taken fails the
    shared statement, and then each create goes alone: the others are created all the same."""
    store = pg_store(schema)
    await store.open()
    try:
        flushed: list[int] = []
        create_many = store._create_many

        async def counted(creates: list[Any]) -> list[bool]:
            flushed.append(len(creates))
            return await create_many(creates)

        store._creates = Coalescer(counted)
        now = 1_000_000.0

        async def create(record: Any, message_id: str) -> str:
            return await store.create_once(
                record, tenant="t", owner="o", message_id=message_id, now=now, expires_at=now + 60
            )

        earlier = new_record()
        assert await create(earlier, "m-earlier") == earlier.id
        records = [new_record() for _ in range(6)]
        flushed.clear()
        held = await asyncio.gather(
            *(create(r, f"m{i}") for i, r in enumerate(records[:4])),
            create(records[4], "m0"),  # the same message again, in the same turn
            create(records[5], "m-earlier"),  # sent before
        )
        assert flushed[0] == 6
        assert held == [r.id for r in records[:4]] + [records[0].id, earlier.id]
        for i, record in enumerate(records):
            loaded = await store.load(record.id, tenant="t")
            assert (loaded is not None) == (i < 4)

        taken = new_record(task_id=records[0].id)  # a task id that exists
        fresh = [new_record() for _ in range(3)]
        outcomes = await asyncio.gather(
            create(taken, "m-taken"),
            *(create(r, f"f{i}") for i, r in enumerate(fresh)),
            return_exceptions=True,
        )
        assert isinstance(outcomes[0], VersionConflictError)
        assert outcomes[1:] == [r.id for r in fresh]
        for record in fresh:
            assert await store.load(record.id, tenant="t") is not None
    finally:
        await store.close()


# -- the layout ------------------------------------------------------------------------------


async def test_events_are_appended_and_absorbed_when_the_task_settles(schema: str) -> None:
    store = pg_store(schema, snapshot_every=1000)
    await store.open()
    connection = await raw(schema)
    try:
        record = new_record()
        await store.create(record, tenant="", owner="")
        await store.append(record.id, [status_event(record, S.WORKING, at=1)])
        for i in range(5):
            await store.append(record.id, [artifact_event(record, "log", str(i), append=True)])
        row = await connection.fetchrow(
            "SELECT version, snapshot_version FROM tasks WHERE id = $1", record.id
        )
        assert (row["version"], row["snapshot_version"]) == (7, 1)  # no rewrite per event
        versions = await connection.fetch(
            "SELECT version, kind FROM events WHERE task_id = $1 ORDER BY version", record.id
        )
        assert [(v, k) for v, k in versions] == [(2, "status")] + [
            (v, "artifact") for v in range(3, 8)
        ]
        await store.append(record.id, [status_event(record, S.COMPLETED, at=2)])
        row = await connection.fetchrow(
            "SELECT version, snapshot_version, state FROM tasks WHERE id = $1", record.id
        )
        assert tuple(row) == (8, 8, "TASK_STATE_COMPLETED")
        assert await connection.fetchval("SELECT count(*) FROM events") == 0
    finally:
        await connection.close()
        await store.close()


async def test_list_orders_ids_by_code_point_like_the_other_stores(schema: str) -> None:
    store = pg_store(schema)
    await store.open()
    try:
        ids = ["B", "a", "é", "Z", "a-1", "_"]
        for task_id in ids:
            await store.create(new_record(task_id=task_id, at=5), tenant="", owner="")
        tasks, _, _ = await store.list_tasks(list_query(ListTasksRequest()), tenant="", owner=None)
        assert [t.id for t in tasks] == sorted(ids, reverse=True)
    finally:
        await store.close()


async def test_list_tasks_has_its_indexes(schema: str) -> None:
    store = pg_store(schema)
    await store.open()
    await store.close()
    connection = await raw(schema)
    try:
        names = {
            row[0]
            for row in await connection.fetch(
                "SELECT indexname FROM pg_indexes WHERE schemaname = $1", schema
            )
        }
        collations = {
            row[0]: row[1]
            for row in await connection.fetch(
                "SELECT column_name, collation_name FROM information_schema.columns "
                "WHERE table_schema = $1 AND table_name = 'tasks'",
                schema,
            )
        }
    finally:
        await connection.close()
    assert {"tasks_by_tenant", "tasks_by_owner", "tasks_by_context", "tasks_by_state"} <= names
    assert collations["id"] == collations["status_key"] == "C"


# -- migrations ------------------------------------------------------------------------------


async def _recorded_versions(schema: str) -> list[int]:
    connection = await raw(schema)
    try:
        return [row[0] for row in await connection.fetch("SELECT version FROM schema_version")]
    finally:
        await connection.close()


async def test_migrations_are_idempotent(schema: str) -> None:
    for _ in range(3):
        store = pg_store(schema)
        await store.open()
        await store.close()
    assert await pg_store(schema).upgrade() == (SCHEMA_VERSION, SCHEMA_VERSION)
    assert await _recorded_versions(schema) == [SCHEMA_VERSION]


async def test_replicas_starting_together_migrate_once(schema: str) -> None:
    stores = [pg_store(schema) for _ in range(6)]
    try:
        with anyio.fail_after(WAIT_S):
            await asyncio.gather(*(store.open() for store in stores))
        record = new_record()
        await stores[0].create(record, tenant="", owner="")
        assert await stores[-1].load(record.id, tenant="") is not None
    finally:
        await asyncio.gather(*(store.close() for store in stores))
    assert await _recorded_versions(schema) == [SCHEMA_VERSION]


async def test_a_schema_from_a_newer_peerwire_is_refused(schema: str) -> None:
    assert await pg_store(schema).upgrade() == (0, SCHEMA_VERSION)
    connection = await raw(schema)
    try:
        await connection.execute("UPDATE schema_version SET version = 99")
    finally:
        await connection.close()
    with pytest.raises(RuntimeError, match="newer peerwire"):
        await pg_store(schema).open()


async def test_a_store_told_not_to_migrate_asks_for_an_upgrade(schema: str) -> None:
    with pytest.raises(RuntimeError, match="peerwire db upgrade"):
        await pg_store(schema, migrate=False).open()
    assert await pg_store(schema).upgrade() == (0, SCHEMA_VERSION)
    store = pg_store(schema, migrate=False)
    await store.open()
    await store.close()


def test_db_upgrade_command() -> None:
    schema = unique_name("schema")
    try:
        url = f"{PG_DSN}?schema={schema}"
        first = CliRunner().invoke(app, ["db", "upgrade", "--store", url])
        assert first.exit_code == 0, first.output
        assert f"upgraded schema {schema} from version 0 to {SCHEMA_VERSION}" in first.output
        again = CliRunner().invoke(app, ["db", "upgrade", "--store", url])
        assert again.exit_code == 0 and "nothing to do" in again.output
        bad = CliRunner().invoke(app, ["db", "upgrade", "--store", "memory"])
        assert bad.exit_code == 1 and "no schema" in bad.output
    finally:
        asyncio.run(drop_schema(schema))


def test_the_store_spec() -> None:
    store = open_store(f"{PG_DSN}?schema=tenant_a&application_name=x")
    assert isinstance(store, PostgresTaskStore)
    assert store.schema == "tenant_a" and store.dsn == f"{PG_DSN}?application_name=x"
    other = open_store("postgres://u@h/db")
    assert isinstance(other, PostgresTaskStore) and other.schema == "peerwire"
    for bad in ("Robert'); DROP TABLE tasks;--", "pg_catalog", "", "x" * 64):
        with pytest.raises(ValueError, match="schema"):
            PostgresTaskStore(PG_DSN, schema=bad)


# -- connections -----------------------------------------------------------------------------


async def _wait_until_blocked_by(connection: asyncpg.Connection) -> None:
    """Until some session waits for a lock ``connection`` holds (polled: no event exists)."""
    pid = connection.get_server_pid()
    with anyio.fail_after(WAIT_S):
        while not await connection.fetchval(  # noqa: ASYNC110 (PostgreSQL offers no event)
            "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", pid
        ):
            await anyio.sleep(0.02)


async def test_a_busy_pool_fails_in_bounded_time(schema: str) -> None:
    store = PostgresTaskStore(PG_DSN, schema=schema, min_size=0, max_size=1, acquire_timeout=0.3)
    await store.open()
    blocker = await raw(schema)
    try:
        record, other = new_record(), new_record()
        await store.create(record, tenant="", owner="")
        await store.create(other, tenant="", owner="")
        transaction = blocker.transaction()
        await transaction.start()
        await blocker.execute("SELECT 1 FROM tasks WHERE id = $1 FOR UPDATE", record.id)
        # The append takes the pool's only connection and waits for the row lock.
        stuck = asyncio.ensure_future(
            store.append(record.id, [status_event(record, S.WORKING, at=1)])
        )
        await _wait_until_blocked_by(blocker)
        # An outage of the store for its callers: temporary, with when to retry.
        with anyio.fail_after(WAIT_S), pytest.raises(ServiceUnavailableError) as busy:
            await store.load(other.id, tenant="")
        assert (busy.value.dependency, busy.value.retry_after) == ("task_store", 5)
        await transaction.rollback()
        with anyio.fail_after(WAIT_S):
            assert await stuck == 2
        loaded = await store.load(other.id, tenant="")
        assert loaded is not None
    finally:
        await blocker.close()
        await store.close()


async def test_a_statement_that_hangs_times_out(schema: str) -> None:
    store = pg_store(schema, command_timeout=0.5, cache_size=0)
    await store.open()
    blocker = await raw(schema)
    try:
        record = new_record()
        await store.create(record, tenant="", owner="")
        async with blocker.transaction():
            await blocker.execute("SELECT 1 FROM tasks WHERE id = $1 FOR UPDATE", record.id)
            with anyio.fail_after(WAIT_S), pytest.raises(ServiceUnavailableError) as slow:
                await store.append(record.id, [status_event(record, S.WORKING, at=1)])
            assert slow.value.dependency == "task_store"
        assert await store.append(record.id, [status_event(record, S.WORKING, at=1)]) == 2
    finally:
        await blocker.close()
        await store.close()


async def test_a_statement_the_database_refuses_is_internal_and_keeps_its_text_home(
    schema: str,
) -> None:
    store = pg_store(schema)
    await store.open()
    blocker = await raw(schema)
    try:
        await blocker.execute("DROP TABLE push_configs CASCADE")  # a fault, not an outage
        with pytest.raises(InternalError) as failed:
            await store.list_push_configs("t-1")
        assert not isinstance(failed.value, ServiceUnavailableError)
        assert "push_configs" not in failed.value.message  # the driver's text is logged
    finally:
        await blocker.close()
        await store.close()


async def test_an_unreachable_database_is_an_os_error(schema: str) -> None:
    store = PostgresTaskStore("postgresql://postgres@127.0.0.1:1/test", schema=schema)
    with anyio.fail_after(WAIT_S), pytest.raises(OSError, match="PostgreSQL"):
        await store.open()
    with pytest.raises(RuntimeError, match="not open"):
        await store.load("x", tenant="")


# -- retention -------------------------------------------------------------------------------


async def test_retention_sweeps_when_the_store_opens(schema: str) -> None:
    store = pg_store(schema)
    await store.open()
    old, running = new_record(), new_record()
    for record in (old, running):
        await store.create(record, tenant="", owner="")
    long_ago = TaskStatus(state=S.COMPLETED, timestamp="2001-01-01T00:00:00.000Z")
    await store.append(
        old.id,
        [TaskStatusUpdateEvent(task_id=old.id, context_id=old.context_id, status=long_ago)],
    )
    await store.append(running.id, [status_event(running, S.WORKING, at=1)])
    await store.close()
    keeping = pg_store(schema, retain_finished=timedelta(days=1))
    await keeping.open()
    try:
        assert await keeping.load(old.id, tenant="") is None
        assert await keeping.load(running.id, tenant="") is not None
    finally:
        await keeping.close()
