"""GetTask of a finished task that the memory store keeps encoded: JSON-RPC and REST answer
its stored JSON as it is, gRPC decodes it, and all of them answer what they answer for any
other task (A2A spec §3.2.4)."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from peerwire import Agent, Message, Part, Role, create_app
from peerwire.client.transports.base import CallOptions
from peerwire.client.transports.grpc import GrpcTransport
from peerwire.server import A2AApp
from peerwire.server.stores import MemoryTaskStore
from peerwire.testing import in_process
from peerwire.types import (
    Binding,
    Encoded,
    GetTaskRequest,
    SendMessageRequest,
    SendMessageResponse,
    Task,
    from_builtins,
)

pytestmark = pytest.mark.asyncio

HEADERS = {"A2A-Version": "1.0"}


def echo_agent() -> Agent:
    agent = Agent("Encoded GetTask", description="Echoes its text as an artifact")

    @agent.skill()
    async def echo(text: str) -> str:
        return text

    return agent


@dataclass
class Served:
    http: httpx.AsyncClient
    grpc: GrpcTransport
    store: MemoryTaskStore

    async def rpc(self, method: str, params: dict[str, Any], request_id: Any = 1) -> Any:
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        response = await self.http.post("/", json=body, headers=HEADERS)
        assert response.status_code == 200
        return response.json()

    async def finished_task(self, text: str) -> dict[str, Any]:
        """A task sent, completed and (with no window of expanded tasks) compacted."""
        message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
        task: dict[str, Any] = (await self.rpc("SendMessage", {"message": message}))["result"][
            "task"
        ]
        stored = await self.store.load_encoded_snapshot(task["id"], tenant="", owner=None)
        assert isinstance(stored, Encoded)  # what this module is about
        return task


def _grpc_url(app: A2AApp) -> str:
    cards = app.dispatcher.card().supported_interfaces
    [interface] = [i for i in cards if i.protocol_binding == Binding.GRPC]
    return interface.url


@contextlib.asynccontextmanager
async def serving() -> AsyncIterator[Served]:
    # No window of expanded finished tasks: each task is kept encoded once it finishes.
    store = MemoryTaskStore(expanded_finished=0)
    app = create_app(echo_agent(), store=store, grpc_port=0)
    async with in_process(app) as http:
        transport = GrpcTransport(_grpc_url(app), timeout=30)
        try:
            yield Served(http, transport, store)
        finally:
            await transport.aclose()


async def test_json_rpc_answers_the_stored_task_in_its_envelope() -> None:
    async with serving() as served:
        task = await served.finished_task("kept")
        answer = await served.rpc("GetTask", {"id": task["id"]}, request_id="get-7")
        assert answer == {"jsonrpc": "2.0", "id": "get-7", "result": task}
        assert task["artifacts"][0]["parts"] == [{"text": "kept"}]


async def test_a_history_cut_still_applies_to_a_stored_task() -> None:
    async with serving() as served:
        task = await served.finished_task("cut")
        trimmed = (await served.rpc("GetTask", {"id": task["id"], "historyLength": 0}))["result"]
        assert "history" not in trimmed and trimmed["artifacts"] == task["artifacts"]
        assert trimmed == {k: v for k, v in task.items() if k != "history"}


async def test_rest_answers_the_stored_task_as_its_body() -> None:
    async with serving() as served:
        task = await served.finished_task("rest")
        response = await served.http.get(f"/rest/tasks/{task['id']}", headers=HEADERS)
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/a2a+json"
        assert json.loads(response.content) == task


async def test_grpc_decodes_the_stored_task() -> None:
    async with serving() as served:
        task = await served.finished_task("grpc")
        read = await served.grpc.call("GetTask", GetTaskRequest(id=task["id"]), Task, CallOptions())
        assert read == from_builtins(task, Task)
        request = SendMessageRequest(
            message=Message(message_id=str(uuid.uuid4()), role=Role.USER, parts=[Part(text="g")])
        )
        sent = await served.grpc.call("SendMessage", request, SendMessageResponse, CallOptions())
        assert sent.task is not None
        read = await served.grpc.call(
            "GetTask", GetTaskRequest(id=sent.task.id), Task, CallOptions()
        )
        assert read == sent.task
