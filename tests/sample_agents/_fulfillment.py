"""The four fulfillment agents on live loopback servers, and bounded polling, for the tests."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from peerwire import Client, TaskState
from peerwire.delegation import SQLiteLedgerStore
from peerwire.samples.fulfillment.inventory import InventoryAgent
from peerwire.samples.fulfillment.logistics import LogisticsAgent
from peerwire.samples.fulfillment.orchestrator import Limits, make_agent
from peerwire.samples.fulfillment.risk import RiskAgent
from peerwire.testing import live_server

__all__ = ["Peers", "peers", "remote_state", "serving_all", "wait_until"]


@dataclass
class Peers:
    risk: RiskAgent
    inventory: InventoryAgent
    logistics: LogisticsAgent
    risk_url: str = ""
    inventory_url: str = ""
    logistics_url: str = ""


@contextlib.asynccontextmanager
async def peers(*, slow_seconds: float = 30.0) -> AsyncIterator[Peers]:
    """Risk, Inventory and Logistics agents served on loopback (memory stores)."""
    found = Peers(
        RiskAgent(),
        InventoryAgent(slow_seconds=slow_seconds),
        LogisticsAgent(slow_seconds=slow_seconds),
    )
    async with (
        live_server(found.risk.agent, shutdown_grace=0.5) as found.risk_url,
        live_server(found.inventory.agent, shutdown_grace=0.5) as found.inventory_url,
        live_server(found.logistics.agent, shutdown_grace=0.5) as found.logistics_url,
    ):
        yield found


@contextlib.asynccontextmanager
async def serving_all(
    db: Path, *, limits: Limits | None = None, slow_seconds: float = 30.0
) -> AsyncIterator[tuple[Peers, Client, SQLiteLedgerStore]]:
    """The three peers and the orchestrator (a SQLite store at ``db``), a client of the
    orchestrator, and the orchestrator's ledger read from the same file."""
    async with peers(slow_seconds=slow_seconds) as found:
        orchestrator = make_agent(
            found.risk_url, found.inventory_url, found.logistics_url, limits=limits
        )
        async with live_server(orchestrator, store=f"sqlite:{db}", shutdown_grace=0.5) as url:
            ledger = SQLiteLedgerStore(db)
            await ledger.open()
            try:
                async with Client.connect(url) as client:
                    yield found, client, ledger
            finally:
                await ledger.close()


async def remote_state(url: str, task_id: str) -> TaskState:
    """A task's state as its own agent has it."""
    async with Client.connect(url) as client:
        return (await client.get_task(task_id)).status.state


async def wait_until(
    check: Callable[[], Awaitable[bool]], *, limit: float = 10.0, what: str = "condition"
) -> None:
    """Poll ``check`` every 20 ms until it holds; bounded in time and in count."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + limit
    for _ in range(int(limit / 0.02) + 1):
        if await check():
            return
        if loop.time() > give_up:
            break
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out after {limit:g} s waiting for {what}")
