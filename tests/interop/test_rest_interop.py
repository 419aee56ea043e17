"""HTTP+JSON interop with the official a2a-sdk 1.3.0, both ways.

* The SDK's REST client drives peerwire's Glossary Agent (peerwire.samples.glossary): the scenarios
  of the harness self-test, with the SDK limited to the ``HTTP+JSON`` interface of our card.
* peerwire's REST transport drives the SDK's Glossary server at ``base_url + "/rest"``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import httpx
import pytest

from peerwire.client.transports.base import CallOptions
from peerwire.client.transports.rest import RestTransport
from peerwire.errors import (
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from peerwire.samples.glossary import agent
from peerwire.testing import live_server
from peerwire.types import (
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)

from .sdk_harness import SdkServer

pytestmark = pytest.mark.interop

CHUNKS = ["A record is a final class that is a transparent", " carrier for its components."]
RECORD_ARTIFACT = {
    "artifactId": "definition",
    "name": "definition",
    "parts": [{"text": chunk} for chunk in CHUNKS],
}
TIMEOUT_S = 30.0
NO_OPTIONS = CallOptions()

RunSdkClient = Callable[..., list[dict[str, Any]]]


def only(lines: list[dict[str, Any]], op: str) -> list[dict[str, Any]]:
    return [line for line in lines if line.get("op") == op]


def state(task: dict[str, Any]) -> str:
    return str(task["status"]["state"])


def status_text(task_or_event: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in task_or_event["status"]["message"]["parts"])


# -- the SDK's REST client against peerwire --------------------------------------------------


@pytest.fixture
async def glossary_url() -> AsyncIterator[str]:
    async with live_server(agent) as url:
        yield url


async def drive(run_sdk_client: RunSdkClient, url: str, scenario: str, **kw: Any) -> list[Any]:
    # The SDK client is a subprocess; waiting for it in a worker thread keeps our server's
    # event loop (the same loop as this test) serving it meanwhile.
    lines = await anyio.to_thread.run_sync(lambda: run_sdk_client(url, "rest", scenario, **kw))
    assert all("error" not in line for line in lines), lines
    return lines


async def test_sdk_sees_our_rest_interface(run_sdk_client: RunSdkClient, glossary_url: str) -> None:
    [line] = only(await drive(run_sdk_client, glossary_url, "card"), "card")
    interfaces = line["card"]["supportedInterfaces"]
    assert {
        "url": f"{glossary_url}/rest",
        "protocolBinding": "HTTP+JSON",
        "protocolVersion": "1.0",
    } in interfaces


async def test_sdk_send_record(run_sdk_client: RunSdkClient, glossary_url: str) -> None:
    [line] = only(await drive(run_sdk_client, glossary_url, "send"), "send")
    task = line["response"]["task"]
    assert state(task) == "TASK_STATE_COMPLETED"
    assert task["artifacts"] == [RECORD_ARTIFACT]


async def test_sdk_send_unknown_term_fails(run_sdk_client: RunSdkClient, glossary_url: str) -> None:
    lines = await drive(run_sdk_client, glossary_url, "send", text="monad")
    task = only(lines, "send")[0]["response"]["task"]
    assert state(task) == "TASK_STATE_FAILED"
    assert status_text(task) == "I do not know the term 'monad'."


async def test_sdk_stream_record(run_sdk_client: RunSdkClient, glossary_url: str) -> None:
    events = [
        line["event"]
        for line in only(await drive(run_sdk_client, glossary_url, "stream"), "stream")
    ]
    assert "task" in events[0]
    chunks = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    assert [c["artifact"]["parts"] for c in chunks] == [[{"text": c}] for c in CHUNKS]
    assert chunks[1].get("append") is True and chunks[1].get("lastChunk") is True
    assert state(events[-1]["statusUpdate"]) == "TASK_STATE_COMPLETED"


async def test_sdk_get_and_list(run_sdk_client: RunSdkClient, glossary_url: str) -> None:
    lines = await drive(run_sdk_client, glossary_url, "get")
    [sent], [got] = only(lines, "send"), only(lines, "get")
    assert got["task"]["id"] == sent["response"]["task"]["id"]
    assert got["task"]["artifacts"] == [RECORD_ARTIFACT]
    lines = await drive(run_sdk_client, glossary_url, "list")
    [sent], [listed] = only(lines, "send"), only(lines, "list")
    tasks = {t["id"]: t for t in listed["response"]["tasks"]}
    assert state(tasks[sent["response"]["task"]["id"]]) == "TASK_STATE_COMPLETED"
    assert all("artifacts" not in t for t in tasks.values())
    assert listed["response"]["totalSize"] == len(tasks) == 2


async def test_sdk_input_required_then_continue(
    run_sdk_client: RunSdkClient, glossary_url: str
) -> None:
    lines = await drive(run_sdk_client, glossary_url, "input_required")
    first, final = (line["response"]["task"] for line in only(lines, "send"))
    assert state(first) == "TASK_STATE_INPUT_REQUIRED"
    assert status_text(first) == "Which term should I define?"
    assert (final["id"], state(final)) == (first["id"], "TASK_STATE_COMPLETED")


async def test_sdk_cancel(run_sdk_client: RunSdkClient, glossary_url: str) -> None:
    lines = await drive(run_sdk_client, glossary_url, "cancel")
    [sent], [canceled] = only(lines, "send"), only(lines, "cancel")
    assert canceled["task"]["id"] == sent["response"]["task"]["id"]
    assert state(canceled["task"]) == "TASK_STATE_CANCELED"


async def test_sdk_subscribe_with_post(run_sdk_client: RunSdkClient, glossary_url: str) -> None:
    lines = await drive(run_sdk_client, glossary_url, "subscribe")
    [sent] = only(lines, "send")
    events = [line["event"] for line in only(lines, "subscribe")]
    assert events[0]["task"]["id"] == sent["response"]["task"]["id"]
    updates = [e["statusUpdate"] for e in events[1:]]
    assert state(updates[-1]) == "TASK_STATE_COMPLETED"
    assert status_text(updates[-1]) == "Done thinking."


# -- peerwire's REST transport against the SDK's server ---------------------------------------


def request(text: str, **config: Any) -> SendMessageRequest:
    message = Message(message_id=f"m-{text}-{id(config)}", role=Role.USER, parts=[Part(text=text)])
    configuration = SendMessageConfiguration(**config) if config else None
    return SendMessageRequest(message=message, configuration=configuration)


@pytest.fixture
async def sdk_rest(sdk_glossary_server: SdkServer) -> AsyncIterator[RestTransport]:
    async with httpx.AsyncClient(trust_env=False) as http:
        yield RestTransport(sdk_glossary_server.base_url + "/rest", http, timeout=TIMEOUT_S)


async def send(transport: RestTransport, text: str, **config: Any) -> Task:
    response = await transport.call(
        "SendMessage", request(text, **config), SendMessageResponse, NO_OPTIONS
    )
    assert response.task is not None, response
    return response.task


async def collect(events: AsyncIterator[StreamResponse]) -> list[StreamResponse]:
    with anyio.fail_after(TIMEOUT_S):
        return [event async for event in events]


async def test_send_get_and_list_against_the_sdk(sdk_rest: RestTransport) -> None:
    task = await send(sdk_rest, "record")
    assert task.status.state is TaskState.COMPLETED
    assert [p.text for a in task.artifacts for p in a.parts] == CHUNKS
    got = await sdk_rest.call(
        "GetTask", GetTaskRequest(id=task.id, history_length=1), Task, NO_OPTIONS
    )
    assert got.id == task.id and len(got.history) <= 1
    listed = await sdk_rest.call(
        "ListTasks",
        ListTasksRequest(context_id=task.context_id, status=TaskState.COMPLETED, page_size=10),
        ListTasksResponse,
        NO_OPTIONS,
    )
    assert [t.id for t in listed.tasks] == [task.id]


async def test_stream_against_the_sdk(sdk_rest: RestTransport) -> None:
    events = await collect(sdk_rest.stream("SendStreamingMessage", request("record"), NO_OPTIONS))
    assert events[0].task is not None
    chunks = [e.artifact_update for e in events if e.artifact_update is not None]
    assert [c.artifact.parts[0].text for c in chunks] == CHUNKS
    assert chunks[1].append and chunks[1].last_chunk
    last = events[-1].status_update
    assert last is not None and last.status.state is TaskState.COMPLETED


async def test_input_required_continues_against_the_sdk(sdk_rest: RestTransport) -> None:
    first = await send(sdk_rest, "")
    assert first.status.state is TaskState.INPUT_REQUIRED
    follow_up = SendMessageRequest(
        message=Message(
            message_id=f"m-follow-{first.id}",
            role=Role.USER,
            parts=[Part(text="sealed class")],
            task_id=first.id,
            context_id=first.context_id,
        )
    )
    response = await sdk_rest.call("SendMessage", follow_up, SendMessageResponse, NO_OPTIONS)
    assert response.task is not None and response.task.id == first.id
    assert response.task.status.state is TaskState.COMPLETED


@pytest.mark.parametrize("verb", ["POST", "GET"])
async def test_subscribe_and_cancel_against_the_sdk(
    sdk_glossary_server: SdkServer, verb: str
) -> None:
    async with httpx.AsyncClient(trust_env=False) as http:
        transport = RestTransport(
            sdk_glossary_server.base_url + "/rest",
            http,
            timeout=TIMEOUT_S,
            subscribe_method=verb,  # type: ignore[arg-type]
        )
        task = await send(transport, "slow", return_immediately=True)
        stream = transport.stream("SubscribeToTask", SubscribeToTaskRequest(id=task.id), NO_OPTIONS)
        with anyio.fail_after(TIMEOUT_S):
            first = await anext(stream)
            assert first.task is not None and first.task.id == task.id
            canceled = await transport.call(
                "CancelTask", CancelTaskRequest(id=task.id), Task, NO_OPTIONS
            )
            assert canceled.status.state is TaskState.CANCELED
            rest = await collect(stream)
        assert rest and rest[-1].status_update is not None
        assert rest[-1].status_update.status.state is TaskState.CANCELED


async def test_sdk_errors_arrive_as_our_classes(sdk_rest: RestTransport) -> None:
    with pytest.raises(TaskNotFoundError):
        await sdk_rest.call("GetTask", GetTaskRequest(id="no-such-task"), Task, NO_OPTIONS)
    done = await send(sdk_rest, "record")
    with pytest.raises(TaskNotCancelableError):
        await sdk_rest.call("CancelTask", CancelTaskRequest(id=done.id), Task, NO_OPTIONS)
    with pytest.raises(UnsupportedOperationError):
        await anext(
            sdk_rest.stream("SubscribeToTask", SubscribeToTaskRequest(id=done.id), NO_OPTIONS)
        )
    with pytest.raises(PushNotificationNotSupportedError):
        await sdk_rest.call(
            "CreateTaskPushNotificationConfig",
            TaskPushNotificationConfig(task_id=done.id, url="https://hook.example/"),
            TaskPushNotificationConfig,
            NO_OPTIONS,
        )
    with pytest.raises(PushNotificationNotSupportedError):
        await sdk_rest.call(
            "DeleteTaskPushNotificationConfig",
            DeleteTaskPushNotificationConfigRequest(task_id=done.id, id="c"),
            type(None),
            NO_OPTIONS,
        )
