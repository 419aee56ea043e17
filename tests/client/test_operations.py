"""Every operation of ``Client`` against a real peerwire server and in process."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from peerwire import Client, Message, Role, Task, TaskState
from peerwire.errors import (
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from peerwire.types import (
    Part,
    TaskArtifactUpdateEvent,
    TaskStatusUpdateEvent,
    parse_timestamp,
)

from .conftest import TIMEOUT_S, Gates


def texts(task: Task) -> list[str]:
    return [a.text for a in task.artifacts]


async def test_send_returns_the_completed_task(client: Client) -> None:
    task = await client.send("hello", skill="echo")
    assert isinstance(task, Task)
    assert task.status.state is TaskState.COMPLETED
    assert texts(task) == ["hello"]
    assert task.history[0].text == "hello"


async def test_a_failed_task_is_a_result_not_an_error(client: Client) -> None:
    task = await client.send("the impossible", skill="fail")
    assert isinstance(task, Task)
    assert task.status.state is TaskState.FAILED
    assert task.status.message is not None
    assert "cannot do 'the impossible'" in task.status.message.text


async def test_a_message_reply(client: Client) -> None:
    reply = await client.send("hi", skill="reply")
    assert isinstance(reply, Message)
    assert reply.text == "re: hi"


async def test_data_and_file_parts(client: Client, tmp_path: Path) -> None:
    task = await client.send("", data={"b": 2, "a": 1}, skill="data")
    assert isinstance(task, Task)
    assert task.artifacts[0].parts[0].data == {"got": {"a": 1, "b": 2}}

    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"twelve bytes")
    link = Part(url="https://example.com/x.png", media_type="image/png", filename="x.png")
    task = await client.send("see attached", files=[notes, link], skill="files")
    assert isinstance(task, Task)
    assert texts(task) == ["notes.txt|text/plain|12|;x.png|image/png|0|https://example.com/x.png"]


async def test_send_a_ready_message(client: Client) -> None:
    message = Message(message_id="m-ready", role=Role.USER, parts=[Part(text="x")])
    task = await client.send(message, skill="echo")
    assert isinstance(task, Task)
    assert task.history[0].message_id == "m-ready"
    assert task.history[0].metadata == {"skill": "echo"}


async def test_input_required_then_continue_the_same_task(client: Client) -> None:
    first = await client.send("", skill="ask")
    assert isinstance(first, Task)
    assert first.status.state is TaskState.INPUT_REQUIRED
    assert first.status.message is not None and first.status.message.text == "Which term?"
    final = await client.send("record", task_id=first.id)
    assert isinstance(final, Task)
    assert (final.id, final.context_id) == (first.id, first.context_id)
    assert final.status.state is TaskState.COMPLETED
    assert texts(final) == ["defined record"]


async def test_return_immediately_then_get_and_cancel(client: Client, gates: Gates) -> None:
    task = await client.send("", skill="slow", return_immediately=True)
    assert isinstance(task, Task)
    assert task.status.state in (TaskState.SUBMITTED, TaskState.WORKING)
    with anyio.fail_after(TIMEOUT_S):
        await gates.started.wait()
    got = await client.get_task(task.id)
    assert got.status.state is TaskState.WORKING
    canceled = await client.cancel_task(task.id)
    assert canceled.id == task.id
    assert canceled.status.state is TaskState.CANCELED
    done = await client.send("x", skill="echo")
    assert isinstance(done, Task)
    with pytest.raises(TaskNotCancelableError):
        await client.cancel_task(done.id)


async def test_get_task_history_length(client: Client) -> None:
    first = await client.send("", skill="ask")
    assert isinstance(first, Task)
    await client.send("term", task_id=first.id)
    full = await client.get_task(first.id)
    assert len(full.history) >= 3
    latest = await client.get_task(first.id, history_length=1)
    assert latest.history == full.history[-1:]
    assert (await client.get_task(first.id, history_length=0)).history == []


async def test_send_history_length_and_output_modes(client: Client) -> None:
    task = await client.send(
        "hi", skill="echo", history_length=0, accepted_output_modes=["text/plain"]
    )
    assert isinstance(task, Task)
    assert task.history == []
    assert texts(task) == ["hi"]


async def test_list_tasks_walks_every_page(client: Client) -> None:
    sent = [await client.send(f"n{i}", skill="echo") for i in range(5)]
    context = sent[0].context_id  # type: ignore[union-attr]
    listed = [t async for t in client.list_tasks(page_size=2)]
    assert [t.id for t in listed] == [t.id for t in reversed(sent)]
    assert all(t.artifacts == [] for t in listed), "no artifacts unless asked for"
    with_artifacts = [t async for t in client.list_tasks(page_size=2, include_artifacts=True)]
    assert [texts(t) for t in with_artifacts] == [[f"n{i}"] for i in reversed(range(5))]
    in_context = [t async for t in client.list_tasks(context_id=context)]
    assert [t.id for t in in_context] == [sent[0].id]  # type: ignore[union-attr]
    failed = [t async for t in client.list_tasks(status=TaskState.FAILED)]
    assert failed == []
    completed = [t async for t in client.list_tasks(status="TASK_STATE_COMPLETED", page_size=100)]
    assert len(completed) == 5


async def test_list_tasks_filters_by_status_time(client: Client) -> None:
    first = await client.send("old", skill="echo")
    assert isinstance(first, Task) and first.status.timestamp is not None
    after = parse_timestamp(first.status.timestamp)
    newer = [t.id async for t in client.list_tasks(status_timestamp_after=after)]
    assert first.id in newer


async def test_stream_a_task(client: Client) -> None:
    events = [e async for e in client.stream("streamed", skill="echo")]
    first, last = events[0], events[-1]
    assert isinstance(first, Task)
    assert isinstance(last, TaskStatusUpdateEvent)
    assert last.status.state is TaskState.COMPLETED
    chunks = [e for e in events if isinstance(e, TaskArtifactUpdateEvent)]
    assert [c.artifact.text for c in chunks] == ["streamed"]
    assert {e.task_id for e in events[1:] if not isinstance(e, Task | Message)} == {first.id}


async def test_stream_a_message_reply(client: Client) -> None:
    events = [e async for e in client.stream("hi", skill="reply")]
    assert len(events) == 1 and isinstance(events[0], Message)
    assert events[0].text == "re: hi"


async def test_stream_ends_at_input_required_and_continues(client: Client) -> None:
    events = [e async for e in client.stream("", skill="ask")]
    task = events[0]
    assert isinstance(task, Task)
    last = events[-1]
    assert isinstance(last, TaskStatusUpdateEvent)
    assert last.status.state is TaskState.INPUT_REQUIRED
    more = [e async for e in client.stream("lambda", task_id=task.id)]
    states = [e.status.state for e in more if isinstance(e, TaskStatusUpdateEvent)]
    assert states[-1] is TaskState.COMPLETED
    assert (await client.get_task(task.id)).artifacts[0].text == "defined lambda"


async def test_subscribe_follows_a_running_task(client: Client, gates: Gates) -> None:
    task = await client.send("", skill="steps", return_immediately=True)
    assert isinstance(task, Task)
    seen: list[object] = []
    with anyio.fail_after(TIMEOUT_S):
        async for event in client.subscribe(task.id):
            seen.append(event)
            if isinstance(event, Task):
                gates.release.set()  # subscribed: " three" is emitted after this snapshot
            if isinstance(event, TaskArtifactUpdateEvent) and event.artifact.text == " three":
                gates.finish.set()
    assert isinstance(seen[0], Task) and seen[0].id == task.id
    chunks = [e.artifact.text for e in seen if isinstance(e, TaskArtifactUpdateEvent)]
    snapshot_text = "".join(a.text for a in seen[0].artifacts)
    assert snapshot_text + "".join(chunks) == "one two three"
    last = seen[-1]
    assert isinstance(last, TaskStatusUpdateEvent) and last.status.state is TaskState.COMPLETED


async def test_typed_errors_from_the_server(client: Client) -> None:
    with pytest.raises(TaskNotFoundError):
        await client.get_task("no-such-task")
    done = await client.send("x", skill="echo")
    assert isinstance(done, Task)
    with pytest.raises(UnsupportedOperationError):
        await client.send("more", task_id=done.id)
    with pytest.raises(UnsupportedOperationError):
        [e async for e in client.subscribe(done.id)]
    with pytest.raises(TaskNotFoundError):
        [e async for e in client.stream("x", task_id="no-such-task")]
    with pytest.raises(InvalidParamsError):
        [t async for t in client.list_tasks(page_size=500)]
    with pytest.raises(InvalidParamsError):
        await client.send("x", skill="no-such-skill")


async def test_push_config_calls_report_the_missing_capability(client: Client) -> None:
    done = await client.send("x", skill="echo")
    assert isinstance(done, Task)
    with pytest.raises(PushNotificationNotSupportedError):
        await client.create_push_config(done.id, "https://hooks.example/a2a", token="t")
    with pytest.raises(PushNotificationNotSupportedError):
        await client.get_push_config(done.id, "cfg")
    with pytest.raises(PushNotificationNotSupportedError):
        await client.list_push_configs(done.id)
    with pytest.raises(PushNotificationNotSupportedError):
        await client.delete_push_config(done.id, "cfg")


async def test_extended_card_not_offered(client: Client) -> None:
    assert not client.card.capabilities.extended_agent_card
    with pytest.raises(UnsupportedOperationError):
        await client.get_extended_card()


async def test_card_and_interface(client: Client) -> None:
    assert client.card.name == "Test Agent"
    assert client.interface.protocol_binding == "JSONRPC"
    assert client.interface is client.card.supported_interfaces[0]
    assert {s.id for s in client.card.skills} >= {"echo", "ask", "steps"}
