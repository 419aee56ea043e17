"""The Risk Agent: approves an order, or asks a person to review it first (INPUT_REQUIRED).

``check ORD-1001: 3 widgets, 240 EUR`` completes with ``approved: ...`` when the order is within
the value limit (``review_above``, 1,000 EUR by default). Above it, or when the order says
``review``, the task asks "ORD-... needs a manual review: approve it? (yes/no)" and waits; an
answer on the same task that starts with "yes" (or "approve") completes it, anything else
rejects it ("declined by manual review"). Serve it on its own with
``peerwire serve peerwire.samples.fulfillment.risk:agent``.
"""

from __future__ import annotations

import asyncio
from collections import Counter

from peerwire import Agent, TaskContext

from .orders import Report, parse_order, quiet

__all__ = ["RiskAgent", "agent"]

NAME = "Risk Agent"
_YES = ("yes", "approve", "ok")


class RiskAgent:
    """The agent (``.agent``) and what it did: ``checks`` and ``reviews`` by order number."""

    def __init__(
        self, *, review_above: float = 1000.0, work_seconds: float = 0.0, report: Report = quiet
    ) -> None:
        self.review_above = review_above
        self.work_seconds = work_seconds
        """How long each check takes (the demo slows the agents down so each step shows)."""
        self.report = report
        self.checks: Counter[str] = Counter()
        self.reviews: Counter[str] = Counter()
        """Orders that needed a person, by number."""
        self.cancels: Counter[str] = Counter()
        self.agent = Agent(
            NAME,
            description="Approves orders; asks for a manual review above a value limit",
            default_input_modes=["text/plain"],
            default_output_modes=["text/plain"],
        )
        self.agent.skill(
            "check",
            description="Checks an order's risk: 'check ORD-1001: 3 widgets, 240 EUR'.",
            tags=["orders", "risk"],
            examples=["check ORD-1001: 3 widgets, 240 EUR"],
        )(self._check)
        self.agent.on_cancel("check")(self._canceled)

    async def _check(self, ctx: TaskContext) -> str | None:
        order = parse_order(ctx.message.text)
        if order is None:
            await ctx.reject(f"no order number (ORD-...) in {ctx.message.text!r}")
            return None
        self.checks[order.number] += 1
        await asyncio.sleep(self.work_seconds)
        over = order.value > self.review_above
        if not over and not order.says("review"):
            self.report(NAME, f"{order.number}: {order.value:g} EUR, within the limit: approved")
            return f"approved: {order.number} is within the limit"
        self.reviews[order.number] += 1
        why = f"{order.value:g} EUR is over {self.review_above:g} EUR" if over else "it asks"
        self.report(NAME, f"{order.number}: {why}, asking for a manual review")
        # ask() suspends the task (INPUT_REQUIRED) until the answer arrives on it.
        answer = (
            await ctx.ask(f"{order.number} needs a manual review ({why}): approve it? (yes/no)")
        ).text
        if answer.strip().lower().startswith(_YES):
            self.report(NAME, f"{order.number}: approved by manual review ({answer.strip()!r})")
            return f"approved: {order.number} after manual review ({answer.strip()})"
        self.report(NAME, f"{order.number}: declined by manual review ({answer.strip()!r})")
        await ctx.reject(f"{order.number} was declined by manual review: {answer.strip()}")
        return None

    async def _canceled(self, ctx: TaskContext) -> None:
        order = parse_order(ctx.message.text)
        number = order.number if order else "?"
        self.cancels[number] += 1
        self.report(NAME, f"{number}: task {ctx.task_id} canceled")


agent = RiskAgent().agent
