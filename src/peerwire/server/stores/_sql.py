"""The SQL of the relational task stores: schema, migrations and the ListTasks query.

Written once for SQLite and PostgreSQL: statements use ``?`` placeholders (``numbered`` turns
them into ``$1, $2, ...`` for asyncpg) and the DDL names its dialect-specific column types as
``{blob}``, ``{bigint}`` and ``{sorted_text}``. Row values (``(a, b) < (?, ?)``), ``ON
CONFLICT`` and ``DESC`` index columns mean the same in both. Ordering compares ``status_key``
and ``id`` as plain code-point strings (SQLite's BINARY collation); PostgreSQL declares those
two columns ``{sorted_text}`` = ``TEXT COLLATE "C"`` to sort the same way.

Shape (one row per task, events since its last snapshot, push configs by task, the push
outbox)::

    tasks(id PK, tenant, owner, context_id, state, status_key, version,
          snapshot, snapshot_version)
    events(task_id, version, kind, body)          PK (task_id, version)
    push_configs(task_id, id, seq, body, protocol_version)
                                                  PK (task_id, id) (protocol_version: 6)
    push_outbox(id PK, task_id, config_id, seq, body, attempts, next_attempt_at, state,
                last_error, created_at)           (schema version 2)
    message_ids(tenant, owner, message_id, task_id, expires_at)
                                                  PK (tenant, owner, message_id) (version 4,
                                                  indexed by task_id from version 5)
    task_callers(task_id, message_id, body)       PK (task_id, message_id) (version 7)
    schema_version(version)

``snapshot`` is the ProtoJSON ``Task`` folded up to ``snapshot_version``; the task is that
snapshot plus its ``events`` rows above that version. ``status_key`` is
``protocol.sort_key(status.timestamp)``, the order ListTasks uses. An outbox row is one
notification (a pushed event for one config): ``seq`` is the event's version, ``body`` the
ProtoJSON ``StreamResponse``, times are integer milliseconds since the epoch (``_rows.to_ms``)
and ``state`` is ``pending``, ``delivered`` or ``failed``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...protocol import INTERRUPTED, TERMINAL, ListQuery

__all__ = [
    "CLAIM_MESSAGE_ID",
    "CLAIM_MESSAGE_ID_OR_ORPHAN",
    "CLAIM_OUTBOX",
    "COUNT_WAITING",
    "DELETE_EVENTS",
    "DELETE_ORPHAN_MESSAGE_ID",
    "DELETE_PENDING_OUTBOX",
    "DELETE_PUSH_CONFIG",
    "FORGET_MESSAGE_IDS",
    "GET_PUSH_CONFIG",
    "GET_PUSH_TARGET",
    "INSERT_EVENT",
    "INSERT_OUTBOX",
    "INSERT_TASK",
    "LIST_PUSH_CONFIGS",
    "MARK_OUTBOX_DELIVERED",
    "MARK_OUTBOX_FAILED",
    "MARK_OUTBOX_RETRY",
    "MIGRATIONS",
    "OUTBOX_COLUMNS",
    "SAVE_CALLER",
    "SCHEMA_VERSION",
    "SELECT_CALLERS",
    "SELECT_DUE_OUTBOX",
    "SELECT_EVENTS",
    "SELECT_EVENTS_AFTER",
    "SELECT_MESSAGE_TASK",
    "SELECT_OUTBOX",
    "SELECT_OUTBOX_ROW",
    "SELECT_OWNER",
    "SELECT_PUSH_CONFIG_IDS",
    "SELECT_TAIL",
    "SELECT_TASK",
    "SELECT_TASK_VERSION",
    "SELECT_UNFINISHED",
    "SELECT_VISIBLE_TASK",
    "TASK_EXISTS",
    "UPSERT_PUSH_CONFIG",
    "ListStatements",
    "ddl",
    "delete_terminal_before",
    "list_tasks",
    "numbered",
    "select_events_of",
    "update_task",
]

# One tuple of statements per schema version; version n is reached by running MIGRATIONS[n-1].
# Never edit a released entry: add a new one.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE tasks (
            id {sorted_text} PRIMARY KEY,
            tenant TEXT NOT NULL,
            owner TEXT NOT NULL,
            context_id TEXT NOT NULL,
            state TEXT NOT NULL,
            status_key {sorted_text} NOT NULL,
            version {bigint} NOT NULL,
            snapshot {blob} NOT NULL,
            snapshot_version {bigint} NOT NULL
        )""",
        # ListTasks: every listing is per tenant, often per owner or context, newest first.
        "CREATE INDEX tasks_by_tenant ON tasks (tenant, status_key DESC, id DESC)",
        "CREATE INDEX tasks_by_owner ON tasks (tenant, owner, status_key DESC, id DESC)",
        "CREATE INDEX tasks_by_context ON tasks (tenant, context_id, status_key DESC, id DESC)",
        # Restart recovery (unfinished tasks) and retention (old terminal tasks).
        "CREATE INDEX tasks_by_state ON tasks (state, status_key)",
        """CREATE TABLE events (
            task_id TEXT NOT NULL,
            version {bigint} NOT NULL,
            kind TEXT NOT NULL,
            body {blob} NOT NULL,
            PRIMARY KEY (task_id, version)
        )""",
        """CREATE TABLE push_configs (
            task_id TEXT NOT NULL,
            id TEXT NOT NULL,
            seq {bigint} NOT NULL,
            body {blob} NOT NULL,
            PRIMARY KEY (task_id, id)
        )""",
    ),
    (
        """CREATE TABLE push_outbox (
            id TEXT PRIMARY KEY,
            task_id TEXT NOT NULL,
            config_id TEXT NOT NULL,
            seq {bigint} NOT NULL,
            body {blob} NOT NULL,
            attempts INTEGER NOT NULL,
            next_attempt_at {bigint} NOT NULL,
            state TEXT NOT NULL,
            last_error TEXT NOT NULL,
            created_at {bigint} NOT NULL
        )""",
        # Claiming scans pending rows only: delivered ones pile up, they must not slow it.
        "CREATE INDEX push_outbox_due ON push_outbox (next_attempt_at) WHERE state = 'pending'",
        # A config's rows in order: its head pending row, its rows on deletion, inspection.
        "CREATE INDEX push_outbox_by_config ON push_outbox (task_id, config_id, seq)",
    ),
    (
        # Looking a task up for a caller, scope first: the search runs among the caller's own
        # entries, so another caller's task and a missing id take the same path, and neither
        # reads a row (docs/SECURITY.md).
        "CREATE INDEX tasks_by_scope ON tasks (tenant, owner, id)",
    ),
    (
        # Idempotent sends (server.idempotency): the task each caller's first message made.
        # The primary key is what makes concurrent duplicates (and replicas) agree on one task.
        """CREATE TABLE message_ids (
            tenant TEXT NOT NULL,
            owner TEXT NOT NULL,
            message_id TEXT NOT NULL,
            task_id TEXT NOT NULL,
            expires_at {bigint} NOT NULL,
            PRIMARY KEY (tenant, owner, message_id)
        )""",
        # The sweep removes the expired rows, oldest first, a bounded number at a time.
        "CREATE INDEX message_ids_by_expiry ON message_ids (expires_at)",
    ),
    (
        # Retention removes a task's message-id claims with the task (delete_terminal_before).
        "CREATE INDEX message_ids_by_task ON message_ids (task_id)",
    ),
    (
        # The A2A version a push config was registered over: its notifications are sent in
        # that version's form (a 0.3 receiver expects a bare 0.3 Task). Earlier rows are 1.0.
        "ALTER TABLE push_configs ADD COLUMN protocol_version TEXT NOT NULL DEFAULT '1.0'",
    ),
    (
        # Who sent each message of a task (server.context.encode_caller): what a handler run
        # again after a restart, or on another worker, sees as ``ctx.caller``.
        """CREATE TABLE task_callers (
            task_id TEXT NOT NULL,
            message_id TEXT NOT NULL,
            body {blob} NOT NULL,
            PRIMARY KEY (task_id, message_id)
        )""",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)


