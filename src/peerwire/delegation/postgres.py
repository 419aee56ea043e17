"""``PostgresLedgerStore``: delegation entries in PostgreSQL, shared by every process of a
deployment (the "postgres" extra: asyncpg).

The table lives in the given schema (the task store's, by default ``peerwire``), versioned on
its own; its migrations run in one transaction under an advisory lock derived from the
schema's name, so replicas starting at once apply them once.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import asyncpg

from . import _sql
from .entries import EntryStatus, LedgerEntry
from .store import LedgerStore

__all__ = ["PostgresLedgerStore"]

_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_DB_ERRORS = (asyncpg.PostgresError, asyncpg.InterfaceError, OSError)


class PostgresLedgerStore(LedgerStore):
    def __init__(self, dsn: str, *, schema: str = "peerwire", max_size: int = 4) -> None:
        if not _SCHEMA_NAME.fullmatch(schema) or schema.startswith("pg_"):
            raise ValueError(
                f"schema must be a lower-case SQL name not starting pg_, got {schema!r}"
            )
        self.dsn = dsn
        self.schema = schema
        self.max_size = max_size
        self._pool: Any = None
        self._insert = _sql.numbered(_sql.INSERT)
        self._update = _sql.numbered(_sql.UPDATE)
        self._by_id = _sql.numbered(_sql.SELECT_BY_ID)
        self._by_key = _sql.numbered(_sql.SELECT_BY_KEY)
        self._next_seq = _sql.numbered(_sql.NEXT_SEQ)

    @classmethod
    def from_url(cls, url: str) -> PostgresLedgerStore:
        """From ``postgresql://...[?schema=NAME]`` (the task store's URL form)."""
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        schema = next((value for name, value in query if name == "schema"), None)
        rest = urlencode([(name, value) for name, value in query if name != "schema"])
        dsn = urlunsplit(parts._replace(query=rest))
        return cls(dsn) if schema is None else cls(dsn, schema=schema)

    async def open(self) -> None:
        if self._pool is not None:
            return
        try:
            pool = await asyncpg.create_pool(
                self.dsn,
                min_size=1,
                max_size=self.max_size,
                server_settings={"search_path": self.schema, "application_name": "peerwire"},
            )
        except (*_DB_ERRORS, TimeoutError) as exc:
            raise OSError(f"cannot open the PostgreSQL delegation ledger: {exc}") from exc
        try:
            async with pool.acquire() as connection:
                await migrate(connection, self.schema)
        except BaseException:
            await pool.close()
            raise
        self._pool = pool

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    def _ready(self) -> Any:
        if self._pool is None:
            raise RuntimeError("the delegation ledger is not open (call open() first)")
        return self._pool

    async def insert(self, entry: LedgerEntry) -> LedgerEntry:
        async with self._ready().acquire() as connection, connection.transaction():
            # Serializes the scope's inserts, so seq numbers within a scope are distinct.
            await connection.execute(
                "SELECT pg_advisory_xact_lock($1)", _lock_key(f"{entry.tenant}\0{entry.scope}")
            )
            row = await connection.fetchrow(self._by_key, entry.tenant, entry.scope, entry.key)
            if row is not None:
                return _sql.entry_from_row(tuple(row))
            seq = await connection.fetchval(self._next_seq, entry.tenant, entry.scope)
            stored = entry.replace(seq=int(seq))
            await connection.execute(self._insert, *_sql.row_of(stored))
            return stored

    async def save(self, entry: LedgerEntry) -> LedgerEntry | None:
        status = await self._ready().execute(self._update, *_sql.update_values(entry))
        # asyncpg's command tag: "UPDATE <rows>".
        return entry.replace(version=entry.version + 1) if status == "UPDATE 1" else None

    async def get(self, entry_id: str) -> LedgerEntry | None:
        row = await self._ready().fetchrow(self._by_id, entry_id)
        return None if row is None else _sql.entry_from_row(tuple(row))

    async def find(self, tenant: str, scope: str, key: str) -> LedgerEntry | None:
        row = await self._ready().fetchrow(self._by_key, tenant, scope, key)
        return None if row is None else _sql.entry_from_row(tuple(row))

    async def entries(
        self,
        *,
        tenant: str | None = None,
        scope: str | None = None,
        statuses: Iterable[EntryStatus] | None = None,
        with_end: bool = False,
    ) -> list[LedgerEntry]:
        statement, values = _sql.select_entries(tenant, scope, statuses, with_end)
        rows = await self._ready().fetch(_sql.numbered(statement), *values)
        return [_sql.entry_from_row(tuple(row)) for row in rows]


def _lock_key(name: str) -> int:
    digest = hashlib.blake2b(f"peerwire:delegations:{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


async def migrate(connection: Any, schema: str) -> int:
    """Bring the ledger's table in ``schema`` to ``SCHEMA_VERSION``; the version found."""
    async with connection.transaction():
        await connection.execute("SELECT pg_advisory_xact_lock($1)", _lock_key(f"migrate:{schema}"))
        await connection.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        await connection.execute(f"SET LOCAL search_path TO {schema}")
        await connection.execute(
            "CREATE TABLE IF NOT EXISTS delegation_schema_version (version INTEGER NOT NULL)"
        )
        found_row = await connection.fetchval("SELECT version FROM delegation_schema_version")
        found = 0 if found_row is None else int(found_row)
        if found > _sql.SCHEMA_VERSION:
            raise RuntimeError(
                f"the delegation ledger in schema {schema!r} was written by a newer peerwire "
                f"(version {found}); this one understands up to {_sql.SCHEMA_VERSION}"
            )
        for statements in _sql.MIGRATIONS[found:]:
            for statement in statements:
                await connection.execute(statement.format(blob="BYTEA", real="DOUBLE PRECISION"))
        if found_row is None:
            await connection.execute(
                "INSERT INTO delegation_schema_version (version) VALUES ($1)", _sql.SCHEMA_VERSION
            )
        elif found != _sql.SCHEMA_VERSION:
            await connection.execute(
                "UPDATE delegation_schema_version SET version = $1", _sql.SCHEMA_VERSION
            )
    return found
