"""Agents the restart tests serve with ``peerwire serve`` in a subprocess, then kill.

``agent`` fails tasks that were working when the process died (the default policy);
``resume_agent`` re-runs their handlers. The skills leave tasks in every state: ``chunks``
completes with chunked artifacts, ``explode`` fails, ``question`` waits for input,
``credentials`` waits for auth, and ``grind`` and ``stall`` keep working until the process dies.

``stall`` finishes only when it runs again for a task it has already started (a re-run after a
restart): it leaves a marker file per task in the directory named by ``RESTART_MARKERS``.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from peerwire import Agent, TaskContext

STORY = ("alpha ", "beta ", "gamma ", "delta")


def _markers() -> Path:
    return Path(os.environ["RESTART_MARKERS"])


def _declare(agent: Agent) -> Agent:
    @agent.skill()
    async def chunks(ctx: TaskContext) -> None:
        """A story in four chunks, a second artifact, then done."""
        artifact_id = await ctx.add_artifact(STORY[0], name="story")
        for chunk in STORY[1:]:
            await ctx.add_artifact(
                chunk, artifact_id=artifact_id, append=True, last_chunk=chunk == STORY[-1]
            )
        await ctx.add_artifact({"words": len(STORY)}, name="stats")
        await ctx.complete("told")

    @agent.skill()
    async def explode(text: str) -> str:
        raise RuntimeError(f"cannot {text}")

    @agent.skill()
    async def question(ctx: TaskContext) -> str:
        answer = await ctx.ask("Which term?")
        return f"defined {answer.text}"

    @agent.skill()
    async def credentials(ctx: TaskContext) -> None:
        await ctx.require_auth("Sign in at https://example.com/login first")

    @agent.skill()
    async def grind(ctx: TaskContext) -> None:
        await ctx.add_artifact("first page", artifact_id="pages", name="pages")
        await anyio.sleep_forever()

    @agent.skill()
    async def stall(ctx: TaskContext) -> str:
        answer = await ctx.ask("How long?")
        await ctx.update(f"working on {answer.text}")
        await ctx.add_artifact("partial", artifact_id="progress", name="progress")
        marker = _markers() / ctx.task_id
        if not marker.exists():
            marker.touch()
            await anyio.sleep_forever()
        return f"resumed {answer.text}"

    return agent


agent = _declare(Agent("Restartable", description="Leaves tasks in every state"))
resume_agent = _declare(
    Agent("Resumable", description="Re-runs interrupted work", on_restart="resume")
)
