"""Message-id claims under a high rate of fresh message ids: do they stay within retention?

    .venv/bin/python bench/claims_retention.py                       # every store, 1,000,000
    .venv/bin/python bench/claims_retention.py --stores memory --claims 200000 --sends 5000

For each store (memory, a SQLite file in a temporary folder, a PostgreSQL schema of its own,
dropped afterwards), a retention of ``--retention`` seconds (1 s) and a sweep every
``--sweep-every`` seconds (5 s; a server sweeps every 60 s, its retention a day):

1. ``--claims`` claims with fresh message ids through ``MessageLedger.create`` (the store's
   ``create_once``, as the send path calls it), ``--concurrency`` at a time, while the
   ledger's timer sweeps; the claims kept are counted (without sweeping) every half interval.
2. ``--sends`` blocking SendMessage requests with fresh message ids through the app itself
   (ASGI, the lifespan's timer sweeping), 32 at a time, counted the same way.
   Message and task ids are UUIDs, as peerwire's client and server make them.
3. What a claim costs: ``--size-claims`` claims kept for an hour, the table's size (its
   indexes included) or the memory store's dict before and after, per claim.

It prints, for each run, the claims left at the end and the most seen at any sample against
"the last two sweep intervals' worth" (the claims made in the two intervals before that
moment): the sweep keeps pace when both stay below it. Claims live in the task store only;
a cluster's Redis holds none.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import secrets
import sqlite3
import sys
import tempfile
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.echo_agent import agent
from peerwire.protocol import TaskRecord
from peerwire.server import create_app
from peerwire.server.idempotency import MessageLedger
from peerwire.server.stores import MemoryTaskStore, SQLiteTaskStore, TaskStore
from peerwire.server.stores.postgres import PostgresTaskStore
from peerwire.testing.store_suite import new_record
from peerwire.types import Message, Part, Role

PG_DSN = "postgresql://postgres@127.0.0.1:5432/test"
_SEND = (
    b'{"jsonrpc":"2.0","id":%d,"method":"SendMessage","params":{"message":{"messageId":'
    b'"%s","role":"ROLE_USER","parts":[{"text":"hello bench"}]}}}'
)


@dataclass
class Tally:
    """Claims made over time, and the claims kept as sampled."""

    interval: float
    made: int = 0
    history: deque[tuple[float, int]] = field(default_factory=deque)
    samples: list[tuple[int, int]] = field(default_factory=list)  # (kept, bound)

    def note(self, count: int) -> None:
        self.made += count
        self.history.append((time.monotonic(), self.made))

    def bound(self) -> int:
        """The claims made in the last two sweep intervals."""
        since = time.monotonic() - 2 * self.interval
        before = 0
        for moment, made in self.history:
            if moment > since:
                break
            before = made
        while len(self.history) > 2 and self.history[1][0] <= since:
            self.history.popleft()
        return self.made - before


@dataclass
class Where:
    """A store under test and how to count its claims without sweeping them."""

    name: str
    store: TaskStore
    count: Callable[[], Awaitable[int]]
    size: Callable[[], Awaitable[int]]


@contextlib.asynccontextmanager
async def opened(kind: str) -> AsyncIterator[Where]:
    if kind == "memory":
        memory = MemoryTaskStore()

        async def memory_count() -> int:
            return len(memory._message_ids)  # a bench may look inside

        async def memory_size() -> int:
            return sys.getsizeof(memory._message_ids)

        await memory.open()
        try:
            yield Where(kind, memory, memory_count, memory_size)
        finally:
            await memory.close()
        return
    if kind == "sqlite":
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "claims.db"
            sqlite = SQLiteTaskStore(path)
            reader = sqlite3.connect(path, check_same_thread=False)

            async def sqlite_count() -> int:
                return int(reader.execute("SELECT count(*) FROM message_ids").fetchone()[0])

            async def sqlite_size() -> int:
                row = reader.execute(
                    "SELECT sum(pgsize) FROM dbstat WHERE name IN "
                    "('message_ids', 'message_ids_by_expiry', 'message_ids_by_task', "
                    "'sqlite_autoindex_message_ids_1')"
                ).fetchone()
                return int(row[0] or 0)

            await sqlite.open()
            try:
                yield Where(kind, sqlite, sqlite_count, sqlite_size)
            finally:
                await sqlite.close()
                reader.close()
        return
    schema = f"bench_claims_{secrets.token_hex(4)}"
    postgres = PostgresTaskStore(PG_DSN, schema=schema, min_size=1, max_size=8)
    connection = await asyncpg.connect(PG_DSN)

    async def postgres_count() -> int:
        return int(await connection.fetchval(f"SELECT count(*) FROM {schema}.message_ids"))

    async def postgres_size() -> int:
        await connection.execute(f"VACUUM {schema}.message_ids")
        return int(
            await connection.fetchval("SELECT pg_total_relation_size($1)", f"{schema}.message_ids")
        )

    await postgres.open()
    try:
        yield Where(kind, postgres, postgres_count, postgres_size)
    finally:
        await postgres.close()
        await connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        await connection.close()


def _message() -> Message:
    return Message(message_id=str(uuid.uuid4()), role=Role.USER, parts=[Part(text="hello")])


def _record() -> TaskRecord:
    return new_record(task_id=str(uuid.uuid4()))


async def _sampling(where: Where, tally: Tally) -> None:
    while True:
        await asyncio.sleep(tally.interval / 2)
        bound = tally.bound()
        if tally.made > 0 and tally.history[0][0] <= time.monotonic() - 2 * tally.interval:
            tally.samples.append((await where.count(), bound))


async def _report(label: str, where: Where, tally: Tally, seconds: float) -> bool:
    left, bound = await where.count(), tally.bound()
    worst = max(tally.samples, key=lambda s: s[0] / max(s[1], 1), default=(left, bound))
    kept = left < bound and all(kept < bound for kept, bound in tally.samples)
    print(
        f"{where.name:10s} {label:6s} {tally.made:9,d} claims in {seconds:6.1f} s "
        f"({tally.made / seconds:8,.0f}/s): left {left:7,d} against {bound:7,d} (the last two "
        f"intervals' worth); most kept {worst[0]:,d} against {worst[1]:,d} "
        f"over {len(tally.samples)} samples: {'OK' if kept else 'OVER'}",
        flush=True,
    )
    return kept


async def claims_run(
    where: Where, claims: int, retention: float, every: float, concurrency: int
) -> bool:
    ledger = MessageLedger(where.store, timedelta(seconds=retention), sweep_every=every)
    tally = Tally(ledger.sweep_every)
    started = time.monotonic()
    async with ledger:
        sampler = asyncio.create_task(_sampling(where, tally))
        try:
            for first in range(0, claims, concurrency):
                size = min(concurrency, claims - first)
                await asyncio.gather(
                    *(
                        ledger.create(_record(), tenant="", owner="", message=_message())
                        for _ in range(size)
                    )
                )
                tally.note(size)
            seconds = time.monotonic() - started
            return await _report("store", where, tally, seconds)
        finally:
            sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampler


async def sends_run(where: Where, sends: int, retention: float, every: float) -> bool:
    app = create_app(
        agent, store=where.store, rest_path=None, message_retention=timedelta(seconds=retention)
    )
    assert app.dispatcher.messages is not None
    app.dispatcher.messages.sweep_every = every
    tally = Tally(every)
    headers = [(b"content-type", b"application/json"), (b"a2a-version", b"1.0")]
    failures = 0

    async def one(n: int) -> None:
        nonlocal failures
        body = _SEND % (n, str(uuid.uuid4()).encode())
        answer: list[bytes] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.body":
                answer.append(message["body"])

        await app(
            {"type": "http", "method": "POST", "path": "/", "headers": headers}, receive, send
        )
        if b"TASK_STATE_COMPLETED" not in b"".join(answer):
            failures += 1

    started = time.monotonic()
    async with app.lifespan():
        sampler = asyncio.create_task(_sampling(where, tally))
        try:
            for first in range(0, sends, 32):
                size = min(32, sends - first)
                await asyncio.gather(*(one(n) for n in range(first, first + size)))
                tally.note(size)
            seconds = time.monotonic() - started
            kept = await _report("sends", where, tally, seconds)
        finally:
            sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampler
    if failures:
        raise SystemExit(f"{failures} sends did not complete")
    return kept


async def size_run(where: Where, count: int) -> None:
    ledger = MessageLedger(where.store, timedelta(hours=1))
    await ledger.sweep()  # what the runs above left expires within a second or two
    await asyncio.sleep(2.5)
    await ledger.sweep()
    before = await where.size()
    for first in range(0, count, 256):
        await asyncio.gather(
            *(
                ledger.create(_record(), tenant="", owner="", message=_message())
                for _ in range(min(256, count - first))
            )
        )
    after = await where.size()
    print(
        f"{where.name:10s} size   {(after - before) / count:6.0f} bytes per claim "
        f"({count:,d} claims; message and task ids of 36 characters)",
        flush=True,
    )


async def main(options: argparse.Namespace) -> int:
    ok = True
    for kind in options.stores.split(","):
        if options.claims:
            async with opened(kind) as where:
                ok &= await claims_run(
                    where,
                    options.claims,
                    options.retention,
                    options.sweep_every,
                    options.concurrency,
                )
        if options.sends:
            async with opened(kind) as where:
                ok &= await sends_run(where, options.sends, options.retention, options.sweep_every)
        if options.size_claims:
            async with opened(kind) as where:
                await size_run(where, options.size_claims)
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="memory,sqlite,postgresql")
    parser.add_argument("--claims", type=int, default=1_000_000)
    parser.add_argument("--sends", type=int, default=50_000)
    parser.add_argument("--size-claims", type=int, default=50_000)
    parser.add_argument("--retention", type=float, default=1.0)
    parser.add_argument("--sweep-every", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=64)
    sys.exit(asyncio.run(main(parser.parse_args())))
