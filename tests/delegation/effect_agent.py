"""A downstream agent for ``peerwire serve`` that records every effect in its own fsync'd
log (``$EFFECT_LOG``), so a test counts what it did across its own SIGKILLs.

``book X`` records ``book X`` and then works on (until killed); ``quick X`` records
``book X`` and completes; ``release X`` records ``release X``, or fails (recording nothing)
while the file ``$FAIL_RELEASES`` exists. The default restart policy (``fail``) applies."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from peerwire import Agent, TaskContext

agent = Agent("Effect agent", description="Books and releases, logging each effect")


def _record(effect: str) -> None:
    with open(os.environ["EFFECT_LOG"], "a", encoding="utf-8") as log:
        log.write(effect + "\n")
        log.flush()
        os.fsync(log.fileno())


def _refusing() -> bool:
    return Path(os.environ["FAIL_RELEASES"]).exists()


@agent.skill()
async def handle(ctx: TaskContext) -> str:
    verb, _, arg = ctx.message.text.partition(" ")
    if verb in ("book", "quick"):
        _record(f"book {arg}")
        if verb == "quick":
            return f"booked {arg}"
        await ctx.start_work(f"booked {arg}, confirming")
        await asyncio.sleep(300)
        return f"booked {arg}"
    if verb == "release":
        if _refusing():
            raise RuntimeError(f"release of {arg} failed")
        _record(f"release {arg}")
        return f"released {arg}"
    raise ValueError(f"unknown verb {verb!r}")
