"""The REST client transport against a real peerwire server (and, for the answers peerwire
never gives, against small ASGI peers that answer the way older or foreign servers do)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
import pytest
import pytest_asyncio

from peerwire import Agent, Message, Part, Role, TaskContext
from peerwire.client import Client, TransportSettings
from peerwire.client._registry import transport_factory
from peerwire.client.transports.base import CallOptions
from peerwire.client.transports.rest import RestTransport, create_transport
from peerwire.errors import (
    A2AConnectionError,
    A2ATimeoutError,
    ContentTypeNotSupportedError,
    InvalidAgentResponseError,
    InvalidParamsError,
    InvalidResponseError,
    MethodNotFoundError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from peerwire.testing import live_server
from peerwire.types import (
    AgentInterface,
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

pytestmark = pytest.mark.asyncio(loop_scope="module")

TIMEOUT_S = 30.0
NO_OPTIONS = CallOptions()


@dataclass
class Gates:
    events: dict[str, asyncio.Event] = field(default_factory=dict)

    def __getitem__(self, name: str) -> asyncio.Event:
        return self.events.setdefault(name, asyncio.Event())


def transport_agent(gates: Gates) -> Agent:
    agent = Agent("REST Transport Probe", description="Skills for the REST transport tests")

    @agent.router
    def by_skill(message: Message) -> str:
        return str((message.metadata or {}).get("skill", "echo"))

    @agent.skill()
    async def echo(text: str) -> str:
        return text

    @agent.skill()
    async def reply(text: str) -> Message:
        return Message(message_id="r-1", role=Role.AGENT, parts=[Part(text=f"re: {text}")])

    @agent.skill()
    async def wait(text: str, ctx: TaskContext) -> str:
        await ctx.start_work("waiting")
        await gates[text].wait()
        return "released"

    return agent


@dataclass
class Peer:
    url: str
    gates: Gates
    transport: RestTransport
    http: httpx.AsyncClient


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def peer() -> AsyncIterator[Peer]:
    gates = Gates()
    async with (
        live_server(transport_agent(gates), shutdown_grace=1.0) as url,
        httpx.AsyncClient(trust_env=False) as http,
    ):
        interface = AgentInterface(
            url=url + "/rest", protocol_binding="HTTP+JSON", protocol_version="1.0"
        )
        settings = TransportSettings(http=http, timeout=TIMEOUT_S, stream_idle_timeout=TIMEOUT_S)
        try:
            yield Peer(url, gates, create_transport(interface, settings), http)
        finally:
            for event in gates.events.values():
                event.set()


def message(text: str, *, skill: str = "echo", **fields: Any) -> Message:
    return Message(
        message_id=f"m-{text}",
        role=Role.USER,
        parts=[Part(text=text)],
        metadata={"skill": skill},
        **fields,
    )


def send_request(
    text: str, *, skill: str = "echo", tenant: str = "", **config: Any
) -> SendMessageRequest:
    configuration = SendMessageConfiguration(**config) if config else None
    return SendMessageRequest(
        tenant=tenant, message=message(text, skill=skill), configuration=configuration
    )


async def send(peer: Peer, text: str, **kwargs: Any) -> Task:
    response = await peer.transport.call(
        "SendMessage", send_request(text, **kwargs), SendMessageResponse, NO_OPTIONS
    )
    assert response.task is not None, response
    return response.task


async def collect(events: AsyncIterator[StreamResponse]) -> list[StreamResponse]:
    collected = []
    with anyio.fail_after(TIMEOUT_S):
        async for event in events:
            collected.append(event)
    return collected


# -- unary operations ------------------------------------------------------------------------


async def test_send_get_list_and_cancel(peer: Peer) -> None:
    task = await send(peer, "hello")
    assert task.status.state is TaskState.COMPLETED
    got = await peer.transport.call(
        "GetTask", GetTaskRequest(id=task.id, history_length=0), Task, NO_OPTIONS
    )
    assert (got.id, got.history, got.artifacts) == (task.id, [], task.artifacts)
    listed = await peer.transport.call(
        "ListTasks",
        ListTasksRequest(context_id=task.context_id, include_artifacts=True),
        ListTasksResponse,
        NO_OPTIONS,
    )
    assert [t.id for t in listed.tasks] == [task.id]
    assert listed.tasks[0].artifacts == task.artifacts
    waiting = await send(peer, "cancel-me", skill="wait", return_immediately=True)
    canceled = await peer.transport.call(
        "CancelTask", CancelTaskRequest(id=waiting.id, metadata={"why": "test"}), Task, NO_OPTIONS
    )
    assert canceled.status.state is TaskState.CANCELED


async def test_a_message_reply(peer: Peer) -> None:
    response = await peer.transport.call(
        "SendMessage", send_request("x", skill="reply"), SendMessageResponse, NO_OPTIONS
    )
    assert response.message is not None and response.message.text == "re: x"


async def test_tenants_travel_in_the_path(peer: Peer) -> None:
    task = await send(peer, "tenanted", tenant="org/team")
    got = await peer.transport.call(
        "GetTask", GetTaskRequest(tenant="org/team", id=task.id), Task, NO_OPTIONS
    )
    assert got.id == task.id
    with pytest.raises(TaskNotFoundError):
        await peer.transport.call("GetTask", GetTaskRequest(id=task.id), Task, NO_OPTIONS)
    listed = await peer.transport.call(
        "ListTasks", ListTasksRequest(tenant="org/team"), ListTasksResponse, NO_OPTIONS
    )
    assert [t.id for t in listed.tasks] == [task.id]


@pytest.mark.parametrize("task_id", ["a:b", "a/b", "..", ".", "a b?c#d", "tasks", "x:cancel", "✓"])
async def test_awkward_ids_reach_the_server_intact(peer: Peer, task_id: str) -> None:
    with pytest.raises(TaskNotFoundError) as caught:
        await peer.transport.call("GetTask", GetTaskRequest(id=task_id), Task, NO_OPTIONS)
    assert caught.value.metadata == {"taskId": task_id}


async def test_agent_errors_arrive_as_their_classes(peer: Peer) -> None:
    done = await send(peer, "done")
    with pytest.raises(TaskNotCancelableError):
        await peer.transport.call("CancelTask", CancelTaskRequest(id=done.id), Task, NO_OPTIONS)
    with pytest.raises(UnsupportedOperationError):
        await peer.transport.call(
            "GetExtendedAgentCard", GetExtendedAgentCardRequest(), Task, NO_OPTIONS
        )
    with pytest.raises(InvalidParamsError) as caught:
        await peer.transport.call(
            "ListTasks", ListTasksRequest(page_size=500), ListTasksResponse, NO_OPTIONS
        )
    assert [v.field for v in caught.value.field_violations] == ["pageSize"]
    push_calls: list[tuple[str, Any, type[Any]]] = [
        (
            "CreateTaskPushNotificationConfig",
            TaskPushNotificationConfig(task_id=done.id, url="https://hook.example/"),
            TaskPushNotificationConfig,
        ),
        (
            "GetTaskPushNotificationConfig",
            GetTaskPushNotificationConfigRequest(task_id=done.id, id="c"),
            TaskPushNotificationConfig,
        ),
        (
            "ListTaskPushNotificationConfigs",
            ListTaskPushNotificationConfigsRequest(task_id=done.id),
            ListTaskPushNotificationConfigsResponse,
        ),
        (
            "DeleteTaskPushNotificationConfig",
            DeleteTaskPushNotificationConfigRequest(task_id=done.id, id="c"),
            type(None),
        ),
    ]
    for operation, request, response_type in push_calls:
        with pytest.raises(PushNotificationNotSupportedError):
            await peer.transport.call(operation, request, response_type, NO_OPTIONS)


async def test_an_empty_path_value_fails_before_sending(peer: Peer) -> None:
    with pytest.raises(InvalidParamsError):
        await peer.transport.call("GetTask", GetTaskRequest(id=""), Task, NO_OPTIONS)


async def test_operations_must_be_called_the_right_way(peer: Peer) -> None:
    with pytest.raises(ValueError, match="use stream"):
        await peer.transport.call(
            "SendStreamingMessage", send_request("x"), SendMessageResponse, NO_OPTIONS
        )
    with pytest.raises(ValueError, match="use call"):
        await anext(peer.transport.stream("GetTask", GetTaskRequest(id="t"), NO_OPTIONS))
    with pytest.raises(ValueError, match="unknown A2A operation"):
        await peer.transport.call(
            "message/send", send_request("x"), SendMessageResponse, NO_OPTIONS
        )


# -- streams ---------------------------------------------------------------------------------


async def test_send_streaming_message(peer: Peer) -> None:
    events = await collect(
        peer.transport.stream("SendStreamingMessage", send_request("s"), NO_OPTIONS)
    )
    assert events[0].task is not None
    assert events[-1].status_update is not None
    assert events[-1].status_update.status.state is TaskState.COMPLETED
    texts = [e.artifact_update.artifact.parts[0].text for e in events if e.artifact_update]
    assert texts == ["s"]


@pytest.mark.parametrize("method", ["POST", "GET"])
async def test_subscribe_with_either_verb(peer: Peer, method: str) -> None:
    transport = RestTransport(
        peer.url + "/rest",
        peer.http,
        timeout=TIMEOUT_S,
        subscribe_method=method,  # type: ignore[arg-type]
    )
    gate = f"sub-{method}"
    task = await send(peer, gate, skill="wait", return_immediately=True)
    stream = transport.stream("SubscribeToTask", SubscribeToTaskRequest(id=task.id), NO_OPTIONS)
    with anyio.fail_after(TIMEOUT_S):
        first = await anext(stream)
        assert first.task is not None and first.task.id == task.id
        peer.gates[gate].set()
        rest = await collect(stream)
    assert rest[-1].status_update is not None
    assert rest[-1].status_update.status.state is TaskState.COMPLETED


async def test_an_error_before_the_stream_is_raised_from_the_first_event(peer: Peer) -> None:
    done = await send(peer, "finished")
    stream = peer.transport.stream(
        "SubscribeToTask", SubscribeToTaskRequest(id=done.id), NO_OPTIONS
    )
    with pytest.raises(UnsupportedOperationError, match="finished task"):
        await anext(stream)
    stream = peer.transport.stream("SubscribeToTask", SubscribeToTaskRequest(id="nope"), NO_OPTIONS)
    with pytest.raises(TaskNotFoundError):
        await anext(stream)


async def test_closing_a_stream_early_is_clean_and_lets_the_server_go(peer: Peer) -> None:
    task = await send(peer, "early", skill="wait", return_immediately=True)
    stream = peer.transport.stream(
        "SubscribeToTask", SubscribeToTaskRequest(id=task.id), NO_OPTIONS
    )
    with anyio.fail_after(TIMEOUT_S):
        assert (await anext(stream)).task is not None
    await stream.aclose()  # no error surfaces for a stream the caller chose to stop
    # The server saw the connection go and stopped following; the task is unaffected.
    peer.gates["early"].set()
    with anyio.fail_after(TIMEOUT_S):
        while True:
            got = await peer.transport.call("GetTask", GetTaskRequest(id=task.id), Task, NO_OPTIONS)
            if got.status.state is TaskState.COMPLETED:
                break
            await anyio.sleep(0.02)


# -- headers ---------------------------------------------------------------------------------


async def test_every_request_carries_the_version_and_requested_extensions() -> None:
    seen: list[httpx.Headers] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(httpx.Headers([(k.decode(), v.decode()) for k, v in scope["headers"]]))
        await respond(send, 200, b'{"id":"t","status":{"state":"TASK_STATE_WORKING"}}')

    async with foreign(app) as transport:
        options = CallOptions(extensions=("urn:a", "urn:b"), headers={"Authorization": "Bearer x"})
        await transport.call("GetTask", GetTaskRequest(id="t"), Task, options)
        await transport.call("CancelTask", CancelTaskRequest(id="t"), Task, NO_OPTIONS)
    assert seen[0]["a2a-version"] == "1.0"
    assert seen[0]["a2a-extensions"] == "urn:a,urn:b"
    assert seen[0]["authorization"] == "Bearer x"
    assert "content-type" not in seen[0]  # a GET has no body
    assert seen[1]["a2a-version"] == "1.0"
    assert seen[1]["content-type"] == "application/a2a+json"


# -- what other servers answer ---------------------------------------------------------------


async def respond(
    send: Any, status: int, body: bytes, content_type: bytes = b"application/json"
) -> None:
    headers = [(b"content-type", content_type), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def answering(status: int, body: bytes, content_type: bytes = b"application/json") -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await respond(send, status, body, content_type)

    return app


@contextlib.asynccontextmanager
async def foreign(app: Any) -> AsyncIterator[RestTransport]:
    """Our transport talking to ``app`` (an ASGI stand-in for another server) in process."""
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as http:
        yield RestTransport("http://peer/rest", http, timeout=TIMEOUT_S)


STATUS_1_0_0 = b'{"error":{"code":409,"status":"FAILED_PRECONDITION","message":"no"}}'
PROBLEM = (
    b'{"type":"https://a2a-protocol.org/errors/task-not-found","title":"Task Not Found",'
    b'"status":404,"detail":"gone"}'
)


@pytest.mark.parametrize(
    ("status", "body", "error"),
    [
        (409, STATUS_1_0_0, TaskNotCancelableError),  # 1.0.0 status table
        (415, b"{}", ContentTypeNotSupportedError),
        (502, b"", InvalidAgentResponseError),
        (404, PROBLEM, TaskNotFoundError),  # problem+json (as some spec examples show)
        (404, b"<html>Not Found</html>", MethodNotFoundError),  # no A2A route at that URL
        (
            400,
            b'{"error":{"code":400,"status":"FAILED_PRECONDITION","message":"m","details":'
            b'[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"UNSUPPORTED_OPERATION",'
            b'"domain":"a2a-protocol.org"}]}}',
            UnsupportedOperationError,
        ),
    ],
)
async def test_error_answers_of_other_servers_are_classified(
    status: int, body: bytes, error: type[Exception]
) -> None:
    async with foreign(answering(status, body)) as transport:
        with pytest.raises(error):
            await transport.call("GetTask", GetTaskRequest(id="t"), Task, NO_OPTIONS)


@pytest.mark.parametrize(("status", "body"), [(200, b"{}"), (200, b"null"), (200, b""), (204, b"")])
async def test_every_form_of_an_empty_delete_answer_is_accepted(status: int, body: bytes) -> None:
    request = DeleteTaskPushNotificationConfigRequest(task_id="t", id="c")
    async with foreign(answering(status, body)) as transport:
        result = await transport.call(
            "DeleteTaskPushNotificationConfig", request, type(None), NO_OPTIONS
        )
    assert result is None


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"not json", b"application/json"),
        (b'{"id": 7}', b"application/a2a+json"),
        (b"[]", b"application/json"),
    ],
)
async def test_an_invalid_success_body_is_an_invalid_response(
    body: bytes, content_type: bytes
) -> None:
    async with foreign(answering(200, body, content_type)) as transport:
        with pytest.raises(InvalidResponseError, match="GetTask to http://peer/rest"):
            await transport.call("GetTask", GetTaskRequest(id="t"), Task, NO_OPTIONS)


EVENT = b'{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}'
SSE_ERROR = (
    b'{"error": {"code": 404, "status": "NOT_FOUND", "message": "gone", "details": '
    b'[{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND", '
    b'"domain": "a2a-protocol.org"}]}}'
)


@pytest.mark.parametrize("named", [b"event: error\n", b""])
async def test_an_error_event_ends_a_stream_with_its_error(named: bytes) -> None:
    body = b"data: " + EVENT + b"\n\n: keep-alive\n\n" + named + b"data: " + SSE_ERROR + b"\n\n"
    async with foreign(answering(200, body, b"text/event-stream")) as transport:
        stream = transport.stream("SubscribeToTask", SubscribeToTaskRequest(id="t"), NO_OPTIONS)
        first = await anext(stream)
        assert first.status_update is not None
        with pytest.raises(TaskNotFoundError, match="gone"):
            await anext(stream)


async def test_a_stream_answered_with_a_document_is_handled() -> None:
    refused = (
        b'{"error":{"code":400,"status":"FAILED_PRECONDITION","message":"m","details":'
        b'[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"UNSUPPORTED_OPERATION",'
        b'"domain":"a2a-protocol.org"}]}}'
    )
    # An error document under a 2xx status (some proxies) still raises the error...
    async with foreign(answering(200, refused)) as transport:
        with pytest.raises(UnsupportedOperationError):
            await anext(transport.stream("SendStreamingMessage", send_request("x"), NO_OPTIONS))
    # ...and a success document where a stream was asked for is an invalid response.
    async with foreign(answering(200, EVENT)) as transport:
        with pytest.raises(InvalidResponseError, match="instead of an event stream"):
            await anext(transport.stream("SendStreamingMessage", send_request("x"), NO_OPTIONS))
    async with foreign(answering(200, b"data: {}\n\n", b"text/event-stream")) as transport:
        with pytest.raises(InvalidResponseError, match="not a StreamResponse"):
            await anext(transport.stream("SendStreamingMessage", send_request("x"), NO_OPTIONS))


# -- local failures --------------------------------------------------------------------------


async def test_an_unreachable_server_is_a_connection_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound but not listening: connections are refused
        interface = AgentInterface(
            url=f"http://127.0.0.1:{port}/rest",
            protocol_binding="HTTP+JSON",
            protocol_version="1.0",
        )
        transport = create_transport(interface)
        try:
            with pytest.raises(A2AConnectionError):
                await transport.call("GetTask", GetTaskRequest(id="t"), Task, NO_OPTIONS)
            with pytest.raises(A2AConnectionError):
                await anext(
                    transport.stream("SubscribeToTask", SubscribeToTaskRequest(id="t"), NO_OPTIONS)
                )
        finally:
            await transport.aclose()


async def test_a_call_that_takes_too_long_times_out(peer: Peer) -> None:
    request = send_request("slow-call", skill="wait")
    with pytest.raises(A2ATimeoutError):
        await peer.transport.call(
            "SendMessage", request, SendMessageResponse, CallOptions(timeout=0.3)
        )
    peer.gates["slow-call"].set()


# -- building transports ---------------------------------------------------------------------


async def test_the_client_registry_builds_rest_transports(peer: Peer) -> None:
    assert transport_factory("HTTP+JSON") is create_transport
    async with Client.connect(peer.url, bindings=["HTTP+JSON"], timeout=TIMEOUT_S) as client:
        assert client.interface.protocol_binding == "HTTP+JSON"
        assert client.interface.url == peer.url + "/rest"
        task = await client.send("via the client")
        assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED


async def test_create_transport_checks_the_binding_and_owns_only_its_own_client() -> None:
    jsonrpc = AgentInterface(url="http://x/", protocol_binding="JSONRPC", protocol_version="1.0")
    with pytest.raises(ValueError, match="JSONRPC"):
        create_transport(jsonrpc)
    interface = AgentInterface(
        url="http://x/rest", protocol_binding="HTTP+JSON", protocol_version="1.0"
    )
    async with httpx.AsyncClient() as shared:
        transport = create_transport(interface, http_client=shared)
        await transport.aclose()
        assert not shared.is_closed
        with pytest.raises(TypeError):
            create_transport(interface, TransportSettings(http=shared), http_client=shared)
    own = create_transport(interface)
    await own.aclose()
    assert own._http.is_closed
    async with httpx.AsyncClient() as http:
        with pytest.raises(ValueError, match="subscribe_method"):
            RestTransport("http://x", http, subscribe_method="PUT")  # type: ignore[arg-type]
