"""The gRPC binding against the official a2a-sdk, both ways, and our proto against its proto.

* The SDK's client (its own venv, a subprocess) drives peerwire's Glossary Agent
  (peerwire.samples.glossary) over gRPC, finding the interface in our card.
* peerwire's gRPC transport drives the SDK's Glossary Agent at ``grpc_address``.
* The SDK's compiled descriptor of ``lf.a2a.v1`` and ours agree field by field.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from peerwire.bindings.grpc._gen import a2a_pb2
from peerwire.client.transports.base import CallOptions
from peerwire.client.transports.grpc import GrpcTransport
from peerwire.errors import (
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from peerwire.samples.glossary import agent
from peerwire.testing import live_server
from peerwire.types import (
    CancelTaskRequest,
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SendMessageResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)

from .sdk_harness import SdkServer

pytestmark = pytest.mark.interop

CHUNKS = ["A record is a final class that is a transparent", " carrier for its components."]
TIMEOUT_S = 30.0
OPTIONS = CallOptions()

RunSdkClient = Callable[..., list[dict[str, Any]]]


# --- the SDK's client against peerwire ----------------------------------------------------------


@pytest.fixture
async def glossary_url() -> AsyncIterator[str]:
    async with live_server(agent, grpc_port=0) as url:
        yield url


async def drive(run_sdk_client: RunSdkClient, url: str, scenario: str, **kw: Any) -> list[Any]:
    # A subprocess: waiting in a worker thread keeps this loop (our server's) serving it.
    lines = await anyio.to_thread.run_sync(lambda: run_sdk_client(url, "grpc", scenario, **kw))
    assert all("error" not in line for line in lines), lines
    return lines


def only(lines: list[dict[str, Any]], op: str) -> list[dict[str, Any]]:
    return [line for line in lines if line.get("op") == op]


def state(task: dict[str, Any]) -> str:
    return str(task["status"]["state"])


def artifact_text(task: dict[str, Any]) -> str:
    return "".join(p["text"] for a in task["artifacts"] for p in a["parts"])


async def test_sdk_finds_our_grpc_interface(
    run_sdk_client: RunSdkClient, glossary_url: str
) -> None:
    [line] = only(await drive(run_sdk_client, glossary_url, "card"), "card")
    grpc_interfaces = [
        i for i in line["card"]["supportedInterfaces"] if i["protocolBinding"] == "GRPC"
    ]
    assert len(grpc_interfaces) == 1
    host, _, port = grpc_interfaces[0]["url"].rpartition(":")
    assert host == "127.0.0.1" and port.isdigit()
    assert grpc_interfaces[0]["protocolVersion"] == "1.0"


async def test_sdk_sends_over_grpc(run_sdk_client: RunSdkClient, glossary_url: str) -> None:
    [line] = only(await drive(run_sdk_client, glossary_url, "send"), "send")
    task = line["response"]["task"]
    assert state(task) == "TASK_STATE_COMPLETED"
    assert artifact_text(task) == "".join(CHUNKS)
    assert task["status"]["timestamp"].endswith("Z")


async def test_sdk_streams_over_grpc_in_order(
    run_sdk_client: RunSdkClient, glossary_url: str
) -> None:
    events = [
        line["event"]
        for line in only(await drive(run_sdk_client, glossary_url, "stream"), "stream")
    ]
    assert state(events[0]["task"]) == "TASK_STATE_SUBMITTED"
    updates = [
        ("status", e["statusUpdate"]["status"]["state"])
        if "statusUpdate" in e
        else ("artifact", e["artifactUpdate"]["artifact"]["parts"][0]["text"])
        for e in events[1:]
    ]
    assert updates == [
        ("status", "TASK_STATE_WORKING"),
        ("artifact", CHUNKS[0]),
        ("artifact", CHUNKS[1]),
        ("status", "TASK_STATE_COMPLETED"),
    ]
    assert events[3]["artifactUpdate"].get("append") is True
    assert events[3]["artifactUpdate"].get("lastChunk") is True


async def test_sdk_gets_and_lists_over_grpc(
    run_sdk_client: RunSdkClient, glossary_url: str
) -> None:
    lines = await drive(run_sdk_client, glossary_url, "get")
    sent = only(lines, "send")[0]["response"]["task"]
    [got] = only(lines, "get")
    assert got["task"]["id"] == sent["id"]
    assert state(got["task"]) == "TASK_STATE_COMPLETED"
    lines = await drive(run_sdk_client, glossary_url, "list")
    listed = only(lines, "list")[0]["response"]
    sent = only(lines, "send")[0]["response"]["task"]
    assert sent["id"] in [t["id"] for t in listed["tasks"]]
    assert listed["pageSize"] == 50 and listed["totalSize"] >= 1


async def test_sdk_continues_an_interrupted_task_over_grpc(
    run_sdk_client: RunSdkClient, glossary_url: str
) -> None:
    first, second = (
        line["response"]["task"]
        for line in only(await drive(run_sdk_client, glossary_url, "input_required"), "send")
    )
    assert state(first) == "TASK_STATE_INPUT_REQUIRED"
    assert second["id"] == first["id"]
    assert state(second) == "TASK_STATE_COMPLETED"
    assert artifact_text(second) == "".join(CHUNKS)


async def test_sdk_cancels_over_grpc(run_sdk_client: RunSdkClient, glossary_url: str) -> None:
    [line] = only(await drive(run_sdk_client, glossary_url, "cancel"), "cancel")
    assert state(line["task"]) == "TASK_STATE_CANCELED"


async def test_sdk_subscribes_over_grpc(run_sdk_client: RunSdkClient, glossary_url: str) -> None:
    events = [
        line["event"]
        for line in only(await drive(run_sdk_client, glossary_url, "subscribe"), "subscribe")
    ]
    assert "task" in events[0]
    assert state(events[-1]["statusUpdate"]) == "TASK_STATE_COMPLETED"
    progress = [
        e["statusUpdate"]["status"]["message"]["parts"][0]["text"]
        for e in events[1:-1]
        if "statusUpdate" in e
    ]
    assert progress and all(p.startswith("thinking (") for p in progress)


async def test_sdk_sees_an_unknown_term_fail_over_grpc(
    run_sdk_client: RunSdkClient, glossary_url: str
) -> None:
    lines = await anyio.to_thread.run_sync(
        lambda: run_sdk_client(glossary_url, "grpc", "send", text="monad")
    )
    task = only(lines, "send")[0]["response"]["task"]
    assert state(task) == "TASK_STATE_FAILED"


# --- our transport against the SDK's server -----------------------------------------------------


def ask(text: str, **fields: Any) -> SendMessageRequest:
    configuration = fields.pop("configuration", None)
    message = Message(
        message_id=str(uuid.uuid4()), role=Role.USER, parts=[Part(text=text)], **fields
    )
    return SendMessageRequest(message=message, configuration=configuration)


@pytest.fixture
async def sdk_client(sdk_glossary_server: SdkServer) -> AsyncIterator[GrpcTransport]:
    client = GrpcTransport(sdk_glossary_server.grpc_address, timeout=TIMEOUT_S)
    yield client
    await client.aclose()


def text_of(task: Task) -> str:
    return "".join(a.text for a in task.artifacts)


async def test_we_send_and_get_from_the_sdk(sdk_client: GrpcTransport) -> None:
    response = await sdk_client.call("SendMessage", ask("record"), SendMessageResponse, OPTIONS)
    task = response.task
    assert task is not None and task.status.state is TaskState.COMPLETED
    assert text_of(task) == "".join(CHUNKS)
    got = await sdk_client.call("GetTask", GetTaskRequest(id=task.id), Task, OPTIONS)
    assert got.id == task.id and text_of(got) == "".join(CHUNKS)
    listed = await sdk_client.call("ListTasks", ListTasksRequest(), ListTasksResponse, OPTIONS)
    assert task.id in [t.id for t in listed.tasks]
    assert listed.next_page_token == ""


async def test_we_stream_from_the_sdk(sdk_client: GrpcTransport) -> None:
    events = [e async for e in sdk_client.stream("SendStreamingMessage", ask("record"), OPTIONS)]
    assert events[0].task is not None
    chunks = [e.artifact_update for e in events if e.artifact_update is not None]
    assert [c.artifact.text for c in chunks] == CHUNKS
    assert [(c.append, c.last_chunk) for c in chunks] == [(False, False), (True, True)]
    last = events[-1].status_update
    assert last is not None and last.status.state is TaskState.COMPLETED


async def test_we_continue_cancel_and_subscribe_on_the_sdk(sdk_client: GrpcTransport) -> None:
    first = await sdk_client.call("SendMessage", ask(""), SendMessageResponse, OPTIONS)
    assert first.task is not None and first.task.status.state is TaskState.INPUT_REQUIRED
    follow_up = ask("sealed class", task_id=first.task.id, context_id=first.task.context_id)
    second = await sdk_client.call("SendMessage", follow_up, SendMessageResponse, OPTIONS)
    assert second.task is not None and second.task.status.state is TaskState.COMPLETED

    immediately = SendMessageConfiguration(return_immediately=True)
    slow = await sdk_client.call(
        "SendMessage", ask("slow", configuration=immediately), SendMessageResponse, OPTIONS
    )
    assert slow.task is not None
    stream = sdk_client.stream("SubscribeToTask", SubscribeToTaskRequest(id=slow.task.id), OPTIONS)
    snapshot = await anext(stream)
    assert snapshot.task is not None and snapshot.task.id == slow.task.id
    canceled = await sdk_client.call(
        "CancelTask", CancelTaskRequest(id=slow.task.id), Task, OPTIONS
    )
    assert canceled.status.state is TaskState.CANCELED
    rest = [event async for event in stream]
    assert rest and rest[-1].status_update is not None
    assert rest[-1].status_update.status.state is TaskState.CANCELED


async def test_sdk_errors_decode_to_our_classes(sdk_client: GrpcTransport) -> None:
    with pytest.raises(TaskNotFoundError):
        await sdk_client.call("GetTask", GetTaskRequest(id=str(uuid.uuid4())), Task, OPTIONS)
    done = await sdk_client.call("SendMessage", ask("record"), SendMessageResponse, OPTIONS)
    assert done.task is not None
    with pytest.raises(TaskNotCancelableError):
        await sdk_client.call("CancelTask", CancelTaskRequest(id=done.task.id), Task, OPTIONS)
    with pytest.raises(UnsupportedOperationError):
        await anext(
            sdk_client.stream("SubscribeToTask", SubscribeToTaskRequest(id=done.task.id), OPTIONS)
        )
    with pytest.raises(PushNotificationNotSupportedError):
        config = TaskPushNotificationConfig(task_id=done.task.id, url="https://hook.example/")
        await sdk_client.call(
            "CreateTaskPushNotificationConfig", config, TaskPushNotificationConfig, OPTIONS
        )
    with pytest.raises(UnsupportedOperationError):
        await sdk_client.call(
            "GetExtendedAgentCard", GetExtendedAgentCardRequest(), type(None), OPTIONS
        )
    with pytest.raises(InvalidParamsError):
        await sdk_client.call(
            "ListTasks", ListTasksRequest(page_size=500), ListTasksResponse, OPTIONS
        )


# --- the two protos -----------------------------------------------------------------------------


def describe(file: Any) -> dict[str, Any]:
    """A proto file's messages, enums and services as JSON-able lists (runs in both venvs)."""
    out: dict[str, Any] = {}
    for message in file.message_types_by_name.values():
        for described in [message, *message.nested_types]:  # map entries are nested types
            out[described.full_name] = sorted(
                [
                    f.name,
                    f.number,
                    f.type,
                    f.is_repeated,
                    f.has_presence,
                    f.json_name,
                    f.containing_oneof.name if f.containing_oneof else None,
                    f.message_type.full_name if f.message_type else None,
                    f.enum_type.full_name if f.enum_type else None,
                ]
                for f in described.fields
            )
    for enum in file.enum_types_by_name.values():
        out[enum.full_name] = [[v.name, v.number] for v in enum.values]
    for service in file.services_by_name.values():
        out[service.full_name] = [
            [m.name, m.input_type.full_name, m.output_type.full_name, m.server_streaming]
            for m in service.methods
        ]
    return out


def test_our_descriptor_is_the_sdks(sdk_python: Path) -> None:
    script = "\n".join(
        [
            "import json",
            "from typing import Any",
            "from a2a.types import a2a_pb2",
            inspect.getsource(describe),
            "print(json.dumps(describe(a2a_pb2.DESCRIPTOR)))",
        ]
    )
    done = subprocess.run(
        [str(sdk_python), "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    theirs = json.loads(done.stdout)
    ours = json.loads(json.dumps(describe(a2a_pb2.DESCRIPTOR)))
    assert len(ours) == 44 + 7 + 2 + 1  # messages, map entries, enums, the service
    assert ours == theirs
