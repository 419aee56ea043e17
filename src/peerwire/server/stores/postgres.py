"""The PostgreSQL ``TaskStore``: one database shared by every replica (and worker) of a service.

Layout: the tables of ``_sql`` (shared with the SQLite store) in a schema of their own
(``schema=``, default ``peerwire``), created and migrated by ``open()`` under an advisory lock
(see ``_postgres_schema``), or ahead of a deploy by ``peerwire db upgrade``. A task is one row
holding a ProtoJSON snapshot plus the event rows appended since; ``id`` and ``status_key`` sort
by code point (``COLLATE "C"``), like SQLite's, and ListTasks has an index per tenant, owner and
context.

Writing: every event is validated by ``protocol.TaskRecord`` (``_rows.plan_append``), then
written by one statement that is a compare-and-swap: the task row moves from the version the
batch was validated against to the new one (``UPDATE ... WHERE id = $1 AND version = $2``) and,
in the same statement and so the same transaction, the event rows go in. The snapshot is
rewritten only when the task settles (terminal or interrupted) or every ``snapshot_every``
events, and then absorbs the event rows. Validating needs the task's current record: this
process keeps the records it last wrote or read (an LRU of ``cache_size``); when another
process wrote since, the swap matches no row and the append locks the row (``SELECT ... FOR
UPDATE``), reloads snapshot and events, validates again and writes, all in one transaction.
Appends to one task from this process queue on an in-process lock instead of racing.

Reading: ``load`` sends the cached version along; the row's own version decides in the same
statement whether the snapshot and events come back (another process wrote) or not (the cache
is current). A caller's load asks for the row by tenant, owner and id (``tasks_by_scope``), so
another caller's task is no row, as a missing one is. ListTasks runs its count, page and event
reads in one REPEATABLE READ transaction so they agree. Only committed writes reach the cache,
so nothing handed out was rolled back.

Connections: an asyncpg pool of ``min_size`` to ``max_size``, whose connections go back to
the pool without a reset round trip (``_keep_session``: the store leaves no session state).
An operation that finds every connection busy for ``acquire_timeout`` seconds fails with
``ServiceUnavailableError`` (retry later) rather than queueing without bound, as does a
statement running longer than ``command_timeout`` and a database that is away (refused,
reset, shutting down, out of connections: ``_OUTAGES``); any other database failure is an
``InternalError``. Neither carries the driver's text, which goes to the log.

Push outbox: the statement that appends a task's events also writes its outbox rows, one per
pushed event and push config of the task (a join with ``push_configs``, so a task without
configs writes none), so they commit or fail together. Claims lock the rows they take and skip
rows another replica holds (``FOR UPDATE SKIP LOCKED``): replicas share the outbox.

Retention: with ``retain_finished``, terminal tasks older than that are deleted when the store
opens and then at most every ``_SWEEP_INTERVAL_S``, piggybacked on task creation; replicas skip
a sweep another one is running (a try-lock), so they do not repeat each other's work.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import timedelta
from typing import Any

import asyncpg

from ..._coalesce import Coalescer
from ...errors import (
    IllegalTransitionError,
    InternalError,
    TaskNotFoundError,
    VersionConflictError,
)
from ...protocol import PROTOCOL_VERSION, Event, ListQuery, TaskRecord, sort_key
from ...protocol.paging import encode_page_token
from ...types import Task, TaskPushNotificationConfig, TaskState
from .._url_options import pop_url_option
from . import _sql
from ._postgres_schema import check_current, check_schema_name, migrate, schema_version
from ._rows import (
    PUSH_SUFFIX,
    AppendPlan,
    decode_outbox_row,
    decode_push_config,
    encode_push_config,
    event_body,
    events_after_rows,
    from_ms,
    outbox_row_id_sql,
    plan_append,
    push_prefix,
    record_from_rows,
    task_row,
    to_ms,
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

__all__ = ["PostgresTaskStore"]

_SWEEP_INTERVAL_S = 600.0
# How often ``create_once`` claims again a message id whose holder vanished meanwhile.
_ATTEMPTS = 3

# The task row and, unless the row is at the caller's cached version ($2), its snapshot and
# the events after it: one statement, so one MVCC snapshot, so they always fit together.
_LOAD_COLUMNS = """
SELECT tenant, owner, version, snapshot_version,
    CASE WHEN version = $2 THEN NULL ELSE snapshot END AS snapshot,
    CASE WHEN version = $2 THEN NULL ELSE ARRAY(
        SELECT kind FROM events e
        WHERE e.task_id = t.id AND e.version > t.snapshot_version ORDER BY e.version
    ) END AS kinds,
    CASE WHEN version = $2 THEN NULL ELSE ARRAY(
        SELECT body FROM events e
        WHERE e.task_id = t.id AND e.version > t.snapshot_version ORDER BY e.version
    ) END AS bodies
