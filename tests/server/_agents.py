"""A workbench agent for the server tests: one skill per behaviour, chosen by metadata.

Skills are routed by the default router (``message.metadata["skill"]``); ``ask_for`` builds
such a message. Handlers run in the test's own event loop (``live_server`` shares it), so a
test synchronises with them through ``Controls``: it waits until a handler has started and
releases it when it wants it to go on, with no sleeps.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio

from peerwire import Agent, Message, Part, Role, TaskContext
from peerwire.errors import IllegalTransitionError

from ._rpc import user_message

WAIT_S = 10.0


class Controls:
    """Gates and records shared between a test and the handlers it drives."""

    def __init__(self) -> None:
        self._gates: dict[str, asyncio.Event] = {}
        self._started: dict[str, asyncio.Event] = {}
        self.canceled: list[str] = []
        """Task ids whose on_cancel cleanup hook ran."""
        self.errors: list[Exception] = []
        """What handlers caught (illegal transitions)."""
        self.runs: dict[str, int] = {}
        """How many times a handler started, by task id."""

    def _event(self, events: dict[str, asyncio.Event], key: str) -> asyncio.Event:
        return events.setdefault(key, asyncio.Event())

    def release(self, key: str) -> None:
        self._event(self._gates, key).set()

    async def gate(self, key: str) -> None:
        """Handler side: say it started, then wait for the test to release ``key``."""
        self._event(self._started, key).set()
        await self._event(self._gates, key).wait()

    async def started(self, key: str) -> None:
        """Test side: wait until a handler reached the gate ``key``."""
        with anyio.fail_after(WAIT_S):
            await self._event(self._started, key).wait()

    def count_run(self, ctx: TaskContext) -> None:
        self.runs[ctx.task_id] = self.runs.get(ctx.task_id, 0) + 1


def ask_for(skill: str, text: str = "", **fields: Any) -> dict[str, Any]:
    """A user message routed to ``skill``."""
    metadata = {"skill": skill, **fields.pop("metadata", {})}
    return user_message(text, metadata=metadata, **fields)


def workbench(**agent_options: Any) -> tuple[Agent, Controls]:
    agent = Agent("Workbench", description="One skill per behaviour under test", **agent_options)
    controls = Controls()

    @agent.skill()
    async def echo(text: str) -> str:
        """Returns its text as a text artifact."""
        return text

    @agent.skill()
    async def wait(text: str, ctx: TaskContext) -> str:
        """Works until the test releases the gate named by its text."""
        controls.count_run(ctx)
        await controls.gate(text)
        return f"released {text}"

    @agent.on_cancel("wait")
    async def wait_canceled(ctx: TaskContext) -> None:
        controls.canceled.append(ctx.task_id)

    @agent.skill()
    async def progress(text: str, ctx: TaskContext) -> str:
        """Waits for its gate, then reports three steps and returns."""
        await controls.gate(text)
        for step in range(3):
            await ctx.update(f"step {step}")
        return "progressed"

    @agent.skill()
    async def ask(ctx: TaskContext) -> str:
        """Asks two questions, then returns both answers."""
        controls.count_run(ctx)
        first = await ctx.ask("first?")
        second = await ctx.ask("second?")
        return f"{first.text} + {second.text}"

    @agent.on_cancel("ask")
    async def ask_canceled(ctx: TaskContext) -> None:
        controls.canceled.append(ctx.task_id)

    @agent.skill()
    async def ask_then_note(ctx: TaskContext) -> None:
        """Asks once, adds an artifact and returns None: the runner completes the task."""
        answer = await ctx.ask("what should I note?")
        await ctx.add_artifact(f"noted {answer.text}")

    @agent.skill()
    async def busy_then_ask(text: str, ctx: TaskContext) -> str:
        """Works until released, then asks; a message sent meanwhile answers at once."""
        await controls.gate(text)
        answer = await ctx.ask("anything else?")
        return f"then {answer.text}"

    @agent.skill()
    async def needs_input(ctx: TaskContext) -> None:
        """Moves to INPUT_REQUIRED and returns: nothing of it stays in memory."""
        controls.count_run(ctx)
        if ctx.latest_message is ctx.message:
            await ctx.require_input("say more")
        else:
            await ctx.complete(f"got {ctx.latest_message.text}")

    @agent.skill()
    async def auth(text: str, ctx: TaskContext) -> None:
        """Needs authorization, gets it out of band (the gate), then finishes."""
        await ctx.require_auth("sign in at https://example.test/login")
        await controls.gate(text)
        await ctx.add_artifact("the secret", name="secret")
        await ctx.complete()

    @agent.skill()
    async def chunks(ctx: TaskContext) -> None:
        """One artifact in three chunks, then one more artifact."""
        for i in range(3):
            await ctx.add_artifact(
                f"c{i}", artifact_id="story", name="story", append=i > 0, last_chunk=i == 2
            )
        await ctx.add_artifact({"n": 3}, artifact_id="count")
        await ctx.complete("all chunks sent")

    @agent.skill()
    async def boom(text: str) -> str:
        raise RuntimeError(f"the flux capacitor broke ({text})")

    @agent.skill()
    async def illegal(ctx: TaskContext) -> None:
        """Finishes, then tries to change the finished task (caught and recorded)."""
        await ctx.add_artifact("final answer", name="answer")
        await ctx.complete("done")
        for attempt in (
            ctx.update("one more thing"),
            ctx.add_artifact("late"),
            ctx.fail("changed my mind"),
        ):
            try:
                await attempt
            except IllegalTransitionError as exc:
                controls.errors.append(exc)

    @agent.skill()
    async def illegal_uncaught(ctx: TaskContext) -> None:
        await ctx.complete("done")
        await ctx.reject("too late")

    @agent.skill()
    async def data(payload: dict[str, Any], message: Message) -> dict[str, Any]:
        return {"got": payload, "parts": len(message.parts)}

    @agent.skill()
    async def listing() -> list[Any]:
        return [1, "two", {"three": 3}]

    @agent.skill()
    async def reply(text: str) -> Message:
        """A message skill: answers directly, creates no task."""
        return Message(message_id="r-1", role=Role.AGENT, parts=[Part(text=f"re: {text}")])

    return agent, controls
