"""``TaskStream``: events handed out one by one or in batches, the end at a closing state,
and the SSE writer's one ASGI message per event even when events are taken in batches."""

from __future__ import annotations

import asyncio
import json
from collections.abc import MutableMapping
from typing import Any

import pytest

from peerwire import Agent, TaskContext, create_app
from peerwire.bindings.sse import SSEParser
from peerwire.server.bus import MemoryBus
from peerwire.server.dispatch import TaskStream
from peerwire.types import (
    StreamResponse,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

pytestmark = pytest.mark.asyncio


def status(state: TaskState) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(task_id="t", context_id="c", status=TaskStatus(state=state))


def first() -> StreamResponse:
    return StreamResponse(task=Task(id="t", status=TaskStatus(state=TaskState.SUBMITTED)))


def states(batch: list[StreamResponse] | None) -> list[TaskState | None]:
    assert batch is not None
    return [r.status_update.status.state if r.status_update else None for r in batch]


async def test_a_batch_holds_what_is_queued_and_ends_at_the_closing_state() -> None:
    bus = MemoryBus()
    stream = TaskStream(first(), bus.subscribe("t"), version=1)
    assert states(await stream.next_batch(0)) == [None]  # the task itself comes first
    for version, state in enumerate(
        (TaskState.WORKING, TaskState.COMPLETED, TaskState.FAILED), start=2
    ):
        await bus.publish("t", version, status(state))
    # Everything up to the closing state; what follows it is not this stream's.
    assert states(await stream.next_batch(0)) == [TaskState.WORKING, TaskState.COMPLETED]
    with pytest.raises(StopAsyncIteration):
        await stream.next_batch(0)


async def test_next_hands_out_a_batch_one_event_at_a_time() -> None:
    bus = MemoryBus()
    stream = TaskStream(first(), bus.subscribe("t"), version=1)
    assert (await stream.next(0)) is not None
    assert await stream.next(0) is None  # nothing yet: a keep-alive's turn
    await bus.publish("t", 2, status(TaskState.WORKING))
    await bus.publish("t", 3, status(TaskState.INPUT_REQUIRED))
    one = await stream.next(0)
    assert one is not None and states([one]) == [TaskState.WORKING]
    assert states(await stream.next_batch(0)) == [TaskState.INPUT_REQUIRED]
    assert [item async for item in stream] == []


async def test_a_single_reply_is_the_whole_stream() -> None:
    stream = TaskStream(first())
    batch = await stream.next_batch()
    assert batch is not None and len(batch) == 1
    with pytest.raises(StopAsyncIteration):
        await stream.next()


async def test_every_event_is_its_own_asgi_message() -> None:
    chunks = 12
    agent = Agent("Chunks", description="Streams one artifact in chunks")

    @agent.skill()
    async def chunked(ctx: TaskContext) -> None:
        # No await that suspends between chunks: they pile up and are drained in one batch.
        for i in range(chunks):
            await ctx.add_artifact(f"c{i}", artifact_id="a", append=i > 0)

    app = create_app(agent, store="memory", rest_path=None)
    message = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "go"}]}
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "SendStreamingMessage",
            "params": {"message": message},
        }
    ).encode()
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/",
        "headers": [(b"content-type", b"application/json"), (b"a2a-version", b"1.0")],
        "query_string": b"",
    }
    finished = asyncio.Event()
    requested = False

    async def receive() -> dict[str, Any]:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": body, "more_body": False}
        await finished.wait()
        return {"type": "http.disconnect"}

    bodies: list[bytes] = []

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.body" and message.get("more_body"):
            bodies.append(message["body"])

    async with app.lifespan():
        await asyncio.wait_for(app(scope, receive, send), 30)
        finished.set()
    events = [SSEParser().feed(b) for b in bodies]
    assert all(len(e) == 1 for e in events)  # one event per message, none coalesced
    results = [json.loads(e[0]) for e in events]
    assert len(results) == chunks + 3  # the task, WORKING, the chunks, COMPLETED
    assert {r["id"] for r in results} == {9}
    assert results[-1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    texts = [r["result"]["artifactUpdate"]["artifact"]["parts"][0]["text"] for r in results[2:-1]]
    assert texts == [f"c{i}" for i in range(chunks)]
