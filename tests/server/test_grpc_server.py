"""The gRPC binding end to end: a real grpc.aio server on 127.0.0.1 (started by the app's
lifespan, in the test's event loop) and peerwire's gRPC client transport, every rpc.

Where the wire itself is under test (service parameters, malformed messages, metadata), calls
go through a raw grpc.aio channel instead, with no help from our client.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import grpc
import grpc.aio
import msgspec
import pytest

from peerwire import Agent, Message, Part, Role, TaskContext, create_app
from peerwire.bindings.grpc._gen import a2a_pb2
from peerwire.bindings.grpc.convert import from_bytes, to_bytes
from peerwire.bindings.grpc.status import DETAILS_KEY, decode_status
from peerwire.client.transports.base import CallOptions
from peerwire.client.transports.grpc import GrpcTransport
from peerwire.errors import (
    A2AError,
    ExtensionSupportRequiredError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
    VersionNotSupportedError,
)
from peerwire.server import A2AApp, Dispatcher
from peerwire.server.bus import MemoryBus
from peerwire.server.grpc import start_grpc_server
from peerwire.server.runner import Runner
from peerwire.server.stores import open_store
from peerwire.types import (
    AgentCapabilities,
    AgentExtension,
    Binding,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    SendMessageConfiguration,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)

TIMEOUT_S = 30.0
OPTIONS = CallOptions()
SEND = "/lf.a2a.v1.A2AService/SendMessage"
GET_TASK = "/lf.a2a.v1.A2AService/GetTask"


@dataclass
class Gates:
    started: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)


def build_agent(gates: Gates, **options: Any) -> Agent:
    agent = Agent("gRPC Test Agent", description="Skills for the gRPC tests", **options)

    @agent.skill()
    async def echo(text: str) -> str:
        """Completes with its text as a text artifact."""
        return text

    @agent.skill()
    async def chunks(ctx: TaskContext) -> None:
        """One artifact in two chunks, then completes."""
        await ctx.add_artifact("one ", artifact_id="a", name="chunked")
        await ctx.add_artifact("two", artifact_id="a", append=True, last_chunk=True)
        await ctx.complete()

    @agent.skill()
    async def wait(ctx: TaskContext) -> str:
        """Works until the test releases it."""
        await ctx.start_work()
        gates.started.set()
        await gates.release.wait()
        return "released"

    @agent.skill()
    async def ask(ctx: TaskContext) -> str:
        answer = await ctx.ask("Which one?")
        return f"got {answer.text}"

    @agent.skill()
    async def reply(text: str) -> Message:
        """Answers with a message, creating no task."""
        return Message(message_id=str(uuid.uuid4()), role=Role.AGENT, parts=[Part(text=text)])

    @agent.skill()
    async def unencodable(text: str) -> Message:
        """Answers with metadata no binding can encode: a server bug, not the caller's."""
        parts = [Part(text=text)]
        return Message(
            message_id=str(uuid.uuid4()), role=Role.AGENT, parts=parts, metadata={"x": {1, 2}}
        )

    return agent


def ask_for(skill: str, text: str = "", **fields: Any) -> Message:
    return Message(
        message_id=str(uuid.uuid4()),
        role=Role.USER,
        parts=[Part(text=text)],
        metadata={"skill": skill},
        **fields,
    )


def send(skill: str, text: str = "", **config: Any) -> SendMessageRequest:
    configuration = SendMessageConfiguration(**config) if config else None
    return SendMessageRequest(message=ask_for(skill, text), configuration=configuration)


def grpc_url(app: A2AApp) -> str:
    [interface] = [
        i for i in app.dispatcher.card().supported_interfaces if i.protocol_binding == Binding.GRPC
    ]
    return interface.url


@dataclass
class Served:
    app: A2AApp
    url: str
    client: GrpcTransport
    gates: Gates
    channel: grpc.aio.Channel

    async def raw(
        self, path: str, payload: bytes, metadata: tuple[tuple[str, str], ...] = ()
    ) -> bytes:
        answer: bytes = await self.channel.unary_unary(path)(
            payload, metadata=metadata, timeout=TIMEOUT_S
        )
        return answer


