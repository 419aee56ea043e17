"""The fulfillment orchestrator's own process SIGKILLed mid fan-out (the stock lock and the
carrier booking both open at their agents), then started again on the same SQLite store: it
resumes the order, follows both delegations to their end, and each agent counts the order's
booking exactly once."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from peerwire import Client, Task, TaskState
from peerwire.delegation import EntryStatus, SQLiteLedgerStore

from ._fulfillment import Peers, peers, wait_until

START_LIMIT_S = 30.0


@contextlib.asynccontextmanager
async def orchestrator(
    found: Peers, db: Path, log: Path, *, port: int = 0
) -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    """``python -m peerwire.samples.fulfillment.orchestrator`` on a SQLite file: the process
    and its URL (from the line it prints once it listens)."""
    arguments = [
        "-m",
        "peerwire.samples.fulfillment.orchestrator",
        *("--risk", found.risk_url, "--inventory", found.inventory_url),
        *("--logistics", found.logistics_url, "--store", f"sqlite:{db}", "--port", str(port)),
    ]
    with log.open("ab") as sink:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            *arguments,
            cwd=db.parent,
            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
            stdout=asyncio.subprocess.PIPE,
            stderr=sink,
        )
    try:
        assert process.stdout is not None
        try:
            async with asyncio.timeout(START_LIMIT_S):
                line = (await process.stdout.readline()).decode()
        except TimeoutError:
            line = ""
        if not line.startswith("listening on "):
            pytest.fail(f"the orchestrator did not start: {line!r}\n{_read(log)}")
        yield process, line.removeprefix("listening on ").strip()
    finally:
        if process.returncode is None:
            process.kill()
        async with asyncio.timeout(15):
            await process.wait()


def _read(log: Path) -> str:
    return log.read_text(errors="replace")


async def test_sigkill_mid_fan_out_resumes_every_delegation_and_books_nothing_twice(
    tmp_path: Path,
) -> None:
    db, log = tmp_path / "orders.db", tmp_path / "orchestrator.log"
    ledger = SQLiteLedgerStore(db)
    # Slow enough that both are still working when the kill comes, quick enough that they
    # end while the orchestrator is down or just back.
    async with peers(slow_seconds=2.0) as found:
        async with orchestrator(found, db, log) as (process, url):
            async with Client.connect(url) as client:
                parent = await client.send(
                    "ORD-1005: 2 widgets, slow stock, slow carrier", return_immediately=True
                )
            assert isinstance(parent, Task)
            await ledger.open()

            async def fan_out_open() -> bool:
                entries = {e.key: e for e in await ledger.entries(scope=parent.id)}
                return all(
                    key in entries
                    and entries[key].status is EntryStatus.OPEN
                    and entries[key].remote_task_id
                    for key in ("lock", "book")
                )

            await wait_until(fan_out_open, limit=20, what="the lock and the booking to be open")
            assert found.inventory.requests["ORD-1005"] == found.logistics.requests["ORD-1005"] == 1
            process.send_signal(signal.SIGKILL)
            await process.wait()
        assert not found.inventory.bookings and not found.logistics.bookings, "still working"

        async with orchestrator(found, db, log) as (_, url), Client.connect(url) as client:

            async def order_done() -> bool:
                task = await client.get_task(parent.id)
                return task.status.state in (TaskState.COMPLETED, TaskState.FAILED)

            await wait_until(order_done, limit=30, what="the resumed order to end")
            task = await client.get_task(parent.id)
        entries = {e.key: e.status for e in await ledger.entries(scope=parent.id)}
        await ledger.close()
    assert task.status.state is TaskState.COMPLETED, (task.status, _read(log))
    assert [a.name for a in task.artifacts] == ["fulfilment"]
    assert entries == {
        "risk": EntryStatus.COMPLETED,
        "lock": EntryStatus.COMPLETED,
        "release": EntryStatus.DISCARDED,
        "book": EntryStatus.COMPLETED,
    }
    # Sent once each (the replay found them in the ledger), booked once each.
    assert found.risk.checks == {"ORD-1005": 1}
    assert found.inventory.requests == found.inventory.bookings == {"ORD-1005": 1}
    assert found.logistics.requests == found.logistics.bookings == {"ORD-1005": 1}
    assert found.inventory.stock == 98 and not found.inventory.releases
