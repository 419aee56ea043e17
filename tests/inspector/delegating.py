"""An orchestrator that delegates, for the inspector's delegation view: it locks stock at an
inventory agent (registering its release as the undo), then ships at a logistics agent, which
fails; so its task fails and the release runs. Both peers are tests/delegation's
``PeerAgent``; the orchestrator keeps its tasks (and its ledger beside them) in a SQLite file
the inspector is pointed at (``--ledger sqlite:PATH``)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from delegation._peers import PeerAgent  # tests/delegation's peers

from peerwire import Agent, TaskContext
from peerwire.delegation import Completed, Undo
from peerwire.server.stores import SQLiteTaskStore
from peerwire.testing import live_server


def orchestrator(inventory: str, logistics: str) -> Agent:
    agent = Agent("Fulfilment Agent", description="Locks stock, then ships; undoes the lock")

    @agent.skill()
    async def fulfil(ctx: TaskContext) -> str:
        order = ctx.message.text or "order-1"
        lock = await ctx.delegate(
            inventory,
            f"book {order}",
            key="lock",
            compensate=Undo(inventory, f"release {order}", key="release"),
        )
        if not isinstance(await lock.result(), Completed):
            raise RuntimeError("no stock")
        ship = await ctx.delegate(logistics, f"fail {order}", key="ship")
        outcome = await ship.result()
        if not isinstance(outcome, Completed):
            raise RuntimeError(f"shipping: {outcome.describe()}")
        return "fulfilled"

    return agent


@dataclass(frozen=True)
class Fulfilment:
    url: str
    """The orchestrator's URL."""
    inventory: str
    logistics: str
    ledger: str
    """The ledger's store spec (the orchestrator's store: ``sqlite:PATH``)."""
    inventory_peer: PeerAgent


@contextlib.asynccontextmanager
async def serve_fulfilment(directory: Path) -> AsyncIterator[Fulfilment]:
    database = directory / "fulfilment.db"
    inventory, logistics = PeerAgent("Inventory"), PeerAgent("Logistics")
    async with (
        live_server(inventory.agent, shutdown_grace=1.0) as inventory_url,
        live_server(logistics.agent, shutdown_grace=1.0) as logistics_url,
        live_server(
            orchestrator(inventory_url, logistics_url),
            store=SQLiteTaskStore(str(database)),
            shutdown_grace=1.0,
        ) as url,
    ):
        yield Fulfilment(url, inventory_url, logistics_url, f"sqlite:{database}", inventory)