def ddl(statement: str, *, blob: str, bigint: str, sorted_text: str = "TEXT") -> str:
    """A migration statement in one dialect (SQLite: BLOB/INTEGER/TEXT; PostgreSQL:
    BYTEA/BIGINT/``TEXT COLLATE "C"``, the collation that orders like SQLite's BINARY)."""
    return statement.format(blob=blob, bigint=bigint, sorted_text=sorted_text)


def numbered(sql: str) -> str:
    """``?`` placeholders as ``$1, $2, ...`` (asyncpg's style). No statement here quotes a ?."""
    counter = iter(range(1, 10_000))
    return re.sub(r"\?", lambda _: f"${next(counter)}", sql)


_TERMINAL_NAMES = tuple(sorted(state.value for state in TERMINAL))
_TERMINAL_IN = "(" + ", ".join(f"'{name}'" for name in _TERMINAL_NAMES) + ")"

INSERT_TASK = (
    "INSERT INTO tasks (id, tenant, owner, context_id, state, status_key, version, snapshot, "
    "snapshot_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING"
)
SELECT_TASK_VERSION = "SELECT version FROM tasks WHERE id = ?"
SELECT_OWNER = "SELECT owner FROM tasks WHERE id = ? AND tenant = ?"
TASK_EXISTS = "SELECT 1 FROM tasks WHERE id = ?"
SELECT_TASK = (
    "SELECT context_id, tenant, owner, version, snapshot, snapshot_version FROM tasks WHERE id = ?"
)
# The task if it is the tenant's and owner's (parameters: tenant, owner, id), found through
# ``tasks_by_scope``: another's task is as absent as a missing one, and as fast to miss.
SELECT_VISIBLE_TASK = (
    "SELECT context_id, tenant, owner, version, snapshot, snapshot_version FROM tasks "
    "INDEXED BY tasks_by_scope WHERE tenant = ? AND owner = ? AND id = ?"
)
SELECT_EVENTS = "SELECT kind, body FROM events WHERE task_id = ? AND version > ? ORDER BY version"
INSERT_EVENT = "INSERT INTO events (task_id, version, kind, body) VALUES (?, ?, ?, ?)"
# ``events_after`` (parameters: the version asked after, id): the task row's versions, and its
# snapshot only when that is past the version asked after (the events up to it are folded in).
SELECT_TAIL = (
    "SELECT version, snapshot_version, CASE WHEN snapshot_version > ? THEN snapshot END "
    "FROM tasks WHERE id = ?"
)
SELECT_EVENTS_AFTER = (
    "SELECT version, kind, body FROM events WHERE task_id = ? AND version > ? ORDER BY version"
)
# A snapshot absorbs every event up to its version.
DELETE_EVENTS = "DELETE FROM events WHERE task_id = ? AND version <= ?"
SELECT_UNFINISHED = (
    f"SELECT id, context_id, tenant, owner, state FROM tasks WHERE state NOT IN {_TERMINAL_IN}"
)

