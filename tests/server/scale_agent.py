"""The agent the scale-out tests run in ``peerwire serve`` and ``peerwire worker`` processes.

Handlers run in other processes, so the test steers them through the machine's Redis, under
the key prefix in ``PEERWIRE_SCALE_PREFIX``: ``hold`` waits until the test sets
``{prefix}:release:{task_id}``; the ``forever`` skill's cancel hook records which process
ran it in ``{prefix}:canceled:{task_id}``. Every handler says which process runs it.
``secure_agent`` (served with ``--auth scale_agent:AUTH``) books for the caller its
credential names, before and after a question (which a principal granted ``approve`` may
answer too), then holds as ``hold`` does.
"""

from __future__ import annotations

import asyncio
import os

from redis.asyncio import Redis

from peerwire import Agent, TaskContext
from peerwire.security import APIKeyVerifier, Principal
from peerwire.types import APIKeySecurityScheme, SecurityRequirement, SecurityScheme, StringList

PREFIX = os.environ.get("PEERWIRE_SCALE_PREFIX", "pwtest_scale")
REDIS_URL = os.environ.get("PEERWIRE_SCALE_REDIS", "redis://127.0.0.1:6379")
HOLD_S = 60.0
POLL_S = 0.1

agent = Agent("Scaler", description="Holds tasks until a test lets them go", on_restart="resume")
failing_agent = Agent("Scaler", description="Fails tasks whose worker died", on_restart="fail")
_clients: list[Redis] = []


def redis() -> Redis:
    """One client per process (a worker or replica runs one event loop)."""
    if not _clients:
        _clients.append(Redis.from_url(REDIS_URL))
    return _clients[0]


def where() -> str:
    return f"pid {os.getpid()}"


async def hold(ctx: TaskContext) -> str:
    """WORKING (saying where), then wait for the release key, then complete."""
    await ctx.start_work(f"running on {where()}")
    await _until_released(ctx)
    return f"done on {where()}"


async def _until_released(ctx: TaskContext) -> None:
    key = f"{PREFIX}:release:{ctx.task_id}"
    # Bounded polling: a few held tasks at a time, so a few Redis reads per second each.
    for _ in range(round(HOLD_S / POLL_S)):
        if await redis().exists(key):
            return
        await asyncio.sleep(POLL_S)
    raise TimeoutError(f"nobody released {ctx.task_id} within {HOLD_S:g} s")


def _name(ctx: TaskContext) -> str:
    return str(ctx.caller.principal.claims.get("name", "?"))


async def book(ctx: TaskContext) -> None:
    """Quotes and books for the caller its credential names; holds before completing."""
    await ctx.add_artifact(f"quote for {_name(ctx)}")
    nights = await ctx.ask("How many nights?")
    await ctx.update(f"running on {where()}")
    await ctx.add_artifact(f"booked {nights.text} nights for {_name(ctx)}")
    await _until_released(ctx)
    await ctx.complete(f"done on {where()}")


async def chat(ctx: TaskContext) -> str:
    """Asks for a name, then greets it."""
    await ctx.start_work(f"running on {where()}")
    answer = await ctx.ask("Who is asking?")
    return f"hello {answer.text} from {where()}"


async def echo(text: str) -> str:
    """Answers at once: for measuring the path itself."""
    return text


async def forever(ctx: TaskContext) -> str:
    """Works until canceled (or a minute passes)."""
    await ctx.start_work(f"running on {where()}")
    await asyncio.sleep(HOLD_S)
    return "nobody canceled me"


async def forever_canceled(ctx: TaskContext) -> None:
    await redis().set(f"{PREFIX}:canceled:{ctx.task_id}", where(), ex=600)


AUTH = {
    "key": APIKeyVerifier(
        {
            "k-alice": Principal("alice", scopes=frozenset({"book"}), claims={"name": "Alice"}),
            "k-mona": Principal("mona", scopes=frozenset({"approve"}), claims={"name": "Mona"}),
        }
    )
}
secure_agent = Agent(
    "Scaler",
    description="Books for the caller its credential names",
    on_restart="resume",
    security_schemes={
        "key": SecurityScheme(
            api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-API-Key")
        )
    },
    security_requirements=[SecurityRequirement(schemes={"key": StringList()})],
)
secure_agent.skill("book", answerable_by="approve")(book)

for _agent in (agent, failing_agent):
    _agent.skill("hold")(hold)
    _agent.skill("chat")(chat)
    _agent.skill("echo")(echo)
    _agent.skill("forever")(forever)
    _agent.on_cancel("forever")(forever_canceled)
