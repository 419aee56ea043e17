"""The Brief Agent: a bulleted brief of Java terms, each defined by the Glossary Agent.

It is a server to its own caller and, at the same time, an A2A client of the Glossary Agent.
Serve both (with ``peerwire[cli]`` installed, from any folder)::

    peerwire serve peerwire.samples.glossary:agent --port 8000
    GLOSSARY_URL=http://127.0.0.1:8000 peerwire serve peerwire.samples.brief:agent --port 8001
    peerwire send http://127.0.0.1:8001 "record, sealed class"

What it does with "record, sealed class":

* one Glossary call per term, all at once (an anyio task group), each streamed so the Brief
  Agent knows the Glossary task's id from its first event (and says so in a WORKING update:
  'Asked Glossary Agent about "record": its task ...');
* the whole brief has a time limit (``timeout``, 30 s by default). When it runs out, or when
  the brief's own task is canceled, the calls still running are canceled, at the Glossary
  Agent too (CancelTask), before the brief's task ends;
* if every call completes, the task completes with two artifacts: ``brief`` (a line per term
  with its definition) and ``calls`` (each call it made and what came back; the same calls as
  data in the artifact's ``metadata["calls"]``);
* if a call fails, the task fails with a message naming the Glossary Agent and its reason,
  after adding the ``calls`` artifact; the other calls are let finish, so the record is whole.

``agent`` calls the Glossary Agent at ``$GLOSSARY_URL`` (default ``http://127.0.0.1:8000``);
``make_agent(glossary_url)`` builds one for any address.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from peerwire import Agent, Client, Message, Task, TaskContext, TaskState, TaskStatusUpdateEvent
from peerwire.errors import PeerwireError, TaskNotCancelableError, TaskNotFoundError
from peerwire.protocol import ACTIVE

__all__ = ["Call", "agent", "make_agent", "split_terms"]

DEFAULT_GLOSSARY_URL = "http://127.0.0.1:8000"
# Canceling the Glossary tasks left behind must not hold up the brief's own end for long.
_CLEANUP_TIMEOUT_S = 5.0

Asked = Callable[["Call"], Awaitable[None]]
"""Told when a Glossary task exists for a call (the call's ``task_id`` is set)."""


@dataclass
class Call:
    """One call to the Glossary Agent, as the brief records it."""

    term: str
    operation: str = "SendStreamingMessage"
    task_id: str = ""
    state: TaskState | None = None
    answer: str = ""
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.state is TaskState.COMPLETED

    @property
    def outcome(self) -> str:
        if self.error:
            return f"error: {self.error}"
        if self.state is None:
            return "no answer"
        return self.state.value.removeprefix("TASK_STATE_")

    def line(self) -> str:
        answer = f' "{self.answer}"' if self.answer else ""
        return f'{self.operation} "{self.term}" -> {self.outcome}{answer}'

    def data(self) -> dict[str, Any]:
        return {
            "term": self.term,
            "operation": self.operation,
            "taskId": self.task_id,
            "state": self.state.value if self.state is not None else "",
            "answer": self.answer,
            "error": self.error,
        }


def split_terms(text: str) -> list[str]:
    """``"record, sealed class"`` -> ``["record", "sealed class"]`` (blanks dropped)."""
    return [term.strip() for term in text.split(",") if term.strip()]


def make_agent(glossary_url: str, *, timeout: float = 30.0) -> Agent:
    """A Brief Agent that asks the Glossary Agent at ``glossary_url``, within ``timeout`` s."""
    agent = Agent(
        "Brief Agent",
        description="Writes a brief of Java terms, asking the Glossary Agent for each",
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
    )

    @agent.skill(
        description="Defines each comma-separated Java term by asking the Glossary Agent.",
        tags=["java", "glossary", "agent-to-agent"],
        examples=["record, sealed class"],
    )
    async def brief(text: str, ctx: TaskContext) -> None:
        terms = split_terms(text)
        while not terms:
            terms = split_terms((await ctx.ask("Which terms should I brief?")).text)
        try:
            glossary = await Client.connect(glossary_url, timeout=timeout)
        except PeerwireError as exc:
            await ctx.fail(f"the Glossary Agent at {glossary_url} could not be reached: {exc}")
            return
        who = glossary.card.name

        async def asked(call: Call) -> None:
            # Progress for our caller: from here on, a cancel reaches the Glossary task too.
            await ctx.update(f'Asked {who} about "{call.term}": its task {call.task_id}')

        async with glossary:
            calls = [Call(term) for term in terms]
            finished = await _ask_all(glossary, calls, timeout, asked)
        failed = [call for call in calls if not call.ok]
        if finished and not failed:
            await ctx.add_artifact(
                "\n".join(f"- {call.term}: {call.answer}" for call in calls),
                name="brief",
                artifact_id="brief",
                last_chunk=True,
            )
        await ctx.add_artifact(
            "\n".join(call.line() for call in calls),
            name="calls",
            artifact_id="calls",
            metadata={"calls": [call.data() for call in calls]},
            last_chunk=True,
        )
        if not finished:
            await ctx.fail(f"{who} did not answer within {timeout:g} s")
        elif failed:
            await ctx.fail("; ".join(_failure(who, call) for call in failed))
        else:
            await ctx.complete()

    return agent


async def _ask_all(glossary: Client, calls: Sequence[Call], timeout: float, asked: Asked) -> bool:
    """Make every call at once; False if the time ran out (the rest were canceled)."""
    try:
        with anyio.fail_after(timeout):
            async with anyio.create_task_group() as group:
                for call in calls:
                    group.start_soon(_ask, glossary, call, asked)
    except TimeoutError:
        await _cancel_unfinished(glossary, calls)
        return False
    except anyio.get_cancelled_exc_class():
        # The brief's own task was canceled: so is every Glossary task it is waiting for.
        await _cancel_unfinished(glossary, calls)
        raise
    return True


async def _ask(glossary: Client, call: Call, asked: Asked) -> None:
    """One Glossary call, recorded in ``call``; streamed when the Glossary Agent streams."""
    try:
        if glossary.card.capabilities.streaming:
            await _follow(glossary, call, asked)
            return
        call.operation = "SendMessage"
        answer = await glossary.send(call.term)
    except PeerwireError as exc:
        call.error = str(exc)
        return
    if isinstance(answer, Message):
        call.state, call.answer = TaskState.COMPLETED, answer.text
        return
    call.task_id, call.state = answer.id, answer.status.state
    said = answer.status.message.text if answer.status.message is not None else ""
    call.answer = _answer(call.state, "".join(a.text for a in answer.artifacts), said)


async def _follow(glossary: Client, call: Call, asked: Asked) -> None:
    """Stream the call. Its first event is the Glossary task, so a cancel can reach it early."""
    chunks: list[str] = []
    said = ""
    async with contextlib.aclosing(glossary.stream(call.term)) as events:  # type: ignore[type-var]
        async for event in events:
            if isinstance(event, Message):
                call.state, call.answer = TaskState.COMPLETED, event.text
                return
            if isinstance(event, Task):
                call.task_id, status = event.id, event.status
                await asked(call)
            elif isinstance(event, TaskStatusUpdateEvent):
                status = event.status
            else:
                chunks.append(event.artifact.text)  # the Glossary's one artifact, in chunks
                continue
            call.state = status.state
            said = status.message.text if status.message is not None else said
    if call.state is not None:
        call.answer = _answer(call.state, "".join(chunks), said)


def _answer(state: TaskState, artifact_text: str, said: str) -> str:
    """What the Glossary said: its definition when it completed, else its reason or question."""
    if state is TaskState.COMPLETED:
        return artifact_text or said
    return said or artifact_text


async def _cancel_unfinished(glossary: Client, calls: Sequence[Call]) -> None:
    """CancelTask for every Glossary task that has not finished, shielded from our own cancel."""
    unfinished = [c for c in calls if c.task_id and c.state in ACTIVE]
    with anyio.CancelScope(shield=True), anyio.move_on_after(_CLEANUP_TIMEOUT_S):
        for call in unfinished:
            try:
                canceled = await glossary.cancel_task(call.task_id)
            except (TaskNotCancelableError, TaskNotFoundError):
                continue  # it finished (or vanished) meanwhile: nothing left to stop
            except PeerwireError as exc:
                call.error = f"could not cancel task {call.task_id}: {exc}"
                continue
            call.state = canceled.status.state


def _failure(who: str, call: Call) -> str:
    if call.error:
        return f'{who} could not be asked about "{call.term}": {call.error}'
    reason = call.answer or f"its task ended {call.outcome}"
    return f'{who} could not help with "{call.term}": {reason}'


agent = make_agent(os.environ.get("GLOSSARY_URL", DEFAULT_GLOSSARY_URL))