UPSERT_PUSH_CONFIG = (
    "INSERT INTO push_configs (task_id, id, seq, body, protocol_version) VALUES "
    "(?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM push_configs WHERE task_id = ?), ?, ?) "
    "ON CONFLICT (task_id, id) DO UPDATE SET body = excluded.body, "
    "protocol_version = excluded.protocol_version"
)
# Parameters: task id, message id, body, task id. Nothing is written for a missing task.
SAVE_CALLER = (
    "INSERT INTO task_callers (task_id, message_id, body) SELECT ?, ?, ? "
    "WHERE EXISTS (SELECT 1 FROM tasks WHERE id = ?) "
    "ON CONFLICT (task_id, message_id) DO UPDATE SET body = excluded.body"
)
SELECT_CALLERS = "SELECT message_id, body FROM task_callers WHERE task_id = ?"
GET_PUSH_CONFIG = "SELECT body FROM push_configs WHERE task_id = ? AND id = ?"
# What the deliverer needs to send to a config: it, its version, and its task's tenant.
GET_PUSH_TARGET = (
    "SELECT c.body, c.protocol_version, t.tenant FROM push_configs c "
    "JOIN tasks t ON t.id = c.task_id WHERE c.task_id = ? AND c.id = ?"
)
LIST_PUSH_CONFIGS = "SELECT body FROM push_configs WHERE task_id = ? ORDER BY seq"
DELETE_PUSH_CONFIG = "DELETE FROM push_configs WHERE task_id = ? AND id = ?"
SELECT_PUSH_CONFIG_IDS = "SELECT id FROM push_configs WHERE task_id = ? ORDER BY seq"

