"""The Order Fulfillment Agent: fulfils an order by delegating to three other agents.

For ``ORD-1001: 3 widgets, 240 EUR`` it:

1. asks the Risk Agent (``check ...``). When that agent asks for a manual review, this task
   asks its own caller the same question (INPUT_REQUIRED), and passes the answer on to the
   Risk Agent's task;
2. then, at once (``ctx.delegate_all``), locks the stock at the Inventory Agent
   (``lock ...``) and books a carrier at the Logistics Agent (``book ...``), each within its
   own time limit. The lock carries its undo, ``release ORD-1001``, registered before
   anything is sent (``Call(..., compensate=Undo(...))``);
3. completes with a ``fulfilment`` artifact naming the lock and the booking.

Everything else is peerwire's delegation layer (docs/DELEGATION.md): when the booking fails
or times out, the order fails and the release runs (compensation); when the order is
canceled, every delegation still open is canceled at its agent first (cascading cancel); and
when this agent's process dies mid-order, ``on_restart="resume"`` runs the handler again on
restart, which gets the recorded delegations back by their keys (``risk``, ``lock``,
``book``) and follows them on: nothing is sent twice.

Serve it next to the three others::

    peerwire serve peerwire.samples.fulfillment.risk:agent --port 8011
    peerwire serve peerwire.samples.fulfillment.inventory:agent --port 8012
    peerwire serve peerwire.samples.fulfillment.logistics:agent --port 8013
    RISK_URL=http://127.0.0.1:8011 INVENTORY_URL=http://127.0.0.1:8012 \\
    LOGISTICS_URL=http://127.0.0.1:8013 peerwire serve \\
        peerwire.samples.fulfillment.orchestrator:agent --port 8010 --store sqlite:orders.db
    peerwire send http://127.0.0.1:8010 "ORD-1001: 3 widgets, 240 EUR"

or ``python -m peerwire.samples.fulfillment.orchestrator --risk URL --inventory URL
--logistics URL --store sqlite:orders.db`` (it prints ``listening on URL`` once it serves).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from peerwire import Agent, TaskContext, serve
from peerwire.delegation import Call, Completed, Rejected, Stalled, Undo
from peerwire.errors import PeerwireError
from peerwire.server import Listening

from .orders import parse_order

__all__ = ["Limits", "OrderFailed", "agent", "main", "make_agent"]

NAME = "Order Fulfillment Agent"


class OrderFailed(PeerwireError):
    """Raised by the handler when a step did not complete: the task fails with its text
    (peerwire cancels what is still open and makes the release due *before* the failure is
    recorded, as it would for ``ctx.fail()``)."""


@dataclass(frozen=True)
class Limits:
    """Seconds each delegation may spend SUBMITTED or WORKING (a question waiting for a
    person does not count); past it, it is canceled at its agent and counts as failed."""

    risk: float = 30.0
    inventory: float = 10.0
    logistics: float = 10.0
    both: float = 20.0
    """The stock lock and the carrier booking together."""


def make_agent(
    risk_url: str, inventory_url: str, logistics_url: str, *, limits: Limits | None = None
) -> Agent:
    """An orchestrator delegating to the agents at these URLs, within ``limits``."""
    limits = limits or Limits()
    agent = Agent(
        NAME,
        description="Fulfils orders: a risk check, then the stock and a carrier at once",
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        # After a crash the handler runs again: its delegations come back by their keys.
        on_restart="resume",
    )

    @agent.skill(
        description="Fulfils an order: 'ORD-1001: 3 widgets, 240 EUR'.",
        tags=["orders", "delegation"],
        examples=["ORD-1001: 3 widgets, 240 EUR", "ORD-1002: 1 widget, review"],
    )
    async def fulfil(ctx: TaskContext) -> None:
        order = parse_order(ctx.message.text)
        if order is None:
            await ctx.reject(f"no order number (ORD-...) in {ctx.message.text!r}")
            return
        line = order.text

        await ctx.start_work(f"{order.number}: asking the Risk Agent")
        risk = await ctx.delegate(risk_url, f"check {line}", key="risk", deadline=limits.risk)
        outcome = await risk.result()
        while isinstance(outcome, Stalled):
            # The Risk Agent waits for a person: ask ours, answer on its task.
            answer = await ctx.ask(f"The Risk Agent asks: {outcome.question_text}")
            await risk.answer(answer)
            outcome = await risk.result()
        if isinstance(outcome, Rejected):
            await ctx.reject(f"{order.number}: {outcome.reason}")
            return
        if not isinstance(outcome, Completed):
            raise OrderFailed(
                f"{order.number}: the risk check did not end well: {outcome.describe()}"
            )

        await ctx.update(f"{order.number}: approved; locking stock and booking a carrier")
        # The lock's undo is registered before anything is sent: whatever happens from here
        # (a failed booking, a time limit, a cancel, a crash), the stock is given back.
        release = Undo(inventory_url, f"release {order.number}", key="release")
        stock, carrier = await ctx.delegate_all(
            [
                Call(
                    inventory_url,
                    f"lock {line}",
                    key="lock",
                    deadline=limits.inventory,
                    compensate=release,
                ),
                Call(logistics_url, f"book {line}", key="book", deadline=limits.logistics),
            ],
            deadline=limits.both,
            on_failure="cancel_rest",
        )
        if not isinstance(stock, Completed) or not isinstance(carrier, Completed):
            failed = [o for o in (stock, carrier) if not isinstance(o, Completed)]
            # The task fails with this reason; the registered release runs (peerwire does).
            raise OrderFailed(f"{order.number}: " + "; ".join(o.describe() for o in failed))
        await ctx.add_artifact(
            f"{stock.text}\n{carrier.text}",
            name="fulfilment",
            artifact_id="fulfilment",
            last_chunk=True,
        )
        # Returning completes the order; the release is discarded before COMPLETED is
        # recorded, so a caller who sees the order done sees its ledger settled.

    return agent


agent = make_agent(
    os.environ.get("RISK_URL", "http://127.0.0.1:8011"),
    os.environ.get("INVENTORY_URL", "http://127.0.0.1:8012"),
    os.environ.get("LOGISTICS_URL", "http://127.0.0.1:8013"),
)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m peerwire.samples.fulfillment.orchestrator",
        description="Serve the Order Fulfillment Agent.",
    )
    parser.add_argument("--risk", required=True, help="the Risk Agent's URL")
    parser.add_argument("--inventory", required=True, help="the Inventory Agent's URL")
    parser.add_argument("--logistics", required=True, help="the Logistics Agent's URL")
    parser.add_argument("--store", default="memory", help="memory, sqlite:PATH, postgresql://")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    for step, default in (("inventory", Limits.inventory), ("logistics", Limits.logistics)):
        parser.add_argument(
            f"--{step}-limit", type=float, default=default, help=f"seconds (default {default:g})"
        )
    parser.add_argument("--log-level", default="warning")
    options = parser.parse_args(argv)
    limits = Limits(inventory=options.inventory_limit, logistics=options.logistics_limit)

    def ready(listening: Listening) -> None:
        # One line a parent process can wait for (the demo does).
        print(f"listening on {listening.url}", flush=True)

    serve(
        make_agent(options.risk, options.inventory, options.logistics, limits=limits),
        host=options.host,
        port=options.port,
        store=options.store,
        grpc=False,
        log_level=options.log_level,
        on_ready=ready,
    )


if __name__ == "__main__":
    main(sys.argv[1:])
