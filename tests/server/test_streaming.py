"""Streams over a real server: SendStreamingMessage and SubscribeToTask (A2A spec §3.1.2, §3.1.6).

A stream starts with the Task (or is the single Message), then carries every later event once,
in order; it closes at a terminal state and at INPUT_REQUIRED, not at AUTH_REQUIRED. Folding
the first snapshot and the events must give exactly what GetTask returns.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from peerwire.protocol import fold_events
from peerwire.types import StreamResponse, Task, from_builtins

from ._agents import Controls, ask_for, workbench
from ._rpc import Rpc, serving, state_of, status_text, user_message

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def bench() -> AsyncIterator[tuple[Rpc, Controls]]:
    agent, controls = workbench()
    async with serving(agent) as rpc:
        yield rpc, controls


@pytest.fixture
def rpc(bench: tuple[Rpc, Controls]) -> Rpc:
    return bench[0]


@pytest.fixture
def controls(bench: tuple[Rpc, Controls]) -> Controls:
    return bench[1]


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [next(iter(e)) for e in events]


def folded(snapshot: dict[str, Any], events: list[dict[str, Any]]) -> Task:
    """What an observer reconstructs from a stream: the snapshot with the events applied."""
    task = from_builtins(snapshot, Task)
    updates = [from_builtins(e, StreamResponse).payload for e in events]
    return fold_events(task, updates)  # type: ignore[arg-type]


async def stored(rpc: Rpc, task_id: str) -> Task:
    return from_builtins(await rpc.get(task_id), Task)


async def test_a_stream_starts_with_the_task_and_closes_at_completion(rpc: Rpc) -> None:
    async with rpc.send_stream(ask_for("echo", "hi")) as stream:
        events = [await stream.next(), *await stream.rest()]
    assert kinds(events) == ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    task = events[0]["task"]
    assert state_of(task) == "TASK_STATE_SUBMITTED"
    assert [state_of(e["statusUpdate"]) for e in (events[1], events[3])] == [
        "TASK_STATE_WORKING",
        "TASK_STATE_COMPLETED",
    ]
    chunk = events[2]["artifactUpdate"]
    assert chunk["artifact"]["parts"] == [{"text": "hi"}] and chunk["lastChunk"] is True
    for event in events[1:]:
        payload = next(iter(event.values()))
        assert (payload["taskId"], payload["contextId"]) == (task["id"], task["contextId"])
    assert folded(task, events[1:]) == await stored(rpc, task["id"])


async def test_artifact_chunks_stream_in_order_and_fold_into_one_artifact(rpc: Rpc) -> None:
    async with rpc.send_stream(ask_for("chunks")) as stream:
        events = [await stream.next(), *await stream.rest()]
    chunks = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    assert [(c["artifact"]["artifactId"], c.get("append", False)) for c in chunks] == [
        ("story", False),
        ("story", True),
        ("story", True),
        ("count", False),
    ]
    assert [c.get("lastChunk", False) for c in chunks[:3]] == [False, False, True]
    task = await stored(rpc, events[0]["task"]["id"])
    assert [a.artifact_id for a in task.artifacts] == ["story", "count"]
    assert task.artifacts[0].text == "c0c1c2"
    assert task.artifacts[1].parts[0].data == {"n": 3}
    assert folded(events[0]["task"], events[1:]) == task
    assert status_text(events[-1]["statusUpdate"]) == "all chunks sent"


async def test_a_message_skill_streams_one_message(rpc: Rpc) -> None:
    async with rpc.send_stream(ask_for("reply", "hi")) as stream:
        events = [await stream.next(), *await stream.rest()]
    assert kinds(events) == ["message"]
    assert events[0]["message"]["parts"] == [{"text": "re: hi"}]


async def test_a_stream_closes_at_input_required_and_a_follow_up_streams_on(rpc: Rpc) -> None:
    async with rpc.send_stream(ask_for("ask")) as stream:
        events = [await stream.next(), *await stream.rest()]
    last = events[-1]["statusUpdate"]
    assert state_of(last) == "TASK_STATE_INPUT_REQUIRED" and status_text(last) == "first?"
    task_id = events[0]["task"]["id"]

    async with rpc.send_stream(user_message("a", taskId=task_id)) as stream:
        follow = [await stream.next(), *await stream.rest()]
    snapshot = follow[0]["task"]
    assert snapshot["id"] == task_id and state_of(snapshot) == "TASK_STATE_WORKING"
    assert snapshot["history"][-1]["parts"] == [{"text": "a"}]
    assert state_of(follow[-1]["statusUpdate"]) == "TASK_STATE_INPUT_REQUIRED"
    assert status_text(follow[-1]["statusUpdate"]) == "second?"
    assert folded(snapshot, follow[1:]) == await stored(rpc, task_id)
    await rpc.result("CancelTask", {"id": task_id})


async def test_a_stream_stays_open_at_auth_required(rpc: Rpc, controls: Controls) -> None:
    async with rpc.send_stream(ask_for("auth", "auth-1")) as stream:
        events = [await stream.next()]
        while not events or state_of(next(iter(events[-1].values()))) != "TASK_STATE_AUTH_REQUIRED":
            events.append(await stream.next())
        assert "sign in" in status_text(events[-1]["statusUpdate"])
        await controls.started("auth-1")
        # The credential arrives out of band; the same stream carries the rest of the task.
        controls.release("auth-1")
        events += await stream.rest()
    assert kinds(events[-2:]) == ["artifactUpdate", "statusUpdate"]
    assert state_of(events[-1]["statusUpdate"]) == "TASK_STATE_COMPLETED"
    assert folded(events[0]["task"], events[1:]) == await stored(rpc, events[0]["task"]["id"])


async def test_concurrent_subscribers_see_identical_events(rpc: Rpc, controls: Controls) -> None:
    task = await rpc.send(ask_for("progress", "two-subs"), returnImmediately=True)
    await controls.started("two-subs")
    async with rpc.subscribe(task["id"]) as first, rpc.subscribe(task["id"]) as second:
        snapshots = [await first.next(), await second.next()]
        assert all(kinds([s]) == ["task"] for s in snapshots)
        assert snapshots[0] == snapshots[1]
        assert state_of(snapshots[0]["task"]) == "TASK_STATE_WORKING"
        controls.release("two-subs")
        seen = [await first.rest(), await second.rest()]
    assert seen[0] == seen[1]
    assert [status_text(e["statusUpdate"]) for e in seen[0] if "statusUpdate" in e][:3] == [
        "step 0",
        "step 1",
        "step 2",
    ]
    assert state_of(seen[0][-1]["statusUpdate"]) == "TASK_STATE_COMPLETED"
    assert folded(snapshots[0]["task"], seen[0]) == await stored(rpc, task["id"])


async def test_subscribing_to_an_interrupted_task_follows_it(rpc: Rpc) -> None:
    task = await rpc.send(ask_for("ask"))
    async with rpc.subscribe(task["id"]) as stream:
        snapshot = (await stream.next())["task"]
        assert snapshot == task
        answered = await rpc.send(user_message("a", taskId=task["id"]))
        events = await stream.rest()
    assert [state_of(e["statusUpdate"]) for e in events] == [
        "TASK_STATE_WORKING",
        "TASK_STATE_INPUT_REQUIRED",
    ]
    # Another client's message is not a stream event: only its history entry is missing.
    observed, actual = folded(snapshot, events), from_builtins(answered, Task)
    assert (observed.status, observed.artifacts) == (actual.status, actual.artifacts)
    assert [m for m in actual.history if m not in observed.history] == [
        m for m in actual.history if m.role.value == "ROLE_USER" and m.text == "a"
    ]
    await rpc.result("CancelTask", {"id": task["id"]})


async def test_a_subscriber_sees_a_cancel(rpc: Rpc, controls: Controls) -> None:
    task = await rpc.send(ask_for("wait", "sub-cancel"), returnImmediately=True)
    await controls.started("sub-cancel")
    async with rpc.subscribe(task["id"]) as stream:
        await stream.next()
        canceled = await rpc.result("CancelTask", {"id": task["id"]})
        events = await stream.rest()
    assert [state_of(e["statusUpdate"]) for e in events] == ["TASK_STATE_CANCELED"]
    assert canceled["status"] == events[-1]["statusUpdate"]["status"]


async def test_leaving_a_stream_does_not_cancel_the_task(rpc: Rpc, controls: Controls) -> None:
    async with rpc.send_stream(ask_for("wait", "leave")) as stream:
        task = (await stream.next())["task"]
        await controls.started("leave")
    async with rpc.subscribe(task["id"]) as stream:
        assert state_of((await stream.next())["task"]) == "TASK_STATE_WORKING"
        controls.release("leave")
        events = await stream.rest()
    assert state_of(events[-1]["statusUpdate"]) == "TASK_STATE_COMPLETED"


async def test_errors_found_before_a_stream_starts_are_plain_json(rpc: Rpc) -> None:
    finished = await rpc.send(ask_for("echo", "x"))
    for method, params, code in (
        ("SendStreamingMessage", {"message": user_message("x", taskId="ghost")}, -32001),
        ("SendStreamingMessage", {"message": user_message("x", taskId=finished["id"])}, -32004),
        ("SendStreamingMessage", {"message": ask_for("juggle")}, -32602),
        ("SubscribeToTask", {"id": "ghost"}, -32001),
        ("SubscribeToTask", {"id": finished["id"]}, -32004),
    ):
        error = await rpc.error(method, params)  # asserts an application/json answer
        assert error["code"] == code, (method, error)


async def test_an_idle_stream_gets_keep_alive_comments() -> None:
    agent, controls = workbench()
    async with serving(agent, keepalive_seconds=0.05) as rpc:
        task = await rpc.send(ask_for("wait", "idle"), returnImmediately=True)
        async with rpc.subscribe(task["id"]) as stream:
            await stream.next()
            await stream.read_until(b"\n: keep-alive\n\n: keep-alive\n\n")
            controls.release("idle")
            events = await stream.rest()
        # Comments are not events: the parser skipped them.
        assert kinds(events) == ["artifactUpdate", "statusUpdate"]
