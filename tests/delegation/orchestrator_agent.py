"""The orchestrator ``peerwire serve`` runs in the restart test: a fan-out of three bookings
to the peer at ``$PEER_URL``, replayed after a SIGKILL (``on_restart="resume"``)."""

from __future__ import annotations

import os

from peerwire import Agent, TaskContext
from peerwire.delegation import Call, Completed

agent = Agent("Orchestrator", on_restart="resume")


@agent.skill()
async def order(ctx: TaskContext) -> str:
    peer = os.environ["PEER_URL"]
    outcomes = await ctx.delegate_all(
        [Call(peer, f"hold {item}", key=f"book-{item}") for item in ("a", "b", "c")],
        deadline=120,
    )
    failed = [o.describe() for o in outcomes if not isinstance(o, Completed)]
    if failed:
        raise RuntimeError("; ".join(failed))
    return ", ".join(o.text for o in outcomes if isinstance(o, Completed))
