"""The machine's PostgreSQL and Redis for tests: a fresh schema or key prefix each, removed after.

``.ci/run`` starts both services when they are down. Other engineers' tests share them, so
every test works in a schema (PostgreSQL) or under a key prefix (Redis) of its own, with a
random name, and removes it afterwards, whatever the test's outcome.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator

import asyncpg
from redis.asyncio import Redis

PG_DSN = "postgresql://postgres@127.0.0.1:5432/test"
REDIS_URL = "redis://127.0.0.1:6379"


def unique_name(kind: str) -> str:
    return f"pwtest_{kind}_{secrets.token_hex(6)}"


async def drop_schema(schema: str) -> None:
    connection = await asyncpg.connect(PG_DSN)
    try:
        await connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    finally:
        await connection.close()


@contextlib.asynccontextmanager
async def fresh_schema() -> AsyncIterator[str]:
    """A schema name nobody uses; the schema (if anything created it) is dropped after."""
    schema = unique_name("schema")
    try:
        yield schema
    finally:
        await drop_schema(schema)


async def delete_prefix(prefix: str) -> int:
    """Delete every Redis key under ``prefix:``; how many there were."""
    client = Redis.from_url(REDIS_URL)
    try:
        keys = [key async for key in client.scan_iter(match=f"{prefix}:*", count=1000)]
        if keys:
            await client.delete(*keys)
        return len(keys)
    finally:
        await client.aclose()


@contextlib.asynccontextmanager
async def fresh_prefix() -> AsyncIterator[str]:
    """A Redis key prefix nobody uses; its keys are deleted after."""
    prefix = unique_name("bus")
    try:
        yield prefix
    finally:
        await delete_prefix(prefix)
