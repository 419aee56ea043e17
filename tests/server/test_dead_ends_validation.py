"""Refusing a message before a task exists: ``Agent(validate=...)``, ``@agent.validate`` and
``max_text_chars``, on every binding.

A refused message answers with the validator's own error and leaves nothing behind: no task
is created, a follow-up is not recorded (the task stays exactly as it was), a message skill
does not run. Public API only.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio.lowlevel
import pytest
import pytest_asyncio

from peerwire import Agent, Caller, Message, Part, Role, Task, TaskContext, TaskState
from peerwire.client import CardCache, Client
from peerwire.errors import (
    ContentTypeNotSupportedError,
    InternalError,
    InvalidParamsError,
)
from peerwire.testing import live_server
from peerwire.types import Binding

pytestmark = pytest.mark.asyncio(loop_scope="module")

BINDINGS = pytest.mark.parametrize(
    "binding", [Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC], ids=["jsonrpc", "rest", "grpc"]
)
LIMIT = 20


@dataclass
class Seen:
    """What the validators were handed, in the order they ran."""

    calls: list[tuple[str, Message, Caller]] = field(default_factory=list)
    replies: int = 0


def guarded(seen: Seen) -> Agent:
    def first(message: Message, caller: Caller) -> None:
        seen.calls.append(("first", message, caller))
        if (message.metadata or {}).get("bug"):
            raise RuntimeError("the validator's own bug: /srv/secret.pem")
        if (message.metadata or {}).get("sloppy"):
            return False  # type: ignore[return-value]  # a refusal must be raised

    agent = Agent("Guarded", max_text_chars=LIMIT, validate=first)

    @agent.validate
    async def text_only(message: Message, caller: Caller) -> None:
        seen.calls.append(("text_only", message, caller))
        await anyio.lowlevel.checkpoint()  # an async validator may do I/O
        if any(part.text is None for part in message.parts):
            raise ContentTypeNotSupportedError("this agent reads text parts only")

    @agent.skill()
    async def ask(ctx: TaskContext) -> str:
        answer = await ctx.ask("more?")
        return answer.text

    @agent.skill()
    async def reply(text: str) -> Message:
        seen.replies += 1
        return Message(message_id=str(uuid.uuid4()), role=Role.AGENT, parts=[Part(text=text)])

    return agent


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def served() -> AsyncIterator[tuple[str, Seen]]:
    seen = Seen()
    async with live_server(guarded(seen), grpc_port=0, shutdown_grace=1.0) as url:
        yield url, seen


def connect(url: str, binding: str) -> Any:
    return Client.connect(url, bindings=[binding], card_cache=CardCache())


TOO_LONG = "x" * (LIMIT + 1)


@BINDINGS
async def test_a_refused_new_task_is_never_created(served: tuple[str, Seen], binding: str) -> None:
    url, _ = served
    context = f"refused-{uuid.uuid4()}"
    async with connect(url, binding) as client:
        with pytest.raises(InvalidParamsError, match=f"21 characters of text.*at most {LIMIT}"):
            await client.send(TOO_LONG, skill="ask", context_id=context)
        with pytest.raises(InvalidParamsError, match="at most"):
            async for _ in client.stream(TOO_LONG, skill="ask", context_id=context):
                raise AssertionError("a refused stream has no events")
        with pytest.raises(ContentTypeNotSupportedError, match="text parts only"):
            await client.send(
                [Part(url="https://example.com/a.pdf", media_type="application/pdf")],
                skill="ask",
                context_id=context,
            )
        assert await client.list_tasks(context_id=context) == []
        # At the limit, accepted.
        accepted = await client.send("y" * LIMIT, skill="ask", context_id=context)
        assert isinstance(accepted, Task)
        assert [t.id for t in await client.list_tasks(context_id=context)] == [accepted.id]


@BINDINGS
async def test_a_refused_follow_up_leaves_the_task_as_it_was(
    served: tuple[str, Seen], binding: str
) -> None:
    url, _ = served
    async with connect(url, binding) as client:
        task = await client.send("start", skill="ask")
        assert isinstance(task, Task) and task.status.state is TaskState.INPUT_REQUIRED
        before = await client.get_task(task.id)
        with pytest.raises(InvalidParamsError, match="characters of text"):
            await client.send(TOO_LONG, task_id=task.id)
        assert await client.get_task(task.id) == before, "nothing recorded, nothing changed"
        done = await client.send("short answer", task_id=task.id)
        assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED


@BINDINGS
async def test_a_refused_message_skill_does_not_run(served: tuple[str, Seen], binding: str) -> None:
    url, seen = served
    async with connect(url, binding) as client:
        replies = seen.replies
        with pytest.raises(InvalidParamsError, match="characters of text"):
            await client.send(TOO_LONG, skill="reply")
        assert seen.replies == replies
        answer = await client.send("hello", skill="reply")
        assert isinstance(answer, Message) and answer.text == "hello"


async def test_validators_run_in_order_and_see_the_caller(served: tuple[str, Seen]) -> None:
    url, seen = served
    async with connect(url, Binding.JSONRPC) as client:
        task = await client.send("start", skill="ask")
        assert isinstance(task, Task)
        seen.calls.clear()
        await client.send("answer", task_id=task.id)
    assert [name for name, _, _ in seen.calls] == ["first", "text_only"]
    _, message, caller = seen.calls[0]
    assert message.task_id == task.id, "a follow-up names its task"
    assert message.text == "answer"
    assert caller.id == "" and caller.tenant == "" and not caller.recorded


async def test_a_validator_that_fails_is_an_internal_error_without_its_text(
    served: tuple[str, Seen], caplog: pytest.LogCaptureFixture
) -> None:
    url, _ = served
    with caplog.at_level(logging.ERROR, logger="peerwire"):
        async with connect(url, Binding.JSONRPC) as client:
            with pytest.raises(InternalError) as raised:
                await client.send("hi", skill="reply", metadata={"bug": True})
            with pytest.raises(InternalError):
                await client.send("hi", skill="reply", metadata={"sloppy": True})
    assert "secret" not in str(raised.value)
    assert "secret.pem" in caplog.text
    assert "a validator returns None to accept" in caplog.text


async def test_what_validators_accept_is_checked_where_they_are_declared() -> None:
    with pytest.raises(ValueError, match="max_text_chars must be a positive int"):
        Agent("A", max_text_chars=0)
    with pytest.raises(TypeError, match="a validator must be callable"):
        Agent("A").validate("not a function")  # type: ignore[arg-type]