FROM tasks t"""
_LOAD = _LOAD_COLUMNS + " WHERE t.id = $1"
# ``load_many``: _LOAD for many tasks in one statement, each with its own cached version
# ($1: the ids, $2: the versions; -1 for none).
_LOAD_MANY = (
    _LOAD_COLUMNS.replace("SELECT ", "SELECT t.id, ", 1).replace("$2", "k.known")
    + " JOIN unnest($1::text[], $2::bigint[]) AS k(id, known) ON t.id = k.id"
)
# ``events_after`` ($2: the version asked after) in one statement, so one MVCC snapshot: the
# row's versions, its snapshot only when that is past $2, and the event rows above both. With
# nothing newer than $2 (a subscriber's idle check) it reads the task row alone.
_EVENTS_AFTER_ROWS = (
    "CASE WHEN t.version > $2 THEN ARRAY(SELECT e.{column} FROM events e WHERE e.task_id = t.id "
    "AND e.version > GREATEST($2, t.snapshot_version) ORDER BY e.version) END"
)
_EVENTS_AFTER = (
    "SELECT version, snapshot_version, "
    "CASE WHEN t.version > $2 AND t.snapshot_version > $2 THEN snapshot END AS snapshot, "
    + ", ".join(
        f"{_EVENTS_AFTER_ROWS.format(column=column)} AS {alias}"
        for column, alias in (("version", "versions"), ("kind", "kinds"), ("body", "bodies"))
    )
    + " FROM tasks t WHERE t.id = $1"
)
# For a caller: only a row of tenant $3 and owner $4 is read (``tasks_by_scope`` serves it),
# so another caller's task comes back as no row, exactly as a missing one (docs/SECURITY.md).
_LOAD_SCOPED = _LOAD_COLUMNS + " WHERE t.tenant = $3 AND t.owner = $4 AND t.id = $1"
# Serialises writers of one task across processes; the reload follows as its own statement,
# which (READ COMMITTED) sees everything committed before the lock was granted.
_LOCK = "SELECT version FROM tasks WHERE id = $1 FOR UPDATE"
# The outbox rows of an append, as a CTE after ``moved``: one per pushed event (``e`` rows
# whose StreamResponse prefix is not null) and push config of the moved task. Parameters: the
# StreamResponse suffix, now (ms) twice.
_QUEUE_NOTIFICATIONS = (
    "queued AS (INSERT INTO push_outbox (id, task_id, config_id, seq, body, attempts, "
    "next_attempt_at, state, last_error, created_at) "
    f"SELECT {outbox_row_id_sql('moved.id', 'c.id', 'e.version::text')}, moved.id, c.id, "
    "e.version, e.prefix || e.body || ?::bytea, 0, ?, 'pending', '', ? "
    "FROM moved JOIN push_configs c ON c.task_id = moved.id, e WHERE e.prefix IS NOT NULL "
    "RETURNING 1)"
)
# The batch's events as rows ``e``: versions, kinds, bodies and StreamResponse prefixes.
_EVENT_ROWS = (
    "e AS (SELECT * FROM unnest(?::bigint[], ?::text[], ?::bytea[], ?::bytea[]) "
    "AS e(version, kind, body, prefix))"
)
# The compare-and-swap with its event and outbox rows (parameters: those of
# _sql.update_task, those of _EVENT_ROWS, those of _QUEUE_NOTIFICATIONS). Selects whether the
# swap happened (1 or 0) and how many outbox rows it queued.
_APPEND_EVENTS = _sql.numbered(
    f"WITH moved AS ({_sql.update_task(with_snapshot=False)} RETURNING id), {_EVENT_ROWS}, "
    "added AS (INSERT INTO events (task_id, version, kind, body) "
    "SELECT moved.id, e.version, e.kind, e.body FROM moved, e RETURNING 1), "
    f"{_QUEUE_NOTIFICATIONS} "
    "SELECT (SELECT count(*) FROM moved) AS moved, (SELECT count(*) FROM queued) AS queued"
)
# The compare-and-swap rewriting the snapshot, which absorbs the event rows up to it
# (parameters: those of _sql.update_task, the snapshot's version, then as _APPEND_EVENTS).
_APPEND_SNAPSHOT = _sql.numbered(
    f"WITH moved AS ({_sql.update_task(with_snapshot=True)} RETURNING id), "
    "absorbed AS (DELETE FROM events WHERE task_id IN (SELECT id FROM moved) AND version <= ?), "
    f"{_EVENT_ROWS}, {_QUEUE_NOTIFICATIONS} "
    "SELECT (SELECT count(*) FROM moved) AS moved, (SELECT count(*) FROM queued) AS queued"
)
# ``_APPEND_EVENTS`` and ``_APPEND_SNAPSHOT`` for several tasks in one statement (group commit:
# ``_swap_many``). $1-$6: per task, its id, the version its plan was validated at, the new
# version, state, status key and the new snapshot (NULL: the snapshot stays, the events go in
# as rows); $7-$11: per event, its task, version, kind, body and StreamResponse prefix; $12 the
# StreamResponse suffix; $13 now (ms). Selects the ids of the tasks that moved and how many
# outbox rows were queued. A task whose row is not at its base is left alone (no event rows).
_APPEND_MANY = (
    "WITH u AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], "
    "$5::text[], $6::bytea[]) AS u(id, base, version, state, status_key, snapshot)), "
    "moved AS (UPDATE tasks t SET version = u.version, state = u.state, "
    "status_key = u.status_key, snapshot = COALESCE(u.snapshot, t.snapshot), "
    "snapshot_version = CASE WHEN u.snapshot IS NULL THEN t.snapshot_version ELSE u.version END "
    "FROM u WHERE t.id = u.id AND t.version = u.base "
    "RETURNING t.id, u.version, u.snapshot IS NOT NULL AS rewrote), "
    "absorbed AS (DELETE FROM events d USING moved m "
    "WHERE m.rewrote AND d.task_id = m.id AND d.version <= m.version), "
    "e AS (SELECT * FROM unnest($7::text[], $8::bigint[], $9::text[], $10::bytea[], "
    "$11::bytea[]) AS e(task_id, version, kind, body, prefix)), "
    "added AS (INSERT INTO events (task_id, version, kind, body) "
    "SELECT m.id, e.version, e.kind, e.body FROM moved m JOIN e ON e.task_id = m.id "
    "WHERE NOT m.rewrote RETURNING 1), "
    "queued AS (INSERT INTO push_outbox (id, task_id, config_id, seq, body, attempts, "
    "next_attempt_at, state, last_error, created_at) "
    f"SELECT {outbox_row_id_sql('m.id', 'c.id', 'e.version::text')}, m.id, c.id, "
    "e.version, e.prefix || e.body || $12::bytea, 0, $13, 'pending', '', $13 "
    "FROM moved m JOIN push_configs c ON c.task_id = m.id JOIN e ON e.task_id = m.id "
    "WHERE e.prefix IS NOT NULL RETURNING 1) "
    "SELECT (SELECT array_agg(id) FROM moved) AS moved, (SELECT count(*) FROM queued) AS queued"
)
# Claim due rows: those _sql.SELECT_DUE_OUTBOX picks, skipping rows another replica is
# claiming right now. Parameters: now, limit, lease end.
_CLAIM_OUTBOX = _sql.numbered(
    f"WITH due AS ({_sql.SELECT_DUE_OUTBOX} FOR UPDATE OF o SKIP LOCKED), "
    "claimed AS (UPDATE push_outbox SET attempts = push_outbox.attempts + 1, "
    "next_attempt_at = ? FROM due WHERE push_outbox.id = due.id "
    "AND push_outbox.state = 'pending' "
    f"RETURNING {', '.join('push_outbox.' + c for c in _sql.OUTBOX_COLUMNS.split(', '))}, "
    "push_outbox.created_at) "
    f"SELECT {_sql.OUTBOX_COLUMNS} FROM claimed ORDER BY created_at, task_id, seq, config_id"
)
_MARK_OUTBOX_DELIVERED = _sql.numbered(_sql.MARK_OUTBOX_DELIVERED)
_MARK_OUTBOX_RETRY = _sql.numbered(_sql.MARK_OUTBOX_RETRY)
_MARK_OUTBOX_FAILED = _sql.numbered(_sql.MARK_OUTBOX_FAILED)
_RELEASE_OUTBOX_CLAIM = _sql.numbered(_sql.RELEASE_OUTBOX_CLAIM)
_SELECT_OUTBOX = _sql.numbered(_sql.SELECT_OUTBOX)
_DELETE_PENDING_OUTBOX = _sql.numbered(_sql.DELETE_PENDING_OUTBOX)
_INSERT_TASK = _sql.numbered(_sql.INSERT_TASK)
_SELECT_TASK_VERSION = _sql.numbered(_sql.SELECT_TASK_VERSION)
_TASK_EXISTS = _sql.numbered(_sql.TASK_EXISTS)
_SELECT_UNFINISHED = _sql.numbered(_sql.SELECT_UNFINISHED)
_UPSERT_PUSH_CONFIG = _sql.numbered(_sql.UPSERT_PUSH_CONFIG)
_SAVE_CALLER = _sql.numbered(_sql.SAVE_CALLER)
# ``save_caller`` for several messages in one statement (one per message id within the batch);
# the rows written say which tasks exist. Parameters: task ids, message ids, bodies.
_SAVE_CALLERS = (
    "INSERT INTO task_callers (task_id, message_id, body) "
    "SELECT c.task_id, c.message_id, c.body "
    "FROM unnest($1::text[], $2::text[], $3::bytea[]) AS c(task_id, message_id, body) "
    "WHERE EXISTS (SELECT 1 FROM tasks t WHERE t.id = c.task_id) "
    "ON CONFLICT (task_id, message_id) DO UPDATE SET body = excluded.body "
    "RETURNING task_id, message_id"
)
_SELECT_OWNER = _sql.numbered(_sql.SELECT_OWNER)
_SELECT_CALLERS = _sql.numbered(_sql.SELECT_CALLERS)
_GET_PUSH_CONFIG = _sql.numbered(_sql.GET_PUSH_CONFIG)
_GET_PUSH_TARGET = _sql.numbered(_sql.GET_PUSH_TARGET)
_LIST_PUSH_CONFIGS = _sql.numbered(_sql.LIST_PUSH_CONFIGS)
_DELETE_PUSH_CONFIG = _sql.numbered(_sql.DELETE_PUSH_CONFIG)
_DELETE_TERMINAL_BEFORE = tuple(_sql.numbered(s) for s in _sql.delete_terminal_before())
# ``create_once`` in one statement, so one transaction: the message id is claimed and, only if
# the claim was taken, the task row inserted. A concurrent claim of the same key (another
# replica) waits on the primary key until the first commits, then finds it live: no row.
# Parameters: those of _sql.CLAIM_MESSAGE_ID, then those of _sql.INSERT_TASK.
_CREATE_ONCE = _sql.numbered(
    f"WITH claimed AS ({_sql.CLAIM_MESSAGE_ID} RETURNING task_id), "
    "created AS (INSERT INTO tasks (id, tenant, owner, context_id, state, status_key, version, "
    "snapshot, snapshot_version) SELECT ?, ?, ?, ?, ?, ?, ?::bigint, ?::bytea, ?::bigint "
    "WHERE EXISTS (SELECT 1 FROM claimed) RETURNING 1) "
    "SELECT count(*) FROM created"
)
# ``_CREATE_ONCE`` for several tasks (group commit, ``_create_many``): $1-$5 the claims'
# tenant, owner, message id, task id and expiry, $6-$11 the rest of each task's row (after id,
# tenant and owner, in ``task_row``'s order), $12 now. No message id may appear twice (ON
# CONFLICT cannot update a row twice). Selects the ids of the tasks created.
_CREATE_MANY = (
    "WITH r AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], "
    "$5::bigint[], $6::text[], $7::text[], $8::text[], $9::bigint[], $10::bytea[], "
    "$11::bigint[]) AS r(tenant, owner, message_id, id, expires_at, context_id, state, "
    "status_key, version, snapshot, snapshot_version)), "
    "claimed AS (INSERT INTO message_ids (tenant, owner, message_id, task_id, expires_at) "
    "SELECT tenant, owner, message_id, id, expires_at FROM r "
    "ON CONFLICT (tenant, owner, message_id) DO UPDATE SET task_id = excluded.task_id, "
    "expires_at = excluded.expires_at WHERE message_ids.expires_at <= $12 RETURNING task_id), "
    "created AS (INSERT INTO tasks (id, tenant, owner, context_id, state, status_key, version, "
    "snapshot, snapshot_version) SELECT r.id, r.tenant, r.owner, r.context_id, r.state, "
    "r.status_key, r.version, r.snapshot, r.snapshot_version FROM r JOIN claimed c "
    "ON c.task_id = r.id RETURNING id) "
    "SELECT array_agg(id) FROM created"
)
_SELECT_MESSAGE_TASK = _sql.numbered(_sql.SELECT_MESSAGE_TASK)
_DELETE_ORPHAN_MESSAGE_ID = _sql.numbered(_sql.DELETE_ORPHAN_MESSAGE_ID)
_FORGET_MESSAGE_IDS = _sql.numbered(_sql.FORGET_MESSAGE_IDS)

# What a database failure looks like from asyncpg: a server error, a driver error, a socket.
_DB_ERRORS = (asyncpg.PostgresError, asyncpg.InterfaceError, OSError)
# The failures that say the database is away rather than that a statement was wrong: the
# socket (refused, reset), the connection classes of SQLSTATE 08 (but a protocol violation,
# ours), 53 (too many connections, out of disk or memory), 57 (shut down, starting up,
# canceled by an operator or statement_timeout), and a standby taking writes mid-fail-over.
_OUTAGES: tuple[type[BaseException], ...] = (
    OSError,
    asyncpg.PostgresConnectionError,
    asyncpg.InsufficientResourcesError,
    asyncpg.OperatorInterventionError,
    asyncpg.ReadOnlySQLTransactionError,
)


class _Entry:
    """A task as this process last saw it committed, and who it belongs to."""

    __slots__ = ("owner", "record", "snapshot_version", "tenant")

    def __init__(self, record: TaskRecord, tenant: str, owner: str, snapshot_version: int) -> None:
        self.record = record
        self.tenant = tenant
        self.owner = owner
        self.snapshot_version = snapshot_version


_Create = tuple[tuple[Any, ...], tuple[Any, ...]]
"""``create_once``'s claim (tenant, owner, message id, task id, expiry, now) and task row."""
_Swap = tuple[_Entry, AppendPlan, tuple[Event, ...]]
"""An append ready to write: the entry its plan was validated against, the plan, the events."""

