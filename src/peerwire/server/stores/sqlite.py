"""The SQLite ``TaskStore``: durable by default, in one file, with no server to run.

Layout (see ``_sql``): one row per task holding a ProtoJSON snapshot, an append-only table of
the events since that snapshot, and push configs. A streamed chunk appends one small event row
and bumps the task row's version; the snapshot is rewritten only when the task settles
(terminal or interrupted) or every ``snapshot_every`` events, and then absorbs the rows it
covers. Loading a task folds its events onto its snapshot.

Durability: the database is in WAL mode and an ``append`` returns only once its transaction
has committed. With ``synchronous="NORMAL"`` (the default) a committed write is in the OS page
cache, so it survives the process being killed (``kill -9``, a crash) but not a power cut or
kernel panic; ``synchronous="FULL"`` fsyncs every commit and survives those too. Writes from
concurrent tasks are group-committed by one writer thread, and the log is checkpointed into the
file by another, off the commits' path (see ``_sqlite_io``).

Memory: the records of running (submitted, working) tasks stay in memory, which is what lets an
``append`` be validated without reading; settled tasks (terminal, or waiting for input or auth)
are kept in a small LRU and read back from the file when needed. Anything the store hands out
has been committed: a write is applied to the in-memory record only after it is durable.

Push outbox: an append to a task with push configs writes its outbox rows in the same
transaction as its events (so with the same durability); the bodies are built in the writer
thread, and only for such tasks. Claims and outcomes are writes like any other.

Retention: with ``retain_finished``, terminal tasks whose status is older than that are
deleted (with their events and push configs) when the store opens and then at most every
``_SWEEP_INTERVAL_S`` seconds, piggybacked on task creation: no timer task of its own.

Concurrency: appends to one task are applied one at a time, in order. Every write is also a
compare-and-swap on the task row's version, so a second process writing the same file (or a
stale cache) is detected: an append without ``expected_version`` then reloads and retries.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, Literal, TypeVar

import anyio.to_thread

from ...errors import InternalError, TaskNotFoundError, VersionConflictError
from ...protocol import (
    PROTOCOL_VERSION,
    TERMINAL,
    Event,
    ListQuery,
    TaskRecord,
    ends_blocking_wait,
    sort_key,
)
from ...protocol.paging import encode_page_token
from ...types import Task, TaskPushNotificationConfig, TaskState
from . import _sql
from ._rows import (
    AppendPlan,
    decode_outbox_row,
    decode_push_config,
    encode_push_config,
    event_body,
    events_after_rows,
    from_ms,
    outbox_row_id,
    plan_append,
    push_body,
    record_from_rows,
    task_row,
    to_ms,
)
from ._sqlite_io import (
    Checkpointer,
    GroupCommitWriter,
    ReaderPool,
    connect,
    leave_checkpoints_to_thread,
    migrate,
)
from .base import (
    EventsAfter,
    OutboxRow,
    PushTarget,
    StoredTaskInfo,
    TaskStore,
    store_failed,
    store_unavailable,
)
from .retention import retention_cutoff

__all__ = ["SQLiteTaskStore"]

log = logging.getLogger("peerwire.stores.sqlite")

T = TypeVar("T")
Synchronous = Literal["NORMAL", "FULL"]

# How often an append without expected_version reloads and retries after finding the row
# changed under it (another process writing the same file): more would mean a livelock.
_ATTEMPTS = 3
_SWEEP_INTERVAL_S = 600.0


class _Entry:
    """A task held in memory: its record, who it belongs to, and whether a write is in flight."""

    __slots__ = ("owner", "record", "snapshot_version", "stale", "tenant", "waiters", "writing")

    def __init__(self, record: TaskRecord, tenant: str, owner: str, snapshot_version: int) -> None:
        self.record = record
        self.tenant = tenant
        self.owner = owner
        self.snapshot_version = snapshot_version
        self.writing = False
        """A write of this task was submitted and is not durable yet."""
        self.waiters: list[asyncio.Future[None]] | None = None
        """Appends waiting for that write to finish (rare: one task's appends are sequential)."""
        self.stale = False
        """The database moved on without this process: reload before writing."""

    def visible_to(self, tenant: str, owner: str | None) -> bool:
        return self.tenant == tenant and (owner is None or self.owner == owner)

    def turn(self) -> asyncio.Future[None]:
        """Resolves when the write in flight is done: one future per waiter, so a waiter that
        is cancelled cancels nothing but its own wait."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self.waiters is None:
            self.waiters = []
        self.waiters.append(waiter)
        return waiter

    def written(self) -> None:
        """The write in flight is durable (or failed): let the waiting appends go on."""
        self.writing = False
        waiters, self.waiters = self.waiters, None
        for waiter in waiters or ():
            if not waiter.done():
                waiter.set_result(None)


class _StaleRow(Exception):
    """The task row's version was not the one this process validated against."""

    def __init__(self, actual: int | None) -> None:
        super().__init__(actual)
        self.actual = actual


class SQLiteTaskStore(TaskStore):
    """Tasks, their events and push configs in a SQLite file (created if missing)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: Synchronous = "NORMAL",
        snapshot_every: int = 64,
        settled_cache: int = 256,
        readers: int = 2,
        retain_finished: timedelta | None = None,
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError(f"synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}")
        if snapshot_every < 1 or settled_cache < 0 or readers < 1:
            raise ValueError("snapshot_every and readers must be >= 1, settled_cache >= 0")
        if retain_finished is not None and retain_finished <= timedelta(0):
            raise ValueError(f"retain_finished must be positive, got {retain_finished}")
        self.path = os.fspath(path)
        self.synchronous = synchronous
        self.snapshot_every = snapshot_every
        self._settled_capacity = settled_cache
        self._reader_count = readers
        self.retain_finished = retain_finished
        self._next_sweep = 0.0
        self._running: dict[str, _Entry] = {}
        self._settled: OrderedDict[str, _Entry] = OrderedDict()
        self._writer: GroupCommitWriter | None = None
        self._readers: ReaderPool | None = None
        self._outbox_listener: Callable[[], None] | None = None
        # The opened file's (device, inode): ``check_health`` tells it from a file that has
        # since taken its path (the connections would go on using the old one, unseen).
        self._identity: tuple[int, int] | None = None

    # -- lifetime ---------------------------------------------------------------------------

    async def open(self) -> None:
        if self._writer is not None:
            return
        try:
            connection = await anyio.to_thread.run_sync(self._prepare)
        except sqlite3.Error as exc:
            raise OSError(f"cannot open the SQLite task store {self.path!r}: {exc}") from exc
        others: list[sqlite3.Connection] = []
        try:
            # The readers, and one more for the checkpointer: a checkpoint copies committed
            # pages and changes nothing, so a query-only connection may run it.
            for _ in range(self._reader_count + 1):
                others.append(await anyio.to_thread.run_sync(self._connect_reader))
        except BaseException:
            for opened in (connection, *others):
                opened.close()
            raise
        *readers, checkpointing = others
        self._identity = _file_identity(self.path)
        self._readers = ReaderPool(readers)
        self._writer = GroupCommitWriter(connection, Checkpointer(checkpointing))
        self._writer.start()
        self._sweep_if_due()

    async def check_health(self) -> None:
        """``TaskStore.check_health``: the path still holds the database this store opened
        (not removed, replaced or overwritten: its connections would not notice), and one of
        the store's own connections reads it."""
        identity = self._identity

        def probe(connection: sqlite3.Connection) -> None:
            _check_file(self.path, identity)
            connection.execute(_HEALTH_QUERY).fetchall()

        await self._read(probe)

    def _prepare(self) -> sqlite3.Connection:
        connection = connect(self.path, synchronous=self.synchronous)
        try:
            connection.execute("PRAGMA busy_timeout=30000")
            leave_checkpoints_to_thread(connection)
            migrate(connection)
        except BaseException:
            connection.close()
            raise
        return connection

    def _connect_reader(self) -> sqlite3.Connection:
        return connect(self.path, synchronous=self.synchronous, read_only=True)

    async def close(self) -> None:
        writer, readers = self._writer, self._readers
        self._writer = self._readers = None
        if writer is not None:
            await writer.stop()
        if readers is not None:
            await readers.close()
        self._running.clear()
        self._settled.clear()

    @property
    def cached_tasks(self) -> int:
        """How many task records are held in memory (running ones plus the settled LRU)."""
        return len(self._running) + len(self._settled)

    @property
    def commits(self) -> int:
        """Transactions committed since ``open`` (group commit puts many writes in one)."""
        return 0 if self._writer is None else self._writer.commits

    # -- tasks ------------------------------------------------------------------------------

    async def create(self, record: TaskRecord, *, tenant: str, owner: str) -> None:
        self._sweep_if_due()
        cached = self._cached(record.id)
        if cached is not None:
            raise VersionConflictError(record.id, expected=0, actual=cached.record.version)
        row = task_row(record, tenant, owner)

        def insert(connection: sqlite3.Connection) -> None:
            _insert_task(connection, row)

        def created(_: None, error: BaseException | None) -> None:
            if error is None:
                self._file(_Entry(record, tenant, owner, record.version))

        await self._write(insert, created)

    async def create_once(
        self,
        record: TaskRecord,
        *,
        tenant: str,
        owner: str,
        message_id: str,
        now: float,
        expires_at: float,
    ) -> str:
        """``TaskStore.create_once``: the claim and the task row go in one piece of work of
        the writer, so in one transaction; the primary key of ``message_ids`` decides
        between duplicates, those of other processes writing the file too."""
        self._sweep_if_due()
        cached = self._cached(record.id)
        if cached is not None:
            raise VersionConflictError(record.id, expected=0, actual=cached.record.version)
        claim = (tenant, owner, message_id, record.id, to_ms(expires_at), to_ms(now))
        row = task_row(record, tenant, owner)

        def insert(connection: sqlite3.Connection) -> str:
            if connection.execute(_sql.CLAIM_MESSAGE_ID_OR_ORPHAN, claim).rowcount == 0:
                (holder,) = connection.execute(
                    _sql.SELECT_MESSAGE_TASK, (tenant, owner, message_id)
                ).fetchone()
                return str(holder)
            _insert_task(connection, row)
            return record.id

        def created(holder: str, error: BaseException | None) -> None:
            if error is None and holder == record.id:
                self._file(_Entry(record, tenant, owner, record.version))

        return await self._write(insert, created)

    async def forget_message_ids(self, before: float, *, limit: int) -> int:
        parameters = (to_ms(before), limit)
        return await self._write(
            lambda connection: connection.execute(_sql.FORGET_MESSAGE_IDS, parameters).rowcount
        )

    async def load(
        self, task_id: str, *, tenant: str, owner: str | None = None
    ) -> TaskRecord | None:
        entry = self._running.get(task_id)
        if entry is not None:
            if entry.visible_to(tenant, owner):
                return entry.record
        else:
            entry = self._settled.get(task_id)
            if entry is not None and entry.visible_to(tenant, owner):
                self._settled.move_to_end(task_id)
                return entry.record
        # Not cached, or not the caller's: read the file, asking for the caller's task only.
        # Another caller's task and a missing one thus cost the same read that finds no row
        # (a cached one answering at once would tell its id from an unused one by the time
        # taken: docs/SECURITY.md).
        return await self._read(lambda connection: _read_task(connection, task_id, tenant, owner))

    async def append(
        self,
        task_id: str,
        events: Sequence[Event],
        *,
        expected_version: int | None = None,
        on_durable: Callable[[int], None] | None = None,
    ) -> int:
        """``TaskStore.append``: the writer thread's commit calls ``on_durable`` (from the
        event loop), so it runs even if this caller was cancelled while the write went on."""
        batch = tuple(events)
        seen: int | None = None
        for _ in range(_ATTEMPTS):
            entry = self._cached(task_id) or await self._writable(task_id)
            # Appends to one task go one at a time: each validates against the durable state
            # the previous one left. Waiting never cancels the write being waited for.
            while entry.writing:
                await entry.turn()
            if entry.stale:
                continue
            record = entry.record
            if expected_version is not None and expected_version != record.version:
                raise VersionConflictError(
                    task_id, expected=expected_version, actual=record.version
                )
            if not batch:
                return record.version
            version = record.version + len(batch)  # one version per event
            try:
                await self._submit_append(entry, batch, on_durable)
                return version
            except sqlite3.Error as exc:
                raise _store_failure(exc) from exc
            except _StaleRow as stale:
                if expected_version is not None:
                    raise VersionConflictError(
                        task_id, expected=expected_version, actual=stale.actual
                    ) from None
                seen = record.version
        # Another process keeps winning the race for this task's row.
        raise VersionConflictError(task_id, expected=seen if seen is not None else -1, actual=None)

    def _submit_append(
        self,
        entry: _Entry,
        events: tuple[Event, ...],
        on_durable: Callable[[int], None] | None = None,
    ) -> asyncio.Future[int]:
        """Validate ``events`` and queue their write; the entry takes them once it is durable,
        then ``on_durable`` hears of it. The future resolves to the number of outbox rows
        written."""
        record = entry.record
        plan = plan_append(
            record,
            events,
            snapshot_version=entry.snapshot_version,
            snapshot_every=self.snapshot_every,
        )
        version = plan.version
        work = _append_work(record.id, plan, events)

        def written(queued: int, error: BaseException | None) -> None:
            entry.written()
            if error is not None:
                if isinstance(error, _StaleRow):
                    self._forget(entry)
                return
            if plan.after is not None:
                # The copy the batch was validated on is the new state: nothing to fold again.
                entry.record = plan.after
            else:
                try:
                    for event in events:
                        record.apply(event)
                except Exception:  # validated above, so only a bug gets here: trust the file
                    self._forget(entry)
                    raise
            if plan.snapshot is not None:
                entry.snapshot_version = version
            self._file(entry)
            if on_durable is not None:
                on_durable(version)
            if queued and self._outbox_listener is not None:
                self._outbox_listener()

        future = self._submit(work, written)
        entry.writing = True
        return future

    async def list_tasks(
        self, query: ListQuery, *, tenant: str, owner: str | None
    ) -> tuple[list[Task], str, int]:
        statements = _sql.list_tasks(query, tenant=tenant, owner=owner)
        total, rows = await self._read(lambda connection: _read_page(connection, statements))
        more = len(rows) > query.page_size
        rows = rows[: query.page_size]
        tasks = []
        for task_id, record in rows:
            # A running task's cached record may already hold a commit the read did not see.
            entry = self._running.get(task_id)
            current = entry.record if entry is not None else record
            tasks.append(
                current.snapshot(
                    history_length=query.history_length,
                    include_artifacts=query.include_artifacts,
                )
            )
        token = ""
        if more and tasks:
            last = tasks[-1]
            token = encode_page_token(sort_key(last.status.timestamp), last.id)
        return tasks, token, total

    async def events_after(self, task_id: str, version: int) -> EventsAfter | None:
        return await self._read(lambda connection: _read_events_after(connection, task_id, version))

    async def unfinished(self) -> list[StoredTaskInfo]:
        rows = await self._read(
            lambda connection: connection.execute(_sql.SELECT_UNFINISHED).fetchall()
        )
        return [
            StoredTaskInfo(task_id, context_id, tenant, owner, TaskState(state))
            for task_id, context_id, tenant, owner, state in rows
        ]

    async def delete_terminal_before(self, status_key: str) -> int:
        return await self._durable(self._submit(*self._deletion(status_key)))

    def _deletion(
        self, cutoff: str
    ) -> tuple[Callable[[sqlite3.Connection], int], Callable[[int, BaseException | None], None]]:
        statements = _sql.delete_terminal_before()

        def delete(connection: sqlite3.Connection) -> int:
            deleted = 0
            for statement in statements:
                deleted = connection.execute(statement, (cutoff,)).rowcount
            return deleted  # the last statement removes the task rows

        def deleted(_: int, error: BaseException | None) -> None:
            if error is None:
                for task_id, entry in list(self._settled.items()):
                    if entry.record.terminal and sort_key(entry.record.status.timestamp) < cutoff:
                        del self._settled[task_id]

        return delete, deleted

    def _sweep_if_due(self) -> None:
        """Queue a retention sweep if one is due. Nobody awaits it: the writer owns it, and
        ``close`` commits it with everything else that is queued."""
        if self.retain_finished is None or self._writer is None:
            return
        now = time.monotonic()
        if now < self._next_sweep:
            return
        self._next_sweep = now + _SWEEP_INTERVAL_S
        sweep = self._submit(*self._deletion(retention_cutoff(self.retain_finished)))
        sweep.add_done_callback(_log_sweep)

    async def owner_of(self, task_id: str, *, tenant: str) -> str | None:
        row = await self._read(
            lambda connection: connection.execute(_sql.SELECT_OWNER, (task_id, tenant)).fetchone()
        )
        return None if row is None else str(row[0])

    # -- recorded callers ---------------------------------------------------------------------

    async def save_caller(self, task_id: str, message_id: str, caller: bytes) -> None:
        def save(connection: sqlite3.Connection) -> None:
            params = (task_id, message_id, caller, task_id)
            if connection.execute(_sql.SAVE_CALLER, params).rowcount == 0:
                raise _not_found(task_id)

        await self._write(save)

    async def load_callers(self, task_id: str) -> dict[str, bytes]:
        rows = await self._read(
            lambda connection: connection.execute(_sql.SELECT_CALLERS, (task_id,)).fetchall()
        )
        return {message_id: bytes(body) for message_id, body in rows}

    # -- push configs -------------------------------------------------------------------------

    async def save_push_config(
        self, config: TaskPushNotificationConfig, *, protocol_version: str = PROTOCOL_VERSION
    ) -> None:
        params = (
            config.task_id,
            config.id,
            config.task_id,
            encode_push_config(config),
            protocol_version,
        )

        def save(connection: sqlite3.Connection) -> None:
            if connection.execute(_sql.TASK_EXISTS, (config.task_id,)).fetchone() is None:
                raise _not_found(config.task_id)
            connection.execute(_sql.UPSERT_PUSH_CONFIG, params)

        await self._write(save)

    async def get_push_config(
        self, task_id: str, config_id: str
    ) -> TaskPushNotificationConfig | None:
        row = await self._read(
            lambda connection: connection.execute(
                _sql.GET_PUSH_CONFIG, (task_id, config_id)
            ).fetchone()
        )
        return None if row is None else decode_push_config(row[0])

    async def get_push_target(self, task_id: str, config_id: str) -> PushTarget | None:
        row = await self._read(
            lambda connection: connection.execute(
                _sql.GET_PUSH_TARGET, (task_id, config_id)
            ).fetchone()
        )
        return None if row is None else PushTarget(decode_push_config(row[0]), row[1], row[2])

    async def list_push_configs(self, task_id: str) -> list[TaskPushNotificationConfig]:
        rows = await self._read(
            lambda connection: connection.execute(_sql.LIST_PUSH_CONFIGS, (task_id,)).fetchall()
        )
        return [decode_push_config(body) for (body,) in rows]

    async def delete_push_config(self, task_id: str, config_id: str) -> None:
        def delete(connection: sqlite3.Connection) -> None:
            connection.execute(_sql.DELETE_PUSH_CONFIG, (task_id, config_id))
            connection.execute(_sql.DELETE_PENDING_OUTBOX, (task_id, config_id))

        await self._write(delete)

    # -- the push outbox ----------------------------------------------------------------------

    def on_outbox(self, listener: Callable[[], None] | None) -> None:
        self._outbox_listener = listener

    async def claim_due(self, now: float, *, limit: int, lease: float) -> list[OutboxRow]:
        due, lease_end = to_ms(now), to_ms(now + lease)

        def claim(connection: sqlite3.Connection) -> list[OutboxRow]:
            ids = [row_id for (row_id,) in connection.execute(_sql.SELECT_DUE_OUTBOX, (due, limit))]
            connection.executemany(_sql.CLAIM_OUTBOX, [(lease_end, row_id) for row_id in ids])
            return [
                decode_outbox_row(connection.execute(_sql.SELECT_OUTBOX_ROW, (row_id,)).fetchone())
                for row_id in ids
            ]

        return await self._write(claim)

    async def mark_delivered(self, row_id: str) -> None:
        await self._write(
            lambda connection: connection.execute(_sql.MARK_OUTBOX_DELIVERED, (b"", row_id))
        )

    async def mark_retry(self, row_id: str, next_attempt_at: float, error: str) -> None:
        params = (to_ms(next_attempt_at), error, row_id)
        await self._write(lambda connection: connection.execute(_sql.MARK_OUTBOX_RETRY, params))

    async def release_claim(self, row_id: str, next_attempt_at: float) -> None:
        params = (to_ms(next_attempt_at), row_id)
        await self._write(lambda connection: connection.execute(_sql.RELEASE_OUTBOX_CLAIM, params))

    async def mark_failed(self, row_id: str, error: str) -> None:
        await self._write(
            lambda connection: connection.execute(_sql.MARK_OUTBOX_FAILED, (error, row_id))
        )

    async def outbox(self, task_id: str) -> list[OutboxRow]:
        rows = await self._read(
            lambda connection: connection.execute(_sql.SELECT_OUTBOX, (task_id,)).fetchall()
        )
        return [decode_outbox_row(row) for row in rows]

    async def outbox_backlog(self) -> tuple[int, float | None] | None:
        count, oldest = await self._read(
            lambda connection: connection.execute(_sql.OUTBOX_BACKLOG).fetchone()
        )
        return int(count), None if oldest is None else from_ms(oldest)

    # -- the cache ----------------------------------------------------------------------------

    def _cached(self, task_id: str) -> _Entry | None:
        entry = self._running.get(task_id)
        if entry is None:
            entry = self._settled.get(task_id)
            if entry is not None:
                self._settled.move_to_end(task_id)
        return entry

    def _file(self, entry: _Entry) -> None:
        """Keep a running task's entry; put a settled one in the LRU (evicting the oldest)."""
        task_id = entry.record.id
        if ends_blocking_wait(entry.record.state):
            self._running.pop(task_id, None)
            self._settled[task_id] = entry
            self._settled.move_to_end(task_id)
            while len(self._settled) > self._settled_capacity:
                self._settled.popitem(last=False)
        else:
            self._settled.pop(task_id, None)
            self._running[task_id] = entry

    def _forget(self, entry: _Entry) -> None:
        entry.stale = True
        task_id = entry.record.id
        if self._running.get(task_id) is entry:
            del self._running[task_id]
        if self._settled.get(task_id) is entry:
            del self._settled[task_id]

    async def _writable(self, task_id: str) -> _Entry:
        """The task's entry, read through the writer (so it follows every earlier commit)."""
        entry = self._cached(task_id)
        if entry is not None:
            return entry

        def read(connection: sqlite3.Connection) -> tuple[Any, ...] | None:
            return _read_task_rows(connection, task_id)

        def loaded(rows: tuple[Any, ...] | None, error: BaseException | None) -> None:
            nonlocal entry
            entry = self._cached(task_id)
            if error is not None or rows is None or entry is not None:
                return
            _, tenant, owner, _, snapshot, snapshot_version, events = rows
            record = record_from_rows(snapshot, snapshot_version, events)
            entry = _Entry(record, tenant, owner, snapshot_version)
            self._file(entry)

        await self._write(read, loaded)
        if entry is None:
            raise _not_found(task_id)
        return entry

    # -- plumbing ---------------------------------------------------------------------------

    def _submit(
        self,
        work: Callable[[sqlite3.Connection], T],
        then: Callable[[T, BaseException | None], None] | None = None,
    ) -> asyncio.Future[T]:
        if self._writer is None:
            raise RuntimeError("the SQLite task store is not open (call open() first)")
        return self._writer.submit(work, then)

    async def _durable(self, future: asyncio.Future[T]) -> T:
        """Await a submitted write. Cancelling the waiter does not cancel the write."""
        try:
            return await future
        except sqlite3.Error as exc:
            raise _store_failure(exc) from exc

    async def _write(
        self,
        work: Callable[[sqlite3.Connection], T],
        then: Callable[[T, BaseException | None], None] | None = None,
    ) -> T:
        return await self._durable(self._submit(work, then))

    async def _read(self, read: Callable[[sqlite3.Connection], T]) -> T:
        if self._readers is None:
            raise RuntimeError("the SQLite task store is not open (call open() first)")
        try:
            return await self._readers.run(read)
        except sqlite3.Error as exc:
            raise _store_failure(exc) from exc


# A cheap real read: the tasks table's first page.
_HEALTH_QUERY = "SELECT 1 FROM tasks LIMIT 1"
_SQLITE_HEADER = b"SQLite format 3\x00"


def _file_identity(path: str) -> tuple[int, int] | None:
    """The (device, inode) of the database file; ``None`` for an in-memory or URI path."""
    if path == ":memory:" or path.startswith("file:"):
        return None
    found = os.stat(path)
    return (found.st_dev, found.st_ino)


def _check_file(path: str, identity: tuple[int, int] | None) -> None:
    """Raise ``OSError`` unless ``path`` is still the SQLite database of ``identity``."""
    if identity is None:
        return
    found = os.stat(path)  # FileNotFoundError: the file, or its folder, is gone
    if (found.st_dev, found.st_ino) != identity:
        raise OSError(f"{path!r} is no longer the database this store opened (replaced)")
    with open(path, "rb") as file:
        if file.read(len(_SQLITE_HEADER)) != _SQLITE_HEADER:
            raise OSError(f"{path!r} is no longer a SQLite database (overwritten)")


# The compare-and-swap of an append, by (rewrites the snapshot, changes the status).
_UPDATE_TASK = {
    (snapshot, status): _sql.update_task(with_snapshot=snapshot, with_status=status)
    for snapshot in (False, True)
    for status in (False, True)
}


def _append_work(
    task_id: str, plan: AppendPlan, events: tuple[Event, ...]
) -> Callable[[sqlite3.Connection], int]:
    """The writer's half of an append: move the task row (compare-and-swap), then write the
    event rows or, with a new snapshot, drop the rows it absorbs; returns the outbox rows
    written."""
    version, base = plan.version, plan.base
    update = _UPDATE_TASK[plan.snapshot is not None, plan.status_changed]
    params: tuple[object, ...] = (version,)
    if plan.status_changed:
        params += (plan.state, plan.status_key)
    if plan.snapshot is not None:
        params += (plan.snapshot, version)
    params += (task_id, base)
    rows = [(task_id, *row) for row in plan.rows]

    def write(connection: sqlite3.Connection) -> int:
        if connection.execute(update, params).rowcount == 0:
            found = connection.execute(_sql.SELECT_TASK_VERSION, (task_id,)).fetchone()
            raise _StaleRow(None if found is None else int(found[0]))
        if plan.snapshot is not None:
            connection.execute(_sql.DELETE_EVENTS, (task_id, version))
        elif len(rows) == 1:
            connection.execute(_sql.INSERT_EVENT, rows[0])
        else:
            connection.executemany(_sql.INSERT_EVENT, rows)
        return _queue_notifications(connection, task_id, base, events, plan.rows)

    return write


def _queue_notifications(
    connection: sqlite3.Connection,
    task_id: str,
    base: int,
    events: tuple[Event, ...],
    rows: list[tuple[int, str, bytes]],
) -> int:
    """Write the outbox rows of ``events`` (appended after version ``base``) if the task has
    push configs; how many. ``rows``: the events' ``(version, kind, body)``, when encoded."""
    config_ids = [i for (i,) in connection.execute(_sql.SELECT_PUSH_CONFIG_IDS, (task_id,))]
    if not config_ids:
        return 0
    now = to_ms(time.time())
    bodies = [(kind, body) for _, kind, body in rows] or [event_body(event) for event in events]
    outbox: list[tuple[object, ...]] = []
    for seq, (kind, body) in enumerate(bodies, start=base + 1):
        pushed = push_body(kind, body)
        if pushed is None:
            continue
        for config_id in config_ids:
            row_id = outbox_row_id(task_id, config_id, seq)
            outbox.append((row_id, task_id, config_id, seq, pushed, now, now))
    connection.executemany(_sql.INSERT_OUTBOX, outbox)
    return len(outbox)


def _insert_task(connection: sqlite3.Connection, row: tuple[Any, ...]) -> None:
    """Insert a new task's row (``task_row``); ``VersionConflictError`` if its id is taken."""
    if connection.execute(_sql.INSERT_TASK, row).rowcount == 0:
        task_id = row[0]
        found = connection.execute(_sql.SELECT_TASK_VERSION, (task_id,)).fetchone()
        raise VersionConflictError(
            task_id, expected=0, actual=None if found is None else int(found[0])
        )


def _read_task_rows(
    connection: sqlite3.Connection,
    task_id: str,
    tenant: str | None = None,
    owner: str | None = None,
) -> tuple[Any, ...] | None:
    """The task's rows (``None``: no such task, or not ``tenant``'s or ``owner``'s; ``None``
    for either: any). Scoped by an owner, the lookup misses another owner's task exactly as it
    misses an id that does not exist (``_sql.SELECT_VISIBLE_TASK``)."""
    if owner is not None:
        row = connection.execute(_sql.SELECT_VISIBLE_TASK, (tenant, owner, task_id)).fetchone()
    else:  # internal reads, which no caller times
        row = connection.execute(_sql.SELECT_TASK, (task_id,)).fetchone()
        if row is not None and tenant is not None and row[1] != tenant:
            return None
    if row is None:
        return None
    context_id, tenant, owner, version, snapshot, snapshot_version = row
    events = connection.execute(_sql.SELECT_EVENTS, (task_id, snapshot_version)).fetchall()
    return context_id, tenant, owner, version, snapshot, snapshot_version, events


def _read_task(
    connection: sqlite3.Connection, task_id: str, tenant: str, owner: str | None
) -> TaskRecord | None:
    rows = _read_task_rows(connection, task_id, tenant, owner)
    if rows is None:
        return None
    _, _, _, _, snapshot, snapshot_version, events = rows
    return record_from_rows(snapshot, snapshot_version, events)


def _read_events_after(
    connection: sqlite3.Connection, task_id: str, after: int
) -> EventsAfter | None:
    row = connection.execute(_sql.SELECT_TAIL, (after, task_id)).fetchone()
    if row is None:
        return None
    version, snapshot_version, snapshot = row
    rows: list[tuple[int, str, bytes]] = []
    if version > after:
        rows = connection.execute(
            _sql.SELECT_EVENTS_AFTER, (task_id, max(after, snapshot_version))
        ).fetchall()
    return events_after_rows(after, version, snapshot_version, snapshot, rows)


def _read_page(
    connection: sqlite3.Connection, statements: _sql.ListStatements
) -> tuple[int, list[tuple[str, TaskRecord]]]:
    (total,) = connection.execute(statements.count_sql, statements.count_params).fetchone()
    page = connection.execute(statements.page_sql, statements.page_params).fetchall()
    unsettled = [row[0] for row in page if TaskState(row[1]) not in TERMINAL]
    tails: dict[str, list[tuple[int, str, bytes]]] = {}
    if unsettled:
        for task_id, version, kind, body in connection.execute(
            _sql.select_events_of(len(unsettled)), unsettled
        ):
            tails.setdefault(task_id, []).append((version, kind, body))
    records = []
    for task_id, _, _, snapshot, snapshot_version in page:
        tail = [(kind, body) for v, kind, body in tails.get(task_id, ()) if v > snapshot_version]
        records.append((task_id, record_from_rows(snapshot, snapshot_version, tail)))
    return int(total), records


def _log_sweep(sweep: asyncio.Future[int]) -> None:
    if sweep.cancelled():
        return
    error = sweep.exception()
    if error is not None:
        log.warning("peerwire: the retention sweep failed: %s", error)
    elif sweep.result():
        log.info("peerwire: retention removed %d finished task(s)", sweep.result())


def _not_found(task_id: str) -> TaskNotFoundError:
    return TaskNotFoundError(f"Task {task_id} was not found", metadata={"taskId": task_id})


# SQLite's primary result codes that say the database cannot be used now rather than that a
# statement was wrong: busy or locked past busy_timeout, out of memory, read-only or
# unopenable (permissions, a directory gone), I/O errors, a full disk, a WAL lock protocol.
_OUTAGE_CODES = frozenset(
    (
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_NOMEM,
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_PROTOCOL,
    )
)


def _store_failure(exc: sqlite3.Error) -> InternalError:
    """A database failure as the caller's error: an outage is temporary and says so (the
    driver's text goes to the log); anything else is a fault of this store's own."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in _OUTAGE_CODES:  # extended codes: low byte
        return store_unavailable(exc)
    return store_failed(exc)
