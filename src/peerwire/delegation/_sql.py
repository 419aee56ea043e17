"""The SQL of the relational ledger stores, written once for SQLite and PostgreSQL.

Statements use ``?`` placeholders (``numbered`` turns them into ``$1, $2, ...`` for asyncpg);
the DDL names its dialect's types as ``{blob}`` and ``{real}``. The ledger versions its table
on its own (``delegation_schema_version``), apart from the task store's schema: the two live
side by side in one file or PostgreSQL schema and migrate independently.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from .entries import EntryStatus, LedgerEntry

__all__ = [
    "COLUMNS",
    "INSERT",
    "MIGRATIONS",
    "NEXT_SEQ",
    "SCHEMA_VERSION",
    "SELECT_BY_ID",
    "SELECT_BY_KEY",
    "UPDATE",
    "entry_from_row",
    "numbered",
    "row_of",
    "select_entries",
    "update_values",
]

COLUMNS = (
    "id",
    "tenant",
    "scope",
    "key",
    "kind",
    "agent",
    "message",
    "message_id",
    "context_id",
    "status",
    "seq",
    "created_at",
    "updated_at",
    "remote_task_id",
    "remote_state",
    "observed_at",
    "follow",
    "deadline_at",
    "paused_left",
    "stall_deadline",
    "reason",
    "cause",
    "compensates",
    "attempts",
    "next_attempt_at",
    "answers",
    "runs",
    "result",
    "result_kind",
    "version",
)

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE IF NOT EXISTS delegations (
            id TEXT PRIMARY KEY,
            tenant TEXT NOT NULL,
            scope TEXT NOT NULL,
            key TEXT NOT NULL,
            kind TEXT NOT NULL,
            agent TEXT NOT NULL,
            message {blob} NOT NULL,
            message_id TEXT NOT NULL,
            context_id TEXT NOT NULL,
            status TEXT NOT NULL,
            seq INTEGER NOT NULL,
            created_at {real} NOT NULL,
            updated_at {real} NOT NULL,
            remote_task_id TEXT NOT NULL,
            remote_state TEXT NOT NULL,
            observed_at {real} NOT NULL,
            follow TEXT NOT NULL,
            deadline_at {real},
            paused_left {real},
            stall_deadline {real},
            reason TEXT NOT NULL,
            cause TEXT NOT NULL,
            compensates TEXT NOT NULL,
            attempts INTEGER NOT NULL,
            next_attempt_at {real} NOT NULL,
            answers INTEGER NOT NULL,
            runs INTEGER NOT NULL,
            result {blob} NOT NULL,
            result_kind TEXT NOT NULL,
            UNIQUE (tenant, scope, key)
        )""",
        "CREATE INDEX IF NOT EXISTS delegations_by_status ON delegations (status)",
    ),
    # Every write a compare-and-set on the row's version.
    ("ALTER TABLE delegations ADD COLUMN version INTEGER NOT NULL DEFAULT 0",),
)
SCHEMA_VERSION = len(MIGRATIONS)

_PLACEHOLDERS = ", ".join("?" for _ in COLUMNS)
INSERT = (
    f"INSERT INTO delegations ({', '.join(COLUMNS)}) VALUES ({_PLACEHOLDERS}) "
    "ON CONFLICT (tenant, scope, key) DO NOTHING"
)
UPDATE = (
    "UPDATE delegations SET "
    + ", ".join(f"{c} = ?" for c in COLUMNS[1:])
    + " WHERE id = ? AND version = ?"
)
"""A compare-and-set: the row is written only if it still has the version the writer read."""
SELECT_BY_ID = f"SELECT {', '.join(COLUMNS)} FROM delegations WHERE id = ?"
SELECT_BY_KEY = (
    f"SELECT {', '.join(COLUMNS)} FROM delegations WHERE tenant = ? AND scope = ? AND key = ?"
)
NEXT_SEQ = "SELECT COALESCE(MAX(seq), 0) + 1 FROM delegations WHERE tenant = ? AND scope = ?"


def select_entries(
    tenant: str | None,
    scope: str | None,
    statuses: Iterable[EntryStatus] | None,
    with_end: bool = False,
) -> tuple[str, list[Any]]:
    where: list[str] = [] if with_end else ["kind <> 'end'"]
    values: list[Any] = []
    if tenant is not None:
        where.append("tenant = ?")
        values.append(tenant)
    if scope is not None:
        where.append("scope = ?")
        values.append(scope)
    if statuses is not None:
        wanted = [str(s) for s in statuses]
        if not wanted:
            where.append("1 = 0")
        else:
            where.append(f"status IN ({', '.join('?' for _ in wanted)})")
            values.extend(wanted)
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    return (
        f"SELECT {', '.join(COLUMNS)} FROM delegations{clause} ORDER BY tenant, scope, seq",
        values,
    )


def row_of(entry: LedgerEntry) -> tuple[Any, ...]:
    return tuple(
        str(value) if name == "status" else value
        for name, value in ((name, getattr(entry, name)) for name in COLUMNS)
    )


def update_values(entry: LedgerEntry) -> tuple[Any, ...]:
    """``UPDATE``'s values: ``entry`` written as the next version of the one it was read as."""
    row = row_of(entry.replace(version=entry.version + 1))
    return (*row[1:], row[0], entry.version)


def entry_from_row(row: Sequence[Any]) -> LedgerEntry:
    values = dict(zip(COLUMNS, row, strict=True))
    values["status"] = EntryStatus(values["status"])
    values["message"] = bytes(values["message"])
    values["result"] = bytes(values["result"])
    return LedgerEntry(**values)


_QUESTION = re.compile(r"\?")


def numbered(statement: str) -> str:
    """``?`` placeholders as asyncpg's ``$1, $2, ...``."""
    counter = iter(range(1, 10_000))
    return _QUESTION.sub(lambda _: f"${next(counter)}", statement)