# How long readiness's ``SELECT 1`` may take (readiness bounds its wait on its own as well).
_HEALTH_TIMEOUT_S = 5.0


class PostgresTaskStore(TaskStore):
    """Tasks, their events and push configs in PostgreSQL, shared by many processes.

    ``dsn`` is a libpq-style URL (``postgresql://user@host:5432/db``). ``migrate=False`` makes
    ``open()`` refuse a schema that is behind instead of upgrading it (for deployments that
    run ``peerwire db upgrade`` as a step of their own).
    """

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = "peerwire",
        min_size: int = 1,
        max_size: int = 10,
        acquire_timeout: float = 10.0,
        command_timeout: float = 30.0,
        snapshot_every: int = 64,
        cache_size: int = 1024,
        retain_finished: timedelta | None = None,
        migrate: bool = True,
    ) -> None:
        if not 0 <= min_size <= max_size or max_size < 1:
            raise ValueError(f"need 0 <= min_size <= max_size, 1 <= max_size; got {min_size}")
        if acquire_timeout <= 0 or command_timeout <= 0:
            raise ValueError("acquire_timeout and command_timeout must be positive")
        if snapshot_every < 1 or cache_size < 0:
            raise ValueError("snapshot_every must be >= 1 and cache_size >= 0")
        if retain_finished is not None and retain_finished <= timedelta(0):
            raise ValueError(f"retain_finished must be positive, got {retain_finished}")
        self.dsn = dsn
        self.schema = check_schema_name(schema)
        self.min_size = min_size
        self.max_size = max_size
        self.acquire_timeout = acquire_timeout
        self.command_timeout = command_timeout
        self.snapshot_every = snapshot_every
        self.cache_size = cache_size
        self.retain_finished = retain_finished
        self.migrate = migrate
        self._pool: Any = None
        self._cache: OrderedDict[str, _Entry] = OrderedDict()
        self._writing: weakref.WeakValueDictionary[str, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )
        self._next_sweep = 0.0
        self._outbox_listener: Callable[[], None] | None = None
        # Group commit: the appends of one turn of the loop (to different tasks) go in one
        # statement, one commit (``_swap_many``).
        self._appends: Coalescer[_Swap, bool] = Coalescer(self._swap_many)
        self._creates: Coalescer[_Create, bool] = Coalescer(self._create_many)
        # The callers recorded in one turn (each authenticated send records one).
        self._callers: Coalescer[tuple[str, str, bytes], bool] = Coalescer(self._save_callers)
        # Appends whose callers may have stopped waiting (``append``'s ``on_durable``).
        self._writes: set[asyncio.Future[int]] = set()
        # ``check_health``'s connection of its own (not the pool's), and one check at a time.
        self._health_connection: Any = None
        self._health_lock = asyncio.Lock()

    @classmethod
    def from_url(cls, url: str, **options: Any) -> PostgresTaskStore:
        """A store from ``postgresql://...[?schema=NAME]`` (``schema`` is peerwire's option;
        ``postgres://`` works too)."""
        dsn, schema = pop_url_option(url, "schema")
        if schema is not None:
            options["schema"] = schema
        return cls(dsn, **options)

    # -- lifetime ---------------------------------------------------------------------------

    async def open(self) -> None:
        """Connect the pool and bring the schema up to date (or check it: ``migrate=False``)."""
        if self._pool is not None:
            return
        try:
            pool = await asyncpg.create_pool(
                self.dsn,
                min_size=self.min_size,
                max_size=self.max_size,
                command_timeout=self.command_timeout,
                server_settings=self._settings(),
                reset=_keep_session,
            )
        except (*_DB_ERRORS, TimeoutError) as exc:
            raise OSError(f"cannot open the PostgreSQL task store: {exc}") from exc
        try:
            async with pool.acquire(timeout=self.acquire_timeout) as connection:
                if self.migrate:
                    await migrate(connection, self.schema)
                else:
                    check_current(await schema_version(connection, self.schema), self.schema)
        except _DB_ERRORS as exc:
            await _close_pool(pool)
            raise OSError(f"cannot prepare the PostgreSQL schema {self.schema!r}: {exc}") from exc
        except BaseException:
            await _close_pool(pool)
            raise
        self._pool = pool
        await self._sweep_if_due()

    async def check_health(self) -> None:
        """``TaskStore.check_health``: ``SELECT 1`` on the store's health connection, one
        of its own beside the pool, opened on the first check and again after a failure: a
        probe never waits for (or takes) a connection the requests need, so a busy pool is
        not an outage."""
        if self._pool is None:
            raise RuntimeError("the PostgreSQL task store is not open (call open() first)")
        async with self._health_lock:
            connection = self._health_connection
            if connection is None or connection.is_closed():
                connection = await asyncpg.connect(
                    self.dsn, server_settings=self._settings(), timeout=_HEALTH_TIMEOUT_S
                )
                self._health_connection = connection
            try:
                await connection.fetchval("SELECT 1", timeout=_HEALTH_TIMEOUT_S)
            except BaseException:
                self._health_connection = None
                connection.terminate()  # broken or cut short: the next check connects anew
                raise

    async def upgrade(self) -> tuple[int, int]:
        """Apply the migrations the schema lacks; ``(version found, version now)``.

        Needs no ``open()``: it uses a connection of its own (``peerwire db upgrade``).
        """
        try:
            connection = await asyncpg.connect(self.dsn, server_settings=self._settings())
            try:
                found = await migrate(connection, self.schema)
            finally:
                await connection.close()
        except (*_DB_ERRORS, TimeoutError) as exc:
            raise OSError(f"cannot upgrade the PostgreSQL schema {self.schema!r}: {exc}") from exc
        return found, _sql.SCHEMA_VERSION

    def _settings(self) -> dict[str, str]:
        return {"search_path": self.schema, "application_name": "peerwire"}

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        health, self._health_connection = self._health_connection, None
        if health is not None:
            health.terminate()  # only ever runs SELECT 1: nothing to finish
        self._cache.clear()
        if pool is not None:
            await _close_pool(pool)

    @property
    def cached_tasks(self) -> int:
        """How many task records this process holds (at most ``cache_size``)."""
        return len(self._cache)

    # -- tasks ------------------------------------------------------------------------------

    async def create(self, record: TaskRecord, *, tenant: str, owner: str) -> None:
        await self._sweep_if_due()
        row = task_row(record, tenant, owner)
        async with self._connection() as connection:
            inserted = await connection.execute(_INSERT_TASK, *row)
            if _row_count(inserted) == 0:
                actual = await connection.fetchval(_SELECT_TASK_VERSION, record.id)
                raise VersionConflictError(
                    record.id, expected=0, actual=None if actual is None else int(actual)
                )
        self._remember(_Entry(record, tenant, owner, record.version))

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
        await self._sweep_if_due()
        claim = (tenant, owner, message_id, record.id, to_ms(expires_at), to_ms(now))
        row = task_row(record, tenant, owner)
        # First with the other creates of this turn of the loop (one statement, one commit);
        # a claim that did not go through there (a repeated message, a taken task id) is
        # looked into alone below.
        if await self._creates.submit((claim, row)):
            self._remember(_Entry(record, tenant, owner, record.version))
            return record.id
        for _ in range(_ATTEMPTS):
            async with self._connection() as connection:
                try:
                    created = await connection.fetchval(_CREATE_ONCE, *claim, *row)
                except asyncpg.UniqueViolationError:
                    # The claim was ours but the task id is taken: the statement undid both.
                    actual = await connection.fetchval(_SELECT_TASK_VERSION, record.id)
                    raise VersionConflictError(
                        record.id, expected=0, actual=None if actual is None else int(actual)
                    ) from None
                if created:
                    self._remember(_Entry(record, tenant, owner, record.version))
                    return record.id
                holder = await connection.fetchval(_SELECT_MESSAGE_TASK, tenant, owner, message_id)
                # A statement of its own: it sees the holder's task even if that committed
                # after the claim statement began (READ COMMITTED).
                if holder is not None and await connection.fetchval(_TASK_EXISTS, holder):
                    return str(holder)
                if holder is not None:
                    # Retention removed its task: the claim goes, and this one is tried again.
                    await connection.execute(
                        _DELETE_ORPHAN_MESSAGE_ID, tenant, owner, message_id, holder
                    )
            # Its holder was swept or removed meanwhile: claim the message id afresh.
        raise VersionConflictError(record.id, expected=0, actual=None)

    async def _create_many(self, creates: list[_Create]) -> list[bool]:
        """``create_once``'s claim and insert for several tasks in one statement: for each,
        whether its task was created. One whose message id another of the batch claims too
        is left out (and looked into alone); a task id already taken fails the statement,
        and then every one of them is looked into alone."""
        keys: set[tuple[str, str, str]] = set()
        batch: list[_Create] = []
        for claim, row in creates:
            key = (claim[0], claim[1], claim[2])
            if key not in keys:
                keys.add(key)
                batch.append((claim, row))
        async with self._connection() as connection:
            try:
                if len(batch) == 1:
                    ((claim, row),) = batch
                    done = await connection.fetchval(_CREATE_ONCE, *claim, *row)
                    created = {row[0]} if done else set()
                else:
                    rows = (claim[:5] + row[3:] for claim, row in batch)
                    columns = [list(column) for column in zip(*rows, strict=True)]
                    # A claim expired at the earliest of their clocks is expired (they differ
                    # by the moments between the calls).
                    now = min(claim[5] for claim, _ in batch)
                    created = set(await connection.fetchval(_CREATE_MANY, *columns, now) or ())
            except asyncpg.UniqueViolationError:
                return [False] * len(creates)
        return [row[0] in created for _, row in creates]

    async def forget_message_ids(self, before: float, *, limit: int) -> int:
        async with self._connection() as connection:
            status = await connection.execute(_FORGET_MESSAGE_IDS, to_ms(before), limit)
        return _row_count(status)

    async def load(
        self, task_id: str, *, tenant: str, owner: str | None = None
    ) -> TaskRecord | None:
        cached = self._cache.get(task_id)
        async with self._connection() as connection:
            entry = await self._read(connection, task_id, cached, tenant, owner)
        return None if entry is None else entry.record

    def remember_created(self, record: TaskRecord, *, tenant: str, owner: str) -> None:
        """``TaskStore.remember_created``: cached as if just read (the append's swap checks
        the row is still at its version; when it is not, the locked path reads it)."""
        self._remember(_Entry(record, tenant, owner, record.version))

    async def load_many(self, tasks: Sequence[tuple[str, str]]) -> list[TaskRecord | None]:
        """``TaskStore.load_many`` in one statement (one round trip, one MVCC snapshot)."""
        if len(tasks) == 1:
            task_id, tenant = tasks[0]
            return [await self.load(task_id, tenant=tenant)]
        ids = [task_id for task_id, _ in tasks]
        cached = {task_id: self._cache.get(task_id) for task_id in ids}
        known = [-1 if entry is None else entry.record.version for entry in cached.values()]
        async with self._connection() as connection:
            rows = await connection.fetch(_LOAD_MANY, list(cached), known)
        found = {row["id"]: row for row in rows}
        records: list[TaskRecord | None] = []
        for task_id, tenant in tasks:
            row = found.get(task_id)
            if row is None or row["tenant"] != tenant:
                if row is None:
                    self._cache.pop(task_id, None)
                records.append(None)
                continue
            records.append(self._entry_of(row, cached[task_id]).record)
        return records

    async def append(
        self,
        task_id: str,
        events: Sequence[Event],
        *,
        expected_version: int | None = None,
        on_durable: Callable[[int], None] | None = None,
    ) -> int:
        if on_durable is None or not events:
            return await self._append(task_id, events, expected_version)
        # The write goes on in a Task of its own even if this caller is cancelled meanwhile,
        # and its commit is heard through the hook (registered before ``shield``'s own
        # callback, so it runs before this returns).
        write = asyncio.ensure_future(self._append(task_id, events, expected_version))
        self._writes.add(write)

        def done(write: asyncio.Future[int]) -> None:
            self._writes.discard(write)
            if not write.cancelled() and write.exception() is None:
                on_durable(write.result())

        write.add_done_callback(done)
        return await asyncio.shield(write)

    async def _append(
        self, task_id: str, events: Sequence[Event], expected_version: int | None
    ) -> int:
        batch = tuple(events)
        if not batch:
            return await self._current_version(task_id, expected_version)
        lock = self._writing.get(task_id)
        if lock is None:
            lock = self._writing[task_id] = asyncio.Lock()
        async with lock:
            try:
                cached = self._cache.get(task_id)
                if cached is not None and expected_version in (None, cached.record.version):
                    plan = self._plan_or_none(cached, batch)
                    if plan is not None and await self._appends.submit((cached, plan, batch)):
                        return plan.version
                return await self._append_locked(task_id, batch, expected_version)
            except BaseException as exc:
                if not isinstance(exc, IllegalTransitionError | VersionConflictError):
                    # Cancelled or failed mid-write: the commit may or may not have happened.
                    self._cache.pop(task_id, None)
                raise

    def _plan_or_none(self, entry: _Entry, batch: tuple[Event, ...]) -> AppendPlan | None:
        try:
            return self._plan(entry, batch)
        except IllegalTransitionError:
            return None  # the cache may be behind: the locked path decides against the row

    def _plan(self, entry: _Entry, batch: tuple[Event, ...]) -> AppendPlan:
        return plan_append(
            entry.record,
            batch,
            snapshot_version=entry.snapshot_version,
            snapshot_every=self.snapshot_every,
        )

    async def _swap(
        self, entry: _Entry, plan: AppendPlan, batch: tuple[Event, ...], connection: Any = None
    ) -> bool:
        """Write ``plan`` if the row is still at ``plan.base``; keep the cache in step."""
        # The events as rows: written as event rows (unless the snapshot absorbs them) and, for
        # a task with push configs, as outbox rows.
        rows = plan.rows or [
            (version, *event_body(event)) for version, event in enumerate(batch, plan.base + 1)
        ]
        now = to_ms(time.time())
        event_rows = (
            [version for version, _, _ in rows],
            [kind for _, kind, _ in rows],
            [body for _, _, body in rows],
            [push_prefix(kind) for _, kind, _ in rows],
            PUSH_SUFFIX,
            now,
            now,
        )
        if plan.snapshot is not None:
            statement = _APPEND_SNAPSHOT
            params: tuple[object, ...] = (
                plan.version,
                plan.state,
                plan.status_key,
                plan.snapshot,
                plan.version,
                entry.record.id,
                plan.base,
                plan.version,
                *event_rows,
            )
        else:
            statement = _APPEND_EVENTS
            params = (
                plan.version,
                plan.state,
                plan.status_key,
                entry.record.id,
                plan.base,
                *event_rows,
            )
        if connection is not None:
            outcome = await connection.fetchrow(statement, *params)
        else:
            async with self._connection() as own:
                outcome = await own.fetchrow(statement, *params)
        if not outcome["moved"]:
            self._cache.pop(entry.record.id, None)
            return False
        self._applied(entry, plan, batch)
        if outcome["queued"] and self._outbox_listener is not None:
            self._outbox_listener()
        return True

    async def _swap_many(self, swaps: list[_Swap]) -> list[bool]:
        """``_swap`` of several tasks' appends in one statement (one round trip, one commit):
        for each, whether the row was still at its plan's base and moved (the others are
        left as they were, for ``_append_locked``)."""
        if len(swaps) == 1:
            return [await self._swap(*swaps[0])]
        tasks: tuple[list[Any], ...] = ([], [], [], [], [], [])
        events: tuple[list[Any], ...] = ([], [], [], [], [])
        for entry, plan, batch in swaps:
            task_id = entry.record.id
            for column, value in zip(
                tasks,
                (task_id, plan.base, plan.version, plan.state, plan.status_key, plan.snapshot),
                strict=True,
            ):
                column.append(value)
            for version, kind, body in plan.rows or [
                (version, *event_body(event)) for version, event in enumerate(batch, plan.base + 1)
            ]:
                for column, value in zip(
                    events, (task_id, version, kind, body, push_prefix(kind)), strict=True
                ):
                    column.append(value)
        async with self._connection() as connection:
            outcome = await connection.fetchrow(
                _APPEND_MANY, *tasks, *events, PUSH_SUFFIX, to_ms(time.time())
            )
        moved = set(outcome["moved"] or ())
        for entry, plan, batch in swaps:
            if entry.record.id in moved:
                self._applied(entry, plan, batch)
            else:
                self._cache.pop(entry.record.id, None)
        if outcome["queued"] and self._outbox_listener is not None:
            self._outbox_listener()
        return [entry.record.id in moved for entry, _, _ in swaps]

    async def _append_locked(
        self, task_id: str, batch: tuple[Event, ...], expected_version: int | None
    ) -> int:
        """The append with the task row locked: reload what another process wrote, then write."""
        async with self._connection() as connection, connection.transaction():
            actual = await connection.fetchval(_LOCK, task_id)
            if actual is None:
                raise _not_found(task_id)
            if expected_version is not None and expected_version != actual:
                raise VersionConflictError(task_id, expected=expected_version, actual=int(actual))
            entry = await self._read(connection, task_id, self._cache.get(task_id))
            if entry is None:  # deleted between the two statements: only retention does that
                raise _not_found(task_id)
            plan = self._plan(entry, batch)
            if not await self._swap(entry, plan, batch, connection):
                raise InternalError(f"task {task_id} changed while its row was locked")
            return plan.version

    async def _current_version(self, task_id: str, expected_version: int | None) -> int:
        async with self._connection() as connection:
            actual = await connection.fetchval(_SELECT_TASK_VERSION, task_id)
        if actual is None:
            raise _not_found(task_id)
        if expected_version is not None and expected_version != actual:
            raise VersionConflictError(task_id, expected=expected_version, actual=int(actual))
        return int(actual)

    async def _read(
        self,
        connection: Any,
        task_id: str,
        cached: _Entry | None,
        tenant: str | None = None,
        owner: str | None = None,
    ) -> _Entry | None:
        """The task's entry as committed: ``cached`` if the row is at its version, else read;
        ``None`` if there is no such task or it is not ``tenant``'s and ``owner``'s."""
        known = -1 if cached is None else cached.record.version
        if owner is not None:
            row = await connection.fetchrow(_LOAD_SCOPED, task_id, known, tenant, owner)
            if row is None:
                return None  # missing, or only hidden: the cache stays as it is
        else:  # internal reads, which no caller times
            row = await connection.fetchrow(_LOAD, task_id, known)
            if row is None:
                self._cache.pop(task_id, None)
                return None
            if tenant is not None and row["tenant"] != tenant:
                return None
        return self._entry_of(row, cached)

    def _entry_of(self, row: Any, cached: _Entry | None) -> _Entry:
        """The entry a load's row stands for: ``cached`` when the row is at its version (no
        snapshot came back), else one built from the row's snapshot and events."""
        if row["snapshot"] is None:
            assert cached is not None  # the row is at the cached version
            self._touch(cached.record.id, cached)
            return cached
        record = record_from_rows(
            row["snapshot"], row["snapshot_version"], zip(row["kinds"], row["bodies"], strict=True)
        )
        entry = _Entry(record, row["tenant"], row["owner"], row["snapshot_version"])
        self._remember(entry)
        return entry

    async def list_tasks(
        self, query: ListQuery, *, tenant: str, owner: str | None
    ) -> tuple[list[Task], str, int]:
        statements = _sql.list_tasks(query, tenant=tenant, owner=owner)
        async with (
            self._connection() as connection,
            connection.transaction(isolation="repeatable_read", readonly=True),
        ):
            total = await connection.fetchval(
                _sql.numbered(statements.count_sql), *statements.count_params
            )
            page = await connection.fetch(
                _sql.numbered(statements.page_sql), *statements.page_params
            )
            more = len(page) > query.page_size
            page = page[: query.page_size]
            records = self._cached_records(page)
            tails = await _event_tails(connection, [r for r in page if r["id"] not in records])
        tasks = []
        for row in page:
            record = records.get(row["id"])
            if record is None:
                tail = tails.get(row["id"], [])
                record = record_from_rows(row["snapshot"], row["snapshot_version"], tail)
            tasks.append(
                record.snapshot(
                    history_length=query.history_length,
                    include_artifacts=query.include_artifacts,
                )
            )
        token = ""
        if more and tasks:
            last = tasks[-1]
            token = encode_page_token(sort_key(last.status.timestamp), last.id)
        return tasks, token, int(total)

    def _cached_records(self, page: list[Any]) -> dict[str, TaskRecord]:
        """The page's tasks this process holds at the version the page read."""
        records = {}
        for row in page:
            entry = self._cache.get(row["id"])
            if entry is not None and entry.record.version == row["version"]:
                records[row["id"]] = entry.record
        return records

    async def events_after(self, task_id: str, version: int) -> EventsAfter | None:
        async with self._connection() as connection:
            row = await connection.fetchrow(_EVENTS_AFTER, task_id, version)
        if row is None:
            return None
        rows = zip(row["versions"] or (), row["kinds"] or (), row["bodies"] or (), strict=True)
        return events_after_rows(
            version, row["version"], row["snapshot_version"], row["snapshot"], rows
        )

    async def unfinished(self) -> list[StoredTaskInfo]:
        async with self._connection() as connection:
            rows = await connection.fetch(_SELECT_UNFINISHED)
        return [
            StoredTaskInfo(task_id, context_id, tenant, owner, TaskState(state))
            for task_id, context_id, tenant, owner, state in rows
        ]

    async def delete_terminal_before(self, status_key: str) -> int:
        deleted = await self._delete_terminal_before(status_key, unless_busy=False)
        return 0 if deleted is None else deleted

    async def _delete_terminal_before(self, cutoff: str, *, unless_busy: bool) -> int | None:
        """Delete, in one transaction; ``None`` if ``unless_busy`` and another process is."""
        async with self._connection() as connection, connection.transaction():
            if unless_busy and not await connection.fetchval(
                "SELECT pg_try_advisory_xact_lock($1)", _sweep_lock_key(self.schema)
            ):
                return None
            status = "DELETE 0"
            for statement in _DELETE_TERMINAL_BEFORE:
                status = await connection.execute(statement, cutoff)
        for task_id, entry in list(self._cache.items()):
            if entry.record.terminal and sort_key(entry.record.status.timestamp) < cutoff:
                del self._cache[task_id]
        return _row_count(status)  # the last statement removes the task rows

    async def _sweep_if_due(self) -> None:
        if self.retain_finished is None or self._pool is None:
            return
        now = time.monotonic()
        if now < self._next_sweep:
            return
        self._next_sweep = now + _SWEEP_INTERVAL_S
        await self._delete_terminal_before(retention_cutoff(self.retain_finished), unless_busy=True)

    # -- push configs -----------------------------------------------------------------------

    async def owner_of(self, task_id: str, *, tenant: str) -> str | None:
        async with self._connection() as connection:
            owner = await connection.fetchval(_SELECT_OWNER, task_id, tenant)
        return None if owner is None else str(owner)

    async def save_caller(self, task_id: str, message_id: str, caller: bytes) -> None:
        if not await self._callers.submit((task_id, message_id, caller)):
            raise _not_found(task_id)

    async def _save_callers(self, items: list[tuple[str, str, bytes]]) -> list[bool]:
        """``save_caller`` of one turn's items, in one statement; for each, whether its task
        exists. The same message twice in a batch: the later record is kept."""
        latest = {(task_id, message_id): body for task_id, message_id, body in items}
        async with self._connection() as connection:
            if len(latest) == 1:
                ((task_id, message_id), body), *_ = latest.items()
                status = await connection.execute(_SAVE_CALLER, task_id, message_id, body, task_id)
                saved = set() if status.endswith(" 0") else {(task_id, message_id)}
            else:
                keys = list(latest)
                rows = await connection.fetch(
                    _SAVE_CALLERS,
                    [task_id for task_id, _ in keys],
                    [message_id for _, message_id in keys],
                    list(latest.values()),
                )
                saved = {(row[0], row[1]) for row in rows}
        return [(task_id, message_id) in saved for task_id, message_id, _ in items]

    async def load_callers(self, task_id: str) -> dict[str, bytes]:
        async with self._connection() as connection:
            rows = await connection.fetch(_SELECT_CALLERS, task_id)
        return {row[0]: bytes(row[1]) for row in rows}

    async def save_push_config(
        self, config: TaskPushNotificationConfig, *, protocol_version: str = PROTOCOL_VERSION
    ) -> None:
        async with self._connection() as connection, connection.transaction():
            if await connection.fetchval(_TASK_EXISTS, config.task_id) is None:
                raise _not_found(config.task_id)
            await connection.execute(
                _UPSERT_PUSH_CONFIG,
                config.task_id,
                config.id,
                config.task_id,
                encode_push_config(config),
                protocol_version,
            )

    async def get_push_config(
        self, task_id: str, config_id: str
    ) -> TaskPushNotificationConfig | None:
        async with self._connection() as connection:
            body = await connection.fetchval(_GET_PUSH_CONFIG, task_id, config_id)
        return None if body is None else decode_push_config(body)

    async def get_push_target(self, task_id: str, config_id: str) -> PushTarget | None:
        async with self._connection() as connection:
            row = await connection.fetchrow(_GET_PUSH_TARGET, task_id, config_id)
        return None if row is None else PushTarget(decode_push_config(row[0]), row[1], row[2])

    async def list_push_configs(self, task_id: str) -> list[TaskPushNotificationConfig]:
        async with self._connection() as connection:
            rows = await connection.fetch(_LIST_PUSH_CONFIGS, task_id)
        return [decode_push_config(row[0]) for row in rows]

    async def delete_push_config(self, task_id: str, config_id: str) -> None:
        async with self._connection() as connection, connection.transaction():
            await connection.execute(_DELETE_PUSH_CONFIG, task_id, config_id)
            await connection.execute(_DELETE_PENDING_OUTBOX, task_id, config_id)

    # -- the push outbox --------------------------------------------------------------------

    def on_outbox(self, listener: Callable[[], None] | None) -> None:
        self._outbox_listener = listener

    async def claim_due(self, now: float, *, limit: int, lease: float) -> list[OutboxRow]:
        async with self._connection() as connection:
            rows = await connection.fetch(_CLAIM_OUTBOX, to_ms(now), limit, to_ms(now + lease))
        return [decode_outbox_row(row) for row in rows]

    async def mark_delivered(self, row_id: str) -> None:
        async with self._connection() as connection:
            await connection.execute(_MARK_OUTBOX_DELIVERED, b"", row_id)

    async def mark_retry(self, row_id: str, next_attempt_at: float, error: str) -> None:
        async with self._connection() as connection:
            await connection.execute(_MARK_OUTBOX_RETRY, to_ms(next_attempt_at), error, row_id)

    async def release_claim(self, row_id: str, next_attempt_at: float) -> None:
        async with self._connection() as connection:
            await connection.execute(_RELEASE_OUTBOX_CLAIM, to_ms(next_attempt_at), row_id)

    async def mark_failed(self, row_id: str, error: str) -> None:
        async with self._connection() as connection:
            await connection.execute(_MARK_OUTBOX_FAILED, error, row_id)

    async def outbox(self, task_id: str) -> list[OutboxRow]:
        async with self._connection() as connection:
            rows = await connection.fetch(_SELECT_OUTBOX, task_id)
        return [decode_outbox_row(row) for row in rows]

    async def count_waiting(self) -> dict[TaskState, int] | None:
        async with self._connection() as connection:
            rows = await connection.fetch(_sql.COUNT_WAITING)
        return {TaskState(state): int(count) for state, count in rows}

    async def outbox_backlog(self) -> tuple[int, float | None] | None:
        async with self._connection() as connection:
            row = await connection.fetchrow(_sql.OUTBOX_BACKLOG)
        count, oldest = (0, None) if row is None else (row[0], row[1])
        return int(count), None if oldest is None else from_ms(oldest)

    # -- the cache --------------------------------------------------------------------------

    def _applied(self, entry: _Entry, plan: AppendPlan, batch: tuple[Event, ...]) -> None:
        """``plan`` (of ``batch``) has committed: bring ``entry`` to its version."""
        if plan.after is not None:
            entry.record = plan.after
        else:
            # One event, checked by plan_append, folded in place: no copy of the task per event.
            entry.record.apply(batch[0])
        if plan.snapshot is not None:
            entry.snapshot_version = plan.version
        self._remember(entry)

    def _remember(self, entry: _Entry) -> None:
        """Cache ``entry`` unless a newer record of its task is cached already."""
        if self.cache_size == 0:
            return
        task_id = entry.record.id
        current = self._cache.get(task_id)
        if current is not None and current.record.version > entry.record.version:
            return
        self._cache[task_id] = entry
        self._cache.move_to_end(task_id)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    def _touch(self, task_id: str, entry: _Entry) -> None:
        if self._cache.get(task_id) is entry:
            self._cache.move_to_end(task_id)

    # -- plumbing ---------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[Any]:
        """A pooled connection; database failures become the protocol's typed errors."""
        pool = self._pool
        if pool is None:
            raise RuntimeError("the PostgreSQL task store is not open (call open() first)")
        try:
            connection = await pool.acquire(timeout=self.acquire_timeout)
        except TimeoutError as exc:
            # Every connection busy (or each new one not connecting) for the whole wait.
            raise store_unavailable(
                exc, f"all {self.max_size} connections stayed busy for {self.acquire_timeout:g} s"
            ) from exc
        except _DB_ERRORS as exc:
            raise _failure(exc) from exc
        try:
            yield connection
        except TimeoutError as exc:  # asyncpg's command_timeout
            raise store_unavailable(
                exc, f"no answer within the command timeout of {self.command_timeout:g} s"
            ) from exc
        except _DB_ERRORS as exc:
            raise _failure(exc) from exc
        finally:
            await pool.release(connection)


