"""``SQLiteLedgerStore``: delegation entries in a SQLite file (a task store's, or its own).

One connection in WAL mode with a busy timeout: the task store's writer and this one take
turns on the file, which is cheap at a delegation's rate of writes (a few per call). Every
write commits before it returns; with ``synchronous=NORMAL`` (the default) a commit survives
the process being killed, with ``FULL`` a power cut too.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Callable, Iterable
from typing import Literal, TypeVar

import anyio.to_thread

from . import _sql
from .entries import EntryStatus, LedgerEntry
from .store import LedgerStore

__all__ = ["SQLiteLedgerStore"]

T = TypeVar("T")


class SQLiteLedgerStore(LedgerStore):
    def __init__(
        self, path: str | os.PathLike[str], *, synchronous: Literal["NORMAL", "FULL"] = "NORMAL"
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError(f"synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}")
        self.path = os.fspath(path)
        self.synchronous = synchronous
        self._connection: sqlite3.Connection | None = None
        # One statement at a time on the one connection (sqlite3 objects are not reentrant).
        self._lock = asyncio.Lock()

    async def open(self) -> None:
        if self._connection is not None:
            return
        try:
            self._connection = await anyio.to_thread.run_sync(self._prepare)
        except sqlite3.Error as exc:
            raise OSError(f"cannot open the delegation ledger {self.path!r}: {exc}") from exc

    def _prepare(self) -> sqlite3.Connection:
        connection = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=30.0
        )
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute(f"PRAGMA synchronous={self.synchronous}")
            connection.execute("PRAGMA busy_timeout=30000")
            migrate(connection)
        except BaseException:
            connection.close()
            raise
        return connection

    async def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            async with self._lock:
                await anyio.to_thread.run_sync(connection.close)

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        connection = self._connection
        if connection is None:
            raise RuntimeError("the delegation ledger is not open (call open() first)")
        async with self._lock:
            return await anyio.to_thread.run_sync(work, connection)

    async def insert(self, entry: LedgerEntry) -> LedgerEntry:
        def insert(connection: sqlite3.Connection) -> LedgerEntry:
            connection.execute("BEGIN IMMEDIATE")
            try:
                row = connection.execute(
                    _sql.SELECT_BY_KEY, (entry.tenant, entry.scope, entry.key)
                ).fetchone()
                if row is not None:
                    connection.execute("COMMIT")
                    return _sql.entry_from_row(row)
                (seq,) = connection.execute(_sql.NEXT_SEQ, (entry.tenant, entry.scope)).fetchone()
                stored = entry.replace(seq=int(seq))
                connection.execute(_sql.INSERT, _sql.row_of(stored))
                connection.execute("COMMIT")
                return stored
            except BaseException:
                connection.execute("ROLLBACK")
                raise

        return await self._run(insert)

    async def save(self, entry: LedgerEntry) -> LedgerEntry | None:
        values = _sql.update_values(entry)
        cursor = await self._run(lambda connection: connection.execute(_sql.UPDATE, values))
        return entry.replace(version=entry.version + 1) if cursor.rowcount == 1 else None

    async def get(self, entry_id: str) -> LedgerEntry | None:
        row = await self._run(
            lambda connection: connection.execute(_sql.SELECT_BY_ID, (entry_id,)).fetchone()
        )
        return None if row is None else _sql.entry_from_row(row)

    async def find(self, tenant: str, scope: str, key: str) -> LedgerEntry | None:
        row = await self._run(
            lambda connection: connection.execute(
                _sql.SELECT_BY_KEY, (tenant, scope, key)
            ).fetchone()
        )
        return None if row is None else _sql.entry_from_row(row)

    async def entries(
        self,
        *,
        tenant: str | None = None,
        scope: str | None = None,
        statuses: Iterable[EntryStatus] | None = None,
        with_end: bool = False,
    ) -> list[LedgerEntry]:
        statement, values = _sql.select_entries(tenant, scope, statuses, with_end)
        rows = await self._run(lambda connection: connection.execute(statement, values).fetchall())
        return [_sql.entry_from_row(row) for row in rows]


def migrate(connection: sqlite3.Connection) -> int:
    """Bring the ledger's table to ``SCHEMA_VERSION`` in one transaction; the version found."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        connection.execute(
            "CREATE TABLE IF NOT EXISTS delegation_schema_version (version INTEGER NOT NULL)"
        )
        row = connection.execute("SELECT version FROM delegation_schema_version").fetchone()
        found = 0 if row is None else int(row[0])
        if found > _sql.SCHEMA_VERSION:
            raise RuntimeError(
                f"the delegation ledger was written by a newer peerwire (version {found}); "
                f"this one understands up to {_sql.SCHEMA_VERSION}: upgrade peerwire"
            )
        for statements in _sql.MIGRATIONS[found:]:
            for statement in statements:
                connection.execute(statement.format(blob="BLOB", real="REAL"))
        if row is None:
            connection.execute(
                "INSERT INTO delegation_schema_version (version) VALUES (?)",
                (_sql.SCHEMA_VERSION,),
            )
        elif found != _sql.SCHEMA_VERSION:
            connection.execute(
                "UPDATE delegation_schema_version SET version = ?", (_sql.SCHEMA_VERSION,)
            )
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    return found