OUTBOX_COLUMNS = "id, task_id, config_id, seq, body, attempts, next_attempt_at, state, last_error"
# Parameters: id, task_id, config_id, seq, body, next_attempt_at, created_at.
INSERT_OUTBOX = (
    "INSERT INTO push_outbox (id, task_id, config_id, seq, body, attempts, next_attempt_at, "
    "state, last_error, created_at) VALUES (?, ?, ?, ?, ?, 0, ?, 'pending', '', ?)"
)
# Due rows, oldest first, each the lowest-seq pending row of its (task, config): a config's
# later rows wait while an earlier one is in flight or backing off, which keeps them in order.
# Parameters: now, limit.
SELECT_DUE_OUTBOX = (
    "SELECT o.id FROM push_outbox o WHERE o.state = 'pending' AND o.next_attempt_at <= ? "
    "AND NOT EXISTS (SELECT 1 FROM push_outbox p WHERE p.task_id = o.task_id "
    "AND p.config_id = o.config_id AND p.state = 'pending' AND p.seq < o.seq) "
    "ORDER BY o.created_at, o.task_id, o.seq, o.config_id LIMIT ?"
)
# Parameters: lease end, id.
CLAIM_OUTBOX = (
    "UPDATE push_outbox SET attempts = attempts + 1, next_attempt_at = ? "
    "WHERE id = ? AND state = 'pending'"
)
# A delivered row keeps its record (state, attempts) but not its body: nothing re-sends it.
# Parameters: empty body, id.
MARK_OUTBOX_DELIVERED = (
    "UPDATE push_outbox SET state = 'delivered', body = ?, last_error = '' "
    "WHERE id = ? AND state = 'pending'"
)
# Parameters: next_attempt_at, error, id.
MARK_OUTBOX_RETRY = (
    "UPDATE push_outbox SET next_attempt_at = ?, last_error = ? WHERE id = ? AND state = 'pending'"
)
# A claim given back unattempted: its attempt is not counted. Parameters: next_attempt_at, id.
RELEASE_OUTBOX_CLAIM = (
    "UPDATE push_outbox SET attempts = attempts - 1, next_attempt_at = ? "
    "WHERE id = ? AND state = 'pending' AND attempts > 0"
)
# Parameters: error, id.
MARK_OUTBOX_FAILED = (
    "UPDATE push_outbox SET state = 'failed', last_error = ? WHERE id = ? AND state = 'pending'"
)
SELECT_OUTBOX_ROW = f"SELECT {OUTBOX_COLUMNS} FROM push_outbox WHERE id = ?"
# The backlog the metrics sample (the pending rows are those the claim index covers).
# The tasks waiting for their client, per state (the metrics; ``tasks_by_state`` covers it).
_INTERRUPTED_IN = "(" + ", ".join(f"'{s.value}'" for s in sorted(INTERRUPTED, key=str)) + ")"
COUNT_WAITING = f"SELECT state, count(*) FROM tasks WHERE state IN {_INTERRUPTED_IN} GROUP BY state"
OUTBOX_BACKLOG = "SELECT count(*), min(created_at) FROM push_outbox WHERE state = 'pending'"
SELECT_OUTBOX = (
    f"SELECT {OUTBOX_COLUMNS} FROM push_outbox WHERE task_id = ? ORDER BY seq, config_id"
)
DELETE_PENDING_OUTBOX = (
    "DELETE FROM push_outbox WHERE task_id = ? AND config_id = ? AND state = 'pending'"
)


# Claim a message id for a new task (parameters: tenant, owner, message id, task id,
# expires_at, now). A row that expired is taken over; a live one is left alone and the
# statement changes nothing (zero rows).
CLAIM_MESSAGE_ID = (
    "INSERT INTO message_ids (tenant, owner, message_id, task_id, expires_at) "
    "VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant, owner, message_id) DO UPDATE SET "
    "task_id = excluded.task_id, expires_at = excluded.expires_at "
    "WHERE message_ids.expires_at <= ?"
)
# The same, also taking over a row whose task retention removed. Only where writes are
# serialised (SQLite): under PostgreSQL's READ COMMITTED the subquery would not see the task
# of a concurrent claim that just won, so that store checks the holder's task afterwards.
CLAIM_MESSAGE_ID_OR_ORPHAN = (
    CLAIM_MESSAGE_ID + " OR NOT EXISTS (SELECT 1 FROM tasks WHERE tasks.id = message_ids.task_id)"
)
# Parameters: tenant, owner, message id.
SELECT_MESSAGE_TASK = (
    "SELECT task_id FROM message_ids WHERE tenant = ? AND owner = ? AND message_id = ?"
)
# A claim whose task is gone (parameters: tenant, owner, message id, its task id).
DELETE_ORPHAN_MESSAGE_ID = (
    "DELETE FROM message_ids WHERE tenant = ? AND owner = ? AND message_id = ? AND task_id = ? "
    "AND NOT EXISTS (SELECT 1 FROM tasks WHERE tasks.id = message_ids.task_id)"
)
# At most a bounded number of expired rows, oldest first (parameters: now, limit).
FORGET_MESSAGE_IDS = (
    "DELETE FROM message_ids WHERE (tenant, owner, message_id) IN ("
    "SELECT tenant, owner, message_id FROM message_ids WHERE expires_at <= ? "
    "ORDER BY expires_at LIMIT ?)"
)


