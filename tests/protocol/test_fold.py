"""Folding status, artifact and message events into a task: chunked artifacts, the state
machine, and the task a ListTasks answer holds (A2A spec §3.1.4)."""

from __future__ import annotations

from typing import Any

import pytest

from peerwire.errors import IllegalTransitionError, InvalidParamsError
from peerwire.protocol import TaskRecord, fold_events
from peerwire.types import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    encode,
)

S = TaskState
T0 = "2026-01-01T00:00:00.000Z"
T1 = "2026-01-01T00:00:01.000Z"
T2 = "2026-01-01T00:00:02.000Z"


def msg(message_id: str, text: str, role: Role = Role.AGENT) -> Message:
    return Message(
        message_id=message_id,
        context_id="c-1",
        task_id="t-1",
        role=role,
        parts=[Part(text=text)],
    )


def status(
    state: TaskState, *, message: Message | None = None, at: str = T1
) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(
        task_id="t-1",
        context_id="c-1",
        status=TaskStatus(state=state, message=message, timestamp=at),
    )


def artifact(
    artifact_id: str,
    *texts: str,
    append: bool = False,
    last_chunk: bool = False,
    **fields: Any,
) -> TaskArtifactUpdateEvent:
    return TaskArtifactUpdateEvent(
        task_id="t-1",
        context_id="c-1",
        artifact=Artifact(artifact_id=artifact_id, parts=[Part(text=t) for t in texts], **fields),
        append=append,
        last_chunk=last_chunk,
    )


def record(state: TaskState = S.SUBMITTED, **kwargs: Any) -> TaskRecord:
    return TaskRecord("t-1", "c-1", TaskStatus(state=state, timestamp=T0), **kwargs)


def fingerprint(rec: TaskRecord) -> tuple[bytes, int]:
    return encode(rec.snapshot()), rec.version


# --- creation ---------------------------------------------------------------------------------


def test_new_record_snapshot() -> None:
    rec = record()
    assert rec.version == 0
    assert rec.state is S.SUBMITTED
    assert not rec.terminal
    assert encode(rec.snapshot()) == (
        b'{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_SUBMITTED",'
        b'"timestamp":"2026-01-01T00:00:00.000Z"}}'
    )


def test_cannot_create_in_unspecified() -> None:
    with pytest.raises(IllegalTransitionError):
        TaskRecord("t-1", "c-1", TaskStatus(state=S.UNSPECIFIED))


@pytest.mark.parametrize("state", [S.COMPLETED, S.REJECTED, S.INPUT_REQUIRED, S.AUTH_REQUIRED])
def test_can_be_created_in_any_real_state(state: TaskState) -> None:
    assert record(state).state is state


# --- status events ----------------------------------------------------------------------------


def test_status_event_replaces_status_and_bumps_version() -> None:
    rec = record()
    rec.apply(status(S.WORKING))
    assert rec.status == TaskStatus(state=S.WORKING, timestamp=T1)
    assert rec.version == 1
    assert rec.history == []


def test_status_message_is_appended_to_history() -> None:
    rec = record()
    question = msg("m-q", "Which dates?")
    rec.apply(status(S.WORKING))
    rec.apply(status(S.INPUT_REQUIRED, message=question, at=T2))
    assert rec.history == [question]
    assert rec.status.message == question
    assert rec.version == 2
    assert rec.state is S.INPUT_REQUIRED


def test_messages_are_appended_in_order() -> None:
    rec = record(S.WORKING)
    first, second = msg("m-1", "a", Role.USER), msg("m-2", "b")
    rec.apply(first)
    rec.apply(status(S.WORKING, message=second))
    rec.apply(msg("m-3", "c", Role.USER))
    assert [m.message_id for m in rec.history] == ["m-1", "m-2", "m-3"]
    assert rec.version == 3


def test_full_lifecycle_reaches_terminal() -> None:
    rec = record()
    for state in (S.WORKING, S.AUTH_REQUIRED, S.WORKING, S.INPUT_REQUIRED, S.WORKING, S.COMPLETED):
        rec.apply(status(state))
    assert rec.terminal
    assert rec.version == 6


# --- artifact events --------------------------------------------------------------------------


