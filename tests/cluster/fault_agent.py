"""The agent the fault suite runs in ``peerwire serve`` and ``peerwire worker`` processes.

The suite kills Redis, so the agent is steered and observed through files rather than Redis:
the directory in ``PEERWIRE_FAULT_DIR`` (the harness's ``Cluster.files``) holds

- ``release/{task_id}`` (or ``release/all``): lets a ``hold`` handler finish;
- ``runs/{task_id}``: one line per handler run, ``start PID`` as it starts, ``end PID`` as it
  leaves (normally, by an exception or cancelled); a SIGKILLed run has no ``end``;
- ``canceled/{task_id}``: one line ``PID`` per ``on_cancel`` hook run.

Skills (routed by ``message.metadata["skill"]``; the agent resumes a task whose worker died,
``failing_agent`` fails it):

- ``hold``: WORKING "running on pid N", waits for its release file, completes "done on pid N".
- ``steps``: WORKING, then ``count`` artifact chunks (text ``"i,"``, appended to one artifact)
  ``pause`` seconds apart (the message text, ``"count pause"``, default ``"20 0.05"``),
  then completes.
- ``marks``: as ``steps``, but each of the ``count`` events is an artifact of its own (id
  ``PID-i``): nothing a later run writes replaces what an earlier one wrote, so the finished
  task holds every event any run committed (the no-lost-events test compares against it).
- ``forever``: WORKING, then works until canceled (or a few minutes pass); its cancel hook
  writes ``canceled/{task_id}``.
- ``chat``: asks "Who is asking?", completes "hello NAME".
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

from peerwire import Agent, TaskContext

FILES = Path(os.environ.get("PEERWIRE_FAULT_DIR", "."))
HOLD_S = 120.0
POLL_S = 0.05

agent = Agent("Faulty", description="Survives its engines failing", on_restart="resume")
failing_agent = Agent("Faulty", description="Fails tasks whose worker died", on_restart="fail")


def where() -> str:
    return f"pid {os.getpid()}"


def _append(kind: str, task_id: str, line: str) -> None:
    folder = FILES / kind
    folder.mkdir(parents=True, exist_ok=True)
    # One short write in append mode: lines from several processes never interleave.
    with (folder / task_id).open("a") as file:
        file.write(line + "\n")


@contextlib.asynccontextmanager
async def recorded(ctx: TaskContext) -> AsyncIterator[None]:
    _append("runs", ctx.task_id, f"start {os.getpid()}")
    try:
        yield
    finally:
        _append("runs", ctx.task_id, f"end {os.getpid()}")


def released(task_id: str) -> bool:
    return (FILES / "release" / task_id).exists() or (FILES / "release" / "all").exists()


async def hold(ctx: TaskContext) -> str:
    async with recorded(ctx):
        await ctx.start_work(f"running on {where()}")
        # Bounded polling of one file: cheap, and Redis may be down while we wait.
        for _ in range(round(HOLD_S / POLL_S)):
            if released(ctx.task_id):
                return f"done on {where()}"
            await asyncio.sleep(POLL_S)
        raise TimeoutError(f"nobody released {ctx.task_id} within {HOLD_S:g} s")


async def steps(ctx: TaskContext) -> str:
    async with recorded(ctx):
        count_text, _, pause_text = (ctx.message.text or "20 0.05").partition(" ")
        count, pause = int(count_text or 20), float(pause_text or 0.05)
        await ctx.start_work(f"running on {where()}")
        artifact_id = f"steps-{ctx.task_id}"
        for i in range(count):
            await ctx.add_artifact(
                f"{i},",
                artifact_id=artifact_id,
                name="steps",
                append=i > 0,
                last_chunk=i == count - 1,
            )
            await asyncio.sleep(pause)
        return f"done on {where()}"


async def marks(ctx: TaskContext) -> str:
    async with recorded(ctx):
        count_text, _, pause_text = (ctx.message.text or "20 0.05").partition(" ")
        count, pause = int(count_text or 20), float(pause_text or 0.05)
        await ctx.start_work(f"running on {where()}")
        for i in range(count):
            await ctx.add_artifact(f"{i}", artifact_id=f"{os.getpid()}-{i}", name="mark")
            await asyncio.sleep(pause)
        return f"done on {where()}"


async def forever(ctx: TaskContext) -> str:
    async with recorded(ctx):
        await ctx.start_work(f"running on {where()}")
        await asyncio.sleep(HOLD_S)
        return "nobody canceled me"


async def forever_canceled(ctx: TaskContext) -> None:
    _append("canceled", ctx.task_id, str(os.getpid()))


async def chat(ctx: TaskContext) -> str:
    async with recorded(ctx):
        await ctx.start_work(f"running on {where()}")
        answer = await ctx.ask("Who is asking?")
        return f"hello {answer.text} from {where()}"


for _agent in (agent, failing_agent):
    _agent.skill("hold")(hold)
    _agent.skill("steps")(steps)
    _agent.skill("marks")(marks)
    _agent.skill("forever")(forever)
    _agent.on_cancel("forever")(forever_canceled)
    _agent.skill("chat")(chat)


# Delegation (tests/delegation/test_worker_takeover.py): three bookings at the peer named by
# ``PEER_URL``, fanned out; the worker that takes the task over from a dead holder runs the
# handler again and must find them in the ledger instead of booking again.
delegating_agent = Agent("Delegating", description="Books through a peer", on_restart="resume")


@delegating_agent.skill("order")
async def order(ctx: TaskContext) -> str:
    from peerwire.delegation import Call, Completed

    async with recorded(ctx):
        peer = os.environ["PEER_URL"]
        outcomes = await ctx.delegate_all(
            [Call(peer, f"hold {item}", key=f"book-{item}") for item in ("a", "b", "c")],
            deadline=120,
        )
        failed = [o.describe() for o in outcomes if not isinstance(o, Completed)]
        if failed:
            raise RuntimeError("; ".join(failed))
        return f"{', '.join(o.text for o in outcomes if isinstance(o, Completed))} on {where()}"
