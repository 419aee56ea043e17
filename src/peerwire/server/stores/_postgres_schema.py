"""The PostgreSQL store's schema: its name, its version, and migrations under a lock.

The tables are those of ``_sql`` (shared with SQLite), in a PostgreSQL schema of their own. The
migrations the schema has not seen run in one transaction (PostgreSQL's DDL is transactional:
all or nothing) while holding a transaction-scoped advisory lock derived from the schema's
name, so replicas starting at the same moment apply them once, one after the other, instead of
racing to create the same tables.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from ._sql import MIGRATIONS, SCHEMA_VERSION, ddl

__all__ = ["check_current", "check_schema_name", "migrate", "schema_version"]

# Lower case, no quoting needed anywhere: the name is spliced into DDL and search_path.
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def check_schema_name(name: str) -> str:
    if not _SCHEMA_NAME.fullmatch(name) or name.startswith("pg_"):
        raise ValueError(
            f"schema must be 1-63 lower-case letters, digits and underscores, starting with a "
            f"letter or underscore and not with pg_; got {name!r}"
        )
    return name


def _lock_key(schema: str) -> int:
    """The advisory lock of ``schema``'s migrations: a stable signed 64-bit number."""
    digest = hashlib.blake2b(f"peerwire:migrate:{schema}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


async def schema_version(connection: Any, schema: str) -> int:
    """The version ``schema`` is at: 0 if it (or its version table) does not exist yet."""
    table = await connection.fetchval("SELECT to_regclass($1)", f"{schema}.schema_version")
    if table is None:
        return 0
    found = await connection.fetchval(f"SELECT version FROM {schema}.schema_version")
    return 0 if found is None else int(found)


async def migrate(connection: Any, schema: str) -> int:
    """Bring ``schema`` to ``SCHEMA_VERSION``; return the version it was at.

    Refuses (``RuntimeError``) a schema written by a newer peerwire rather than misread it.
    """
    async with connection.transaction():
        await connection.execute("SELECT pg_advisory_xact_lock($1)", _lock_key(schema))
        await connection.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        await connection.execute(
            f"CREATE TABLE IF NOT EXISTS {schema}.schema_version (version INTEGER NOT NULL)"
        )
        found = await schema_version(connection, schema)
        _refuse_newer(found, schema)
        # The connection's search_path names the schema: the shared DDL stays unqualified.
        await connection.execute(f"SET LOCAL search_path TO {schema}")
        for statements in MIGRATIONS[found:]:
            for statement in statements:
                await connection.execute(
                    ddl(statement, blob="BYTEA", bigint="BIGINT", sorted_text='TEXT COLLATE "C"')
                )
        if found == 0:
            await connection.execute(
                f"DELETE FROM {schema}.schema_version; "
                f"INSERT INTO {schema}.schema_version (version) VALUES ({SCHEMA_VERSION})"
            )
        elif found != SCHEMA_VERSION:
            await connection.execute(
                f"UPDATE {schema}.schema_version SET version = {SCHEMA_VERSION}"
            )
    return found


def check_current(found: int, schema: str) -> None:
    """For a store told not to migrate: the schema must already be at ``SCHEMA_VERSION``."""
    _refuse_newer(found, schema)
    if found < SCHEMA_VERSION:
        raise RuntimeError(
            f"the PostgreSQL schema {schema!r} is at version {found}, this peerwire needs "
            f"{SCHEMA_VERSION}: run `peerwire db upgrade --store postgresql://...` first"
        )


def _refuse_newer(found: int, schema: str) -> None:
    if found > SCHEMA_VERSION:
        raise RuntimeError(
            f"the PostgreSQL schema {schema!r} was written by a newer peerwire (schema version "
            f"{found}); this version understands up to {SCHEMA_VERSION}: upgrade peerwire"
        )
