"""When the task a stream follows has settled (``Settling``), and what the follower does with
it: on a continuation, the task's first snapshot may still show the state from before the
server read the message (@a2a-js/sdk sends that), so its INPUT_REQUIRED is not the answer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

from peerwire.client import Settling
from peerwire.client._follow import TaskFollower
from peerwire.errors import A2AConnectionError
from peerwire.types import (
    Artifact,
    Part,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

SENT = datetime(2026, 12, 8, 0, 0, 10, tzinfo=UTC)
BEFORE = "2026-12-08T00:00:05.000Z"
AFTER = "2026-12-08T00:00:11.000Z"


def task(state: TaskState, timestamp: str | None = BEFORE) -> Task:
    return Task(id="t", context_id="c", status=TaskStatus(state=state, timestamp=timestamp))


def status(state: TaskState) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(
        task_id="t", context_id="c", status=TaskStatus(state=state, timestamp=AFTER)
    )


ARTIFACT = TaskArtifactUpdateEvent(
    task_id="t", context_id="c", artifact=Artifact(artifact_id="a", parts=[Part(text="x")])
)


def test_a_new_task_settles_at_its_first_interrupted_state() -> None:
    settling = Settling()
    assert settling.see(task(TaskState.INPUT_REQUIRED)) is True


def test_a_continuation_s_stale_snapshot_does_not_settle_it() -> None:
    settling = Settling(continuing="t", sent_at=SENT)
    assert settling.see(task(TaskState.INPUT_REQUIRED)) is False
    assert settling.see(ARTIFACT) is False
    assert settling.see(status(TaskState.COMPLETED)) is True


def test_a_continuation_settles_at_an_interrupted_state_the_message_led_to() -> None:
    newer = Settling(continuing="t", sent_at=SENT)
    assert newer.see(task(TaskState.INPUT_REQUIRED, AFTER)) is True  # asked again, after the send
    later = Settling(continuing="t", sent_at=SENT)
    later.see(task(TaskState.INPUT_REQUIRED, None))  # no timestamp: not evidence
    assert later.settled is False
    assert later.see(status(TaskState.WORKING)) is False
    assert later.see(status(TaskState.AUTH_REQUIRED)) is True
    begun = Settling(continuing="t", sent_at=SENT)
    assert begun.see(status(TaskState.INPUT_REQUIRED)) is True  # an event after the message


async def events(
    *payloads: Task | TaskStatusUpdateEvent, drop: bool = False
) -> AsyncIterator[StreamResponse]:
    for payload in payloads:
        if isinstance(payload, Task):
            yield StreamResponse(task=payload)
        else:
            yield StreamResponse(status_update=payload)
    if drop:
        raise A2AConnectionError("the connection dropped")


async def test_a_drop_after_the_stale_snapshot_is_followed_on() -> None:
    subscribed: list[str] = []

    def subscribe(task_id: str) -> AsyncIterator[StreamResponse]:
        subscribed.append(task_id)
        return events(task(TaskState.COMPLETED, AFTER))

    async def get_task(task_id: str) -> Task:
        raise AssertionError("not asked for")

    follower = TaskFollower(subscribe, get_task, backoff=0.0)
    settling = Settling(continuing="t", sent_at=SENT)
    seen = [
        p
        async for p in follower.follow(
            events(task(TaskState.INPUT_REQUIRED), drop=True), settling=settling
        )
    ]
    assert subscribed == ["t"]
    assert [type(p).__name__ for p in seen] == ["Task", "TaskStatusUpdateEvent"]
    assert settling.settled is True
    assert isinstance(seen[-1], TaskStatusUpdateEvent)
    assert seen[-1].status.state is TaskState.COMPLETED


async def test_a_continuation_may_begin_with_a_status_update() -> None:
    async def unused(task_id: str) -> Task:
        raise AssertionError("not asked for")

    follower = TaskFollower(lambda task_id: events(), unused)
    settling = Settling(continuing="t", sent_at=SENT)
    stream = events(status(TaskState.WORKING), status(TaskState.COMPLETED))
    seen = [p async for p in follower.follow(stream, settling=settling)]
    assert [p.status.state for p in seen if isinstance(p, TaskStatusUpdateEvent)] == [
        TaskState.WORKING,
        TaskState.COMPLETED,
    ]
    assert settling.settled is True


async def test_the_stream_ending_at_the_stale_snapshot_ends_there() -> None:
    async def unused(task_id: str) -> Task:
        raise AssertionError("not asked for")

    follower = TaskFollower(lambda task_id: events(), unused)
    settling = Settling(continuing="t", sent_at=SENT)
    seen = [
        p async for p in follower.follow(events(task(TaskState.INPUT_REQUIRED)), settling=settling)
    ]
    assert seen == [task(TaskState.INPUT_REQUIRED)]  # what the server said: the defined outcome


def test_an_earlier_send_makes_an_old_status_newer() -> None:
    settling = Settling(continuing="t", sent_at=SENT - timedelta(hours=1))
    assert settling.see(task(TaskState.INPUT_REQUIRED)) is True
