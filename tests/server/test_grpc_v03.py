"""A2A 0.3 over gRPC on peerwire's gRPC port (``a2a.v1.A2AService`` beside 1.0's): the wire
as 0.3 callers see it (raw grpc.aio calls with our 0.3 messages), the switch that turns it
off, and one task model behind both versions (a task started in one, continued in the other).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import grpc
import grpc.aio
import msgspec
import pytest
from google.rpc import error_details_pb2, status_pb2

from peerwire import Agent, create_app
from peerwire.bindings.grpc._gen import a2a_v03_pb2 as pb
from peerwire.bindings.grpc.status import DETAILS_KEY
from peerwire.client.transports.base import CallOptions
from peerwire.client.transports.grpc import GrpcTransport
from peerwire.client.transports.grpc_v03 import GrpcV03Transport
from peerwire.errors import StreamEndedError
from peerwire.samples.glossary import agent as glossary
from peerwire.security import APIKeyVerifier, Principal
from peerwire.server import A2AApp
from peerwire.types import (
    AgentCard,
    AgentExtension,
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
    TaskState,
    TaskStatusUpdateEvent,
)

TIMEOUT_S = 30.0
OPTIONS = CallOptions()
CHUNKS = ["A record is a final class that is a transparent", " carrier for its components."]
V03 = "/a2a.v1.A2AService/"


def grpc_url(app: A2AApp) -> str:
    [interface] = [
        i for i in app.dispatcher.card().supported_interfaces if i.protocol_binding == Binding.GRPC
    ]
    return interface.url


@contextlib.asynccontextmanager
async def serving(**app_options: Any) -> AsyncIterator[tuple[A2AApp, grpc.aio.Channel]]:
    agent = app_options.pop("agent", glossary)
    options = {"store": "memory", "grpc_port": 0, "shutdown_grace": 1.0, **app_options}
    app = create_app(agent, **options)
    async with app.lifespan(), grpc.aio.insecure_channel(grpc_url(app)) as channel:
        yield app, channel


def user(text: str, **fields: Any) -> Any:
    return pb.Message(
        message_id=str(uuid.uuid4()), role=pb.ROLE_USER, content=[pb.Part(text=text)], **fields
    )


async def unary(
    channel: grpc.aio.Channel, rpc: str, request: Any, answer: Any, metadata: Any = ()
) -> Any:
    call = channel.unary_unary(
        V03 + rpc,
        request_serializer=type(request).SerializeToString,
        response_deserializer=answer.FromString,
    )
    return await call(request, metadata=metadata, timeout=TIMEOUT_S)


async def streamed(channel: grpc.aio.Channel, rpc: str, request: Any) -> list[Any]:
    call = channel.unary_stream(
        V03 + rpc,
        request_serializer=type(request).SerializeToString,
        response_deserializer=pb.StreamResponse.FromString,
    )
    with anyio.fail_after(TIMEOUT_S):
        return [event async for event in call(request, timeout=TIMEOUT_S)]


async def refused(coroutine: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await coroutine
    return caught.value


def reason_of(failure: grpc.aio.AioRpcError) -> str:
    raw = dict(failure.trailing_metadata() or ()).get(DETAILS_KEY)
    assert isinstance(raw, bytes), failure
    status = status_pb2.Status.FromString(raw)
    assert status.code == failure.code().value[0]
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    return info.reason


# --- the service, as 0.3 callers see it ---------------------------------------------------------


async def test_send_get_and_stream_in_0_3_shapes() -> None:
    async with serving() as (_, channel):
        request = pb.SendMessageRequest(request=user("record"))  # no configuration: blocks
        sent = await unary(channel, "SendMessage", request, pb.SendMessageResponse)
        task = sent.task
        assert task.status.state == pb.TASK_STATE_COMPLETED
        assert "".join(p.text for a in task.artifacts for p in a.parts) == "".join(CHUNKS)
        assert task.history[0].content[0].text == "record"
        assert task.status.timestamp.seconds > 0

        got = await unary(channel, "GetTask", pb.GetTaskRequest(name=f"tasks/{task.id}"), pb.Task)
        assert got.id == task.id and got.status.state == pb.TASK_STATE_COMPLETED
        limited = pb.GetTaskRequest(name=f"tasks/{task.id}", history_length=1)
        assert len((await unary(channel, "GetTask", limited, pb.Task)).history) == 1

        # A new message (a repeated messageId would get the finished task back).
        request = pb.SendMessageRequest(request=user("record"))
        events = await streamed(channel, "SendStreamingMessage", request)
        kinds = [e.WhichOneof("payload") for e in events]
        assert kinds == [
            "task",
            "status_update",
            "artifact_update",
            "artifact_update",
            "status_update",
        ]
        assert events[0].task.status.state == pb.TASK_STATE_SUBMITTED
        assert [e.status_update.final for e in events if e.HasField("status_update")] == [
            False,
            True,
        ]
        assert events[-1].status_update.status.state == pb.TASK_STATE_COMPLETED
        second = events[3].artifact_update
        assert (second.append, second.last_chunk) == (True, True)


async def test_a_configuration_without_blocking_returns_at_once() -> None:
    async with serving() as (_, channel):
        request = pb.SendMessageRequest(
            request=user("slow"), configuration=pb.SendMessageConfiguration()
        )
        sent = await unary(channel, "SendMessage", request, pb.SendMessageResponse)
        assert sent.task.status.state in (pb.TASK_STATE_SUBMITTED, pb.TASK_STATE_WORKING)
        canceled = await unary(
            channel, "CancelTask", pb.CancelTaskRequest(name=f"tasks/{sent.task.id}"), pb.Task
        )
        assert pb.TaskState.Name(canceled.status.state) == "TASK_STATE_CANCELLED"


async def test_input_required_closes_the_stream_finally_and_the_follow_up_continues() -> None:
    async with serving() as (_, channel):
        events = await streamed(
            channel, "SendStreamingMessage", pb.SendMessageRequest(request=user(""))
        )
        last = events[-1].status_update
        assert last.status.state == pb.TASK_STATE_INPUT_REQUIRED and last.final
        assert last.status.update.content[0].text == "Which term should I define?"
        task_id, context_id = last.task_id, last.context_id
        follow_up = pb.SendMessageRequest(
            request=user("record", task_id=task_id, context_id=context_id)
        )
        done = await unary(channel, "SendMessage", follow_up, pb.SendMessageResponse)
        assert (done.task.id, done.task.status.state) == (task_id, pb.TASK_STATE_COMPLETED)


async def test_subscription_starts_with_the_task_and_ends_with_a_final_cancel() -> None:
    async with serving() as (_, channel):
        configuration = pb.SendMessageConfiguration(blocking=False)
        request = pb.SendMessageRequest(request=user("slow"), configuration=configuration)
        sent = await unary(channel, "SendMessage", request, pb.SendMessageResponse)
        call = channel.unary_stream(
            V03 + "TaskSubscription",
            request_serializer=pb.TaskSubscriptionRequest.SerializeToString,
            response_deserializer=pb.StreamResponse.FromString,
        )(pb.TaskSubscriptionRequest(name=f"tasks/{sent.task.id}"), timeout=TIMEOUT_S)
        first = await call.read()
        assert first.task.id == sent.task.id
        await unary(
            channel, "CancelTask", pb.CancelTaskRequest(name=f"tasks/{sent.task.id}"), pb.Task
        )
        rest = []
        with anyio.fail_after(TIMEOUT_S):
            while (event := await call.read()) is not grpc.aio.EOF:
                rest.append(event)
        last = rest[-1].status_update
        assert last.status.state == pb.TASK_STATE_CANCELLED and last.final


async def test_errors_are_0_3_statuses_with_our_details() -> None:
    async with serving() as (_, channel):
        unknown = pb.GetTaskRequest(name=f"tasks/{uuid.uuid4()}")
        failure = await refused(unary(channel, "GetTask", unknown, pb.Task))
        assert failure.code() is grpc.StatusCode.NOT_FOUND
        assert (failure.details() or "").startswith("TaskNotFoundError: Task ")
        assert reason_of(failure) == "TASK_NOT_FOUND"

        done = await unary(
            channel,
            "SendMessage",
            pb.SendMessageRequest(request=user("record")),
            pb.SendMessageResponse,
        )
        name = f"tasks/{done.task.id}"
        failure = await refused(
            streamed(channel, "TaskSubscription", pb.TaskSubscriptionRequest(name=name))
        )
        assert failure.code() is grpc.StatusCode.UNIMPLEMENTED  # as the 0.3 SDKs read it
        assert (failure.details() or "").startswith("UnsupportedOperationError: ")
        failure = await refused(
            unary(channel, "CancelTask", pb.CancelTaskRequest(name=name), pb.Task)
        )
        assert failure.code() is grpc.StatusCode.FAILED_PRECONDITION
        assert (failure.details() or "").startswith("TaskNotCancelableError: ")

        create = pb.CreateTaskPushNotificationConfigRequest(
            parent=name,
            config_id="c",
            config=pb.TaskPushNotificationConfig(
                push_notification_config=pb.PushNotificationConfig(url="https://hooks.example/")
            ),
        )
        failure = await refused(
            unary(
                channel, "CreateTaskPushNotificationConfig", create, pb.TaskPushNotificationConfig
            )
        )
        assert failure.code() is grpc.StatusCode.UNIMPLEMENTED
        assert reason_of(failure) == "PUSH_NOTIFICATION_NOT_SUPPORTED"


@pytest.mark.parametrize(
    ("rpc", "payload", "prefix"),
    [
        ("GetTask", b"\xff\xff\xff", "InvalidRequestError: "),
        ("GetTask", pb.GetTaskRequest(name="task/x").SerializeToString(), "InvalidParamsError: "),
        ("SendMessage", pb.SendMessageRequest().SerializeToString(), "InvalidParamsError: "),
    ],
)
async def test_bad_requests_are_invalid_argument(rpc: str, payload: bytes, prefix: str) -> None:
    async with serving() as (_, channel):
        failure = await refused(channel.unary_unary(V03 + rpc)(payload, timeout=TIMEOUT_S))
        assert failure.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert (failure.details() or "").startswith(prefix)


async def test_no_version_is_asked_of_0_3_callers() -> None:
    # 1.0 takes a missing a2a-version as 0.3 and refuses it; the 0.3 service is 0.3.
    async with serving() as (_, channel):
        for metadata in ((), (("a2a-version", "0.3"),)):
            sent = await unary(
                channel,
                "SendMessage",
                pb.SendMessageRequest(request=user("record")),
                pb.SendMessageResponse,
                metadata,
            )
            assert sent.task.status.state == pb.TASK_STATE_COMPLETED


async def test_the_public_card_in_its_0_3_form() -> None:
    async with serving() as (app, channel):
        card = await unary(channel, "GetAgentCard", pb.GetAgentCardRequest(), pb.AgentCard)
        assert card.name == "Glossary Agent" and card.protocol_version == "0.3.0"
        assert card.preferred_transport == "JSONRPC" and card.url.endswith("/")
        listed = {i.transport: i.url for i in card.additional_interfaces}
        assert listed["GRPC"] == grpc_url(app)
        assert set(listed) == {"JSONRPC", "HTTP+JSON", "GRPC"}
        assert not card.supports_authenticated_extended_card
        assert [s.id for s in card.skills] == [s.id for s in app.dispatcher.card().skills]


def keyed_agent() -> Agent:
    scheme = SecurityScheme(
        api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-API-Key")
    )
    # Anonymous callers are admitted ({}), so only the extended card needs the key.
    requirements = [SecurityRequirement(), SecurityRequirement(schemes={"key": StringList()})]
    agent = Agent("Keyed", security_schemes={"key": scheme}, security_requirements=requirements)

    @agent.skill()
    async def echo(text: str) -> str:
        return text

    return agent


def extended_for(principal: Principal, card: AgentCard) -> AgentCard:
    return msgspec.structs.replace(card, description=f"for {principal.id}")


async def test_get_agent_card_is_the_extended_card_when_the_agent_offers_one() -> None:
    async with serving(
        agent=keyed_agent(),
        auth={"key": APIKeyVerifier({"k-alice": "alice"})},
        extended_card=extended_for,
    ) as (_, channel):
        card = await unary(
            channel,
            "GetAgentCard",
            pb.GetAgentCardRequest(),
            pb.AgentCard,
            (("x-api-key", "k-alice"),),
        )
        assert card.description == "for alice" and card.supports_authenticated_extended_card
        assert card.protocol_version == "0.3.0"
        failure = await refused(
            unary(channel, "GetAgentCard", pb.GetAgentCardRequest(), pb.AgentCard)
        )
        assert failure.code() is grpc.StatusCode.UNAUTHENTICATED


async def test_activated_extensions_are_echoed_under_the_0_3_name() -> None:
    agent = Agent("Ext", extensions=[AgentExtension(uri="urn:a2a:ext:x")])

    @agent.skill()
    async def echo(text: str) -> str:
        return text

    async with serving(agent=agent) as (_, channel):
        call = channel.unary_unary(
            V03 + "SendMessage",
            request_serializer=pb.SendMessageRequest.SerializeToString,
            response_deserializer=pb.SendMessageResponse.FromString,
        )(
            pb.SendMessageRequest(request=user("hi")),
            metadata=(("x-a2a-extensions", "urn:a2a:ext:x, urn:other"),),
            timeout=TIMEOUT_S,
        )
        await call
        initial = dict(await call.initial_metadata())
        assert initial["x-a2a-extensions"] == "urn:a2a:ext:x"


async def test_serve_v03_off_leaves_only_1_0() -> None:
    async with serving(serve_v03=False) as (app, channel):
        failure = await refused(
            unary(channel, "GetAgentCard", pb.GetAgentCardRequest(), pb.AgentCard)
        )
        assert failure.code() is grpc.StatusCode.UNIMPLEMENTED
        client = GrpcTransport(grpc_url(app), timeout=TIMEOUT_S)
        try:
            request = SendMessageRequest(
                message=Message(message_id="m", role=Role.USER, parts=[Part(text="record")])
            )
            answer = await client.call("SendMessage", request, SendMessageResponse, OPTIONS)
            assert answer.task is not None and answer.task.status.state is TaskState.COMPLETED
        finally:
            await client.aclose()


# --- one task model behind both versions --------------------------------------------------------


def ask(text: str, **fields: Any) -> SendMessageRequest:
    configuration = fields.pop("configuration", None)
    message = Message(
        message_id=str(uuid.uuid4()), role=Role.USER, parts=[Part(text=text)], **fields
    )
    return SendMessageRequest(message=message, configuration=configuration)


@contextlib.asynccontextmanager
async def both_versions() -> AsyncIterator[tuple[GrpcV03Transport, GrpcTransport]]:
    async with serving() as (app, _):
        v03 = GrpcV03Transport(grpc_url(app), timeout=TIMEOUT_S)
        v10 = GrpcTransport(grpc_url(app), timeout=TIMEOUT_S)
        try:
            yield v03, v10
        finally:
            await v03.aclose()
            await v10.aclose()


async def task_of(transport: GrpcTransport, request: SendMessageRequest) -> Task:
    answer = await transport.call("SendMessage", request, SendMessageResponse, OPTIONS)
    assert answer.task is not None
    return answer.task


@pytest.mark.parametrize("first", ["0.3", "1.0"])
async def test_a_task_started_in_one_version_is_read_and_continued_in_the_other(first: str) -> None:
    async with both_versions() as (v03, v10):
        start, then = (v03, v10) if first == "0.3" else (v10, v03)
        asked = await task_of(start, ask(""))
        assert asked.status.state is TaskState.INPUT_REQUIRED
        seen = await then.call("GetTask", GetTaskRequest(id=asked.id), Task, OPTIONS)
        assert (seen.id, seen.context_id, seen.status.state) == (
            asked.id,
            asked.context_id,
            TaskState.INPUT_REQUIRED,
        )
        done = await task_of(then, ask("record", task_id=asked.id, context_id=asked.context_id))
        assert (done.id, done.status.state) == (asked.id, TaskState.COMPLETED)
        back = await start.call("GetTask", GetTaskRequest(id=asked.id), Task, OPTIONS)
        assert back.status.state is TaskState.COMPLETED
        assert "".join(a.text for a in back.artifacts) == "".join(CHUNKS)
        assert [m.text for m in back.history if m.role is Role.USER] == ["", "record"]


async def test_a_0_3_subscriber_sees_a_cancel_made_over_1_0() -> None:
    async with both_versions() as (v03, v10):
        immediately = SendMessageConfiguration(return_immediately=True)
        slow = await task_of(v10, ask("slow", configuration=immediately))
        stream = v03.stream("SubscribeToTask", SubscribeToTaskRequest(id=slow.id), OPTIONS)
        first = await anext(stream)
        assert first.task is not None and first.task.id == slow.id
        canceled = await v10.call("CancelTask", CancelTaskRequest(id=slow.id), Task, OPTIONS)
        assert canceled.status.state is TaskState.CANCELED
        with anyio.fail_after(TIMEOUT_S):
            rest = [event async for event in stream]
        last = rest[-1].payload
        assert isinstance(last, TaskStatusUpdateEvent) and last.status.state is TaskState.CANCELED


async def test_a_stream_the_server_ends_early_says_so() -> None:
    async with serving() as (app, channel):
        configuration = pb.SendMessageConfiguration(blocking=False)
        request = pb.SendMessageRequest(request=user("slow"), configuration=configuration)
        sent = await unary(channel, "SendMessage", request, pb.SendMessageResponse)
        call = channel.unary_stream(
            V03 + "TaskSubscription",
            request_serializer=pb.TaskSubscriptionRequest.SerializeToString,
            response_deserializer=pb.StreamResponse.FromString,
        )(pb.TaskSubscriptionRequest(name=f"tasks/{sent.task.id}"), timeout=TIMEOUT_S)
        assert (await call.read()).task.id == sent.task.id
        assert app.dispatcher.end_streams(StreamEndedError.OUTAGE) == 1
        with anyio.fail_after(TIMEOUT_S), pytest.raises(grpc.aio.AioRpcError) as ended:
            while await call.read() is not grpc.aio.EOF:
                pass
        failure = ended.value
        assert failure.code() is grpc.StatusCode.UNAVAILABLE
        assert (failure.details() or "").startswith("InternalError: ")
        assert reason_of(failure) == "STREAM_ENDED"
        # peerwire's 0.3 client reads it as the typed error, with the task to resubscribe to.
        client = GrpcV03Transport(grpc_url(app), timeout=TIMEOUT_S)
        try:
            stream = client.stream(
                "SubscribeToTask", SubscribeToTaskRequest(id=sent.task.id), OPTIONS
            )
            assert (await anext(stream)).task is not None
            app.dispatcher.end_streams(StreamEndedError.OUTAGE)
            with anyio.fail_after(TIMEOUT_S), pytest.raises(StreamEndedError) as typed:
                await anext(stream)
            assert typed.value.metadata["taskId"] == sent.task.id
        finally:
            await client.aclose()
