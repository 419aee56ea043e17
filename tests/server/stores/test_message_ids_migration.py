"""Schema version 4 (the ``message_ids`` table of idempotent sends) migrates a store written
by the previous peerwire in place: its tasks stay, and message ids are claimed from then on."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import asyncpg

from peerwire.server.stores import SQLiteTaskStore
from peerwire.server.stores._sql import MIGRATIONS, SCHEMA_VERSION, ddl
from peerwire.server.stores.postgres import PostgresTaskStore
from peerwire.testing.store_suite import new_record

from .._services import PG_DSN, fresh_schema

BEFORE = 3  # the schema version before message ids
_POSTGRES = {"blob": "BYTEA", "bigint": "BIGINT", "sorted_text": 'TEXT COLLATE "C"'}


def _sqlite_at_version_3(path: Path) -> None:
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        for statements in MIGRATIONS[:BEFORE]:
            for statement in statements:
                connection.execute(ddl(statement, blob="BLOB", bigint="INTEGER"))
        connection.execute("INSERT INTO schema_version (version) VALUES (?)", (BEFORE,))
    finally:
        connection.close()


async def test_a_version_3_sqlite_file_gains_message_ids(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    _sqlite_at_version_3(path)
    old = new_record()
    store = SQLiteTaskStore(path)
    await store.open()
    try:
        await store.create(old, tenant="", owner="")
        now = time.time()
        first, again = new_record(), new_record()
        args = {"tenant": "", "owner": "", "message_id": "m", "now": now, "expires_at": now + 60}
        assert await store.create_once(first, **args) == first.id
        assert await store.create_once(again, **args) == first.id
    finally:
        await store.close()
    connection = sqlite3.connect(path)
    try:
        assert connection.execute("SELECT version FROM schema_version").fetchall() == [
            (SCHEMA_VERSION,)
        ]
        assert connection.execute("SELECT count(*) FROM message_ids").fetchone() == (1,)
    finally:
        connection.close()


async def test_a_version_3_postgresql_schema_gains_message_ids() -> None:
    async with fresh_schema() as schema:
        connection = await asyncpg.connect(PG_DSN)
        try:
            await connection.execute(f"CREATE SCHEMA {schema}")
            await connection.execute(f"SET search_path TO {schema}")
            await connection.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
            for statements in MIGRATIONS[:BEFORE]:
                for statement in statements:
                    await connection.execute(ddl(statement, **_POSTGRES))
            await connection.execute(f"INSERT INTO schema_version (version) VALUES ({BEFORE})")
        finally:
            await connection.close()
        store = PostgresTaskStore(PG_DSN, schema=schema, min_size=0, max_size=2)
        assert await store.upgrade() == (BEFORE, SCHEMA_VERSION)
        await store.open()
        try:
            now = time.time()
            first, again = new_record(), new_record()
            args = {"tenant": "", "owner": "", "message_id": "m", "now": now, "expires_at": now + 9}
            assert await store.create_once(first, **args) == first.id
            assert await store.create_once(again, **args) == first.id
        finally:
            await store.close()