@contextlib.asynccontextmanager
async def serving(
    agent_options: dict[str, Any] | None = None, **app_options: Any
) -> AsyncIterator[Served]:
    gates = Gates()
    agent = build_agent(gates, **(agent_options or {}))
    app = create_app(agent, store="memory", grpc_port=0, shutdown_grace=1.0, **app_options)
    async with app.lifespan():
        url = grpc_url(app)
        client = GrpcTransport(url, timeout=TIMEOUT_S)
        channel = grpc.aio.insecure_channel(url)
        try:
            yield Served(app, url, client, gates, channel)
        finally:
            gates.release.set()
            await channel.close()
            await client.aclose()


VERSION = (("a2a-version", "1.0"),)


def status_error(exc: grpc.aio.AioRpcError) -> A2AError:
    details = next((v for k, v in exc.trailing_metadata() or () if k == DETAILS_KEY), None)
    return decode_status(exc.code().value[0], exc.details() or "", details)


# --- SendMessage / SendStreamingMessage ---------------------------------------------------------


async def test_send_message_blocks_until_completed() -> None:
    async with serving() as served:
        response = await served.client.call(
            "SendMessage", send("echo", "hello"), SendMessageResponse, OPTIONS
        )
        task = response.task
        assert task is not None
        assert task.status.state is TaskState.COMPLETED
        assert [a.text for a in task.artifacts] == ["hello"]
        assert task.history[0].text == "hello"
        assert task.status.timestamp is not None and task.status.timestamp.endswith("Z")


async def test_send_message_return_immediately() -> None:
    async with serving() as served:
        request = send("wait", return_immediately=True)
        response = await served.client.call("SendMessage", request, SendMessageResponse, OPTIONS)
        assert response.task is not None
        assert response.task.status.state in (TaskState.SUBMITTED, TaskState.WORKING)
        served.gates.release.set()


async def test_message_skill_replies_with_a_message() -> None:
    async with serving() as served:
        response = await served.client.call(
            "SendMessage", send("reply", "ping"), SendMessageResponse, OPTIONS
        )
        assert response.message is not None and response.task is None
        assert response.message.role is Role.AGENT
        assert response.message.text == "ping"
        events = [
            e
            async for e in served.client.stream("SendStreamingMessage", send("reply", "p"), OPTIONS)
        ]
        assert [e.message.text for e in events if e.message is not None] == ["p"]
        assert len(events) == 1


async def test_streaming_events_arrive_in_order() -> None:
    async with serving() as served:
        events = [
            e async for e in served.client.stream("SendStreamingMessage", send("chunks"), OPTIONS)
        ]
        first, *updates = events
        assert first.task is not None and first.task.status.state is TaskState.SUBMITTED
        task_id = first.task.id
        kinds = [
            ("status", e.status_update.status.state)
            if e.status_update is not None
            else (
                "artifact",
                e.artifact_update.artifact.text,
                e.artifact_update.append,
                e.artifact_update.last_chunk,
            )
            for e in updates
            if e.status_update is not None or e.artifact_update is not None
        ]
        assert kinds == [
            ("status", TaskState.WORKING),
            ("artifact", "one ", False, False),
            ("artifact", "two", True, True),
            ("status", TaskState.COMPLETED),
        ]
        assert all(
            (e.status_update or e.artifact_update).task_id == task_id  # type: ignore[union-attr]
            for e in updates
        )


