"""The agent ``test_stream_end`` runs in a ``peerwire serve`` process: ``work`` works until the
shutdown grace is over (then the task fails), ``ask`` waits for input."""

from __future__ import annotations

import asyncio

from peerwire import Agent, TaskContext

agent = Agent("Stream ender", description="Tasks that outlast a shutdown's first second")


@agent.skill()
async def work(ctx: TaskContext) -> str:
    """Works for longer than any test waits; the shutdown grace ends it."""
    await asyncio.sleep(3600)
    return "done"


@agent.skill()
async def ask(ctx: TaskContext) -> str:
    """Asks for input, then returns it."""
    answer = await ctx.ask("which?")
    return answer.text