def update_task(*, with_snapshot: bool, with_status: bool = True) -> str:
    """Move a task to its new version: a compare-and-swap on the version it was read at.

    Parameters: version, [state, status_key,] [snapshot, snapshot_version,] id, expected
    version. ``with_status=False`` (a batch without a status update) leaves ``state`` and
    ``status_key`` alone: setting them, even to the same values, rewrites the row's entry in
    every index on them. Zero rows updated means another writer got there first (or the task
    is gone).
    """
    status = ", state = ?, status_key = ?" if with_status else ""
    snapshot = ", snapshot = ?, snapshot_version = ?" if with_snapshot else ""
    return f"UPDATE tasks SET version = ?{status}{snapshot} WHERE id = ? AND version = ?"


def select_events_of(count: int) -> str:
    """The events of ``count`` tasks (their ids are the parameters), in version order."""
    marks = ", ".join("?" * count)
    return (
        f"SELECT task_id, version, kind, body FROM events WHERE task_id IN ({marks}) "
        "ORDER BY task_id, version"
    )


def delete_terminal_before() -> tuple[str, ...]:
    """Remove terminal tasks with a status key below the parameter, with their rows elsewhere
    (events, push configs and outbox rows, message-id claims, recorded callers).

    Each statement takes the cut-off key as its only parameter; the last removes the tasks.
    """
    doomed = f"SELECT id FROM tasks WHERE state IN {_TERMINAL_IN} AND status_key < ?"
    return (
        f"DELETE FROM events WHERE task_id IN ({doomed})",
        f"DELETE FROM push_configs WHERE task_id IN ({doomed})",
        f"DELETE FROM push_outbox WHERE task_id IN ({doomed})",
        f"DELETE FROM message_ids WHERE task_id IN ({doomed})",
        f"DELETE FROM task_callers WHERE task_id IN ({doomed})",
        f"DELETE FROM tasks WHERE state IN {_TERMINAL_IN} AND status_key < ?",
    )


@dataclass(frozen=True, slots=True)
class ListStatements:
    """The two queries of one ListTasks page: the total count and the page itself.

    The page selects ``id, state, version, snapshot, snapshot_version`` and one row more than
    the page size, so the caller knows whether another page follows.
    """

    count_sql: str
    count_params: tuple[object, ...]
    page_sql: str
    page_params: tuple[object, ...]


def list_tasks(query: ListQuery, *, tenant: str, owner: str | None) -> ListStatements:
    """The SQL form of ``ListQuery.matches`` / ``after_cursor`` and of ``select_page``'s order."""
    where = ["tenant = ?"]
    params: list[object] = [tenant]
    if owner is not None:
        where.append("owner = ?")
        params.append(owner)
    if query.context_id:
        where.append("context_id = ?")
        params.append(query.context_id)
    if query.status is not None:
        where.append("state = ?")
        params.append(query.status.value)
    if query.status_after is not None:
        where.append("status_key >= ?")
        params.append(query.status_after)
    count_sql = f"SELECT COUNT(*) FROM tasks WHERE {' AND '.join(where)}"
    page_where, page_params = list(where), list(params)
    if query.cursor is not None:
        page_where.append("(status_key, id) < (?, ?)")
        page_params.extend(query.cursor)
    page_sql = (
        "SELECT id, state, version, snapshot, snapshot_version FROM tasks "
        f"WHERE {' AND '.join(page_where)} ORDER BY status_key DESC, id DESC LIMIT ?"
    )
    page_params.append(query.page_size + 1)
    return ListStatements(count_sql, tuple(params), page_sql, tuple(page_params))
