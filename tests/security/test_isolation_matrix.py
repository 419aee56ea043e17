"""The isolation matrix: principal B on principal A's task, every task operation, every binding.

For each operation B's answer on A's task is byte for byte the answer B gets for a task id
that never existed (status, content type, body, gRPC status, message and details; the two
ids blanked), read straight off the wire with the bindings' own codecs. peerwire's client
decodes it as ``TaskNotFoundError`` (or ``PushNotificationNotSupportedError`` where push is
not offered, which is then the same for every task). ListTasks shows B only his own tasks,
totals included, and A's task is untouched by all of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import grpc
import grpc.aio
import httpx
import pytest

from peerwire import Agent, TaskContext, create_app
from peerwire.bindings import jsonrpc, rest
from peerwire.bindings.grpc.convert import to_bytes
from peerwire.bindings.grpc.service import RPCS
from peerwire.bindings.grpc.status import DETAILS_KEY
from peerwire.client import CallOptions, TransportSettings
from peerwire.client.auth import APIKey, Credentials
from peerwire.errors import PushNotificationNotSupportedError, TaskNotFoundError
from peerwire.security import APIKeyVerifier
from peerwire.types import (
    APIKeySecurityScheme,
    Binding,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SecurityRequirement,
    SecurityScheme,
    SendMessageRequest,
    StringList,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)

from ._bindings import BINDINGS, connect, serving
from ._support import TIMEOUT_S

KEYS = {"k-alice": "alice", "k-bob": "bob"}
NEVER = "00000000-0000-4000-8000-000000000000"  # as long as a real id: bodies keep their size

# Push configs are being offered by the push work in parallel; where create_app offers them,
# the matrix covers them offered, else it covers them refused (the same for every task).
PUSH = {"push": True} if "push" in inspect.signature(create_app).parameters else {}


@dataclass
class Gates:
    started: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)


def shared_agent(gates: Gates) -> Agent:
    agent = Agent(
        "Shared Agent",
        security_schemes={
            "key": SecurityScheme(
                api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-API-Key")
            )
        },
        security_requirements=[SecurityRequirement(schemes={"key": StringList()})],
    )

    @agent.skill()
    async def wait(ctx: TaskContext) -> str:
        await ctx.start_work("working")
        gates.started.set()
        await gates.release.wait()
        return "done"

    return agent


def requests(task_id: str) -> dict[str, Any]:
    """Every operation on a task, as the typed request naming ``task_id``."""
    more = SendMessageRequest(
        message=Message(
            message_id="m-more", role=Role.USER, parts=[Part(text="more")], task_id=task_id
        )
    )
    return {
        "GetTask": GetTaskRequest(id=task_id),
        "CancelTask": CancelTaskRequest(id=task_id),
        "SubscribeToTask": SubscribeToTaskRequest(id=task_id),
        "SendMessage": more,
        "SendStreamingMessage": more,
        "CreateTaskPushNotificationConfig": TaskPushNotificationConfig(
            task_id=task_id, url="https://hooks.example/a2a"
        ),
        "GetTaskPushNotificationConfig": GetTaskPushNotificationConfigRequest(
            task_id=task_id, id="c1"
        ),
        "ListTaskPushNotificationConfigs": ListTaskPushNotificationConfigsRequest(task_id=task_id),
        "DeleteTaskPushNotificationConfig": DeleteTaskPushNotificationConfigRequest(
            task_id=task_id, id="c1"
        ),
    }


class Wire:
    """Raw calls on one binding, answered as comparable values (the task id blanked)."""

    def __init__(self, binding: str, url: str, grpc_target: str, http: httpx.AsyncClient) -> None:
        self.binding = binding
        self.url = url
        self.grpc_target = grpc_target
        self.http = http

    async def answer(self, operation: str, request: Any, key: str, task_id: str) -> Any:
        if self.binding == Binding.JSONRPC:
            response = await self.http.post(
                self.url + "/",
                content=jsonrpc.encode_request(1, operation, request),
                headers=self._headers(key, "application/json"),
            )
            return _blank(response, task_id)
        if self.binding == Binding.HTTP_JSON:
            wire = rest.encode_request(operation, request)
            response = await self.http.request(
                wire.method,
                self.url + "/rest" + wire.target,
                content=wire.body,
                headers=self._headers(key, rest.A2A_JSON),
            )
            return _blank(response, task_id)
        return await self._grpc(operation, request, key, task_id)

    def _headers(self, key: str, content_type: str) -> dict[str, str]:
        return {"A2A-Version": "1.0", "X-API-Key": key, "Content-Type": content_type}

    async def _grpc(self, operation: str, request: Any, key: str, task_id: str) -> Any:
        rpc = RPCS[operation]
        metadata = [("a2a-version", "1.0"), ("x-api-key", key)]
        async with grpc.aio.insecure_channel(self.grpc_target) as channel:
            try:
                if rpc.streaming:
                    call = channel.unary_stream(rpc.path)(
                        to_bytes(request), metadata=metadata, timeout=TIMEOUT_S
                    )
                    first = await call.read()
                    return ("stream", first)
                answer = await channel.unary_unary(rpc.path)(
                    to_bytes(request), metadata=metadata, timeout=TIMEOUT_S
                )
            except grpc.aio.AioRpcError as refused:
                trailers = dict(refused.trailing_metadata() or ())
                details = trailers.get(DETAILS_KEY, b"").replace(task_id.encode(), b"<id>")
                return (refused.code(), (refused.details() or "").replace(task_id, "<id>"), details)
            return ("ok", answer)


def _blank(response: httpx.Response, task_id: str) -> tuple[int, str, bytes]:
    body = response.content.replace(task_id.encode(), b"<id>")
    return response.status_code, response.headers.get("content-type", ""), body


@contextlib.asynccontextmanager
async def shared_server() -> AsyncIterator[tuple[str, Gates]]:
    gates = Gates()
    try:
        async with serving(shared_agent(gates), auth={"key": APIKeyVerifier(KEYS)}, **PUSH) as url:
            yield url, gates
    finally:
        gates.release.set()


async def working_task(client: Any, gates: Gates) -> Task:
    gates.started.clear()
    task = await client.send("go", return_immediately=True)
    assert isinstance(task, Task)
    with anyio.fail_after(TIMEOUT_S):
        await gates.started.wait()
    return task


@BINDINGS
async def test_another_principals_task_is_a_task_that_does_not_exist(binding: str) -> None:
    alice_keys, bob_key = Credentials(APIKey("k-alice")), "k-bob"
    async with (
        shared_server() as (url, gates),
        connect(url, binding, credentials=alice_keys) as alice,
        connect(url, binding, credentials=Credentials(APIKey(bob_key))) as bob,
        connect(url, Binding.GRPC) as locator,
        httpx.AsyncClient(timeout=TIMEOUT_S, trust_env=False) as http,
    ):
        wire = Wire(binding, url, locator.interface.url, http)
        task = await working_task(alice, gates)
        on_alices_task, on_no_task = requests(task.id), requests(NEVER)
        for operation, request in on_alices_task.items():
            seen = await wire.answer(operation, request, bob_key, task.id)
            missing = await wire.answer(operation, on_no_task[operation], bob_key, NEVER)
            assert seen == missing, operation
        # The comparison can tell tasks apart: Alice's own answer is not "missing".
        own = await wire.answer("GetTask", on_alices_task["GetTask"], "k-alice", task.id)
        assert own != await wire.answer("GetTask", on_no_task["GetTask"], "k-alice", NEVER)
        # peerwire's client reads those answers as "no such task" (or "no push here").
        for call in (
            bob.get_task(task.id),
            bob.cancel_task(task.id),
            bob.send("more", task_id=task.id),
            first(bob.subscribe(task.id)),
            first(bob.stream("more", task_id=task.id)),
            bob.create_push_config(task.id, "https://hooks.example/a2a"),
            bob.get_push_config(task.id, "c1"),
            bob.list_push_configs(task.id),
            bob.delete_push_config(task.id, "c1"),
        ):
            with pytest.raises((TaskNotFoundError, PushNotificationNotSupportedError)) as no:
                await call
            assert task.id in no.value.message or isinstance(
                no.value, PushNotificationNotSupportedError
            )
        # Alice's task went on as if Bob had never tried.
        mine = await alice.get_task(task.id)
        assert mine.status.state is TaskState.WORKING
        assert [m.text for m in mine.history if m.role is Role.USER] == ["go"]


async def first(events: Any) -> Any:
    async with contextlib.aclosing(events) as stream:
        return await anext(stream)


async def list_page(binding: str, url: str, grpc_target: str, key: str, **query: Any) -> Any:
    """One ListTasks page, with its totals, through the binding's own transport."""
    async with httpx.AsyncClient(timeout=TIMEOUT_S, trust_env=False) as http:
        settings = TransportSettings(http=http)
        if binding == Binding.JSONRPC:
            from peerwire.client.transports.jsonrpc import JsonRpcTransport

            transport: Any = JsonRpcTransport(url + "/", http)
        elif binding == Binding.HTTP_JSON:
            from peerwire.client.transports.rest import RestTransport

            transport = RestTransport(url + "/rest", http)
        else:
            from peerwire.client.transports.grpc import GrpcTransport

            transport = GrpcTransport(grpc_target, timeout=settings.timeout)
        try:
            return await transport.call(
                "ListTasks",
                ListTasksRequest(page_size=100, **query),
                ListTasksResponse,
                CallOptions(headers={"X-API-Key": key}),
            )
        finally:
            await transport.aclose()


@BINDINGS
async def test_list_tasks_shows_own_tasks_only_totals_included(binding: str) -> None:
    async with (
        shared_server() as (url, gates),
        connect(url, binding, credentials=Credentials(APIKey("k-alice"))) as alice,
        connect(url, binding, credentials=Credentials(APIKey("k-bob"))) as bob,
        connect(url, Binding.GRPC) as locator,
    ):
        target = locator.interface.url
        mine = {(await working_task(alice, gates)).id for _ in range(3)}
        theirs = {(await working_task(bob, gates)).id}
        alices = await list_page(binding, url, target, "k-alice")
        bobs = await list_page(binding, url, target, "k-bob")
        assert {t.id for t in alices.tasks} == mine and alices.total_size == 3
        assert {t.id for t in bobs.tasks} == theirs and bobs.total_size == 1
        # Filters do not widen the view: Bob naming Alice's context sees nothing of hers.
        context = alices.tasks[0].context_id
        filtered = await list_page(binding, url, target, "k-bob", context_id=context)
        assert filtered.tasks == [] and filtered.total_size == 0
        assert {t.id async for t in bob.list_tasks()} == theirs
