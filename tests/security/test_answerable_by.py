"""Answers from another principal (``Agent.skill(answerable_by=...)``), on all three bindings.

An employee's expense claim waits for approval; a manager granted ``approve`` (of the same
tenant) sees only its question and answers it; the skill reads who answered from
``ctx.caller``, and the answer in the task's history says so. Who cannot: another employee
without the scope, the manager in another tenant, the manager once the question is answered,
and the manager for anything but the question (cancel, subscribe). The owner still answers
her own task, and nobody can forge the mark of an answer from someone else.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from peerwire import Agent, TaskContext
from peerwire.client import CallOptions, CardCache, Client, Transport, TransportSettings
from peerwire.client.transports import grpc as grpc_transport
from peerwire.client.transports import jsonrpc as jsonrpc_transport
from peerwire.client.transports import rest as rest_transport
from peerwire.errors import InvalidParamsError, TaskNotFoundError
from peerwire.protocol.extensions import ANSWERABLE_BY_EXTENSION
from peerwire.security import APIKeyVerifier, Principal
from peerwire.server.push import PushSettings
from peerwire.testing import live_server
from peerwire.types import (
    APIKeySecurityScheme,
    Binding,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SecurityRequirement,
    SecurityScheme,
    SendMessageConfiguration,
    SendMessageRequest,
    SendMessageResponse,
    StringList,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)

TIMEOUT_S = 30.0
KEYS = {
    "k-erin": Principal("erin", scopes=frozenset({"expenses"}), claims={"name": "Erin"}),
    "k-otto": Principal("otto", scopes=frozenset({"expenses"}), claims={"name": "Otto"}),
    "k-mona": Principal("mona", scopes=frozenset({"approve"}), claims={"name": "Mona"}),
}
_ids = itertools.count(1)
_TRANSPORTS = {
    Binding.JSONRPC: jsonrpc_transport.create_transport,
    Binding.HTTP_JSON: rest_transport.create_transport,
    Binding.GRPC: grpc_transport.create_transport,
}


def expenses_agent() -> Agent:
    agent = Agent(
        "Expenses",
        security_schemes={
            "key": SecurityScheme(
                api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-API-Key")
            )
        },
        security_requirements=[SecurityRequirement(schemes={"key": StringList()})],
    )

    @agent.skill(scopes=["expenses"], answerable_by="approve")
    async def claim(ctx: TaskContext) -> None:
        answer = await ctx.ask(f"Approve {ctx.message.text}?")
        who = ctx.caller
        await ctx.complete(f"{answer.text} by {who.id} ({who.principal.claims.get('name')})")

    return agent


class As:
    """Raw calls to one interface as one principal, in one tenant."""

    def __init__(self, transport: Transport, key: str, tenant: str) -> None:
        self.transport = transport
        self.options = CallOptions(headers={"X-API-Key": key}, timeout=TIMEOUT_S)
        self.tenant = tenant

    async def send(
        self, text: str, task: Task | None = None, **message: Any
    ) -> SendMessageResponse:
        request = SendMessageRequest(
            tenant=self.tenant,
            message=Message(
                message_id=f"m-{next(_ids)}",
                role=Role.USER,
                parts=[Part(text=text)],
                task_id="" if task is None else task.id,
                context_id="" if task is None else task.context_id,
                **message,
            ),
        )
        return await self.transport.call("SendMessage", request, SendMessageResponse, self.options)

    async def get(self, task_id: str) -> Task:
        request = GetTaskRequest(tenant=self.tenant, id=task_id)
        return await self.transport.call("GetTask", request, Task, self.options)


@contextlib.asynccontextmanager
async def principals(binding: str) -> AsyncIterator[dict[str, As]]:
    """Erin, Otto and Mona in tenant acme, and Mona in tenant globex, over ``binding``."""
    auth = {"key": APIKeyVerifier(KEYS)}
    async with (
        live_server(
            expenses_agent(),
            grpc_port=0,
            auth=auth,
            push=PushSettings(allow=("127.0.0.1",)),
            shutdown_grace=1.0,
        ) as url,
        httpx.AsyncClient(trust_env=False, timeout=TIMEOUT_S) as http,
        Client.connect(url, bindings=[binding], http_client=http, card_cache=CardCache()) as client,
    ):
        transport = _TRANSPORTS[binding](
            client.interface, TransportSettings(http=http, timeout=TIMEOUT_S)
        )
        assert transport is not None
        try:
            yield {
                "erin": As(transport, "k-erin", "acme"),
                "otto": As(transport, "k-otto", "acme"),
                "mona": As(transport, "k-mona", "acme"),
                "mona@globex": As(transport, "k-mona", "globex"),
            }
        finally:
            await transport.aclose()


async def _until_done(owner: As, task_id: str) -> Task:
    with anyio.fail_after(TIMEOUT_S):
        while (task := await owner.get(task_id)).status.state is not TaskState.COMPLETED:  # noqa: ASYNC110
            await anyio.sleep(0.02)  # the handler runs on after the answerer's send returned
    return task


BINDINGS = [Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_manager_with_the_scope_answers_and_the_history_says_so(binding: str) -> None:
    async with principals(binding) as who:
        erin, mona = who["erin"], who["mona"]
        claim = (await erin.send("120 EUR", metadata={"skill": "claim"})).task
        assert claim is not None and claim.status.state is TaskState.INPUT_REQUIRED
        # The manager sees the question, and nothing else of the task.
        seen = await mona.get(claim.id)
        assert (seen.id, seen.context_id) == (claim.id, claim.context_id)
        assert seen.status.state is TaskState.INPUT_REQUIRED
        assert seen.status.message is not None and seen.status.message.text == "Approve 120 EUR?"
        assert (seen.history, seen.artifacts, seen.metadata) == ([], [], None)
        asked = GetTaskRequest(tenant="acme", id=claim.id, history_length=10)
        assert await mona.transport.call("GetTask", asked, Task, mona.options) == seen
        answered = (await mona.send("approved", claim)).task
        assert answered is not None and answered.id == claim.id
        assert (answered.history, answered.artifacts) == ([], [])
        # A blocking send waits until the task settles; its outcome's message is the owner's.
        assert answered.status.state is TaskState.COMPLETED
        assert answered.status.message is None
        done = await _until_done(erin, claim.id)
        assert done.status.message is not None
        assert done.status.message.text == "approved by mona (Mona)"
        (answer,) = [m for m in done.history if m.role is Role.USER and m.text == "approved"]
        assert answer.metadata is not None
        assert answer.metadata[ANSWERABLE_BY_EXTENSION] == {"principal": "mona", "scheme": "key"}
        # Answered: the manager sees nothing of it any more.
        with pytest.raises(TaskNotFoundError):
            await mona.get(claim.id)
        with pytest.raises(TaskNotFoundError):
            await mona.send("approved again", claim)


@pytest.mark.parametrize("binding", BINDINGS)
async def test_who_cannot_answer_or_see_the_question(binding: str) -> None:
    async with principals(binding) as who:
        erin, otto, mona, elsewhere = who["erin"], who["otto"], who["mona"], who["mona@globex"]
        claim = (await erin.send("80 EUR", metadata={"skill": "claim"})).task
        assert claim is not None
        for stranger in (otto, elsewhere):
            # Another employee (no ``approve``) and the manager in another tenant: no task.
            with pytest.raises(TaskNotFoundError):
                await stranger.get(claim.id)
            with pytest.raises(TaskNotFoundError):
                await stranger.send("approved", claim)
        # The manager's reach is the question: the task's other operations are the owner's.
        with pytest.raises(TaskNotFoundError):
            await mona.transport.call(
                "CancelTask", CancelTaskRequest(tenant="acme", id=claim.id), Task, mona.options
            )
        with pytest.raises(TaskNotFoundError):
            async for _ in mona.transport.stream(
                "SubscribeToTask", SubscribeToTaskRequest(tenant="acme", id=claim.id), mona.options
            ):
                pass
        # Nor can an answer register a webhook on the owner's task.
        hook = TaskPushNotificationConfig(url="https://127.0.0.1:9/a2a")
        request = SendMessageRequest(
            tenant="acme",
            message=Message(
                message_id="m-hook",
                role=Role.USER,
                parts=[Part(text="approved")],
                task_id=claim.id,
                context_id=claim.context_id,
            ),
            configuration=SendMessageConfiguration(task_push_notification_config=hook),
        )
        with pytest.raises(InvalidParamsError, match="on behalf of the task's owner"):
            await mona.transport.call("SendMessage", request, SendMessageResponse, mona.options)
        still = await erin.get(claim.id)
        assert still.status.state is TaskState.INPUT_REQUIRED
        assert [m.text for m in still.history if m.role is Role.USER] == ["80 EUR"]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_the_owner_still_answers_and_cannot_forge_another_answerer(binding: str) -> None:
    async with principals(binding) as who:
        erin = who["erin"]
        claim = (await erin.send("15 EUR", metadata={"skill": "claim"})).task
        assert claim is not None
        forged = {ANSWERABLE_BY_EXTENSION: {"principal": "mona", "scheme": "key"}, "note": "hi"}
        done = (await erin.send("approved", claim, metadata=forged)).task
        assert done is not None and done.status.state is TaskState.COMPLETED
        assert done.status.message is not None
        assert done.status.message.text == "approved by erin (Erin)"
        (answer,) = [m for m in done.history if m.role is Role.USER and m.text == "approved"]
        assert answer.metadata == {"note": "hi"}, "the server's mark only comes from the server"


async def test_the_card_lists_who_may_answer() -> None:
    card = expenses_agent().card([])
    (extension,) = [e for e in card.capabilities.extensions if e.uri == ANSWERABLE_BY_EXTENSION]
    assert extension.params == {"skills": {"claim": ["approve"]}}
    assert not extension.required


def test_answerable_by_needs_an_agent_that_authenticates() -> None:
    agent = Agent("Open")
    with pytest.raises(ValueError, match="requires no authentication"):

        @agent.skill(answerable_by="approve")
        async def claim(ctx: TaskContext) -> None:
            await ctx.ask("ok?")

    with pytest.raises(TypeError, match="scope names"):
        expenses_agent().skill("other", answerable_by=[""])


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_streamed_answer_gets_the_answerers_view_only(binding: str) -> None:
    async with principals(binding) as who:
        erin, mona = who["erin"], who["mona"]
        claim = (await erin.send("9 EUR", metadata={"skill": "claim"})).task
        assert claim is not None
        request = SendMessageRequest(
            tenant="acme",
            message=Message(
                message_id=f"m-{next(_ids)}",
                role=Role.USER,
                parts=[Part(text="approved")],
                task_id=claim.id,
                context_id=claim.context_id,
            ),
        )
        events = [
            event
            async for event in mona.transport.stream("SendStreamingMessage", request, mona.options)
        ]
        (only,) = events
        assert only.task is not None and only.task.id == claim.id
        assert (only.task.history, only.task.artifacts) == ([], [])
        done = await _until_done(erin, claim.id)
        assert done.status.message is not None
        assert done.status.message.text == "approved by mona (Mona)"


async def test_an_answer_after_a_restart_runs_the_handler_again_for_its_owner(
    tmp_path: Path,
) -> None:
    """No process holds the handler (the server restarted while the claim waited): the
    manager's answer runs it again from its start, for its owner, with the answerer as
    ``ctx.caller`` of the answer and the owner's recorded caller for the first message."""
    seen: list[tuple[str, str, str]] = []
    agent = expenses_agent()

    @agent.skill("audited", answerable_by="approve")
    async def audited(ctx: TaskContext) -> None:
        seen.append(("first", ctx.caller.id, ctx.owner))
        answer = await ctx.ask("Approve?")
        seen.append(("answer", ctx.caller.id, ctx.owner))
        await ctx.complete(f"{answer.text} by {ctx.caller.id} for {ctx.owner}")

    auth = {"key": APIKeyVerifier(KEYS)}
    store = f"sqlite:{tmp_path / 'tasks.db'}"
    async with (
        live_server(agent, store=store, auth=auth, shutdown_grace=1.0) as url,
        Client.connect(url, headers={"X-API-Key": "k-erin"}, card_cache=CardCache()) as erin,
    ):
        claim = await erin.send("5 EUR", skill="audited")
        assert isinstance(claim, Task) and claim.status.state is TaskState.INPUT_REQUIRED
    async with (
        live_server(agent, store=store, auth=auth, shutdown_grace=1.0) as url,
        Client.connect(url, headers={"X-API-Key": "k-mona"}, card_cache=CardCache()) as mona,
        Client.connect(url, headers={"X-API-Key": "k-erin"}, card_cache=CardCache()) as erin,
    ):
        answered = await mona.send("approved", task_id=claim.id)
        assert isinstance(answered, Task) and answered.status.state is TaskState.COMPLETED
        done = await erin.get_task(claim.id)
    assert done.status.message is not None
    assert done.status.message.text == "approved by mona for erin"
    assert seen == [
        ("first", "erin", "erin"),  # then parked in ask until the server stopped
        ("first", "erin", "erin"),  # run again: the first message's recorded caller
        ("answer", "mona", "erin"),
    ]
