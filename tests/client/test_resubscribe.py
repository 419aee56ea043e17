"""Following a task across dropped connections: resubscribe, merge, fall back to GetTask.

A ``StreamCutter`` in front of a real app cuts a stream after some events, optionally letting
the agent move on first (what the client then missed must reach it exactly once).
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from peerwire import Agent, Client, Task, TaskState
from peerwire.errors import A2AConnectionError
from peerwire.types import TaskArtifactUpdateEvent, TaskStatusUpdateEvent

from .conftest import TIMEOUT_S, Gates, Recorder, StreamCutter, connected

CUTS = pytest.mark.parametrize(
    ("mode", "abrupt"), [("live", False), ("live", True), ("inprocess", False), ("inprocess", True)]
)


def chunks(events: list[Any]) -> list[tuple[str, bool]]:
    return [(e.artifact.text, e.append) for e in events if isinstance(e, TaskArtifactUpdateEvent)]


def states(events: list[Any]) -> list[TaskState]:
    return [e.status.state for e in events if isinstance(e, TaskStatusUpdateEvent)]


async def collect(events: Any) -> list[Any]:
    seen = []
    with anyio.fail_after(TIMEOUT_S):
        async for event in events:
            seen.append(event)
    return seen


@CUTS
async def test_a_dropped_stream_is_resumed_without_repeating_chunks(
    mode: str, abrupt: bool, agent: Agent, gates: Gates
) -> None:
    recorder: Recorder | None = None

    async def agent_moves_on() -> None:
        gates.release.set()
        await gates.emitted.wait()  # " three" is emitted while the client is away

    async def resubscribed() -> None:
        gates.finish.set()

    def wrap(app: Any) -> Any:
        nonlocal recorder
        cutter = StreamCutter(
            app, after=4, abrupt=abrupt, before_cut=agent_moves_on, on_later_stream=resubscribed
        )
        recorder = Recorder(cutter)
        return recorder

    async with connected(mode, agent, wrap) as client:
        events = await collect(client.stream("", skill="steps"))
        final = await client.get_task(events[0].id)
    assert isinstance(events[0], Task)
    assert chunks(events) == [("one", False), (" two", True), (" three", True)]
    assert states(events) == [TaskState.WORKING, TaskState.COMPLETED]
    assert final.artifacts[0].text == "one two three"
    assert recorder is not None
    assert [len(recorder.calls(m)) for m in ("SendStreamingMessage", "SubscribeToTask")] == [1, 1]
    assert recorder.calls("SubscribeToTask")[0].rpc["params"] == {"id": events[0].id}


@CUTS
async def test_a_task_that_finished_meanwhile_is_fetched(
    mode: str, abrupt: bool, agent: Agent, gates: Gates
) -> None:
    recorder: Recorder | None = None

    async def agent_finishes() -> None:
        gates.release.set()
        gates.finish.set()
        await gates.finished.wait()

    def wrap(app: Any) -> Any:
        nonlocal recorder
        recorder = Recorder(StreamCutter(app, after=4, abrupt=abrupt, before_cut=agent_finishes))
        return recorder

    async with connected(mode, agent, wrap) as client:
        events = await collect(client.stream("", skill="steps"))
    assert chunks(events) == [("one", False), (" two", True), (" three", True)]
    assert states(events) == [TaskState.WORKING, TaskState.COMPLETED]
    last = events[-1]
    assert isinstance(last, Task), "the final task ends the iteration"
    assert last.status.state is TaskState.COMPLETED
    assert last.artifacts[0].text == "one two three"
    assert last.status.message is not None and last.status.message.text == "done"
    assert recorder is not None
    assert [len(recorder.calls(m)) for m in ("SubscribeToTask", "GetTask")] == [1, 1]


@pytest.mark.parametrize("mode", ["live", "inprocess"])
async def test_subscribe_resumes_too(mode: str, agent: Agent, gates: Gates) -> None:
    async def agent_moves_on() -> None:
        gates.release.set()
        await gates.emitted.wait()

    async def resubscribed() -> None:
        gates.finish.set()

    def wrap(app: Any) -> Any:
        return StreamCutter(app, after=1, before_cut=agent_moves_on, on_later_stream=resubscribed)

    async with connected(mode, agent, wrap) as client:
        task = await client.send("", skill="steps", return_immediately=True)
        assert isinstance(task, Task)
        events = await collect(client.subscribe(task.id))
    snapshot = events[0]
    assert isinstance(snapshot, Task)
    seen = "".join(a.text for a in snapshot.artifacts) + "".join(t for t, _ in chunks(events))
    assert seen == "one two three"
    assert states(events)[-1] is TaskState.COMPLETED


@pytest.mark.parametrize("abrupt", [False, True])
async def test_resubscribing_gives_up_when_nothing_comes_of_it(
    abrupt: bool, agent: Agent, gates: Gates
) -> None:
    recorder: Recorder | None = None

    def wrap(app: Any) -> Any:
        nonlocal recorder
        recorder = Recorder(StreamCutter(app, after=1, streams=0, abrupt=abrupt))
        return recorder

    async with connected("inprocess", agent, wrap) as client:
        client._follower.attempts = 2
        task = await client.send("", skill="steps", return_immediately=True)
        assert isinstance(task, Task)
        with pytest.raises(A2AConnectionError):
            await collect(client.subscribe(task.id))
        gates.release.set()
        gates.finish.set()
    assert recorder is not None
    assert len(recorder.calls("SubscribeToTask")) == 3


async def test_a_stream_closed_at_input_required_is_not_resumed(agent: Agent) -> None:
    recorder: Recorder | None = None

    def wrap(app: Any) -> Any:
        nonlocal recorder
        recorder = Recorder(app)
        return recorder

    async with connected("live", agent, wrap) as client:
        events = await collect(client.stream("", skill="ask"))
    assert states(events)[-1] is TaskState.INPUT_REQUIRED
    assert recorder is not None and recorder.calls("SubscribeToTask") == []


async def test_client_keeps_its_own_connection_settings_when_resuming(
    agent: Agent, gates: Gates
) -> None:
    recorder: Recorder | None = None

    async def resubscribed() -> None:
        gates.release.set()
        gates.finish.set()

    def wrap(app: Any) -> Any:
        nonlocal recorder
        recorder = Recorder(StreamCutter(app, after=2, on_later_stream=resubscribed))
        return recorder

    async with connected("live", agent, wrap, headers={"Authorization": "Bearer k"}) as client:
        assert isinstance(client, Client)
        events = await collect(client.stream("", skill="steps"))
    assert states(events)[-1] is TaskState.COMPLETED
    assert recorder is not None
    [resumed] = recorder.calls("SubscribeToTask")
    assert resumed.headers["authorization"] == "Bearer k"
    assert resumed.headers["a2a-version"] == "1.0"
