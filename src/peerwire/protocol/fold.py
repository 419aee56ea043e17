"""Folding status and artifact events into a task.

``TaskRecord`` is the mutable per-task aggregate the runner and the stores keep: an event is
applied in place (a streamed chunk never copies the whole task), and ``snapshot()`` yields the
frozen ``Task`` the API hands out. Every event passes the state machine first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ..errors import IllegalTransitionError
from ..types import (
    Artifact,
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    parse_timestamp,
)
from .history import trim_history
from .states import TERMINAL, check_transition

__all__ = ["Event", "TaskRecord", "fold_events"]

Event = TaskStatusUpdateEvent | TaskArtifactUpdateEvent | Message
"""What a task's log holds: status changes, artifact updates, and messages added to history."""


class TaskRecord:
    """A task as it is being built: status, artifacts by id, history, and a version counter."""

    __slots__ = (
        "_artifact_index",
        "_artifacts",
        "_growing",
        "context_id",
        "history",
        "id",
        "metadata",
        "status",
        "version",
    )

    def __init__(
        self,
        task_id: str,
        context_id: str,
        status: TaskStatus,
        *,
        history: list[Message] | None = None,
        artifacts: list[Artifact] | None = None,
        metadata: dict[str, Any] | None = None,
        version: int = 0,
    ) -> None:
        check_transition(None, status.state, task_id)
        self.id = task_id
        self.context_id = context_id
        self.status = status
        self.history: list[Message] = history if history is not None else []
        self._artifacts: list[Artifact] = artifacts if artifacts is not None else []
        self._artifact_index = {a.artifact_id: i for i, a in enumerate(self._artifacts)}
        # The id of the artifact whose parts list this record copied and alone holds, so that
        # further chunks extend it in place (see ``_appended``); None: no such artifact.
        self._growing: str | None = None
        self.metadata = metadata
        self.version = version

    def submitted_at(self) -> float | None:
        """When a task that has not started was created (its SUBMITTED status's stamp, in
        seconds since the epoch); ``None`` once it has moved on (that stamp is gone)."""
        stamp = self.status.timestamp
        if self.status.state is not TaskState.SUBMITTED or not stamp:
            return None
        try:
            return parse_timestamp(stamp).timestamp()
        except ValueError:
            return None

    @classmethod
    def from_task(cls, task: Task, version: int = 0) -> TaskRecord:
        return cls(
            task.id,
            task.context_id,
            task.status,
            history=list(task.history),
            artifacts=list(task.artifacts),
            metadata=task.metadata,
            version=version,
        )

    @classmethod
    def from_update(cls, event: TaskStatusUpdateEvent) -> TaskRecord:
        """What a status update alone says of its task (a stream continuing a task may begin
        with one rather than the task): its ids and status, no artifacts or history known."""
        return cls(event.task_id, event.context_id, event.status)

    @property
    def artifacts(self) -> list[Artifact]:
        """The artifacts so far, in order (not to be mutated).

        Whoever reads them may keep them: the artifact being appended to is copied again at
        its next chunk instead of growing in place.
        """
        self._growing = None
        return self._artifacts

    @property
    def state(self) -> TaskState:
        return self.status.state

    @property
    def terminal(self) -> bool:
        return self.status.state in TERMINAL

    def check(self, event: Event) -> None:
        """Raise ``IllegalTransitionError`` if ``event`` may not be applied; change nothing."""
        if isinstance(event, TaskStatusUpdateEvent):
            self._check_status(event)
        elif isinstance(event, TaskArtifactUpdateEvent):
            self._check_artifact(event)
        else:
            self._check_message()

    def apply(self, event: Event) -> None:
        """Validate ``event`` and fold it in; the version goes up by one."""
        if isinstance(event, TaskArtifactUpdateEvent):  # first: streamed chunks are most events
            self._check_artifact(event)
        elif isinstance(event, TaskStatusUpdateEvent):
            self._check_status(event)
        else:
            self._check_message()
        self._fold(event)
        self.version += 1

    def apply_all(self, events: Sequence[Event]) -> None:
        """Apply ``events`` in order, all or none: a bad event raises before any is folded
        in (``check_batch``), and then none is checked twice."""
        if len(events) == 1:
            self.apply(events[0])
            return
        self.check_batch(events)
        for event in events:
            self._fold(event)
        self.version += len(events)

    def _fold(self, event: Event) -> None:
        """Fold a checked ``event`` in (the version is the caller's to move)."""
        if isinstance(event, TaskArtifactUpdateEvent):
            self._apply_artifact(event)
        elif isinstance(event, TaskStatusUpdateEvent):
            self.status = event.status
            if event.status.message is not None:
                self.history.append(event.status.message)
        else:
            self.history.append(event)

    def check_batch(self, events: Sequence[Event]) -> None:
        """Raise what ``apply`` would raise for the first bad event of ``events`` applied in
        order, changing nothing: a store appending a batch checks it first, so a bad event
        leaves the record untouched. Validity depends only on the ids and the state each
        event leaves, so a probe holding just those stands in for a copy of the record."""
        probe = TaskRecord.__new__(TaskRecord)
        probe.id = self.id
        probe.status = self.status
        for event in events:
            if isinstance(event, TaskArtifactUpdateEvent):
                probe._check_artifact(event)
            elif isinstance(event, TaskStatusUpdateEvent):
                probe._check_status(event)
                probe.status = event.status
            else:
                probe._check_message()

    def _check_status(self, event: TaskStatusUpdateEvent) -> None:
        self._check_ids(event.task_id)
        check_transition(self.status.state, event.status.state, self.id)

    def _check_artifact(self, event: TaskArtifactUpdateEvent) -> None:
        if event.task_id == self.id and self.status.state not in TERMINAL:
            return  # the usual case, in one test: an artifact event is checked per chunk
        self._check_ids(event.task_id)
        if self.status.state in TERMINAL:
            raise IllegalTransitionError(
                self.status.state,
                self.status.state,
                f"task {self.id} is {self.status.state.value}: no artifact can be added",
                task_id=self.id,
            )

    def _check_message(self) -> None:
        if self.status.state in TERMINAL:
            raise IllegalTransitionError(
                self.status.state,
                self.status.state,
                f"task {self.id} is {self.status.state.value}: no message can be added",
                task_id=self.id,
            )

    def _check_ids(self, task_id: str) -> None:
        if task_id != self.id:
            raise IllegalTransitionError(
                self.status.state,
                self.status.state,
                f"an event for task {task_id} reached task {self.id}",
                task_id=self.id,
            )

    def _apply_artifact(self, event: TaskArtifactUpdateEvent) -> None:
        artifact = event.artifact
        artifact_id = artifact.artifact_id
        artifacts = self._artifacts
        position = self._artifact_index.get(artifact_id)
        if position is None:
            # An append to an artifact never seen starts it: what the receiver would do too.
            self._artifact_index[artifact_id] = len(artifacts)
            artifacts.append(artifact)
        elif event.append:
            artifacts[position] = self._appended(artifacts[position], artifact)
        else:
            artifacts[position] = artifact
            if self._growing == artifact_id:
                self._growing = None  # the event's own artifact now: shared, never extended

    def _appended(self, previous: Artifact, chunk: Artifact) -> Artifact:
        """``previous`` with ``chunk`` appended: its parts, and the names, metadata and
        extensions the chunk brings.

        The first chunk copies the parts into a list of this record's own; later chunks extend
        that list in place until someone reads the artifacts (``artifacts``, ``snapshot``), so
        an artifact streamed in n chunks costs O(n) instead of O(n^2) copying.
        """
        growing = self._growing == previous.artifact_id
        if growing:
            previous.parts.extend(chunk.parts)  # only this record holds that list (see above)
            parts = previous.parts
        else:
            parts = previous.parts + chunk.parts
            self._growing = previous.artifact_id
        if (
            chunk.metadata is None
            and not chunk.extensions
            and chunk.name in ("", previous.name)
            and chunk.description in ("", previous.description)
        ):
            # The usual chunk only adds parts: nothing else to rebuild.
            return previous if growing else msgspec.structs.replace(previous, parts=parts)
        return msgspec.structs.replace(
            previous,
            parts=parts,
            name=chunk.name or previous.name,
            description=chunk.description or previous.description,
            metadata=_merged(previous.metadata, chunk.metadata),
            extensions=previous.extensions
            + [e for e in chunk.extensions if e not in previous.extensions],
        )

    def snapshot(
        self, *, history_length: int | None = None, include_artifacts: bool = True
    ) -> Task:
        """The task as a frozen ``Task``: history trimmed, artifacts optionally left out."""
        return Task(
            id=self.id,
            context_id=self.context_id,
            status=self.status,
            artifacts=list(self.artifacts) if include_artifacts else [],
            history=trim_history(self.history, history_length),
            metadata=self.metadata,
        )


def fold_events(task: Task, events: list[Event]) -> Task:
    """``task`` with ``events`` applied in order: what a stream observer reconstructs."""
    record = TaskRecord.from_task(task)
    for event in events:
        record.apply(event)
    return record.snapshot()


def _merged(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any] | None:
    if a is None:
        return b
    if b is None:
        return a
    return {**a, **b}
