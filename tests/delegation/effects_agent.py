"""A peer for ``peerwire serve`` whose effects outlive it: every booking and release is one
line appended (and fsync'd) to the file ``$PEER_EFFECTS``, so a test counts them from the
peer's own log even across a SIGSTOP."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from peerwire import Agent, TaskContext

agent = Agent("Effects peer", description="Books and releases, logging each effect")


@agent.skill()
async def handle(ctx: TaskContext) -> str:
    verb, _, arg = ctx.message.text.partition(" ")
    if verb == "ping":
        return "pong"
    if verb == "slowbook":  # answers at once (return_immediately), books a moment later
        await ctx.start_work(f"booking {arg}")
        await asyncio.sleep(1.0)
        verb = "book"
    if verb in ("book", "release"):
        _append(f"{verb} {arg}")
        return f"{verb} {arg} done"
    raise ValueError(f"unknown verb {verb!r}")


def _append(line: str) -> None:
    with Path(os.environ["PEER_EFFECTS"]).open("a", encoding="utf-8") as log:
        log.write(line + "\n")
        log.flush()
        os.fsync(log.fileno())
