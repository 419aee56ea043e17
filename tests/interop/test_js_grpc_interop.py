"""peerwire's Client against an agent on the official JavaScript SDK (@a2a-js/sdk 1.3.0).

The agent (js_peer/agent.js) runs under Node.js as a subprocess, serving its card over HTTP
and A2A over gRPC, JSON-RPC and HTTP+JSON on 127.0.0.1. The client finds the gRPC interface
in that card, as a user's would (``Client.connect(..., bindings=[Binding.GRPC])``), and runs
every task operation over it; one send over each HTTP binding checks those too. The agent
acts on the first word of the message: echo, ask, stream, slow, fail.

The other way round: Node's HTTP/2 joins a repeated metadata key into one "1.0, 1.0" value
(which is how peerwire's client, sending ``a2a-version`` twice, was refused by the SDK), so
peerwire's own gRPC server is checked to read such a value, and repeated entries, sensibly.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import grpc
import grpc.aio
import pytest

from peerwire import Client
from peerwire.bindings.grpc.convert import to_bytes
from peerwire.bindings.grpc.status import DETAILS_KEY, decode_status
from peerwire.client import CardCache
from peerwire.errors import (
    A2AError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
    VersionNotSupportedError,
)
from peerwire.samples.glossary import agent as glossary_agent
from peerwire.testing import live_server
from peerwire.types import (
    Binding,
    GetTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)

from .js_harness import JsServer, start_js_server

pytestmark = pytest.mark.interop

TIMEOUT_S = 30.0
CHUNKS = ["A record is a final class", " that carries its components."]


@pytest.fixture(scope="module")
def js_server() -> Iterator[JsServer]:
    with start_js_server() as server:
        yield server


async def connect(
    server: JsServer, binding: str = Binding.GRPC, extensions: Sequence[str] = ()
) -> Client:
    # A cache of its own: another module's server may later get this port.
    return await Client.connect(
        server.base_url,
        bindings=[binding],
        timeout=TIMEOUT_S,
        card_cache=CardCache(),
        extensions=extensions,
    )


@pytest.fixture
async def client(js_server: JsServer) -> AsyncIterator[Client]:
    client = await connect(js_server)
    try:
        yield client
    finally:
        await client.aclose()


def text_of(task: Task) -> str:
    return "".join(a.text for a in task.artifacts)


async def task_of(client: Client, text: str, **options: Any) -> Task:
    result = await client.send(text, **options)
    assert isinstance(result, Task), result
    return result


async def test_the_card_leads_to_the_grpc_interface(client: Client, js_server: JsServer) -> None:
    assert client.card.name == "JS Interop Agent"
    assert client.card.capabilities.streaming is True
    assert client.interface.protocol_binding == Binding.GRPC
    assert client.interface.url == js_server.grpc_address
    assert client.interface.protocol_version == "1.0"


async def test_a_blocking_send_returns_the_artifact(client: Client) -> None:
    task = await task_of(client, "echo over gRPC")
    assert task.status.state is TaskState.COMPLETED
    assert text_of(task) == "echo: over gRPC"
    assert task.artifacts[0].artifact_id == "answer"


async def test_a_send_requesting_extensions_is_accepted(js_server: JsServer) -> None:
    # The SDK accepts extensions it does not support (it ignores them, as the spec says).
    async with await connect(js_server, extensions=["urn:a", "urn:b"]) as client:
        task = await task_of(client, "echo with extensions")
    assert task.status.state is TaskState.COMPLETED


async def test_a_stream_brings_every_event_in_order(client: Client) -> None:
    events = [event async for event in client.stream("stream")]
    first, *updates = events
    assert isinstance(first, Task) and first.status.state is TaskState.SUBMITTED
    seen = [
        ("status", e.status.state)
        if isinstance(e, TaskStatusUpdateEvent)
        else ("artifact", e.artifact.text, e.append, e.last_chunk)
        for e in updates
        if isinstance(e, TaskStatusUpdateEvent | TaskArtifactUpdateEvent)
    ]
    assert len(seen) == len(updates)
    assert seen == [
        ("status", TaskState.WORKING),
        ("artifact", CHUNKS[0], False, False),
        ("artifact", CHUNKS[1], True, True),
        ("status", TaskState.COMPLETED),
    ]
    assert {e.task_id for e in updates} == {first.id}  # type: ignore[union-attr]
    got = await client.get_task(first.id)
    assert got.status.state is TaskState.COMPLETED and text_of(got) == "".join(CHUNKS)


async def test_get_returns_the_task_with_its_history(client: Client) -> None:
    sent = await task_of(client, "echo remember me")
    got = await client.get_task(sent.id)
    assert (got.id, got.context_id) == (sent.id, sent.context_id)
    assert got.status.state is TaskState.COMPLETED
    assert text_of(got) == "echo: remember me"
    assert [m.text for m in got.history][:1] == ["echo remember me"]


async def test_cancel_ends_a_slow_task_and_its_subscription(client: Client) -> None:
    slow = await task_of(client, "slow", return_immediately=True)
    assert slow.status.state in (TaskState.SUBMITTED, TaskState.WORKING)
    subscription = client.subscribe(slow.id)
    snapshot = await anext(subscription)
    assert isinstance(snapshot, Task) and snapshot.id == slow.id
    canceled = await client.cancel_task(slow.id)
    assert canceled.status.state is TaskState.CANCELED
    rest = [event async for event in subscription]
    assert isinstance(rest[-1], TaskStatusUpdateEvent)
    assert rest[-1].status.state is TaskState.CANCELED
    assert (await client.get_task(slow.id)).status.state is TaskState.CANCELED
    with pytest.raises(TaskNotCancelableError):
        await client.cancel_task((await task_of(client, "echo done")).id)


async def test_input_required_then_the_follow_up_completes_the_same_task(client: Client) -> None:
    asked = await task_of(client, "ask")
    assert asked.status.state is TaskState.INPUT_REQUIRED
    assert asked.status.message is not None and asked.status.message.text == "Which term?"
    done = await task_of(client, "record", task_id=asked.id, context_id=asked.context_id)
    assert (done.id, done.context_id) == (asked.id, asked.context_id)
    assert done.status.state is TaskState.COMPLETED
    assert text_of(done) == "answer: record"


async def test_a_failed_task_is_a_result(client: Client) -> None:
    failed = await task_of(client, "fail")
    assert failed.status.state is TaskState.FAILED
    assert failed.status.message is not None
    assert failed.status.message.text == "Failing, as asked."


async def test_sdk_errors_arrive_as_our_error_classes(client: Client) -> None:
    unknown = str(uuid.uuid4())
    with pytest.raises(TaskNotFoundError):
        await client.get_task(unknown)
    with pytest.raises(TaskNotFoundError):
        await client.cancel_task(unknown)
    done = await task_of(client, "echo finished")
    with pytest.raises(UnsupportedOperationError):
        await anext(client.subscribe(done.id))


@pytest.mark.parametrize("binding", [Binding.JSONRPC, Binding.HTTP_JSON])
async def test_the_http_bindings_send_too(js_server: JsServer, binding: str) -> None:
    async with await connect(js_server, binding) as client:
        assert client.interface.protocol_binding == binding
        task = await task_of(client, f"echo over {binding}")
        assert task.status.state is TaskState.COMPLETED
        assert text_of(task) == f"echo: over {binding}"
        with pytest.raises(TaskNotFoundError):
            await client.get_task(str(uuid.uuid4()))


# --- peerwire's gRPC server and a repeated a2a-version ------------------------------------------


async def get_task_with(address: str, metadata: tuple[tuple[str, str], ...]) -> type[A2AError]:
    """The error class a GetTask of an unknown task gets with exactly this metadata."""
    async with grpc.aio.insecure_channel(address) as channel:
        call = channel.unary_unary("/lf.a2a.v1.A2AService/GetTask")
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await call(to_bytes(GetTaskRequest(id=str(uuid.uuid4()))), metadata=metadata)
    failure = caught.value
    details = dict(failure.trailing_metadata() or ()).get(DETAILS_KEY)
    assert isinstance(details, bytes), failure
    return type(decode_status(failure.code().value[0], failure.details() or "", details))


@pytest.mark.parametrize(
    ("metadata", "error"),
    [
        ((("a2a-version", "1.0, 1.0"),), TaskNotFoundError),
        ((("a2a-version", "1.0"), ("a2a-version", "1.0")), TaskNotFoundError),
        ((("a2a-version", "1.0, 0.3"),), VersionNotSupportedError),
        ((("a2a-version", "0.3"), ("a2a-version", "1.0")), VersionNotSupportedError),
        ((("a2a-version", "1.0"), ("a2a-version", "0.3")), VersionNotSupportedError),
    ],
)
async def test_our_server_reads_a_repeated_version_as_one_value(
    metadata: tuple[tuple[str, str], ...], error: type[A2AError]
) -> None:
    # The same version named twice is that version; different ones ask for no single version.
    async with (
        live_server(glossary_agent, grpc_port=0) as url,
        Client.connect(url, bindings=[Binding.GRPC], card_cache=CardCache()) as client,
    ):
        assert await get_task_with(client.interface.url, metadata) is error
