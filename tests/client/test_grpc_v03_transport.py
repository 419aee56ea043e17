"""The A2A 0.3 gRPC client transport on its own: what it sends, how it reads 0.3 peers'
errors, and how it makes a 0.3 resubscription read as a 1.0 one.

It talks to a small raw grpc.aio server on 127.0.0.1 playing a 0.3 peer the way the official
0.3 SDKs behave (a2a-sdk: the error class in the status message, a resubscription that begins
with an update and refuses finished tasks with InvalidParams; @a2a-js/sdk: bare messages,
errors told by status code). The transport against peerwire's own server is in
tests/server/test_grpc_v03.py, and against the SDKs themselves in the interop suite.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
import grpc.aio
import httpx
import pytest

from peerwire.bindings.grpc._gen import a2a_v03_pb2 as pb
from peerwire.client import _registry
from peerwire.client.transports.base import CallOptions, TransportSettings
from peerwire.client.transports.grpc_v03 import GrpcV03Transport, create_transport
from peerwire.errors import (
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from peerwire.types import (
    AgentInterface,
    Binding,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SendMessageResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatusUpdateEvent,
)

TIMEOUT_S = 30.0
SERVICE = "a2a.v1.A2AService"
OPTIONS = CallOptions()

Handler = Callable[[bytes, Any], Awaitable[Any]]


def task(state: int = pb.TASK_STATE_WORKING) -> Any:
    return pb.Task(id="t-1", context_id="c-1", status=pb.TaskStatus(state=state))


def update(state: int) -> bytes:
    event = pb.StreamResponse(
        status_update=pb.TaskStatusUpdateEvent(
            task_id="t-1", context_id="c-1", status=pb.TaskStatus(state=state), final=state != 2
        )
    )
    data: bytes = event.SerializeToString()
    return data


@dataclass
class Peer:
    url: str
    metadata: list[dict[str, str]] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)


@contextlib.asynccontextmanager
async def fake_peer(**rpcs: Handler) -> AsyncIterator[Peer]:
    """A grpc.aio server of ``a2a.v1.A2AService`` answering the rpcs given (by name); a
    handler returning an async iterator is a streaming rpc."""
    server = grpc.aio.server()
    port = server.add_insecure_port("127.0.0.1:0")
    peer = Peer(url=f"127.0.0.1:{port}")

    def recorded(name: str, handler: Handler, streaming: bool) -> Any:
        def note(context: Any) -> None:
            peer.calls.append(name)
            metadata = context.invocation_metadata() or ()
            peer.metadata.append({k: v for k, v in metadata if isinstance(v, str)})

        if streaming:

            async def stream(payload: bytes, context: Any) -> AsyncIterator[bytes]:
                note(context)
                async for item in await handler(payload, context):
                    yield item

            return grpc.unary_stream_rpc_method_handler(stream)

        async def unary(payload: bytes, context: Any) -> Any:
            note(context)
            return await handler(payload, context)

        return grpc.unary_unary_rpc_method_handler(unary)

    streaming = {"SendStreamingMessage", "TaskSubscription"}
    handlers = {name: recorded(name, handler, name in streaming) for name, handler in rpcs.items()}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    await server.start()
    try:
        yield peer
    finally:
        await server.stop(0)


@contextlib.asynccontextmanager
async def transport(peer: Peer) -> AsyncIterator[GrpcV03Transport]:
    client = GrpcV03Transport(peer.url, timeout=TIMEOUT_S)
    try:
        yield client
    finally:
        await client.aclose()


def aborting(code: grpc.StatusCode, message: str) -> Handler:
    async def handler(payload: bytes, context: Any) -> Any:
        await context.abort(code, message)

    return handler


def answering(message: Any) -> Handler:
    async def handler(payload: bytes, context: Any) -> Any:
        return message.SerializeToString()

    return handler


def send(text: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(message_id="m-1", role=Role.USER, parts=[Part(text=text)])
    )


# --- what it sends ------------------------------------------------------------------------------


async def test_it_sends_0_3_metadata_and_messages() -> None:
    async with (
        fake_peer(SendMessage=answering(pb.SendMessageResponse(task=task(3)))) as peer,
        transport(peer) as client,
    ):
        options = CallOptions(
            extensions=("urn:a", "urn:b"),
            headers={"A2A-Version": "0.3", "Authorization": "Bearer t"},
        )
        answer = await client.call("SendMessage", send("hi"), SendMessageResponse, options)
        assert answer.task is not None and answer.task.status.state is TaskState.COMPLETED
    [metadata] = peer.metadata
    assert "a2a-version" not in metadata and "a2a-extensions" not in metadata
    assert metadata["x-a2a-extensions"] == "urn:a,urn:b"
    assert metadata["authorization"] == "Bearer t"


async def test_list_tasks_is_refused_before_anything_is_sent() -> None:
    async with fake_peer() as peer, transport(peer) as client:
        with pytest.raises(UnsupportedOperationError, match=r"not part of A2A 0\.3"):
            await client.call("ListTasks", ListTasksRequest(), ListTasksResponse, OPTIONS)
    assert peer.calls == []


async def test_the_registry_builds_it_for_0_3_grpc_interfaces() -> None:
    interface = AgentInterface(url="127.0.0.1:1", protocol_binding="GRPC", protocol_version="0.3")
    assert _registry.transport_factory(Binding.GRPC, "0.3.0") is create_transport
    async with httpx.AsyncClient() as http:
        built = create_transport(interface, TransportSettings(http=http, timeout=5.0))
        assert isinstance(built, GrpcV03Transport) and built.url == "127.0.0.1:1"
        await built.aclose()
        assert create_transport(interface, TransportSettings(http=http, in_process=True)) is None


# --- how it reads 0.3 peers' errors -------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "message", "error"),
    [
        # a2a-sdk 0.3: the class is in the message, whatever the code.
        (grpc.StatusCode.UNIMPLEMENTED, "TaskNotCancelableError: cannot", TaskNotCancelableError),
        (grpc.StatusCode.NOT_FOUND, "TaskNotFoundError: Task not found", TaskNotFoundError),
        # @a2a-js/sdk 0.3: the code says it, for this rpc.
        (grpc.StatusCode.FAILED_PRECONDITION, "Task not cancelable: t-1", TaskNotCancelableError),
        (grpc.StatusCode.NOT_FOUND, "Task not found: t-1", TaskNotFoundError),
    ],
)
async def test_cancel_errors_as_the_sdks_send_them(
    code: grpc.StatusCode, message: str, error: type[Exception]
) -> None:
    async with fake_peer(CancelTask=aborting(code, message)) as peer, transport(peer) as client:
        with pytest.raises(error):
            await client.call("CancelTask", CancelTaskRequest(id="t-1"), Task, OPTIONS)


async def test_push_rpcs_unimplemented_is_push_not_supported() -> None:
    handler = aborting(grpc.StatusCode.UNIMPLEMENTED, "Push Notification is not supported")
    async with (
        fake_peer(CreateTaskPushNotificationConfig=handler) as peer,
        transport(peer) as client,
    ):
        config = TaskPushNotificationConfig(task_id="t-1", url="https://hooks.example/")
        with pytest.raises(PushNotificationNotSupportedError):
            await client.call(
                "CreateTaskPushNotificationConfig", config, TaskPushNotificationConfig, OPTIONS
            )


async def test_an_answer_that_is_not_the_message_is_an_invalid_response() -> None:
    async def garbage(payload: bytes, context: Any) -> bytes:
        return b"\xff\xff\xff"

    async with fake_peer(GetTask=garbage) as peer, transport(peer) as client:
        with pytest.raises(Exception, match="invalid answer") as caught:
            await client.call("GetTask", GetTaskRequest(id="t-1"), Task, OPTIONS)
    assert type(caught.value).__name__ == "InvalidResponseError"


# --- resubscription, as 1.0 reads it ------------------------------------------------------------


async def test_a_resubscription_that_begins_with_an_update_gets_the_task_first() -> None:
    async def subscribe(payload: bytes, context: Any) -> AsyncIterator[bytes]:
        async def events() -> AsyncIterator[bytes]:
            yield update(pb.TASK_STATE_WORKING)  # a2a-sdk 0.3: the next update, no task
            yield update(pb.TASK_STATE_COMPLETED)

        return events()

    async with (
        fake_peer(TaskSubscription=subscribe, GetTask=answering(task())) as peer,
        transport(peer) as client,
    ):
        stream = client.stream("SubscribeToTask", SubscribeToTaskRequest(id="t-1"), OPTIONS)
        events = [event.payload async for event in stream]
    first, last = events
    assert isinstance(first, Task) and first.status.state is TaskState.WORKING
    assert isinstance(last, TaskStatusUpdateEvent) and last.status.state is TaskState.COMPLETED
    assert peer.calls == ["TaskSubscription", "GetTask"]


async def test_a_resubscription_refused_for_a_finished_task_is_unsupported() -> None:
    refuse = aborting(grpc.StatusCode.INVALID_ARGUMENT, "InvalidParamsError: terminal state")
    async with (
        fake_peer(
            TaskSubscription=refuse, GetTask=answering(task(pb.TASK_STATE_CANCELLED))
        ) as peer,
        transport(peer) as client,
    ):
        stream = client.stream("SubscribeToTask", SubscribeToTaskRequest(id="t-1"), OPTIONS)
        with pytest.raises(UnsupportedOperationError, match="TASK_STATE_CANCELED"):
            await anext(stream)


async def test_a_resubscription_refused_for_a_running_task_stays_invalid_params() -> None:
    refuse = aborting(grpc.StatusCode.INVALID_ARGUMENT, "InvalidParamsError: no queue")
    async with (
        fake_peer(TaskSubscription=refuse, GetTask=answering(task())) as peer,
        transport(peer) as client,
    ):
        stream = client.stream("SubscribeToTask", SubscribeToTaskRequest(id="t-1"), OPTIONS)
        with pytest.raises(InvalidParamsError, match="no queue"):
            await anext(stream)


async def test_a_stream_that_begins_with_the_task_is_passed_on_as_it_is() -> None:
    async def stream_send(payload: bytes, context: Any) -> AsyncIterator[bytes]:
        async def events() -> AsyncIterator[bytes]:
            yield pb.StreamResponse(task=task(pb.TASK_STATE_SUBMITTED)).SerializeToString()
            yield update(pb.TASK_STATE_COMPLETED)

        return events()

    async with (
        fake_peer(SendStreamingMessage=stream_send) as peer,
        transport(peer) as client,
    ):
        events = [
            e.payload async for e in client.stream("SendStreamingMessage", send("x"), OPTIONS)
        ]
    assert [type(e).__name__ for e in events] == ["Task", "TaskStatusUpdateEvent"]
    assert peer.calls == ["SendStreamingMessage"]