def test_new_artifacts_are_added_in_order() -> None:
    rec = record(S.WORKING)
    rec.apply(artifact("a-1", "one"))
    rec.apply(artifact("a-2", "two"))
    assert [a.artifact_id for a in rec.artifacts] == ["a-1", "a-2"]
    assert rec.version == 2


def test_append_concatenates_parts() -> None:
    rec = record(S.WORKING)
    rec.apply(artifact("a-1", "Hello", name="greeting", metadata={"lang": "en"}))
    rec.apply(artifact("a-1", ", ", "world", append=True))
    rec.apply(artifact("a-1", "!", append=True, last_chunk=True))
    (only,) = rec.artifacts
    assert [p.text for p in only.parts] == ["Hello", ", ", "world", "!"]
    assert only.text == "Hello, world!"
    assert only.name == "greeting"  # an append without a name keeps the name
    assert only.metadata == {"lang": "en"}
    assert rec.version == 3


def test_append_merges_metadata_and_extensions() -> None:
    rec = record(S.WORKING)
    rec.apply(artifact("a-1", "x", metadata={"a": 1, "b": 1}, extensions=["urn:e1"]))
    rec.apply(
        artifact(
            "a-1",
            "y",
            append=True,
            name="renamed",
            metadata={"b": 2, "c": 3},
            extensions=["urn:e1", "urn:e2"],
        )
    )
    (only,) = rec.artifacts
    assert only.metadata == {"a": 1, "b": 2, "c": 3}
    assert only.extensions == ["urn:e1", "urn:e2"]
    assert only.name == "renamed"


def test_non_append_event_for_a_known_id_replaces_it_in_place() -> None:
    rec = record(S.WORKING)
    rec.apply(artifact("a-1", "old", name="first"))
    rec.apply(artifact("a-2", "other"))
    rec.apply(artifact("a-1", "new"))
    assert [a.artifact_id for a in rec.artifacts] == ["a-1", "a-2"]
    assert rec.artifacts[0] == Artifact(artifact_id="a-1", parts=[Part(text="new")])


def test_append_to_an_unknown_id_starts_the_artifact() -> None:
    rec = record(S.WORKING)
    rec.apply(artifact("a-9", "chunk", append=True))
    rec.apply(artifact("a-9", " more", append=True))
    assert [a.artifact_id for a in rec.artifacts] == ["a-9"]
    assert rec.artifacts[0].text == "chunk more"


def test_last_chunk_leaves_no_trace_on_the_artifact() -> None:
    with_flag, without_flag = record(S.WORKING), record(S.WORKING)
    with_flag.apply(artifact("a-1", "all", last_chunk=True))
    without_flag.apply(artifact("a-1", "all"))
    assert encode(with_flag.snapshot()) == encode(without_flag.snapshot())
    assert b"lastChunk" not in encode(with_flag.snapshot())


def test_artifacts_restored_from_a_task_can_be_appended_to() -> None:
    task = Task(
        id="t-1",
        context_id="c-1",
        status=TaskStatus(state=S.WORKING),
        artifacts=[Artifact(artifact_id="a-1", parts=[Part(text="a")])],
    )
    rec = TaskRecord.from_task(task, version=7)
    rec.apply(artifact("a-1", "b", append=True))
    assert rec.artifacts[0].text == "ab"
    assert rec.version == 8
    assert task.artifacts[0].text == "a"  # the source task is untouched


def test_many_chunks_fold_into_one_artifact_in_order() -> None:
    rec = record(S.WORKING)
    rec.apply(artifact("a-1", "c0", name="echo"))
    for i in range(1, 50):
        rec.apply(artifact("a-1", f"c{i}", append=True, name="echo"))
    (only,) = rec.artifacts
    assert [p.text for p in only.parts] == [f"c{i}" for i in range(50)]
    assert only.name == "echo"


def test_appended_chunks_leave_the_events_as_they_were() -> None:
    # A published event is encoded later, by each subscriber: folding must not change it.
    rec = record(S.WORKING)
    events = [artifact("a-1", f"c{i}", append=i > 0) for i in range(4)]
    before = [encode(e) for e in events]
    for event in events:
        rec.apply(event)
    assert [encode(e) for e in events] == before
    assert rec.artifacts[0].text == "c0c1c2c3"


