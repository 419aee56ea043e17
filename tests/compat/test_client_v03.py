"""peerwire's client speaking A2A 0.3 to a peerwire server, over JSON-RPC and HTTP+JSON.

The server's card is served as a 0.3 agent's (``V03CardOnly``), so the client finds only 0.3
interfaces and speaks 0.3 on the wire (``client_v03`` checks every request it sent was a 0.3
one: 0.3 method names, ``/v1`` routes, ``A2A-Version: 0.3``); user code is the same as against
1.0, and so are the ``peerwire.types`` results.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from peerwire import Agent
from peerwire.errors import TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError
from peerwire.types import (
    AuthenticationInfo,
    Binding,
    Message,
    Part,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)

from .conftest import BINDINGS, WEBHOOK, Gate, client_v03


@BINDINGS
async def test_send_get_and_errors(agent: Agent, binding: str) -> None:
    async with client_v03(agent, binding) as client:
        task = await client.send("hello", skill="echo")
        assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
        assert task.artifacts[0].text == "hello"
        assert task.history[0].text == "hello"
        again = await client.get_task(task.id, history_length=1)
        assert again.id == task.id and len(again.history) == 1
        with pytest.raises(TaskNotFoundError) as missing:
            await client.get_task("no-such-task")
        assert missing.value.metadata == {"taskId": "no-such-task"}
        with pytest.raises(UnsupportedOperationError, match=r"0\.3"):
            await client.list_tasks()


@BINDINGS
async def test_files_and_data_cross(agent: Agent, binding: str) -> None:
    async with client_v03(agent, binding) as client:
        task = await client.send(
            "see",
            skill="inspect",
            data=[1, 2],
            files=[Part(raw=b"hi", filename="a.txt", media_type="text/plain")],
        )
    assert isinstance(task, Task)
    described = task.artifacts[0].parts[0].data
    assert isinstance(described, dict)
    seen = described["parts"]
    assert [p["kind"] for p in seen] == ["text", "data", "raw"]
    assert seen[1]["data"] == [1, 2], "a non-object value crosses 0.3's data part"
    assert seen[1]["mediaType"] == "", "a data part's media type has no place in 0.3"
    assert seen[2]["raw"] == "aGk=" and seen[2]["filename"] == "a.txt"
    assert seen[2]["mediaType"] == "text/plain"


@BINDINGS
async def test_stream_and_input_required_continuation(agent: Agent, binding: str) -> None:
    async with client_v03(agent, binding) as client:
        events = [event async for event in client.stream("hi", skill="echo")]
        assert [type(e) for e in events] == [
            Task,
            TaskStatusUpdateEvent,
            TaskArtifactUpdateEvent,
            TaskStatusUpdateEvent,
        ]
        last = events[-1]
        assert isinstance(last, TaskStatusUpdateEvent)
        assert last.status.state is TaskState.COMPLETED

        asked = await client.send("x", skill="ask")
        assert isinstance(asked, Task) and asked.status.state is TaskState.INPUT_REQUIRED
        assert asked.status.message is not None and asked.status.message.text == "Which term?"
        answered = [event async for event in client.stream("zebra", task_id=asked.id)]
        final = answered[-1]
        assert isinstance(final, TaskStatusUpdateEvent)
        assert final.status.state is TaskState.COMPLETED
        done = await client.get_task(asked.id)
    assert done.artifacts[0].text == "defined zebra"


@BINDINGS
async def test_cancel_and_subscribe(agent: Agent, gate: Gate, binding: str) -> None:
    async with client_v03(agent, binding) as client:
        started = await client.send("x", skill="slow", return_immediately=True)
        assert isinstance(started, Task)
        await gate.started.wait()
        canceled = await client.cancel_task(started.id)
        assert canceled.status.state is TaskState.CANCELED
        again = await client.cancel_task(started.id)
        assert again.status.state is TaskState.CANCELED, "canceling twice is no error"
        finished = await client.send("done", skill="echo")
        assert isinstance(finished, Task)
        with pytest.raises(TaskNotCancelableError):
            await client.cancel_task(finished.id)

        gate.started.clear()
        running = await client.send("x", skill="slow", return_immediately=True)
        assert isinstance(running, Task)
        await gate.started.wait()
        seen = []
        async for event in client.subscribe(running.id):
            seen.append(event)
            gate.release.set()
    assert isinstance(seen[0], Task)
    assert isinstance(seen[-1], TaskStatusUpdateEvent)
    assert seen[-1].status.state is TaskState.COMPLETED


@BINDINGS
async def test_push_configs(agent: Agent, binding: str) -> None:
    async with client_v03(agent, binding) as client:
        task = await client.send("hello", skill="echo")
        assert isinstance(task, Task)
        auth = AuthenticationInfo(scheme="Bearer", credentials="t0k")
        first = await client.create_push_config(
            task.id, WEBHOOK, token="secret", authentication=auth, config_id="c1"
        )
        assert (first.id, first.task_id, first.url, first.token) == (
            "c1",
            task.id,
            WEBHOOK,
            "secret",
        )
        assert first.authentication == auth
        unnamed = await client.create_push_config(task.id, WEBHOOK)
        assert unnamed.id == task.id, "0.3: a config without an id takes the task's"
        assert await client.get_push_config(task.id, "c1") == first
        listed = await client.list_push_configs(task.id)
        assert [c.id for c in listed] == ["c1", task.id]
        await client.delete_push_config(task.id, "c1")
        await client.delete_push_config(task.id, task.id)
        assert await client.list_push_configs(task.id) == []
        with pytest.raises(TaskNotFoundError):
            await client.get_push_config(task.id, "c1")


@BINDINGS
async def test_a_direct_message_reply(agent: Agent, binding: str) -> None:
    @agent.skill()
    async def hi(message: Message) -> Message:
        return Message(message_id="r-1", role=message.role.AGENT, parts=message.parts)

    async with client_v03(agent, binding) as client:
        reply = await client.send("hey", skill="hi")
        streamed = [event async for event in client.stream("you", skill="hi")]
    assert isinstance(reply, Message) and reply.text == "hey"
    assert len(streamed) == 1 and isinstance(streamed[0], Message)


class Wrapper:
    """Passes everything to ``inner`` (its attributes too)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class OpensWithAnUpdate(Wrapper):
    """Drops the Task that opens each stream, as 0.3 servers (a2a-sdk's) open without one."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        opened = False

        async def without_the_task(message: dict[str, Any]) -> None:
            nonlocal opened
            body = message.get("body", b"")
            if (
                message["type"] == "http.response.body"
                and body.startswith(b"data: ")
                and not opened
            ):
                opened = True
                if b'"kind":"task"' in body or b'{"task":' in body:
                    return
            await send(message)

        await self.inner(scope, receive, without_the_task)


class CutsRefusedSubscriptions(Wrapper):
    """Answers a refused subscription as a2a-sdk's 0.3 REST server does: the event stream
    starts, then the connection ends without an event."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].endswith(":subscribe"):
            await self.inner(scope, receive, send)
            return

        async def cut(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and message["status"] != 200:
                headers = [(b"content-type", b"text/event-stream")]
                await send({"type": "http.response.start", "status": 200, "headers": headers})
                ping = {"type": "http.response.body", "body": b": ping\n\n", "more_body": True}
                await send(ping)
                raise RuntimeError("a2a-sdk's way of refusing a subscription")
            await send(message)

        await self.inner(scope, receive, cut)


@BINDINGS
async def test_a_stream_opened_with_an_update_gets_its_task(agent: Agent, binding: str) -> None:
    async with client_v03(agent, binding, wrap=OpensWithAnUpdate) as client:
        events = [event async for event in client.stream("hi", skill="echo")]
    task, artifact, completed = events
    assert isinstance(task, Task) and task.status.state is TaskState.WORKING, "the update's"
    assert [m.text for m in task.history] == ["hi"], "the message it was opened with"
    assert isinstance(artifact, TaskArtifactUpdateEvent) and artifact.task_id == task.id
    assert isinstance(completed, TaskStatusUpdateEvent)
    assert completed.status.state is TaskState.COMPLETED


async def test_a_cut_subscription_of_a_finished_task_is_its_refusal(agent: Agent) -> None:
    async with client_v03(agent, Binding.HTTP_JSON, wrap=CutsRefusedSubscriptions) as client:
        done = await client.send("hi", skill="echo")
        assert isinstance(done, Task)
        with pytest.raises(UnsupportedOperationError, match="without an event"):
            async for _ in client.subscribe(done.id):
                pass


class EndsSubscriptionsEmpty(Wrapper):
    """Answers every subscription with an event stream that ends before its first event, as
    a2a-sdk 0.3 does for a task that ends between its check for a finished task and its tap
    of the task's events."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        subscribes, receive = await _subscribes(scope, receive)
        if not subscribes:
            await self.inner(scope, receive, send)
            return
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b""})


async def _subscribes(scope: Any, receive: Any) -> tuple[bool, Any]:
    """Whether the request is a 0.3 subscription, and its body to read again."""
    if scope["path"].endswith(":subscribe"):
        return True, receive
    if scope["method"] != "POST" or scope["path"] != "/":
        return False, receive
    messages = [await receive()]
    while messages[-1].get("more_body", False):
        messages.append(await receive())
    replay = iter(messages)

    async def replayed() -> Any:
        return next(replay, None) or await receive()

    body = b"".join(m.get("body", b"") for m in messages)
    return json.loads(body).get("method") == "tasks/resubscribe", replayed


@BINDINGS
async def test_a_subscription_that_ends_empty_is_answered_by_get_task(
    agent: Agent, binding: str
) -> None:
    async with client_v03(agent, binding, wrap=EndsSubscriptionsEmpty) as client:
        done = await client.send("hi", skill="echo")
        assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED
        with pytest.raises(UnsupportedOperationError, match="without an event") as refused:
            async for _ in client.subscribe(done.id):
                raise AssertionError("a finished task's subscription yielded an event")
        # The task and its state: known as the refusal of a finished task's subscription.
        assert refused.value.metadata == {"taskId": done.id, "state": done.status.state.value}
        asked = await client.send("", skill="ask")
        assert isinstance(asked, Task) and asked.status.state is TaskState.INPUT_REQUIRED
        seen = [event async for event in client.subscribe(asked.id)]
        assert seen == [await client.get_task(asked.id)], "the task as GetTask has it"
        await client.cancel_task(asked.id)
