"""A part whose media type the routed skill (or the agent) does not declare is refused with
ContentTypeNotSupportedError before a task exists, on every binding; ``enforce_input_modes=
False`` hands it to the skill. Real servers, the public client, and the raw wire for the
error's form on each binding."""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator
from typing import Any

import grpc
import httpx
import pytest
import pytest_asyncio

from peerwire import Agent, Message, Part, Role, Task, TaskContext, TaskState
from peerwire.bindings.grpc._gen import a2a_pb2, a2a_pb2_grpc
from peerwire.client import CardCache, Client
from peerwire.errors import ContentTypeNotSupportedError
from peerwire.testing import live_server
from peerwire.types import Binding

pytestmark = pytest.mark.asyncio(loop_scope="module")

BINDINGS = pytest.mark.parametrize(
    "binding", [Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC], ids=["jsonrpc", "rest", "grpc"]
)

PNG = Part(raw=b"\x89PNG\r\n", media_type="image/png", filename="a.png")
PDF = Part(url="https://example.com/a.pdf", media_type="application/pdf")


def modal(*, enforce: bool = True) -> tuple[Agent, list[str]]:
    ran: list[str] = []
    # The agent's defaults: text and JSON only.
    agent = Agent("Modal", default_input_modes=["text/plain"], enforce_input_modes=enforce)

    @agent.skill()
    async def plain(message: Message) -> str:
        ran.append("plain")
        return ",".join(p.media_type or p.kind for p in message.parts)

    @agent.skill(input_modes=["image/*", "text/plain"])
    async def images(message: Message) -> str:
        ran.append("images")
        return ",".join(p.media_type or p.kind for p in message.parts)

    @agent.skill(input_modes=["*/*"])
    async def anything(message: Message) -> str:
        ran.append("anything")
        return str(len(message.parts))

    @agent.skill()
    async def ask(ctx: TaskContext) -> str:
        answer = await ctx.ask("which file?")
        return ",".join(p.media_type or p.kind for p in answer.parts)

    @agent.skill()
    async def reply(text: str) -> Message:
        ran.append("reply")
        return Message(message_id=str(uuid.uuid4()), role=Role.AGENT, parts=[Part(text=text)])

    return agent, ran


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def served() -> AsyncIterator[tuple[str, list[str], str]]:
    agent, ran = modal()
    grpc_address: list[str] = []
    async with live_server(
        agent,
        grpc_port=0,
        shutdown_grace=1.0,
        on_started=lambda card: grpc_address.extend(
            i.url for i in card.supported_interfaces if i.protocol_binding == "GRPC"
        ),
    ) as url:
        yield url, ran, grpc_address[0]


def connect(url: str, binding: str) -> Any:
    return Client.connect(url, bindings=[binding], card_cache=CardCache())


@BINDINGS
async def test_a_part_outside_the_modes_creates_no_task(
    served: tuple[str, list[str], str], binding: str
) -> None:
    url, ran, _ = served
    context = f"modes-{uuid.uuid4()}"
    async with connect(url, binding) as client:
        before = list(ran)
        with pytest.raises(ContentTypeNotSupportedError, match=r"parts\[1\].*'image/png'"):
            await client.send([Part(text="look"), PNG], skill="plain", context_id=context)
        with pytest.raises(ContentTypeNotSupportedError, match="application/pdf"):
            async for _ in client.stream([PDF], skill="plain", context_id=context):
                raise AssertionError("a refused stream has no events")
        # The agent's default modes say text/plain only: a data part is refused as JSON.
        with pytest.raises(ContentTypeNotSupportedError, match="application/json"):
            await client.send([Part(data={"k": 1})], skill="plain", context_id=context)
        with pytest.raises(ContentTypeNotSupportedError, match="image/png"):
            await client.send([PNG], skill="reply", context_id=context)
        assert ran == before, "no skill ran"
        assert await client.list_tasks(context_id=context) == []


@BINDINGS
async def test_declared_and_wildcard_modes_are_accepted(
    served: tuple[str, list[str], str], binding: str
) -> None:
    url, _, _ = served
    async with connect(url, binding) as client:
        task = await client.send([Part(text="look"), PNG], skill="images")
        assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
        assert task.artifacts[0].parts[0].text == "text,image/png"
        # image/* does not cover a PDF; */* covers everything.
        with pytest.raises(ContentTypeNotSupportedError):
            await client.send([PDF], skill="images")
        task = await client.send([PDF, PNG, Part(data=[1])], skill="anything")
        assert isinstance(task, Task) and task.artifacts[0].parts[0].text == "3"
        # A file part that declares no media type provides none to refuse.
        task = await client.send([Part(raw=b"??")], skill="plain")
        assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED


@BINDINGS
async def test_a_follow_up_is_checked_against_the_tasks_skill(
    served: tuple[str, list[str], str], binding: str
) -> None:
    url, _, _ = served
    async with connect(url, binding) as client:
        task = await client.send("start", skill="ask")
        assert isinstance(task, Task) and task.status.state is TaskState.INPUT_REQUIRED
        before = await client.get_task(task.id)
        with pytest.raises(ContentTypeNotSupportedError, match="image/png"):
            await client.send([PNG], task_id=task.id)
        assert await client.get_task(task.id) == before, "nothing recorded"
        done = await client.send("the text one", task_id=task.id)
        assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED


def _wire_message(skill: str) -> dict[str, Any]:
    return {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"raw": base64.b64encode(b"tck").decode(), "mediaType": "application/x-tck"}],
        "metadata": {"skill": skill},
    }


async def test_the_error_on_the_wire_of_each_binding(served: tuple[str, list[str], str]) -> None:
    url, _, grpc_address = served
    headers = {"A2A-Version": "1.0"}
    async with httpx.AsyncClient(base_url=url, headers=headers) as http:
        answer = await http.post(
            "/",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": {"message": _wire_message("plain")},
            },
        )
        error = answer.json()["error"]
        assert error["code"] == -32005
        assert "application/x-tck" in error["message"]
        answer = await http.post("/rest/message:send", json={"message": _wire_message("plain")})
        assert answer.status_code == 400
        body = answer.json()["error"]
        assert body["status"] == "INVALID_ARGUMENT"
        reasons = [d.get("reason") for d in body["details"]]
        assert "CONTENT_TYPE_NOT_SUPPORTED" in reasons
    async with grpc.aio.insecure_channel(grpc_address) as channel:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        request = a2a_pb2.SendMessageRequest(
            message=a2a_pb2.Message(
                message_id=str(uuid.uuid4()),
                role=a2a_pb2.ROLE_USER,
                parts=[a2a_pb2.Part(raw=b"tck", media_type="application/x-tck")],
            )
        )
        request.message.metadata.update({"skill": "plain"})
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await stub.SendMessage(request, metadata=[("a2a-version", "1.0")])
        assert raised.value.code() is grpc.StatusCode.INVALID_ARGUMENT


@BINDINGS
async def test_the_opt_out_hands_every_part_to_the_skill(binding: str) -> None:
    agent, ran = modal(enforce=False)
    async with (
        live_server(agent, grpc_port=0, shutdown_grace=1.0) as url,
        connect(url, binding) as client,
    ):
        task = await client.send([Part(text="look"), PNG, PDF], skill="plain")
        assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
        assert task.artifacts[0].parts[0].text == "text,image/png,application/pdf"
        assert ran == ["plain"]