async def test_follow_up_on_an_interrupted_task_continues_it() -> None:
    async with serving() as served:
        first = await served.client.call("SendMessage", send("ask"), SendMessageResponse, OPTIONS)
        assert first.task is not None
        assert first.task.status.state is TaskState.INPUT_REQUIRED
        assert first.task.status.message is not None
        assert first.task.status.message.text == "Which one?"
        follow_up = SendMessageRequest(
            message=Message(
                message_id=str(uuid.uuid4()),
                role=Role.USER,
                task_id=first.task.id,
                parts=[Part(text="the second")],
            )
        )
        second = await served.client.call("SendMessage", follow_up, SendMessageResponse, OPTIONS)
        assert second.task is not None and second.task.id == first.task.id
        assert second.task.status.state is TaskState.COMPLETED
        assert second.task.artifacts[0].text == "got the second"


async def test_message_to_a_terminal_task_is_unsupported() -> None:
    async with serving() as served:
        done = await served.client.call(
            "SendMessage", send("echo", "x"), SendMessageResponse, OPTIONS
        )
        assert done.task is not None
        again = SendMessageRequest(message=ask_for("echo", "y", task_id=done.task.id))
        with pytest.raises(UnsupportedOperationError) as exc:
            await served.client.call("SendMessage", again, SendMessageResponse, OPTIONS)
        assert exc.value.metadata == {"taskId": done.task.id}


async def test_agent_role_is_refused_as_invalid_params() -> None:
    async with serving() as served:
        message = msgspec.structs.replace(ask_for("echo", "x"), role=Role.AGENT)
        with pytest.raises(InvalidParamsError, match="ROLE_USER"):
            await served.client.call(
                "SendMessage", SendMessageRequest(message=message), SendMessageResponse, OPTIONS
            )


async def test_streaming_off_refuses_before_the_stream_starts() -> None:
    async with serving({"streaming": False}) as served:
        stream = served.client.stream("SendStreamingMessage", send("echo", "x"), OPTIONS)
        with pytest.raises(UnsupportedOperationError, match="streaming"):
            await anext(stream)
        with pytest.raises(UnsupportedOperationError):
            await anext(
                served.client.stream("SubscribeToTask", SubscribeToTaskRequest(id="t"), OPTIONS)
            )


# --- tasks --------------------------------------------------------------------------------------


async def test_get_task_and_history_length() -> None:
    async with serving() as served:
        sent = await served.client.call(
            "SendMessage", send("echo", "hi"), SendMessageResponse, OPTIONS
        )
        assert sent.task is not None
        task = await served.client.call("GetTask", GetTaskRequest(id=sent.task.id), Task, OPTIONS)
        assert task == sent.task
        trimmed = await served.client.call(
            "GetTask", GetTaskRequest(id=sent.task.id, history_length=0), Task, OPTIONS
        )
        assert trimmed.history == [] and trimmed.artifacts == task.artifacts


async def test_get_unknown_task_is_not_found_with_reason() -> None:
    async with serving() as served:
        with pytest.raises(TaskNotFoundError) as exc:
            await served.client.call("GetTask", GetTaskRequest(id="nope"), Task, OPTIONS)
        assert exc.value.metadata == {"taskId": "nope"}
        with pytest.raises(grpc.aio.AioRpcError) as raw:
            await served.raw(GET_TASK, to_bytes(GetTaskRequest(id="nope")), VERSION)
        assert raw.value.code() is grpc.StatusCode.NOT_FOUND


async def test_list_tasks() -> None:
    async with serving() as served:
        ids = []
        for text in ("a", "b"):
            sent = await served.client.call(
                "SendMessage", send("echo", text), SendMessageResponse, OPTIONS
            )
            assert sent.task is not None
            ids.append(sent.task.id)
        listed = await served.client.call(
            "ListTasks", ListTasksRequest(page_size=10), ListTasksResponse, OPTIONS
        )
        assert sorted(t.id for t in listed.tasks) == sorted(ids)
        assert (listed.next_page_token, listed.page_size, listed.total_size) == ("", 10, 2)
        assert all(t.artifacts == [] for t in listed.tasks)  # only with includeArtifacts
        with pytest.raises(InvalidParamsError) as exc:
            await served.client.call(
                "ListTasks", ListTasksRequest(page_size=500), ListTasksResponse, OPTIONS
            )
        assert [v.field for v in exc.value.field_violations] == ["pageSize"]


