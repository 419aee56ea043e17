"""Folding status and artifact events into a task (facts §5.6).

``TaskRecord`` is the mutable per-task aggregate the runner and the stores keep: an event is
applied in place (a streamed chunk never copies the whole task), and ``snapshot()`` yields the
frozen ``Task`` the API hands out. Every event passes the state machine first.
"""

from __future__ import annotations

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
        "artifacts",
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
        self.artifacts: list[Artifact] = artifacts if artifacts is not None else []
        self._artifact_index = {a.artifact_id: i for i, a in enumerate(self.artifacts)}
        self.metadata = metadata
        self.version = version

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
        if isinstance(event, TaskStatusUpdateEvent):
            self._check_status(event)
            self.status = event.status
            if event.status.message is not None:
                self.history.append(event.status.message)
        elif isinstance(event, TaskArtifactUpdateEvent):
            self._check_artifact(event)
            self._apply_artifact(event)
        else:
            self._check_message()
            self.history.append(event)
        self.version += 1

    def _check_status(self, event: TaskStatusUpdateEvent) -> None:
        self._check_ids(event.task_id)
        check_transition(self.status.state, event.status.state, self.id)

    def _check_artifact(self, event: TaskArtifactUpdateEvent) -> None:
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
        position = self._artifact_index.get(artifact.artifact_id)
        if position is None:
            # An append to an artifact never seen starts it: what the receiver would do too.
            self._artifact_index[artifact.artifact_id] = len(self.artifacts)
            self.artifacts.append(artifact)
        elif event.append:
            previous = self.artifacts[position]
            self.artifacts[position] = msgspec.structs.replace(
                previous,
                parts=previous.parts + artifact.parts,
                name=artifact.name or previous.name,
                description=artifact.description or previous.description,
                metadata=_merged(previous.metadata, artifact.metadata),
                extensions=previous.extensions
                + [e for e in artifact.extensions if e not in previous.extensions],
            )
        else:
            self.artifacts[position] = artifact

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
