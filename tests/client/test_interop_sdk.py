"""peerwire's client drives the official a2a-sdk Glossary server over JSON-RPC.

The server runs in the SDK's own virtual environment (tests/interop); nothing of the SDK is
imported here. Its behaviour is described in tests/interop/sdk_peer/glossary_server.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from interop.conftest import sdk_glossary_server, sdk_python  # noqa: F401  (fixtures)
from interop.sdk_harness import SdkServer

from peerwire import Client, Message, Task, TaskState
from peerwire.errors import TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError
from peerwire.types import Artifact, Part, TaskArtifactUpdateEvent, TaskStatusUpdateEvent

pytestmark = pytest.mark.interop

TIMEOUT_S = 60.0
CHUNKS = ["A record is a final class that is a transparent", " carrier for its components."]
RECORD = Artifact(artifact_id="definition", name="definition", parts=[Part(text=c) for c in CHUNKS])


@pytest.fixture
async def client(sdk_glossary_server: SdkServer) -> AsyncIterator[Client]:  # noqa: F811
    async with Client.connect(sdk_glossary_server.base_url, timeout=TIMEOUT_S) as c:
        yield c


def status_text(task: Task | TaskStatusUpdateEvent) -> str:
    return task.status.message.text if task.status.message is not None else ""


async def test_card_and_interface_choice(client: Client, sdk_glossary_server: SdkServer) -> None:  # noqa: F811
    card = client.card
    assert card.name == "Glossary Agent (a2a-sdk)"
    assert [i.protocol_binding for i in card.supported_interfaces] == [
        "JSONRPC",
        "HTTP+JSON",
        "GRPC",
    ]
    assert client.interface == card.supported_interfaces[0]
    assert client.interface.url == sdk_glossary_server.base_url + "/"
    assert card.capabilities.streaming is True


async def test_send_record(client: Client) -> None:
    task = await client.send("record")
    assert isinstance(task, Task)
    assert task.status.state is TaskState.COMPLETED
    assert task.artifacts == [RECORD]


async def test_stream_record_in_two_chunks(client: Client) -> None:
    with anyio.fail_after(TIMEOUT_S):
        events = [e async for e in client.stream("record")]
    first = events[0]
    assert isinstance(first, Task)
    chunks = [e for e in events if isinstance(e, TaskArtifactUpdateEvent)]
    assert [c.artifact.parts for c in chunks] == [[Part(text=c)] for c in CHUNKS]
    assert [(c.append, c.last_chunk) for c in chunks] == [(False, False), (True, True)]
    last = events[-1]
    assert isinstance(last, TaskStatusUpdateEvent)
    assert last.status.state is TaskState.COMPLETED
    assert {e.task_id for e in events[1:] if not isinstance(e, Task | Message)} == {first.id}


async def test_get_task(client: Client) -> None:
    sent = await client.send("sealed class")
    assert isinstance(sent, Task)
    got = await client.get_task(sent.id)
    assert got.id == sent.id
    assert got.status.state is TaskState.COMPLETED
    assert got.artifacts[0].text == "A sealed class restricts which other classes may extend it."
    with pytest.raises(TaskNotFoundError):
        await client.get_task("00000000-0000-4000-8000-000000000000")


async def test_list_tasks(client: Client) -> None:
    sent = await client.send("record")
    assert isinstance(sent, Task)
    listed = {t.id: t async for t in client.list_tasks(page_size=100)}
    assert listed[sent.id].status.state is TaskState.COMPLETED
    assert listed[sent.id].artifacts == [], "no artifacts unless asked for"
    in_context = [t async for t in client.list_tasks(context_id=sent.context_id)]
    assert [t.id for t in in_context] == [sent.id]


async def test_a_failed_task_is_a_result(client: Client) -> None:
    task = await client.send("monad")
    assert isinstance(task, Task)
    assert task.status.state is TaskState.FAILED
    assert status_text(task) == "I do not know the term 'monad'."


async def test_input_required_then_continue(client: Client) -> None:
    first = await client.send("")
    assert isinstance(first, Task)
    assert first.status.state is TaskState.INPUT_REQUIRED
    assert status_text(first) == "Which term should I define?"
    final = await client.send("record", task_id=first.id, context_id=first.context_id)
    assert isinstance(final, Task)
    assert (final.id, final.context_id) == (first.id, first.context_id)
    assert final.status.state is TaskState.COMPLETED
    assert final.artifacts == [RECORD]
    with pytest.raises(UnsupportedOperationError):
        await client.send("record", task_id=first.id)


async def test_cancel_slow(client: Client) -> None:
    sent = await client.send("slow", return_immediately=True)
    assert isinstance(sent, Task)
    assert sent.status.state in (TaskState.SUBMITTED, TaskState.WORKING)
    canceled = await client.cancel_task(sent.id)
    assert canceled.id == sent.id
    assert canceled.status.state is TaskState.CANCELED
    with pytest.raises(TaskNotCancelableError):
        await client.cancel_task(sent.id)


async def test_subscribe_slow(client: Client) -> None:
    sent = await client.send("slow", return_immediately=True)
    assert isinstance(sent, Task)
    events: list[Any] = []
    with anyio.fail_after(TIMEOUT_S):
        async for event in client.subscribe(sent.id):
            events.append(event)
    assert isinstance(events[0], Task) and events[0].id == sent.id
    updates = [e for e in events[1:] if isinstance(e, TaskStatusUpdateEvent)]
    assert updates[-1].status.state is TaskState.COMPLETED
    assert status_text(updates[-1]) == "Done thinking."
    assert {u.status.state for u in updates[:-1]} <= {TaskState.WORKING}
    with pytest.raises(UnsupportedOperationError):
        [e async for e in client.subscribe(sent.id)]
