"""What the SQLite store promises beyond the conformance suite: the file outlives the process.

Durability across close/reopen and across SIGKILL, group commit, the schema and its version,
the snapshot/event layout, bounded memory, a second writer on the same file, and writes whose
caller was cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
import sys
import threading
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import msgspec
import pytest
from typer.testing import CliRunner

from peerwire.cli import app
from peerwire.errors import InternalError, ServiceUnavailableError, VersionConflictError
from peerwire.protocol import list_query, sort_key
from peerwire.server.stores import (
    MemoryTaskStore,
    SQLiteTaskStore,
    _sql,
    open_store,
    retention_cutoff,
)
from peerwire.server.stores._sql import SCHEMA_VERSION
from peerwire.server.stores._sqlite_io import _BACKSTOP_PAGES, GroupCommitWriter
from peerwire.server.stores.sqlite import _store_failure
from peerwire.testing.store_suite import artifact_event, message, new_record, status_event
from peerwire.types import (
    AuthenticationInfo,
    ListTasksRequest,
    TaskPushNotificationConfig,
    TaskState,
    now_timestamp,
)

S = TaskState
WRITER_SCRIPT = Path(__file__).with_name("sigkill_writer.py")


@contextlib.asynccontextmanager
async def opened(path: Path, **options: object) -> AsyncIterator[SQLiteTaskStore]:
    store = SQLiteTaskStore(path, **options)  # type: ignore[arg-type]
    await store.open()
    try:
        yield store
    finally:
        await store.close()


async def hold_writer(writer: GroupCommitWriter) -> tuple[threading.Event, asyncio.Future[bool]]:
    """Park the writer thread inside a job until the returned gate is set.

    Returns once the thread runs the job, so whatever is submitted afterwards queues behind it
    rather than joining the held job's batch (the thread takes what is queued when it wakes).
    """
    gate, inside = threading.Event(), threading.Event()

    def park(_: sqlite3.Connection) -> bool:
        inside.set()
        return gate.wait(30)

    held = writer.submit(park)
    assert await anyio.to_thread.run_sync(inside.wait, 30), "the writer never took the job"
    return gate, held


def rows(path: Path, sql: str, *params: object) -> list[tuple[object, ...]]:
    with contextlib.closing(sqlite3.connect(path)) as connection:
        return connection.execute(sql, params).fetchall()


# -- surviving the process ----------------------------------------------------------------------


async def test_everything_is_there_after_reopening(tmp_path: Path) -> None:
    db = tmp_path / "tasks.db"
    done, working, waiting = new_record(), new_record(), new_record()
    hook = TaskPushNotificationConfig(
        id="hook",
        task_id=waiting.id,
        url="https://example.com/hook",
        token="tok",
        authentication=AuthenticationInfo(scheme="Bearer", credentials="secret"),
    )
    async with opened(db, snapshot_every=4) as store:
        for record in (done, working, waiting):
            await store.create(record, tenant="acme", owner="alice")
        await store.append(done.id, [status_event(done, S.WORKING, at=1)])
        await store.append(done.id, [artifact_event(done, "a", "1", name="doc")])
        await store.append(done.id, [artifact_event(done, "a", "2", append=True)])
        await store.append(done.id, [status_event(done, S.COMPLETED, at=2, text="ok")])
        await store.append(working.id, [status_event(working, S.WORKING, at=3)])
        for i in range(9):  # crosses two snapshots and leaves a tail of events after the last
            await store.append(working.id, [artifact_event(working, "log", str(i), append=True)])
        await store.append(waiting.id, [status_event(waiting, S.INPUT_REQUIRED, at=4, text="?")])
        await store.save_push_config(hook)
        expected, versions = {}, {}
        for record in (done, working, waiting):
            loaded = await store.load(record.id, tenant="acme")
            assert loaded is not None
            expected[record.id], versions[record.id] = loaded.snapshot(), loaded.version
    assert versions == {done.id: 5, working.id: 11, waiting.id: 2}

    async with opened(db) as store:
        for task_id, task in expected.items():
            loaded = await store.load(task_id, tenant="acme", owner="alice")
            assert loaded is not None
            assert loaded.snapshot() == task
            assert loaded.version == versions[task_id]
        assert await store.get_push_config(waiting.id, "hook") == hook
        infos = {i.task_id: i.state for i in await store.unfinished()}
        assert infos == {working.id: S.WORKING, waiting.id: S.INPUT_REQUIRED}
        # Writing goes on from where the file left off.
        assert await store.append(working.id, [status_event(working, S.COMPLETED, at=5)]) == 12
        reply = message("red", task_id=waiting.id, context_id=waiting.context_id)
        assert await store.append(waiting.id, [reply, status_event(waiting, S.WORKING, at=6)]) == 4


async def test_acknowledged_writes_survive_sigkill(tmp_path: Path) -> None:
    """A writer killed mid-stream: every version it was told is durable is in the file."""
    db = tmp_path / "tasks.db"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(WRITER_SCRIPT),
        str(db),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    acknowledged: dict[str, int] = {}
    try:
        with anyio.fail_after(60):
            for _ in range(600):  # acks spanning several tasks per writer and many commits
                line = await process.stdout.readline()
                assert line, (await process.stderr.read()).decode()
                task_id, version = line.split()
                acknowledged[task_id.decode()] = int(version)
    finally:
        process.send_signal(signal.SIGKILL)
        with anyio.fail_after(15):
            await process.communicate()
    assert len(acknowledged) >= 4

    async with opened(db) as store:
        for task_id, version in acknowledged.items():
            loaded = await store.load(task_id, tenant="")
            assert loaded is not None, task_id
            assert loaded.version >= version, (task_id, loaded.version, version)
            # The folded state matches its version: one artifact chunk per version after 2.
            chunks = loaded.version - 2 if loaded.state is S.WORKING else 0
            if loaded.state is S.WORKING and chunks > 0:
                parts = [p.text for p in loaded.artifacts[0].parts]
                assert parts == [f"{i};" for i in range(chunks)]
            if loaded.state is S.COMPLETED:
                assert loaded.version == 33 and len(loaded.artifacts[0].parts) == 30


# -- group commit ---------------------------------------------------------------------------------


async def test_writes_queued_during_a_commit_share_the_next_one(tmp_path: Path) -> None:
    async with opened(tmp_path / "tasks.db") as store:
        records = [new_record() for _ in range(50)]
        for record in records:
            await store.create(record, tenant="", owner="")
        writer = store._writer
        assert writer is not None
        # Hold the writer inside a transaction while fifty tasks append.
        gate, held = await hold_writer(writer)
        commits = store.commits
        appends = [
            asyncio.ensure_future(store.append(r.id, [status_event(r, S.WORKING, at=1)]))
            for r in records
        ]
        await asyncio.sleep(0)  # one loop turn: every append runs up to its durable wait
        assert writer._queue.qsize() >= len(records)
        gate.set()
        assert await asyncio.gather(*appends) == [2] * len(records)
        assert await held
        # The held job's transaction plus one for all fifty appends.
        assert store.commits - commits <= 2


async def test_a_failing_write_is_undone_alone_and_its_batch_commits(tmp_path: Path) -> None:
    db = tmp_path / "tasks.db"
    async with opened(db) as store:
        first, second = new_record(), new_record()
        for record in (first, second):
            await store.create(record, tenant="", owner="")
        writer = store._writer
        assert writer is not None
        gate, held = await hold_writer(writer)

        def half_done(connection: sqlite3.Connection) -> None:
            # Writes a row, then fails: the row must not survive, the batch must.
            connection.execute(_sql.UPSERT_PUSH_CONFIG, (first.id, "h", first.id, b"{}", "1.0"))
            raise RuntimeError("failed halfway")

        commits = store.commits
        before = asyncio.ensure_future(store.append(first.id, [status_event(first, S.WORKING)]))
        failing = writer.submit(half_done)
        after = asyncio.ensure_future(store.append(second.id, [status_event(second, S.WORKING)]))
        await asyncio.sleep(0)  # all three are queued behind the held job
        gate.set()
        outcomes = await asyncio.gather(before, failing, after, return_exceptions=True)
        assert await held
        assert outcomes[0] == 2 and outcomes[2] == 2
        assert isinstance(outcomes[1], RuntimeError)
        assert store.commits - commits <= 2  # the held job's transaction, then one for the rest
    assert rows(db, "SELECT COUNT(*) FROM push_configs") == [(0,)]
    assert rows(db, "SELECT id, version FROM tasks ORDER BY id") == sorted(
        [(first.id, 2), (second.id, 2)]
    )


async def test_the_log_is_checkpointed_and_stays_bounded_under_steady_writes(
    tmp_path: Path,
) -> None:
    """The checkpointer thread copies the log into the file while writes go on, and the log
    restarts often enough to stay within a bound (a few thousand pages, not every write)."""
    db = tmp_path / "tasks.db"
    wal = tmp_path / "tasks.db-wal"
    async with opened(db) as store:
        record = new_record()
        await store.create(record, tenant="", owner="")
        await store.append(record.id, [status_event(record, S.WORKING, at=1)])
        empty_file = db.stat().st_size
        for i in range(3000):  # one commit each: several times the pages the log may hold
            chunk = artifact_event(record, "log", f"{i:04d}" * 100, append=True)
            await store.append(record.id, [chunk])
        (page_size,) = rows(db, "PRAGMA page_size")[0]
        assert isinstance(page_size, int)
        assert wal.stat().st_size < 2 * _BACKSTOP_PAGES * page_size
        assert db.stat().st_size > empty_file  # pages were copied into the file meanwhile
        loaded = await store.load(record.id, tenant="")
        assert loaded is not None and loaded.version == 3002


# -- the file: schema, layout, version ------------------------------------------------------------


async def test_schema_is_versioned_and_in_wal_mode(tmp_path: Path) -> None:
    db = tmp_path / "tasks.db"
    async with opened(db):
        pass
    assert rows(db, "SELECT version FROM schema_version") == [(SCHEMA_VERSION,)]
    assert rows(db, "PRAGMA journal_mode") == [("wal",)]
    tables = {name for (name,) in rows(db, "SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"tasks", "events", "push_configs", "schema_version"} <= tables
    async with opened(db):  # opening again migrates nothing and keeps one version row
        pass
    assert rows(db, "SELECT version FROM schema_version") == [(SCHEMA_VERSION,)]


async def test_a_file_from_a_newer_peerwire_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "tasks.db"
    async with opened(db):
        pass
    with contextlib.closing(sqlite3.connect(db)) as connection:
        connection.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
        connection.commit()
    store = SQLiteTaskStore(db)
    with pytest.raises(RuntimeError, match="newer peerwire"):
        await store.open()
    await store.close()


async def test_an_unopenable_path_says_so(tmp_path: Path) -> None:
    store = SQLiteTaskStore(tmp_path / "missing-directory" / "tasks.db")
    with pytest.raises(OSError, match="missing-directory"):
        await store.open()


async def test_events_are_rows_until_a_snapshot_absorbs_them(tmp_path: Path) -> None:
    db = tmp_path / "tasks.db"
    async with opened(db, snapshot_every=100) as store:
        record = new_record()
        await store.create(record, tenant="", owner="")
        await store.append(record.id, [status_event(record, S.WORKING, at=1)])
        for i in range(10):
            await store.append(record.id, [artifact_event(record, "a", str(i), append=True)])
        assert rows(db, "SELECT version, kind FROM events WHERE task_id = ?", record.id) == [
            (2, "status"),
            *((v, "artifact") for v in range(3, 13)),
        ]
        assert rows(db, "SELECT version, snapshot_version FROM tasks") == [(12, 1)]
        await store.append(record.id, [status_event(record, S.COMPLETED, at=2)])
        assert rows(db, "SELECT COUNT(*) FROM events") == [(0,)]
        assert rows(db, "SELECT version, snapshot_version, state FROM tasks") == [
            (13, 13, "TASK_STATE_COMPLETED")
        ]


async def test_memory_stays_bounded_as_tasks_finish(tmp_path: Path) -> None:
    async with opened(tmp_path / "tasks.db", settled_cache=16) as store:
        for round_ in range(10):
            records = [new_record(at=round_) for _ in range(30)]
            await asyncio.gather(*(store.create(r, tenant="", owner="") for r in records))
            assert store.cached_tasks <= 16 + 30
            await asyncio.gather(
                *(store.append(r.id, [status_event(r, S.COMPLETED, at=round_)]) for r in records)
            )
            assert store.cached_tasks <= 16
        _, _, total = await store.list_tasks(list_query(ListTasksRequest()), tenant="", owner=None)
        assert total == 300


async def test_finished_tasks_past_their_retention_are_swept(tmp_path: Path) -> None:
    db = tmp_path / "tasks.db"
    old, recent, idle = new_record(), new_record(), new_record()
    async with opened(db) as store:
        for record in (old, recent, idle):
            await store.create(record, tenant="", owner="")
        await store.append(old.id, [status_event(old, S.COMPLETED, at=1)])  # 2026-01-01
        await store.append(idle.id, [status_event(idle, S.INPUT_REQUIRED, at=1)])
        finished_now = status_event(recent, S.FAILED)
        finished_now = msgspec.structs.replace(
            finished_now,
            status=msgspec.structs.replace(finished_now.status, timestamp=now_timestamp()),
        )
        await store.append(recent.id, [finished_now])
        await store.save_push_config(TaskPushNotificationConfig(task_id=old.id, id="h", url="u"))
    assert rows(db, "SELECT COUNT(*) FROM push_configs") == [(1,)]

    async with opened(db, retain_finished=timedelta(days=30)) as store:
        # The sweep queued when the store opened commits before this later write.
        await store.create(new_record(), tenant="", owner="")
        assert await store.load(old.id, tenant="") is None
        assert await store.load(recent.id, tenant="") is not None
        assert await store.load(idle.id, tenant="") is not None  # waiting is not finished
    assert rows(db, "SELECT COUNT(*) FROM push_configs") == [(0,)]
    assert rows(db, "SELECT COUNT(*) FROM tasks") == [(3,)]


def test_retention_cutoff_is_a_status_key() -> None:
    now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    assert retention_cutoff(timedelta(days=1), now=now) == sort_key("2026-02-28T12:00:00.000Z")
    with pytest.raises(ValueError):
        retention_cutoff(timedelta(seconds=-1))
    with pytest.raises(ValueError):
        SQLiteTaskStore("x.db", retain_finished=timedelta(0))


# -- more than one writer, cancelled writers ---------------------------------------------------


async def test_a_second_process_on_the_same_file_is_detected(tmp_path: Path) -> None:
    db = tmp_path / "tasks.db"
    async with opened(db) as first, opened(db) as second:
        record = new_record()
        await first.create(record, tenant="", owner="")
        assert await second.append(record.id, [status_event(record, S.WORKING, at=1)]) == 2
        # ``first`` still holds version 1 in memory: its write finds the row moved on, reloads
        # and applies on top of what ``second`` wrote.
        assert await first.append(record.id, [artifact_event(record, "a", "x")]) == 3
        # ``second`` believes version 2; with an expected version that is a conflict.
        with pytest.raises(VersionConflictError) as caught:
            await second.append(record.id, [artifact_event(record, "b", "y")], expected_version=2)
        assert caught.value.actual == 3
        loaded = await second.load(record.id, tenant="")
        assert loaded is not None and loaded.version == 3
        assert [a.artifact_id for a in loaded.artifacts] == ["a"]


async def test_a_cancelled_append_still_lands_and_the_next_one_follows(tmp_path: Path) -> None:
    async with opened(tmp_path / "tasks.db") as store:
        record = new_record()
        await store.create(record, tenant="", owner="")
        writer = store._writer
        assert writer is not None
        gate, held = await hold_writer(writer)
        doomed = asyncio.ensure_future(
            store.append(record.id, [status_event(record, S.WORKING, at=1)])
        )
        await asyncio.sleep(0)  # the append is submitted and waiting for durability
        doomed.cancel()
        follower = asyncio.ensure_future(
            store.append(record.id, [artifact_event(record, "a", "x")])
        )
        await asyncio.sleep(0)
        gate.set()
        with pytest.raises(asyncio.CancelledError):
            await doomed
        assert await follower == 3
        assert await held
        loaded = await store.load(record.id, tenant="")
        assert loaded is not None and loaded.version == 3 and loaded.state is S.WORKING


async def test_the_durable_hook_hears_of_a_commit_whose_caller_was_cancelled(
    tmp_path: Path,
) -> None:
    async with opened(tmp_path / "tasks.db") as store:
        record = new_record()
        await store.create(record, tenant="", owner="")
        heard: list[int] = []
        # Not cancelled: the hook runs before ``append`` returns.
        working = [status_event(record, S.WORKING, at=1)]
        assert await store.append(record.id, working, on_durable=heard.append) == 2
        assert heard == [2]
        writer = store._writer
        assert writer is not None
        gate, held = await hold_writer(writer)
        submitted = asyncio.ensure_future(
            store.append(record.id, [artifact_event(record, "a", "x")], on_durable=heard.append)
        )
        await asyncio.sleep(0)  # submitted, waiting for its commit
        # Waits for its turn behind ``submitted``: cancelled there, it writes nothing.
        queued = asyncio.ensure_future(
            store.append(record.id, [artifact_event(record, "b", "y")], on_durable=heard.append)
        )
        await asyncio.sleep(0)
        submitted.cancel()
        queued.cancel()
        gate.set()
        assert await held
        for cancelled in (submitted, queued):
            with pytest.raises(asyncio.CancelledError):
                await cancelled
        await store.append(record.id, [])  # waits for the write still in flight
        assert heard == [2, 3]
        loaded = await store.load(record.id, tenant="")
        assert loaded is not None and loaded.version == 3
        assert [a.artifact_id for a in loaded.artifacts] == ["a"]


# -- the spec string ---------------------------------------------------------------------------


def test_open_store_specs(tmp_path: Path) -> None:
    assert isinstance(open_store("memory"), MemoryTaskStore)
    store = open_store(f"sqlite:{tmp_path / 'x.db'}")
    assert isinstance(store, SQLiteTaskStore) and store.path == str(tmp_path / "x.db")
    for bad in ("sqlite:", "postgres:x", "", "sqlite"):  # postgres:// is a store (postgres.py)
        with pytest.raises(ValueError):
            open_store(bad)
    with pytest.raises(ValueError, match="sqlite"):
        open_store("memory", retain_finished=timedelta(days=1))


def test_serve_refuses_an_unknown_store_before_starting() -> None:
    result = CliRunner().invoke(app, ["serve", "no.such.module:agent", "--store", "floppy:disk"])
    assert result.exit_code == 2
    assert "unknown store" in result.output and "--store" in result.output


async def test_using_a_closed_store_is_an_error(tmp_path: Path) -> None:
    store = SQLiteTaskStore(tmp_path / "tasks.db")
    with pytest.raises(RuntimeError, match="not open"):
        await store.create(new_record(), tenant="", owner="")
    await store.open()
    await store.close()
    with pytest.raises(RuntimeError, match="not open"):
        await store.load("x", tenant="")
    with anyio.fail_after(5):
        await store.close()  # closing twice is harmless


def test_the_sql_is_ready_for_postgres_placeholders() -> None:
    assert _sql.numbered("a = ? AND (b, c) < (?, ?)") == "a = $1 AND (b, c) < ($2, $3)"
    created = _sql.ddl(_sql.MIGRATIONS[0][0], blob="BYTEA", bigint="BIGINT")
    assert "snapshot BYTEA" in created and "version BIGINT" in created


def _real_error(path: Path, sql: str) -> sqlite3.Error:
    try:
        with contextlib.closing(sqlite3.connect(path, timeout=0)) as connection:
            connection.execute(sql)
    except sqlite3.Error as exc:
        return exc
    raise AssertionError(f"{sql!r} did not fail")


def test_a_locked_or_unopenable_database_is_an_outage_and_a_bad_statement_is_not(
    tmp_path: Path,
) -> None:
    path = tmp_path / "held.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")  # another process holding the file's write lock
    try:
        locked = _real_error(path, "INSERT INTO t VALUES (1)")
    finally:
        holder.close()
    unopenable = _real_error(tmp_path / "gone" / "x.db", "SELECT 1")
    for exc in (locked, unopenable):
        outage = _store_failure(exc)
        assert isinstance(outage, ServiceUnavailableError), exc
        assert (outage.dependency, outage.retry_after) == ("task_store", 5)
        assert str(exc) not in outage.message
    wrong = _store_failure(_real_error(path, "SELEC 1"))
    assert type(wrong) is InternalError and "syntax" not in wrong.message