async def _event_tails(connection: Any, rows: list[Any]) -> dict[str, list[tuple[str, bytes]]]:
    """The events after each task's snapshot, for those of ``rows`` (tasks) that have any."""
    after = {
        row["id"]: row["snapshot_version"]
        for row in rows
        if row["version"] > row["snapshot_version"]
    }
    tails: dict[str, list[tuple[str, bytes]]] = {}
    if not after:
        return tails
    ids = list(after)
    for task_id, version, kind, body in await connection.fetch(
        _sql.numbered(_sql.select_events_of(len(ids))), *ids
    ):
        if version > after[task_id]:
            tails.setdefault(task_id, []).append((kind, body))
    return tails


def _sweep_lock_key(schema: str) -> int:
    digest = hashlib.blake2b(f"peerwire:sweep:{schema}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _row_count(status: str) -> int:
    """The row count of a command status such as ``INSERT 0 1`` or ``DELETE 3``."""
    return int(status.rsplit(" ", 1)[-1])


async def _keep_session(connection: Any) -> None:
    """The pool's reset of a released connection: nothing to undo.

    asyncpg's default reset is a round trip per release (``RESET ALL``, ``UNLISTEN *``,
    advisory locks), as many as the statements themselves. This store leaves no session state
    behind: its settings are the connection's own (``server_settings``), its advisory locks
    and ``SET LOCAL`` are transaction-scoped, it never listens, and an unfinished transaction
    is still rolled back by the pool before this is called.
    """


async def _close_pool(pool: Any) -> None:
    try:
        await asyncio.wait_for(pool.close(), timeout=10.0)
    except (TimeoutError, *_DB_ERRORS):
        pool.terminate()


def _not_found(task_id: str) -> TaskNotFoundError:
    return TaskNotFoundError(f"Task {task_id} was not found", metadata={"taskId": task_id})


def _failure(exc: BaseException) -> InternalError:
    """A database failure as the caller's error: an outage is temporary and says so (the
    driver's text goes to the log); anything else is a fault of this store's own."""
    if isinstance(exc, _OUTAGES) and not isinstance(exc, asyncpg.ProtocolViolationError):
        return store_unavailable(exc)
    return store_failed(exc)