async def test_cancel_task() -> None:
    async with serving() as served:
        sent = await served.client.call(
            "SendMessage", send("wait", return_immediately=True), SendMessageResponse, OPTIONS
        )
        assert sent.task is not None
        with anyio.fail_after(TIMEOUT_S):
            await served.gates.started.wait()
        canceled = await served.client.call(
            "CancelTask", CancelTaskRequest(id=sent.task.id), Task, OPTIONS
        )
        assert canceled.status.state is TaskState.CANCELED
        done = await served.client.call(
            "SendMessage", send("echo", "x"), SendMessageResponse, OPTIONS
        )
        assert done.task is not None
        with pytest.raises(TaskNotCancelableError):
            await served.client.call(
                "CancelTask", CancelTaskRequest(id=done.task.id), Task, OPTIONS
            )
        with pytest.raises(TaskNotFoundError):
            await served.client.call("CancelTask", CancelTaskRequest(id="nope"), Task, OPTIONS)


async def test_subscribe_starts_with_the_task_and_ends_at_terminal() -> None:
    async with serving() as served:
        sent = await served.client.call(
            "SendMessage", send("wait", return_immediately=True), SendMessageResponse, OPTIONS
        )
        assert sent.task is not None
        with anyio.fail_after(TIMEOUT_S):
            await served.gates.started.wait()
        stream = served.client.stream(
            "SubscribeToTask", SubscribeToTaskRequest(id=sent.task.id), OPTIONS
        )
        first = await anext(stream)
        assert first.task is not None and first.task.id == sent.task.id
        assert first.task.status.state is TaskState.WORKING
        served.gates.release.set()
        rest = [event async for event in stream]
        assert rest[-1].status_update is not None
        assert rest[-1].status_update.status.state is TaskState.COMPLETED
        assert [e.artifact_update.artifact.text for e in rest if e.artifact_update] == ["released"]
        with pytest.raises(UnsupportedOperationError, match="finished task"):
            await anext(
                served.client.stream(
                    "SubscribeToTask", SubscribeToTaskRequest(id=sent.task.id), OPTIONS
                )
            )


async def test_closing_a_stream_early_releases_its_subscription() -> None:
    async with serving() as served:
        sent = await served.client.call(
            "SendMessage", send("wait", return_immediately=True), SendMessageResponse, OPTIONS
        )
        assert sent.task is not None
        task_id = sent.task.id
        stream = served.client.stream(
            "SubscribeToTask", SubscribeToTaskRequest(id=task_id), OPTIONS
        )
        assert (await anext(stream)).task is not None
        bus = served.app.dispatcher.bus
        assert isinstance(bus, MemoryBus)
        assert task_id in bus._subscribers
        await stream.aclose()  # type: ignore[attr-defined]
        with anyio.fail_after(TIMEOUT_S):
            # The server learns of the cancellation asynchronously; nothing to await but the bus.
            while task_id in bus._subscribers:  # noqa: ASYNC110
                await anyio.sleep(0.01)
        served.gates.release.set()
        task = await served.client.call("GetTask", GetTaskRequest(id=task_id), Task, OPTIONS)
        assert task.id == task_id


# --- push notification configs and the extended card --------------------------------------------


@pytest.mark.parametrize(
    ("operation", "request_", "response_type"),
    [
        (
            "CreateTaskPushNotificationConfig",
            TaskPushNotificationConfig(task_id="t", url="https://hook.example/"),
            TaskPushNotificationConfig,
        ),
        (
            "GetTaskPushNotificationConfig",
            GetTaskPushNotificationConfigRequest(task_id="t", id="c"),
            TaskPushNotificationConfig,
        ),
        (
            "ListTaskPushNotificationConfigs",
            ListTaskPushNotificationConfigsRequest(task_id="t"),
            ListTaskPushNotificationConfigsResponse,
        ),
        (
            "DeleteTaskPushNotificationConfig",
            DeleteTaskPushNotificationConfigRequest(task_id="t", id="c"),
            type(None),
        ),
    ],
)
async def test_push_config_rpcs_say_push_is_not_supported(
    operation: str, request_: Any, response_type: type[Any]
) -> None:
    async with serving() as served:
        with pytest.raises(PushNotificationNotSupportedError):
            await served.client.call(operation, request_, response_type, OPTIONS)