def test_what_was_read_does_not_grow_with_later_chunks() -> None:
    rec = record(S.WORKING)
    rec.apply(artifact("a-1", "a"))
    rec.apply(artifact("a-1", "b", append=True))
    rec.apply(artifact("a-1", "c", append=True))
    snapshot, read = rec.snapshot(), rec.artifacts[0]
    frozen = (encode(snapshot), encode(read))
    rec.apply(artifact("a-1", "d", append=True))
    rec.apply(artifact("a-1", "e", append=True))
    assert (encode(snapshot), encode(read)) == frozen
    assert rec.artifacts[0].text == "abcde"
    assert rec.snapshot().artifacts[0].text == "abcde"


def test_a_growing_artifact_still_takes_names_metadata_and_replacements() -> None:
    rec = record(S.WORKING)
    rec.apply(artifact("a-1", "a"))
    rec.apply(artifact("a-1", "b", append=True))  # now growing in place
    rec.apply(artifact("a-1", "c", append=True, name="named", metadata={"k": 1}))
    (grown,) = rec.artifacts
    assert (grown.text, grown.name, grown.metadata) == ("abc", "named", {"k": 1})
    replacement = artifact("a-1", "new")
    rec.apply(replacement)
    rec.apply(artifact("a-1", "er", append=True))
    rec.apply(artifact("a-1", "!", append=True))
    assert rec.artifacts[0].text == "newer!"
    assert replacement.artifact.text == "new"  # the replacing event's artifact is untouched


def test_chunks_of_two_artifacts_interleaved() -> None:
    rec = record(S.WORKING)
    for i in range(3):
        rec.apply(artifact("a-1", f"a{i}", append=i > 0))
        rec.apply(artifact("a-2", f"b{i}", append=i > 0))
    assert [a.text for a in rec.artifacts] == ["a0a1a2", "b0b1b2"]


# --- illegal events change nothing -------------------------------------------------------------

STATUS_FOR_ANOTHER_TASK = TaskStatusUpdateEvent(
    task_id="t-2", context_id="c-1", status=TaskStatus(state=S.COMPLETED)
)
ARTIFACT_FOR_ANOTHER_TASK = TaskArtifactUpdateEvent(
    task_id="t-2", context_id="c-1", artifact=Artifact(artifact_id="a", parts=[Part(text="x")])
)


@pytest.mark.parametrize(
    ("start", "event"),
    [
        (S.COMPLETED, status(S.WORKING)),
        (S.FAILED, status(S.FAILED)),
        (S.CANCELED, status(S.COMPLETED)),
        (S.REJECTED, status(S.INPUT_REQUIRED, message=msg("m-x", "?"))),
        (S.WORKING, status(S.SUBMITTED)),
        (S.INPUT_REQUIRED, status(S.SUBMITTED, message=msg("m-x", "?"))),
        (S.WORKING, status(S.UNSPECIFIED)),
        (S.COMPLETED, artifact("a-1", "late")),
        (S.CANCELED, artifact("a-1", "late", append=True)),
        (S.COMPLETED, msg("m-late", "too late", Role.USER)),
        (S.WORKING, STATUS_FOR_ANOTHER_TASK),
        (S.WORKING, ARTIFACT_FOR_ANOTHER_TASK),
    ],
)  # fmt: skip
def test_illegal_event_raises_and_leaves_the_record_unchanged(
    start: TaskState, event: TaskStatusUpdateEvent | TaskArtifactUpdateEvent | Message
) -> None:
    rec = record(S.WORKING, history=[msg("m-0", "start", Role.USER)])
    rec.apply(artifact("a-1", "existing"))
    if start is not S.WORKING:
        rec.apply(status(start))
    before = fingerprint(rec)
    with pytest.raises(IllegalTransitionError):
        rec.check(event)
    with pytest.raises(IllegalTransitionError):
        rec.apply(event)
    assert fingerprint(rec) == before


def test_check_alone_never_mutates() -> None:
    rec = record(S.WORKING)
    before = fingerprint(rec)
    rec.check(status(S.COMPLETED))
    rec.check(artifact("a-1", "x"))
    rec.check(msg("m-1", "x"))
    assert fingerprint(rec) == before


# --- snapshots --------------------------------------------------------------------------------


