"""The runner over a real server: cancel, ask and its replay, failures, limits, shutdown.

Each test runs its own server when it needs its own options or a clean slate; several keep the
``MemoryTaskStore`` to look at (or serve again) what a server left behind.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from peerwire import Agent
from peerwire.protocol import TaskRecord
from peerwire.server import create_app
from peerwire.server.bus import MemoryBus
from peerwire.server.runner import Runner
from peerwire.server.stores import MemoryTaskStore, SQLiteTaskStore
from peerwire.testing import in_process, live_server
from peerwire.testing.store_suite import new_record
from peerwire.types import (
    ListTasksRequest,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
    from_builtins,
)

from ._agents import ask_for, workbench
from ._rpc import HEADERS, Rpc, envelope, serving, state_of, status_text, user_message

WAIT_S = 10.0


async def settled(rpc: Rpc, task_id: str) -> dict[str, object]:
    """The task once it is terminal or interrupted, followed through SubscribeToTask."""
    task = await rpc.get(task_id)
    if state_of(task) in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"):
        async with rpc.subscribe(task_id) as stream:
            await stream.rest()
        task = await rpc.get(task_id)
    return task


async def stored_state(store: MemoryTaskStore, task_id: str) -> tuple[TaskState, str]:
    record = await store.load(task_id, tenant="")
    assert record is not None
    message = record.status.message
    return record.state, "" if message is None else message.text


# -- cancel ------------------------------------------------------------------------------------


async def test_cancel_reaches_the_running_handler_and_its_cleanup_hook() -> None:
    agent, controls = workbench()
    async with serving(agent) as rpc:
        blocking = asyncio.ensure_future(rpc.send(ask_for("wait", "forever")))
        await controls.started("forever")
        [task] = (await rpc.result("ListTasks", {}))["tasks"]
        canceled = await rpc.result("CancelTask", {"id": task["id"]})
        assert state_of(canceled) == "TASK_STATE_CANCELED"
        assert controls.canceled == [task["id"]]
        # The caller blocked on the task gets the canceled task too.
        assert state_of(await asyncio.wait_for(blocking, WAIT_S)) == "TASK_STATE_CANCELED"
        assert "artifacts" not in await rpc.get(task["id"]), "the handler never returned"


async def test_cancel_of_a_task_waiting_in_ask() -> None:
    agent, controls = workbench()
    async with serving(agent) as rpc:
        task = await rpc.send(ask_for("ask"))
        assert state_of(task) == "TASK_STATE_INPUT_REQUIRED"
        canceled = await rpc.result("CancelTask", {"id": task["id"]})
        assert state_of(canceled) == "TASK_STATE_CANCELED"
        assert controls.canceled == [task["id"]], "the parked handler was reached"
        error = await rpc.error("SendMessage", {"message": user_message("a", taskId=task["id"])})
        assert error["code"] == -32004


async def test_cancel_of_an_interrupted_task_without_a_handler() -> None:
    agent, _ = workbench()
    async with serving(agent) as rpc:
        task = await rpc.send(ask_for("needs_input"))
        assert state_of(task) == "TASK_STATE_INPUT_REQUIRED"
        canceled = await rpc.result("CancelTask", {"id": task["id"]})
        assert state_of(canceled) == "TASK_STATE_CANCELED"
        assert len(canceled["history"]) == len(task["history"])


async def test_cancel_right_after_the_task_was_created() -> None:
    # In process nothing yields between the two requests: the handler has not begun yet.
    agent, controls = workbench()
    async with in_process(agent, max_working=1) as http:

        async def call(method: str, params: dict[str, Any]) -> dict[str, Any]:
            response = await http.post("/", json=envelope(method, params), headers=HEADERS)
            return response.json()["result"]  # type: ignore[no-any-return]

        created = await call(
            "SendMessage",
            {"message": ask_for("wait", "unstarted"), "configuration": {"returnImmediately": True}},
        )
        assert state_of(created["task"]) == "TASK_STATE_SUBMITTED"
        canceled = await call("CancelTask", {"id": created["task"]["id"]})
        assert state_of(canceled) == "TASK_STATE_CANCELED"
        assert controls.runs == {}, "the handler never ran"
        # Nothing of the canceled task still counts as working.
        done = await call("SendMessage", {"message": ask_for("echo", "next")})
        assert state_of(done["task"]) == "TASK_STATE_COMPLETED"


async def test_a_blocking_caller_that_goes_away_leaves_its_task_running() -> None:
    agent, controls = workbench()
    store = MemoryTaskStore()
    app = create_app(agent, store=store)
    async with app.lifespan():
        request = from_builtins({"message": ask_for("wait", "abandoned")}, SendMessageRequest)
        caller = asyncio.ensure_future(app.dispatcher.send_message(request))
        await controls.started("abandoned")
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        [task] = (await app.dispatcher.list_tasks(ListTasksRequest())).tasks
        stream = await app.dispatcher.subscribe_to_task(SubscribeToTaskRequest(id=task.id))
        controls.release("abandoned")
        with anyio.fail_after(WAIT_S):
            [*_, last] = [event async for event in stream]
        assert last.status_update is not None
        assert last.status_update.status.state is TaskState.COMPLETED
    # Leaving the lifespan raised nothing: the runner took the caller's leaving in its stride.
    assert (await stored_state(store, task.id))[0] is TaskState.COMPLETED


# -- ask: live continuation and replay ---------------------------------------------------------


async def test_ask_continues_the_same_handler() -> None:
    agent, controls = workbench()
    async with serving(agent) as rpc:
        first = await rpc.send(ask_for("ask"))
        assert (state_of(first), status_text(first)) == ("TASK_STATE_INPUT_REQUIRED", "first?")
        second = await rpc.send(user_message("a", taskId=first["id"]))
        assert (state_of(second), status_text(second)) == ("TASK_STATE_INPUT_REQUIRED", "second?")
        done = await rpc.send(user_message("b", taskId=first["id"]))
        assert state_of(done) == "TASK_STATE_COMPLETED"
        assert done["artifacts"][0]["parts"] == [{"text": "a + b"}]
        assert [m["parts"][0]["text"] for m in done["history"]] == [
            "",
            "first?",
            "a",
            "second?",
            "b",
        ]
        assert controls.runs == {first["id"]: 1}, "one handler run served all three messages"


async def test_a_handler_returning_after_ask_completes_its_task() -> None:
    agent, _ = workbench()
    async with serving(agent) as rpc:
        task = await rpc.send(ask_for("ask_then_note"))
        done = await rpc.send(user_message("milk", taskId=task["id"]))
        assert state_of(done) == "TASK_STATE_COMPLETED"
        assert done["artifacts"][0]["parts"] == [{"text": "noted milk"}]


async def test_ask_replays_recorded_answers_after_a_restart() -> None:
    store = MemoryTaskStore()
    agent, controls = workbench()
    async with serving(agent, store=store) as rpc:
        task = await rpc.send(ask_for("ask"))
        waiting = await rpc.send(user_message("a", taskId=task["id"]))
        assert status_text(waiting) == "second?"
    # The server is gone, and the handler parked in ask with it; the task still waits.
    assert await stored_state(store, task["id"]) == (TaskState.INPUT_REQUIRED, "second?")

    async with serving(agent, store=store) as rpc:
        done = await rpc.send(user_message("b", taskId=task["id"]))
        assert state_of(done) == "TASK_STATE_COMPLETED"
        # The re-run handler got "a" from the history and "b" from the new message.
        assert done["artifacts"][0]["parts"] == [{"text": "a + b"}]
        assert controls.runs == {task["id"]: 2}
        questions = [m for m in done["history"] if m["role"] == "ROLE_AGENT"]
        assert [q["parts"][0]["text"] for q in questions] == ["first?", "second?"]


async def test_after_the_recorded_answers_a_replayed_ask_waits_for_new_input() -> None:
    store = MemoryTaskStore()
    agent, controls = workbench()
    async with serving(agent, store=store) as rpc:
        task = await rpc.send(ask_for("ask"))
        assert status_text(task) == "first?"

    async with serving(agent, store=store) as rpc:
        waiting = await rpc.send(user_message("a", taskId=task["id"]))
        assert (state_of(waiting), status_text(waiting)) == ("TASK_STATE_INPUT_REQUIRED", "second?")
        done = await rpc.send(user_message("b", taskId=task["id"]))
        assert done["artifacts"][0]["parts"] == [{"text": "a + b"}]
        assert controls.runs == {task["id"]: 2}


async def test_a_parked_task_outlives_shutdown_even_with_a_time_limit() -> None:
    # The time limit does not run in ask, and shutting down is not running out of time.
    store = MemoryTaskStore()
    agent, _ = workbench(task_timeout=30)
    async with serving(agent, store=store) as rpc:
        task = await rpc.send(ask_for("ask"))
    assert await stored_state(store, task["id"]) == (TaskState.INPUT_REQUIRED, "first?")


# -- failures ------------------------------------------------------------------------------------


async def test_a_handler_that_raises_fails_its_task_and_the_server_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent, _ = workbench()
    async with serving(agent) as rpc:
        with caplog.at_level(logging.INFO, logger="peerwire.runner"):
            failed = await rpc.send(ask_for("boom", "x"))
        assert state_of(failed) == "TASK_STATE_FAILED"
        assert status_text(failed) == "the flux capacitor broke (x)"
        assert "Traceback" not in str(failed) and "RuntimeError" not in str(failed)
        assert any("RuntimeError" in r.getMessage() for r in caplog.records)
        assert state_of(await rpc.send(ask_for("echo", "still here"))) == "TASK_STATE_COMPLETED"


async def test_an_illegal_transition_is_refused_to_the_handler_and_changes_nothing() -> None:
    agent, controls = workbench()
    async with serving(agent) as rpc:
        task = await rpc.send(ask_for("illegal"))
        assert (state_of(task), status_text(task)) == ("TASK_STATE_COMPLETED", "done")
        assert [a["name"] for a in task["artifacts"]] == ["answer"]
        assert len(controls.errors) == 3
        for error in controls.errors:
            assert "TASK_STATE_COMPLETED" in str(error) and task["id"] in str(error)
        assert await rpc.get(task["id"]) == task


async def test_an_uncaught_illegal_transition_leaves_the_finished_task_alone() -> None:
    agent, _ = workbench()
    async with serving(agent) as rpc:
        task = await rpc.send(ask_for("illegal_uncaught"))
        assert (state_of(task), status_text(task)) == ("TASK_STATE_COMPLETED", "done")
        assert await rpc.get(task["id"]) == task
        assert state_of(await rpc.send(ask_for("echo", "x"))) == "TASK_STATE_COMPLETED"


# -- limits ------------------------------------------------------------------------------------


async def test_the_working_cap_refuses_new_work_but_not_interrupted_tasks() -> None:
    agent, controls = workbench()
    async with serving(agent, max_working=2) as rpc:
        parked = await rpc.send(ask_for("ask"))  # waiting in ask: not working
        returned = await rpc.send(ask_for("needs_input"))  # handler gone: not working
        first = await rpc.send(ask_for("wait", "cap-1"), returnImmediately=True)
        second = await rpc.send(ask_for("wait", "cap-2"), returnImmediately=True)
        await controls.started("cap-2")
        before = (await rpc.result("ListTasks", {}))["totalSize"]

        error = await rpc.error("SendMessage", {"message": ask_for("echo", "one too many")})
        assert error["code"] == -32603 and "limit of 2 working tasks" in error["message"]
        assert (await rpc.result("ListTasks", {}))["totalSize"] == before
        # Answering an interrupted task would make it work: refused too, and it stays as it was.
        for task in (parked, returned):
            error = await rpc.error(
                "SendMessage", {"message": user_message("a", taskId=task["id"])}
            )
            assert error["code"] == -32603
            assert await rpc.get(task["id"]) == task

        controls.release("cap-1")
        assert state_of(await settled(rpc, first["id"])) == "TASK_STATE_COMPLETED"
        answered = await rpc.send(user_message("a", taskId=parked["id"]))
        assert status_text(answered) == "second?"
        controls.release("cap-2")
        assert state_of(await settled(rpc, second["id"])) == "TASK_STATE_COMPLETED"


async def test_the_time_limit_fails_a_task_with_a_reason() -> None:
    agent, controls = workbench(task_timeout=0.3)
    async with serving(agent) as rpc:
        task = await rpc.send(ask_for("wait", "too-slow"))
        assert state_of(task) == "TASK_STATE_FAILED"
        assert status_text(task) == "the task did not finish within its time limit of 0.3 s"
        assert controls.canceled == [task["id"]], "the time limit runs the on_cancel hook"


async def test_the_time_limit_does_not_run_while_waiting_in_ask() -> None:
    agent, _ = workbench(task_timeout=0.3)
    async with serving(agent) as rpc:
        task = await rpc.send(ask_for("ask"))
        await anyio.sleep(0.6)  # the passage of time is what is tested here
        second = await rpc.send(user_message("a", taskId=task["id"]))
        assert status_text(second) == "second?"
        await anyio.sleep(0.6)
        done = await rpc.send(user_message("b", taskId=task["id"]))
        assert state_of(done) == "TASK_STATE_COMPLETED"


# -- graceful shutdown ---------------------------------------------------------------------------


async def test_shutdown_lets_tasks_finish_within_the_grace_then_fails_the_rest() -> None:
    store = MemoryTaskStore()
    agent, controls = workbench()
    async with serving(agent, store=store, shutdown_grace=0.5) as rpc:
        quick = await rpc.send(ask_for("wait", "quick"), returnImmediately=True)
        stuck = await rpc.send(ask_for("wait", "stuck"), returnImmediately=True)
        await controls.started("quick")
        await controls.started("stuck")

        async def finish_quick_during_shutdown() -> None:
            await anyio.sleep(0.1)
            controls.release("quick")

        helper = asyncio.ensure_future(finish_quick_during_shutdown())
    await helper
    assert await stored_state(store, quick["id"]) == (TaskState.COMPLETED, "")
    assert await stored_state(store, stuck["id"]) == (
        TaskState.FAILED,
        "the server shut down before the task finished",
    )
    assert controls.canceled == [], "shutting down is not canceling"


async def test_callers_waiting_on_a_task_at_shutdown_get_its_outcome() -> None:
    # A blocked caller waits out the grace for its task's outcome; a stream following a task
    # that goes on working is ended at once with the documented error, not held for the grace.
    agent, controls = workbench()
    async with httpx.AsyncClient(trust_env=False, timeout=WAIT_S) as http:
        async with live_server(agent, shutdown_grace=0.3) as url:
            rpc = Rpc(http, url)
            blocked = asyncio.ensure_future(rpc.send(ask_for("wait", "blocked")))
            await controls.started("blocked")
            followed = await rpc.send(ask_for("wait", "followed"), returnImmediately=True)
            await controls.started("followed")
            subscribed = asyncio.Event()

            async def follow() -> dict[str, Any] | None:
                async with rpc.subscribe(followed["id"]) as stream:
                    await stream.next()
                    subscribed.set()
                    last = await stream.next_envelope()
                    assert await stream.next_envelope() is None, "the error is the last event"
                    return last

            following = asyncio.ensure_future(follow())
            await asyncio.wait_for(subscribed.wait(), WAIT_S)
        # Leaving the block shut the server down while both callers were waiting.
        last = await asyncio.wait_for(following, WAIT_S)
        assert last is not None
        info = last["error"]["data"][0]
        assert (info["reason"], info["metadata"]) == (
            "STREAM_ENDED",
            {"taskId": followed["id"], "cause": "shutdown"},
        )
        reason = "the server shut down before the task finished"
        task = await asyncio.wait_for(blocked, WAIT_S)
        assert (state_of(task), status_text(task)) == ("TASK_STATE_FAILED", reason)


# -- storing and publishing ---------------------------------------------------------------------


@pytest.mark.parametrize("cancel_after_commit", [False, True])
async def test_an_event_stored_for_a_cancelled_caller_is_still_published(
    tmp_path: Path, cancel_after_commit: bool
) -> None:
    """SQLite appends suspend: the runner publishes from the store's durable hook what a caller
    cancelled mid-write stored (no shielding task), whether the cancel comes before the commit
    or after it, before the caller resumed."""
    store = SQLiteTaskStore(tmp_path / "tasks.db")
    await store.open()
    bus = MemoryBus()
    try:
        async with Runner(Agent("a"), store, bus) as runner:
            assert runner._hooked_store is not None, "the path without a shield is the one tested"
            record = new_record()
            await store.create(record, tenant="", owner="")
            writer = store._writer
            assert writer is not None
            with bus.subscribe(record.id) as events:
                gate = threading.Event()
                held = writer.submit(lambda _: gate.wait(WAIT_S))
                canceling = asyncio.ensure_future(
                    runner.cancel(record.id, record.context_id, TaskState.SUBMITTED)
                )
                await asyncio.sleep(0)  # its CANCELED status is submitted, waiting to commit
                if cancel_after_commit:

                    def cancel_the_caller(*_: object) -> None:
                        canceling.cancel()

                    # Committed in the same batch, just after it: this ``then`` runs once the
                    # append's hook has, while the caller's wake-up is only scheduled.
                    writer.submit(lambda _: None, cancel_the_caller)
                else:
                    canceling.cancel()
                gate.set()
                assert await held
                with pytest.raises(asyncio.CancelledError):
                    await canceling
                received = await events.next(timeout=WAIT_S)
            assert received is not None
            version, event = received
            assert version == 2 and isinstance(event, TaskStatusUpdateEvent)
            assert event.status.state is TaskState.CANCELED
    finally:
        await store.close()


class CountingStore(MemoryTaskStore):
    """The memory store, remembering how many events each append carried."""

    def __init__(self) -> None:
        super().__init__()
        self.appends: list[int] = []

    async def append(self, task_id: str, events: Any, **kwargs: Any) -> int:
        self.appends.append(len(events))
        return await super().append(task_id, events, **kwargs)


async def launch_first(runner: Runner, agent: Agent, record: TaskRecord) -> None:
    """Start the handler of ``record``, a stored task, for its first message."""
    await runner.launch(
        agent.route(record.history[0]),
        task_id=record.id,
        context_id=record.context_id,
        message=record.history[0],
        tenant="",
        owner="",
    )


async def test_a_returned_value_is_stored_with_the_completion_and_both_are_published() -> None:
    """One append (one commit for a durable store) for the result's artifact and COMPLETED,
    and for the WORKING before them, since the skill never waited on anything; a subscriber
    still gets each event at its own version, in order."""
    agent = Agent("a")

    @agent.skill("echo")
    async def echo(text: str) -> str:
        return text.upper()

    store, bus = CountingStore(), MemoryBus()
    async with Runner(agent, store, bus) as runner:
        record = new_record()
        await store.create(record, tenant="", owner="")
        with bus.subscribe(record.id) as events:
            await launch_first(runner, agent, record)
            received = [await events.next(timeout=WAIT_S) for _ in range(3)]
    assert store.appends == [3]  # WORKING, the artifact and COMPLETED
    versions = [item[0] for item in received if item is not None]
    assert versions == [2, 3, 4]
    working, artifact, completed = (item[1] for item in received if item is not None)
    assert isinstance(working, TaskStatusUpdateEvent)
    assert working.status.state is TaskState.WORKING
    assert isinstance(artifact, TaskArtifactUpdateEvent)
    assert artifact.last_chunk
    assert artifact.artifact.parts[0].text == record.history[0].text.upper()
    assert isinstance(completed, TaskStatusUpdateEvent)
    assert completed.status.state is TaskState.COMPLETED
    stored = await store.load(record.id, tenant="")
    assert stored is not None and stored.version == 4


async def test_a_skill_that_waits_shows_working_while_it_waits() -> None:
    """The deferred WORKING is stored on its own as soon as the skill first waits."""
    agent = Agent("a")
    go_on = asyncio.Event()

    @agent.skill("slow")
    async def slow(text: str) -> str:
        await go_on.wait()
        return text

    store, bus = CountingStore(), MemoryBus()
    async with Runner(agent, store, bus) as runner:
        record = new_record()
        await store.create(record, tenant="", owner="")
        with bus.subscribe(record.id) as events:
            await launch_first(runner, agent, record)
            first = await events.next(timeout=WAIT_S)
            assert first is not None and first[0] == 2
            working = await store.load(record.id, tenant="")
            assert working is not None and working.state is TaskState.WORKING
            go_on.set()
            rest = [await events.next(timeout=WAIT_S) for _ in range(2)]
    assert store.appends == [1, 2]  # WORKING while it waited, then the artifact with COMPLETED
    assert [item[0] for item in rest if item is not None] == [3, 4]


async def test_a_skill_keeps_its_own_task_across_its_first_wait() -> None:
    """The runner takes a skill's first step itself (to see whether it waits): the task is
    the handler's own before and after that wait, so the skill's own timeout fires in it and
    is the skill's to catch, and the task completes as usual."""
    agent = Agent("a")
    seen: list[object] = []

    @agent.skill("timed")
    async def timed(text: str) -> str:
        before = asyncio.current_task()
        try:
            async with asyncio.timeout(0.05):
                await asyncio.sleep(10)
        except TimeoutError:
            seen.append("timed out")
        seen.append(before is asyncio.current_task())
        return text

    store, bus = CountingStore(), MemoryBus()
    async with Runner(agent, store, bus) as runner:
        record = new_record()
        await store.create(record, tenant="", owner="")
        with bus.subscribe(record.id) as events:
            await launch_first(runner, agent, record)
            states = []
            while not states or states[-1] is not TaskState.COMPLETED:
                item = await events.next(timeout=WAIT_S)
                assert item is not None
                if isinstance(item[1], TaskStatusUpdateEvent):
                    states.append(item[1].status.state)
    assert seen == ["timed out", True]
    assert states == [TaskState.WORKING, TaskState.COMPLETED]


class _SweepFails:
    """A work placement whose sweep finds the shared queue away (Redis down at start-up)."""

    def __init__(self) -> None:
        self.sweeps = 0

    def attach(self, runner: Runner) -> None:
        self.runner = runner

    async def sweep(self) -> None:
        self.sweeps += 1
        raise ConnectionError("Redis did not answer within 5 s")


async def test_recovery_goes_on_when_the_first_sweep_fails(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A process starting while Redis is away recovers what it can and starts all the same
    (its sweeper tries again every period): the failed sweep is logged, never raised."""
    placement = _SweepFails()
    runner = Runner(Agent("a"), MemoryTaskStore(), MemoryBus(), placement=placement)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="peerwire.runner"):
        await runner.recover()
    assert placement.sweeps == 1
    assert "the first sweep failed" in caplog.text