async def test_extended_card_is_unsupported_without_the_capability() -> None:
    async with serving() as served:
        with pytest.raises(UnsupportedOperationError, match="extended agent card"):
            await served.client.call(
                "GetExtendedAgentCard", GetExtendedAgentCardRequest(), type(None), OPTIONS
            )


# --- service parameters -------------------------------------------------------------------------


@pytest.mark.parametrize("metadata", [(), (("a2a-version", "0.3"),), (("a2a-version", ""),)])
async def test_missing_or_old_version_is_failed_precondition(
    metadata: tuple[tuple[str, str], ...],
) -> None:
    async with serving() as served:
        with pytest.raises(grpc.aio.AioRpcError) as exc:
            await served.raw(GET_TASK, to_bytes(GetTaskRequest(id="t")), metadata)
        assert exc.value.code() is grpc.StatusCode.FAILED_PRECONDITION
        error = status_error(exc.value)
        assert type(error) is VersionNotSupportedError
        assert error.metadata["supportedVersions"] == "1.0"


async def test_patch_versions_are_accepted() -> None:
    async with serving() as served:
        with pytest.raises(grpc.aio.AioRpcError) as exc:
            await served.raw(
                GET_TASK, to_bytes(GetTaskRequest(id="t")), (("a2a-version", "1.0.3"),)
            )
        assert exc.value.code() is grpc.StatusCode.NOT_FOUND  # past the version check


async def test_lenient_server_takes_a_missing_version_as_1_0() -> None:
    async with serving(lenient_version=True) as served:
        answer = await served.raw(SEND, to_bytes(send("echo", "lenient")))
        response = from_bytes(answer, SendMessageResponse)
        assert response.task is not None and response.task.artifacts[0].text == "lenient"


@contextlib.asynccontextmanager
async def serving_extensions() -> AsyncIterator[str]:
    """A dispatcher whose card declares a required and an optional extension."""
    agent = build_agent(Gates())
    store, bus = open_store("memory"), MemoryBus()
    runner = Runner(agent, store, bus)
    capabilities = AgentCapabilities(
        streaming=True,
        extensions=[
            AgentExtension(uri="urn:ext:required", required=True),
            AgentExtension(uri="urn:ext:optional"),
        ],
    )
    card = msgspec.structs.replace(agent.card([]), capabilities=capabilities)
    dispatcher = Dispatcher(agent, store, bus, runner, lambda: card)
    await store.open()
    try:
        async with runner:
            server, port = await start_grpc_server(dispatcher, "127.0.0.1", 0)
            try:
                yield f"127.0.0.1:{port}"
            finally:
                await server.stop(0)
    finally:
        await bus.close()
        await store.close()


async def test_activated_extensions_are_echoed_in_initial_metadata() -> None:
    async with serving_extensions() as url, grpc.aio.insecure_channel(url) as channel:
        requested = "urn:ext:optional, urn:ext:unknown"
        call = channel.unary_unary(SEND)(
            to_bytes(send("echo", "x")),
            metadata=(
                *VERSION,
                ("a2a-extensions", requested),
                ("a2a-extensions", "urn:ext:required"),
            ),
            timeout=TIMEOUT_S,
        )
        await call
        initial = dict(await call.initial_metadata())
        assert initial["a2a-extensions"] == "urn:ext:optional,urn:ext:required"


