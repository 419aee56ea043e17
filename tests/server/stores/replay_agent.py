"""The agent the replay tests serve with ``peerwire serve --auth`` in a subprocess, then kill.

``book`` reads the caller's claims before its question and after it, adding an artifact each
time without an ``artifact_id``; a task whose first message says ``stall`` then keeps working
until it runs again for the same task (a marker file per task in ``RESTART_MARKERS``), so the
test can kill the process while the task is WORKING. ``AUTH`` is what ``--auth`` loads.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from peerwire import Agent, TaskContext
from peerwire.security import APIKeyVerifier, Principal
from peerwire.types import APIKeySecurityScheme, SecurityRequirement, SecurityScheme, StringList

AUTH = {
    "key": APIKeyVerifier(
        {"k-alice": Principal("alice", scopes=frozenset({"book"}), claims={"name": "Alice"})}
    )
}

agent = Agent(
    "Booker",
    description="Books rooms for the caller named in its credential",
    on_restart="resume",
    security_schemes={
        "key": SecurityScheme(
            api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-API-Key")
        )
    },
    security_requirements=[SecurityRequirement(schemes={"key": StringList()})],
)


def _name(ctx: TaskContext) -> str:
    return str(ctx.caller.principal.claims.get("name", "?"))


@agent.skill()
async def book(ctx: TaskContext) -> None:
    await ctx.add_artifact(f"quote for {_name(ctx)} ({sorted(ctx.caller.scopes)})")
    nights = await ctx.ask("How many nights?")
    await ctx.add_artifact(f"booked {nights.text} nights for {_name(ctx)}")
    marker = Path(os.environ["RESTART_MARKERS"]) / ctx.task_id
    if ctx.message.text == "stall" and not marker.exists():
        marker.touch()
        await anyio.sleep_forever()  # killed here
    await ctx.complete("booked")
