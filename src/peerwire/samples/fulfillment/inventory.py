"""The Inventory Agent: locks stock for an order and releases it, idempotent by order number.

* ``lock ORD-1001: 3 widgets`` locks 3 widgets for ORD-1001 and completes. Locking an order
  that is locked already books nothing more and answers with the lock it has (so a caller
  that sends twice, or a replay, cannot lock the stock twice). Not enough stock fails the
  task. ``slow stock`` in the order makes it count the shelves first (``slow_seconds``);
  a cancel meanwhile locks nothing.
* ``release ORD-1001`` gives the order's stock back; releasing an order that holds nothing
  completes too ("nothing to release"): a compensation may run more than once.

``bookings`` counts the locks made per order (never more than one while it holds),
``requests`` the lock tasks received, ``releases`` the releases that gave stock back. Serve it
on its own with ``peerwire serve peerwire.samples.fulfillment.inventory:agent``.
"""

from __future__ import annotations

import asyncio
from collections import Counter

from peerwire import Agent, Message, TaskContext

from .orders import Report, parse_order, quiet

__all__ = ["InventoryAgent", "agent"]

NAME = "Inventory Agent"


class InventoryAgent:
    """The agent (``.agent``), its stock, its locks, and what it did (``Counter``\\ s by
    order number)."""

    def __init__(
        self,
        *,
        stock: int = 100,
        slow_seconds: float = 10.0,
        work_seconds: float = 0.0,
        report: Report = quiet,
    ) -> None:
        self.stock = stock
        """Widgets free to lock."""
        self.locks: dict[str, int] = {}
        """Widgets locked, by order number."""
        self.slow_seconds = slow_seconds
        self.work_seconds = work_seconds
        """How long each lock and release takes (the demo slows the agents down)."""
        self.report = report
        self.requests: Counter[str] = Counter()
        self.bookings: Counter[str] = Counter()
        self.releases: Counter[str] = Counter()
        self.cancels: Counter[str] = Counter()
        self.agent = Agent(
            NAME,
            description="Locks and releases stock, once per order number",
            default_input_modes=["text/plain"],
            default_output_modes=["text/plain"],
        )
        self.agent.router(_verb)
        self.agent.skill(
            "lock",
            description="Locks stock for an order: 'lock ORD-1001: 3 widgets'.",
            tags=["orders", "inventory"],
            examples=["lock ORD-1001: 3 widgets"],
        )(self._lock)
        self.agent.skill(
            "release",
            description="Gives an order's locked stock back: 'release ORD-1001'.",
            tags=["orders", "inventory"],
            examples=["release ORD-1001"],
        )(self._release)
        self.agent.on_cancel("lock")(self._canceled)

    async def _lock(self, ctx: TaskContext) -> str | None:
        order = parse_order(ctx.message.text)
        if order is None:
            await ctx.reject(f"no order number (ORD-...) in {ctx.message.text!r}")
            return None
        self.requests[order.number] += 1
        self.report(NAME, f"{order.number}: lock {order.quantity} (task {ctx.task_id})")
        if order.says("slow stock"):
            await ctx.start_work(f"counting the shelves for {order.number}")
            await asyncio.sleep(self.slow_seconds)  # a cancel arrives here: nothing locked
        await asyncio.sleep(self.work_seconds)
        # From here to the end there is no await: two lock tasks for one order cannot both
        # find it unlocked.
        held = self.locks.get(order.number)
        if held is not None:
            self.report(NAME, f"{order.number}: already locked ({held}), nothing booked")
            return f"{order.number}: {held} already locked"
        if order.quantity > self.stock:
            await ctx.fail(f"{order.number}: only {self.stock} in stock, {order.quantity} asked")
            return None
        self.stock -= order.quantity
        self.locks[order.number] = order.quantity
        self.bookings[order.number] += 1
        self.report(NAME, f"{order.number}: locked {order.quantity}, {self.stock} left")
        return f"{order.number}: {order.quantity} locked"

    async def _release(self, ctx: TaskContext) -> str | None:
        order = parse_order(ctx.message.text)
        if order is None:
            await ctx.reject(f"no order number (ORD-...) in {ctx.message.text!r}")
            return None
        await asyncio.sleep(self.work_seconds)
        held = self.locks.pop(order.number, None)
        if held is None:
            self.report(NAME, f"{order.number}: release: nothing locked, nothing to release")
            return f"{order.number}: nothing to release"
        self.stock += held
        self.releases[order.number] += 1
        self.report(NAME, f"{order.number}: released {held}, {self.stock} free")
        return f"{order.number}: {held} released"

    async def _canceled(self, ctx: TaskContext) -> None:
        order = parse_order(ctx.message.text)
        number = order.number if order else "?"
        self.cancels[number] += 1
        self.report(NAME, f"{number}: task {ctx.task_id} canceled, nothing locked")


def _verb(message: Message) -> str:
    """``release ...`` releases; every other message is a lock."""
    return "release" if message.text.strip().lower().startswith("release") else "lock"


agent = InventoryAgent().agent
