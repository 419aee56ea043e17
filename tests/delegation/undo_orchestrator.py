"""The orchestrator ``peerwire serve`` runs in the undo-recovery test: books at
``$PEER_URL`` with a release as its undo, then fails, so the release is due."""

from __future__ import annotations

import os

from peerwire import Agent, TaskContext
from peerwire.delegation import Undo

agent = Agent("Undo orchestrator", on_restart="resume")


@agent.skill()
async def order(ctx: TaskContext) -> str:
    peer = os.environ["PEER_URL"]
    item = ctx.message.text
    booked = await ctx.delegate(
        peer, f"quick {item}", key="book", compensate=Undo(peer, f"release {item}")
    )
    outcome = await booked.result()
    raise RuntimeError(f"the order fails after its booking ({outcome.describe()})")