async def test_a_required_extension_must_be_requested() -> None:
    async with serving_extensions() as url:
        client = GrpcTransport(url, timeout=TIMEOUT_S)
        try:
            with pytest.raises(ExtensionSupportRequiredError) as exc:
                await client.call("SendMessage", send("echo", "x"), SendMessageResponse, OPTIONS)
            assert exc.value.metadata == {"extensions": "urn:ext:required"}
            response = await client.call(
                "SendMessage",
                send("echo", "x"),
                SendMessageResponse,
                CallOptions(extensions=("urn:ext:required",)),
            )
            assert response.task is not None
        finally:
            await client.aclose()


# --- what the wire can get wrong ----------------------------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [b"\xff", b"\x12\x05\x0a\x03\xff\xfe\xfd", b"\x12\xff\xff\xff\x0f"],
    ids=["truncated-varint", "string-not-utf8", "length-past-end"],
)
async def test_bytes_that_are_not_a_request_are_invalid_argument(payload: bytes) -> None:
    async with serving() as served:
        with pytest.raises(grpc.aio.AioRpcError) as exc:
            await served.raw(SEND, payload, VERSION)
        assert exc.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert "not a valid lf.a2a.v1.SendMessageRequest protobuf message" in (
            exc.value.details() or ""
        )
        assert type(status_error(exc.value)) is InvalidRequestError


async def test_invalid_fields_are_invalid_argument_with_bad_request() -> None:
    async with serving() as served:
        request = a2a_pb2.SendMessageRequest()
        request.message.message_id = "m-1"
        request.message.parts.add(text="no role")
        with pytest.raises(grpc.aio.AioRpcError) as exc:
            await served.raw(SEND, request.SerializeToString(), VERSION)
        assert exc.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        error = status_error(exc.value)
        assert type(error) is InvalidParamsError
        assert [v.field for v in error.field_violations] == ["message"]
        assert "ROLE_USER or ROLE_AGENT" in error.field_violations[0].description


async def test_oversized_messages_are_resource_exhausted() -> None:
    async with serving(max_body_bytes=4096) as served:
        big = send("echo", "x" * 10_000)
        with pytest.raises(grpc.aio.AioRpcError) as exc:
            await served.raw(SEND, to_bytes(big), VERSION)
        assert exc.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "larger than max" in (exc.value.details() or "")
        with pytest.raises(InvalidRequestError) as refused:
            await served.client.call("SendMessage", big, SendMessageResponse, OPTIONS)
        assert "larger than the 4096 bytes the server accepts" in str(refused.value)
        small = await served.client.call(
            "SendMessage", send("echo", "x"), SendMessageResponse, OPTIONS
        )
        assert small.task is not None


async def test_unknown_rpc_is_unimplemented() -> None:
    async with serving() as served:
        with pytest.raises(grpc.aio.AioRpcError) as exc:
            await served.raw("/lf.a2a.v1.A2AService/SendMessages", b"", VERSION)
        assert exc.value.code() is grpc.StatusCode.UNIMPLEMENTED


async def test_a_server_bug_is_internal_not_a_crash(caplog: pytest.LogCaptureFixture) -> None:
    async with serving() as served:
        with pytest.raises(InternalError, match="server failed"):
            await served.client.call(
                "SendMessage", send("unencodable", "x"), SendMessageResponse, OPTIONS
            )
        assert "gRPC SendMessage failed" in caplog.text
        # The server goes on serving.
        ok = await served.client.call(
            "SendMessage", send("echo", "x"), SendMessageResponse, OPTIONS
        )
        assert ok.task is not None


async def test_streamed_events_are_stream_responses() -> None:
    async with serving() as served:
        call = served.channel.unary_stream("/lf.a2a.v1.A2AService/SendStreamingMessage")(
            to_bytes(send("echo", "raw")), metadata=VERSION, timeout=TIMEOUT_S
        )
        events = [from_bytes(raw, StreamResponse) async for raw in call]
        assert events[0].task is not None
        assert events[-1].status_update is not None
        assert events[-1].status_update.status.state is TaskState.COMPLETED
        assert await call.code() is grpc.StatusCode.OK
