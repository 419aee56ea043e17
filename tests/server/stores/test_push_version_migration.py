"""Schema version 6 (the A2A version of each push config) migrates a store written by the
previous peerwire in place: the configs it held are 1.0 ones, and new ones keep theirs."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import asyncpg

from peerwire.server.stores import SQLiteTaskStore, TaskStore
from peerwire.server.stores._rows import encode_push_config
from peerwire.server.stores._sql import SCHEMA_VERSION, numbered
from peerwire.server.stores.postgres import PostgresTaskStore
from peerwire.testing.store_suite import new_record
from peerwire.types import TaskPushNotificationConfig

from .._services import PG_DSN, fresh_schema

BEFORE = 5  # the schema version before push configs had a protocol version
# What versions 6 and later added, undone (version 7: the recorded callers).
_DROPS = ("ALTER TABLE push_configs DROP COLUMN protocol_version", "DROP TABLE task_callers")
_OLD_CONFIG = "INSERT INTO push_configs (task_id, id, seq, body) VALUES (?, ?, 1, ?)"


def _config(task_id: str, config_id: str) -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(id=config_id, task_id=task_id, url="https://example.com/h")


async def _check(store: TaskStore, task_id: str) -> None:
    """The config written before the migration is a 1.0 one; a 0.3 one saved now stays 0.3."""
    old = await store.get_push_target(task_id, "old")
    assert old is not None and old.config == _config(task_id, "old")
    assert (old.protocol_version, old.tenant) == ("1.0", "")
    await store.save_push_config(_config(task_id, "new"), protocol_version="0.3")
    new = await store.get_push_target(task_id, "new")
    assert new is not None and new.protocol_version == "0.3"


async def test_a_version_5_sqlite_file_gains_push_config_versions(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    store = SQLiteTaskStore(path)
    await store.open()
    record = new_record()
    try:
        await store.create(record, tenant="", owner="")
    finally:
        await store.close()
    connection = sqlite3.connect(path, isolation_level=None)
    try:  # the file as version 5 left it: no protocol_version column, a config in it
        for drop in _DROPS:
            connection.execute(drop)
        body = encode_push_config(_config(record.id, "old"))
        connection.execute(_OLD_CONFIG, (record.id, "old", body))
        connection.execute("UPDATE schema_version SET version = ?", (BEFORE,))
    finally:
        connection.close()
    store = SQLiteTaskStore(path)
    await store.open()
    try:
        await _check(store, record.id)
    finally:
        await store.close()
    connection = sqlite3.connect(path)
    try:
        assert connection.execute("SELECT version FROM schema_version").fetchall() == [
            (SCHEMA_VERSION,)
        ]
    finally:
        connection.close()


async def test_a_version_5_postgresql_schema_gains_push_config_versions() -> None:
    record = new_record()
    async with fresh_schema() as schema:
        store = PostgresTaskStore(PG_DSN, schema=schema, min_size=0, max_size=2)
        await store.open()
        try:
            await store.create(record, tenant="", owner="")
        finally:
            await store.close()
        connection = await asyncpg.connect(PG_DSN)
        try:  # the schema as version 5 left it
            await connection.execute(f"SET search_path TO {schema}")
            for drop in _DROPS:
                await connection.execute(drop)
            body = encode_push_config(_config(record.id, "old"))
            await connection.execute(numbered(_OLD_CONFIG), record.id, "old", body)
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
