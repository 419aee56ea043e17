"""Peer agents the delegation tests call: real peerwire agents served on loopback.

``PeerAgent`` understands a few verbs (``book X``, ``slow X``, ``ask X``, ``fail X``,
``release X``) and counts what it did, so a test can assert on the peer's side: each
booking counted once, a release received, a task CANCELED there.
"""

from __future__ import annotations

import asyncio
from collections import Counter

from peerwire import Agent, Client, Task, TaskContext, TaskState

__all__ = ["PeerAgent", "remote_state", "wait_for"]


class PeerAgent:
    def __init__(self, name: str = "Peer") -> None:
        self.bookings: Counter[str] = Counter()
        self.releases: Counter[str] = Counter()
        self.release_failures = 0
        """How many releases to fail before one succeeds."""
        self.cancels: Counter[str] = Counter()
        self.gate = asyncio.Event()
        """What ``hold X`` tasks wait for before they book."""
        self.received: list[str] = []
        """Every message that started a task here, in order."""
        self.agent = Agent(name, description="A peer that books, releases and stalls")
        self.agent.skill("handle")(self._handle)
        self.agent.on_cancel("handle")(self._on_cancel)

    async def _handle(self, ctx: TaskContext) -> str:
        self.received.append(ctx.message.text)
        verb, _, arg = ctx.message.text.partition(" ")
        if verb == "book":
            self.bookings[arg] += 1
            return f"booked {arg}"
        if verb == "hold":
            self.bookings[arg] += 1
            await ctx.start_work(f"holding {arg}")
            await self.gate.wait()
            return f"booked {arg}"
        if verb == "slow":
            await ctx.start_work(f"working on {arg}")
            await asyncio.sleep(120)
            return f"slow {arg} done"
        if verb == "ask":
            answer = await ctx.ask(f"approve {arg}?")
            return f"{arg}: {answer.text}"
        if verb == "askslow":
            await ctx.ask(f"approve {arg}?")
            await ctx.start_work(f"working on {arg}")
            await asyncio.sleep(120)
            return f"slow {arg} done"
        if verb == "fail":
            raise RuntimeError(f"cannot do {arg}")
        if verb == "release":
            if self.release_failures > 0:
                self.release_failures -= 1
                raise RuntimeError(f"release of {arg} failed")
            self.releases[arg] += 1
            return f"released {arg}"
        raise ValueError(f"unknown verb {verb!r}")

    async def _on_cancel(self, ctx: TaskContext) -> None:
        self.cancels[ctx.message.text] += 1


async def remote_state(url: str, task_id: str) -> TaskState:
    """The task's state as the peer itself has it."""
    async with Client.connect(url) as client:
        task: Task = await client.get_task(task_id)
        return task.status.state


async def wait_for(check: object, *, limit: float = 10.0, what: str = "condition") -> None:
    """Poll an async predicate until it holds (bounded in time and in count)."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + limit
    for _ in range(int(limit / 0.02) + 1):
        if await check():  # type: ignore[operator]
            return
        if loop.time() > give_up:
            break
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")
