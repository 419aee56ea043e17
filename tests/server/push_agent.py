"""The agent the push tests serve, in process and with ``peerwire serve`` in a subprocess.

``steps`` works through a known sequence of events (each one a notification): WORKING, a
report in three chunks, a status update, a second artifact, COMPLETED. ``question`` waits for
input first, so a test can register a webhook before the rest of its events happen.
"""

from __future__ import annotations

from typing import Any

from peerwire import Agent, TaskContext

CHUNKS = ("one ", "two ", "three")


async def work_through_steps(ctx: TaskContext) -> None:
    artifact_id = await ctx.add_artifact(CHUNKS[0], name="report")
    for chunk in CHUNKS[1:]:
        await ctx.add_artifact(
            chunk, artifact_id=artifact_id, append=True, last_chunk=chunk == CHUNKS[-1]
        )
    await ctx.update("halfway")
    await ctx.add_artifact({"chunks": len(CHUNKS)}, name="stats")
    await ctx.complete("done")


def build() -> Agent:
    agent = Agent("Pusher", description="Emits a known sequence of events")

    @agent.skill()
    async def steps(ctx: TaskContext) -> None:
        """WORKING, three chunks, an update, a second artifact, COMPLETED."""
        await ctx.start_work()
        await work_through_steps(ctx)

    @agent.skill()
    async def question(ctx: TaskContext) -> None:
        """Asks first; the steps follow the answer."""
        await ctx.ask("Which report?")
        await work_through_steps(ctx)

    return agent


agent = build()
# What the steps skill pushes, in order: (StreamResponse member, what identifies it).
STEPS = [
    ("statusUpdate", "TASK_STATE_WORKING"),
    ("artifactUpdate", "one "),
    ("artifactUpdate", "two "),
    ("artifactUpdate", "three"),
    ("statusUpdate", "TASK_STATE_WORKING"),
    ("artifactUpdate", "stats"),
    ("statusUpdate", "TASK_STATE_COMPLETED"),
]


def step_of(notification: dict[str, Any]) -> tuple[str, str]:
    """What a notification body (a StreamResponse as JSON) is, as ``STEPS`` names it."""
    ((kind, event),) = notification.items()
    if kind == "statusUpdate":
        return kind, event["status"]["state"]
    part = event["artifact"]["parts"][0]
    return kind, part.get("text", event["artifact"].get("name", ""))
