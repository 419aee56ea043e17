"""Streams over each binding: SendStreamingMessage and SubscribeToTask (A2A spec §3.1.2, §3.1.6).

A stream starts with the Task (or is the single Message), then carries every later event once,
in order; it closes at a terminal state and at INPUT_REQUIRED, not at AUTH_REQUIRED. Folding
the snapshot and the events gives exactly what GetTask returns, on every binding.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from peerwire.client import Payload
from peerwire.errors import InvalidParamsError, TaskNotFoundError, UnsupportedOperationError
from peerwire.protocol import fold_events
from peerwire.types import (
    Message,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)

from .._agents import Controls
from ._peers import Peer

pytestmark = pytest.mark.asyncio(loop_scope="module")

WAIT_S = 30.0
Update = TaskStatusUpdateEvent | TaskArtifactUpdateEvent


async def collect(events: AsyncIterator[Payload], limit: int = 100) -> list[Payload]:
    """Every event until the stream ends (bounded in count and time)."""
    seen: list[Payload] = []
    with anyio.fail_after(WAIT_S):
        async for event in events:
            seen.append(event)
            assert len(seen) <= limit, "the stream did not end"
    return seen


def split(events: list[Payload]) -> tuple[Task, list[Update]]:
    """The snapshot a stream starts with, and the updates after it."""
    first, *rest = events
    assert isinstance(first, Task), first
    updates = [e for e in rest if isinstance(e, TaskStatusUpdateEvent | TaskArtifactUpdateEvent)]
    assert updates == rest, "only updates follow the snapshot"
    return first, updates


def states(updates: list[Update]) -> list[TaskState]:
    return [u.status.state for u in updates if isinstance(u, TaskStatusUpdateEvent)]


def status_text(update: Update) -> str:
    assert isinstance(update, TaskStatusUpdateEvent)
    message = update.status.message
    return "" if message is None else message.text


async def test_a_stream_starts_with_the_task_and_closes_at_completion(peer: Peer) -> None:
    snapshot, updates = split(await collect(peer.client.stream("hi", skill="echo")))
    assert snapshot.status.state is TaskState.SUBMITTED
    assert [type(u) for u in updates] == [
        TaskStatusUpdateEvent,
        TaskArtifactUpdateEvent,
        TaskStatusUpdateEvent,
    ]
    assert states(updates) == [TaskState.WORKING, TaskState.COMPLETED]
    chunk = updates[1]
    assert isinstance(chunk, TaskArtifactUpdateEvent)
    assert chunk.artifact.text == "hi" and chunk.last_chunk is True
    assert all((u.task_id, u.context_id) == (snapshot.id, snapshot.context_id) for u in updates)
    assert fold_events(snapshot, updates) == await peer.client.get_task(snapshot.id)


async def test_artifact_chunks_stream_in_order_and_fold_into_one_artifact(peer: Peer) -> None:
    snapshot, updates = split(await collect(peer.client.stream("", skill="chunks")))
    chunks = [u for u in updates if isinstance(u, TaskArtifactUpdateEvent)]
    assert [(c.artifact.artifact_id, c.append, c.last_chunk) for c in chunks] == [
        ("story", False, False),
        ("story", True, False),
        ("story", True, True),
        ("count", False, False),
    ]
    task = await peer.client.get_task(snapshot.id)
    assert [a.artifact_id for a in task.artifacts] == ["story", "count"]
    assert task.artifacts[0].text == "c0c1c2"
    assert task.artifacts[1].parts[0].data == {"n": 3}
    assert fold_events(snapshot, updates) == task
    assert status_text(updates[-1]) == "all chunks sent"


async def test_a_message_skill_streams_one_message(peer: Peer) -> None:
    events = await collect(peer.client.stream("hi", skill="reply"))
    assert len(events) == 1
    [reply] = events
    assert isinstance(reply, Message)
    assert reply.role is Role.AGENT and reply.text == "re: hi" and reply.context_id


async def test_a_stream_closes_at_input_required_and_a_follow_up_streams_on(peer: Peer) -> None:
    snapshot, updates = split(await collect(peer.client.stream("", skill="ask")))
    assert states(updates)[-1] is TaskState.INPUT_REQUIRED
    assert status_text(updates[-1]) == "first?"

    follow, more = split(await collect(peer.client.stream("a", task_id=snapshot.id)))
    assert follow.id == snapshot.id and follow.status.state is TaskState.WORKING
    assert follow.history[-1].text == "a"
    assert states(more)[-1] is TaskState.INPUT_REQUIRED
    assert status_text(more[-1]) == "second?"
    assert fold_events(follow, more) == await peer.client.get_task(snapshot.id)

    last, final = split(await collect(peer.client.stream("b", task_id=snapshot.id)))
    assert states(final)[-1] is TaskState.COMPLETED
    done = await peer.client.get_task(snapshot.id)
    assert fold_events(last, final) == done
    assert [a.text for a in done.artifacts] == ["a + b"]


async def test_a_stream_stays_open_at_auth_required(peer: Peer, controls: Controls) -> None:
    gate = peer.key("auth-stream")
    events: list[Payload] = []
    with anyio.fail_after(WAIT_S):
        async for event in peer.client.stream(gate, skill="auth"):
            events.append(event)
            if (
                isinstance(event, TaskStatusUpdateEvent)
                and event.status.state is TaskState.AUTH_REQUIRED
            ):
                # The credential arrives out of band; the same stream carries the rest.
                await controls.started(gate)
                controls.release(gate)
            assert len(events) <= 20
    snapshot, updates = split(events)
    assert states(updates) == [TaskState.WORKING, TaskState.AUTH_REQUIRED, TaskState.COMPLETED]
    assert "sign in" in status_text(updates[1])
    assert fold_events(snapshot, updates) == await peer.client.get_task(snapshot.id)


async def test_concurrent_subscribers_see_identical_events(peer: Peer, controls: Controls) -> None:
    gate = peer.key("two-subscribers")
    task = await peer.client.send(gate, skill="progress", return_immediately=True)
    assert isinstance(task, Task)
    await controls.started(gate)
    first = peer.client.subscribe(task.id)
    second = peer.client.subscribe(task.id)
    try:
        with anyio.fail_after(WAIT_S):
            snapshots = [await anext(first), await anext(second)]
        assert snapshots[0] == snapshots[1]
        assert isinstance(snapshots[0], Task)
        assert snapshots[0].status.state is TaskState.WORKING
        controls.release(gate)
        seen = [await collect(first), await collect(second)]
    finally:
        await first.aclose()  # type: ignore[attr-defined]
        await second.aclose()  # type: ignore[attr-defined]
    assert seen[0] == seen[1]
    updates = split([snapshots[0], *seen[0]])[1]
    assert [status_text(u) for u in updates if isinstance(u, TaskStatusUpdateEvent)][:3] == [
        "step 0",
        "step 1",
        "step 2",
    ]
    assert states(updates)[-1] is TaskState.COMPLETED
    assert fold_events(snapshots[0], updates) == await peer.client.get_task(task.id)


async def test_subscribing_to_an_interrupted_task_follows_it(peer: Peer) -> None:
    task = await peer.client.send("", skill="ask")
    assert isinstance(task, Task) and task.status.state is TaskState.INPUT_REQUIRED
    stream = peer.client.subscribe(task.id)
    try:
        with anyio.fail_after(WAIT_S):
            snapshot = await anext(stream)
        assert snapshot == task
        answered = await peer.client.send("a", task_id=task.id)
        events = await collect(stream)
    finally:
        await stream.aclose()  # type: ignore[attr-defined]
    assert isinstance(answered, Task)
    updates = split([snapshot, *events])[1]
    assert states(updates) == [TaskState.WORKING, TaskState.INPUT_REQUIRED]
    # Another client's message is not a stream event: only its history entry is missing.
    observed = fold_events(task, updates)
    assert (observed.status, observed.artifacts) == (answered.status, answered.artifacts)
    assert [m.text for m in answered.history if m not in observed.history] == ["a"]
    await peer.client.cancel_task(task.id)


async def test_a_subscriber_sees_a_cancel(peer: Peer, controls: Controls) -> None:
    gate = peer.key("subscriber-cancel")
    task = await peer.client.send(gate, skill="wait", return_immediately=True)
    assert isinstance(task, Task)
    await controls.started(gate)
    stream = peer.client.subscribe(task.id)
    try:
        with anyio.fail_after(WAIT_S):
            await anext(stream)
        canceled = await peer.client.cancel_task(task.id)
        events = await collect(stream)
    finally:
        await stream.aclose()  # type: ignore[attr-defined]
    updates = split([task, *events])[1]
    assert states(updates) == [TaskState.CANCELED]
    [update] = updates
    assert isinstance(update, TaskStatusUpdateEvent)
    assert canceled.status == update.status


async def test_leaving_a_stream_does_not_cancel_the_task(peer: Peer, controls: Controls) -> None:
    gate = peer.key("leave")
    stream = peer.client.stream(gate, skill="wait")
    try:
        with anyio.fail_after(WAIT_S):
            task = await anext(stream)
    finally:
        await stream.aclose()  # type: ignore[attr-defined]
    assert isinstance(task, Task)
    await controls.started(gate)
    follower = peer.client.subscribe(task.id)
    try:
        with anyio.fail_after(WAIT_S):
            snapshot = await anext(follower)
        assert isinstance(snapshot, Task) and snapshot.status.state is TaskState.WORKING
        controls.release(gate)
        events = await collect(follower)
    finally:
        await follower.aclose()  # type: ignore[attr-defined]
    assert states(split([snapshot, *events])[1])[-1] is TaskState.COMPLETED


async def test_subscribe_to_a_finished_task_is_refused(peer: Peer) -> None:
    task = await peer.client.send("x", skill="echo")
    assert isinstance(task, Task)
    with pytest.raises(UnsupportedOperationError) as refused:
        await collect(peer.client.subscribe(task.id))
    assert task.id in refused.value.message and "GetTask" in refused.value.message
    assert await peer.client.get_task(task.id) == task


async def test_errors_found_before_a_stream_starts_are_typed(peer: Peer) -> None:
    with pytest.raises(TaskNotFoundError, match="ghost"):
        await collect(peer.client.subscribe("ghost"))
    with pytest.raises(TaskNotFoundError, match="ghost"):
        await collect(peer.client.stream("x", task_id="ghost"))
    with pytest.raises(InvalidParamsError, match="juggle"):
        await collect(peer.client.stream("x", skill="juggle"))