def _busy_record() -> TaskRecord:
    rec = record()
    rec.apply(msg("m-1", "q1", Role.USER))
    rec.apply(status(S.WORKING, message=msg("m-2", "working on it")))
    rec.apply(artifact("a-1", "result"))
    rec.apply(msg("m-3", "q2", Role.USER))
    return rec


@pytest.mark.parametrize(
    ("history_length", "expected_ids"),
    [
        (None, ["m-1", "m-2", "m-3"]),
        (1, ["m-3"]),
        (2, ["m-2", "m-3"]),
        (3, ["m-1", "m-2", "m-3"]),
        (99, ["m-1", "m-2", "m-3"]),
    ],
)
def test_snapshot_trims_history_to_the_most_recent(
    history_length: int | None, expected_ids: list[str]
) -> None:
    snap = _busy_record().snapshot(history_length=history_length)
    assert [m.message_id for m in snap.history] == expected_ids


def test_snapshot_history_length_zero_omits_the_member() -> None:
    raw = encode(_busy_record().snapshot(history_length=0))
    assert b'"history"' not in raw
    assert b'"artifacts"' in raw


def test_snapshot_negative_history_length_is_invalid() -> None:
    with pytest.raises(InvalidParamsError):
        _busy_record().snapshot(history_length=-1)


def test_snapshot_without_artifacts_omits_the_member() -> None:
    rec = _busy_record()
    raw = encode(rec.snapshot(include_artifacts=False))
    assert b'"artifacts"' not in raw
    assert b'"history"' in raw
    assert rec.artifacts  # the record itself still has them
    assert b'"artifacts":[{"artifactId":"a-1"' in encode(rec.snapshot())


def test_snapshot_is_independent_of_later_events() -> None:
    rec = _busy_record()
    snap = rec.snapshot()
    frozen = encode(snap)
    rec.apply(artifact("a-2", "more"))
    rec.apply(artifact("a-1", "+", append=True))
    rec.apply(msg("m-4", "q3", Role.USER))
    rec.apply(status(S.COMPLETED))
    assert encode(snap) == frozen


def test_snapshot_carries_ids_and_metadata() -> None:
    rec = record(metadata={"k": "v"})
    snap = rec.snapshot()
    assert (snap.id, snap.context_id, snap.metadata) == ("t-1", "c-1", {"k": "v"})


# --- fold_events ------------------------------------------------------------------------------


def test_fold_events_builds_the_task_a_stream_observer_sees() -> None:
    start = Task(id="t-1", context_id="c-1", status=TaskStatus(state=S.SUBMITTED, timestamp=T0))
    events: list[Any] = [
        status(S.WORKING, at=T1),
        artifact("a-1", "Hel"),
        artifact("a-1", "lo", append=True, last_chunk=True),
        status(S.COMPLETED, message=msg("m-done", "done"), at=T2),
    ]
    folded = fold_events(start, events)
    assert encode(folded) == (
        b'{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_COMPLETED",'
        b'"message":{"messageId":"m-done","contextId":"c-1","taskId":"t-1","role":"ROLE_AGENT",'
        b'"parts":[{"text":"done"}]},"timestamp":"2026-01-01T00:00:02.000Z"},'
        b'"artifacts":[{"artifactId":"a-1","parts":[{"text":"Hel"},{"text":"lo"}]}],'
        b'"history":[{"messageId":"m-done","contextId":"c-1","taskId":"t-1","role":"ROLE_AGENT",'
        b'"parts":[{"text":"done"}]}]}'
    )
    assert encode(start) == (
        b'{"id":"t-1","contextId":"c-1","status":{"state":"TASK_STATE_SUBMITTED",'
        b'"timestamp":"2026-01-01T00:00:00.000Z"}}'
    )


def test_fold_events_rejects_an_illegal_sequence() -> None:
    start = Task(id="t-1", context_id="c-1", status=TaskStatus(state=S.WORKING))
    with pytest.raises(IllegalTransitionError):
        fold_events(start, [status(S.COMPLETED), status(S.WORKING)])


def test_fold_events_with_no_events_is_the_task() -> None:
    start = Task(id="t-1", context_id="c-1", status=TaskStatus(state=S.WORKING))
    assert fold_events(start, []) == start
