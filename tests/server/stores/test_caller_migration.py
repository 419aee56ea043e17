"""Schema version 7 (the callers recorded per message) migrates a store written by the
previous peerwire in place: its tasks have no recorded callers, new messages' are kept."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import asyncpg
import pytest

from peerwire.server.stores import SQLiteTaskStore, TaskStore
from peerwire.server.stores._sql import SCHEMA_VERSION
from peerwire.server.stores.postgres import PostgresTaskStore
from peerwire.testing.store_suite import new_record

from .._services import PG_DSN, fresh_schema

BEFORE = 6  # the schema version before callers were recorded
_DROP = "DROP TABLE task_callers"


async def _check(store: TaskStore, task_id: str) -> None:
    assert await store.load_callers(task_id) == {}, "a task of before records nobody"
    await store.save_caller(task_id, "m-1", b'{"id":"alice"}')
    assert await store.load_callers(task_id) == {"m-1": b'{"id":"alice"}'}


async def test_a_version_6_sqlite_file_gains_recorded_callers(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    store = SQLiteTaskStore(path)
    await store.open()
    record = new_record()
    try:
        await store.create(record, tenant="", owner="")
    finally:
        await store.close()
    connection = sqlite3.connect(path, isolation_level=None)
    try:  # the file as version 6 left it
        connection.execute(_DROP)
        connection.execute("UPDATE schema_version SET version = ?", (BEFORE,))
    finally:
        connection.close()
    store = SQLiteTaskStore(path)
    await store.open()
    try:
        await _check(store, record.id)
    finally:
        await store.close()


@pytest.mark.services
async def test_a_version_6_postgresql_schema_gains_recorded_callers() -> None:
    record = new_record()
    async with fresh_schema() as schema:
        store = PostgresTaskStore(PG_DSN, schema=schema, min_size=0, max_size=2)
        await store.open()
        try:
            await store.create(record, tenant="", owner="")
        finally:
            await store.close()
        connection = await asyncpg.connect(PG_DSN)
        try:  # the schema as version 6 left it
            await connection.execute(f"SET search_path TO {schema}")
            await connection.execute(_DROP)
            await connection.execute(f"UPDATE schema_version SET version = {BEFORE}")
        finally:
            await connection.close()
        store = PostgresTaskStore(PG_DSN, schema=schema, min_size=0, max_size=2)
        assert await store.upgrade() == (BEFORE, SCHEMA_VERSION)
        await store.open()
        try:
            await _check(store, record.id)
        finally:
            await store.close()
