"""The Logistics Agent: books a carrier for an order, idempotent by order number.

``book ORD-1001: 3 widgets`` books a carrier and completes with the booking ("ORD-1001:
booked with Rapid Freight, tracking RF-1001"). Booking an order that is booked already books
nothing more and answers with that booking. ``slow carrier`` in the order makes it wait for
the carriers' quotes first (``slow_seconds``; a cancel meanwhile books nothing);
``no carrier`` fails the task ("no carrier serves ...").

``bookings`` counts the bookings made per order (never more than one), ``requests`` the book
tasks received. Serve it on its own with
``peerwire serve peerwire.samples.fulfillment.logistics:agent``.
"""

from __future__ import annotations

import asyncio
from collections import Counter

from peerwire import Agent, TaskContext

from .orders import Report, parse_order, quiet

__all__ = ["LogisticsAgent", "agent"]

NAME = "Logistics Agent"
CARRIER = "Rapid Freight"


class LogisticsAgent:
    """The agent (``.agent``), its bookings, and what it did (``Counter``\\ s by order
    number)."""

    def __init__(
        self, *, slow_seconds: float = 10.0, work_seconds: float = 0.0, report: Report = quiet
    ) -> None:
        self.slow_seconds = slow_seconds
        self.work_seconds = work_seconds
        """How long each booking takes (the demo slows the agents down so each step shows)."""
        self.report = report
        self.booked: dict[str, str] = {}
        """The booking of each order number."""
        self.requests: Counter[str] = Counter()
        self.bookings: Counter[str] = Counter()
        self.cancels: Counter[str] = Counter()
        self.agent = Agent(
            NAME,
            description="Books a carrier for an order, once per order number",
            default_input_modes=["text/plain"],
            default_output_modes=["text/plain"],
        )
        self.agent.skill(
            "book",
            description="Books a carrier for an order: 'book ORD-1001: 3 widgets'.",
            tags=["orders", "logistics"],
            examples=["book ORD-1001: 3 widgets"],
        )(self._book)
        self.agent.on_cancel("book")(self._canceled)

    async def _book(self, ctx: TaskContext) -> str | None:
        order = parse_order(ctx.message.text)
        if order is None:
            await ctx.reject(f"no order number (ORD-...) in {ctx.message.text!r}")
            return None
        self.requests[order.number] += 1
        self.report(NAME, f"{order.number}: book a carrier (task {ctx.task_id})")
        await asyncio.sleep(self.work_seconds)
        if order.says("no carrier"):
            self.report(NAME, f"{order.number}: no carrier available, failing")
            await ctx.fail(f"no carrier serves {order.number}'s destination")
            return None
        if order.says("slow carrier"):
            await ctx.start_work(f"waiting for the carriers' quotes for {order.number}")
            await asyncio.sleep(self.slow_seconds)  # a cancel arrives here: nothing booked
        # No await from here on: two book tasks for one order cannot both book it.
        booking = self.booked.get(order.number)
        if booking is not None:
            self.report(NAME, f"{order.number}: already booked, nothing booked")
            return booking
        booking = f"{order.number}: booked with {CARRIER}, tracking RF-{order.number[4:]}"
        self.booked[order.number] = booking
        self.bookings[order.number] += 1
        self.report(NAME, f"{order.number}: booked with {CARRIER}")
        return booking

    async def _canceled(self, ctx: TaskContext) -> None:
        order = parse_order(ctx.message.text)
        number = order.number if order else "?"
        self.cancels[number] += 1
        self.report(NAME, f"{number}: task {ctx.task_id} canceled, nothing booked")


agent = LogisticsAgent().agent
