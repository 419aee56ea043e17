"""Tasks, their status, and the events and responses that carry them (A2A spec §4.1, §4.2)."""

from __future__ import annotations

from typing import Any

from ._base import Model, TaskState, Timestamp
from .content import Artifact, Message

__all__ = [
    "SendMessageResponse",
    "StreamResponse",
    "Task",
    "TaskArtifactUpdateEvent",
    "TaskStatus",
    "TaskStatusUpdateEvent",
]


class TaskStatus(Model, frozen=True, kw_only=True):
    """Where a task stands, with the agent's optional status message."""

    state: TaskState
    message: Message | None = None
    timestamp: Timestamp | None = None


class Task(Model, frozen=True, kw_only=True):
    """The unit of work: status, artifacts produced so far, and the conversation history."""

    id: str
    context_id: str = ""
    status: TaskStatus
    artifacts: list[Artifact] = []
    history: list[Message] = []
    metadata: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if not self.id:
            raise ValueError("a Task needs an id")


class TaskStatusUpdateEvent(Model, frozen=True, kw_only=True):
    """A change of a task's status, as streamed and pushed."""

    task_id: str
    context_id: str
    status: TaskStatus
    metadata: dict[str, Any] | None = None


class TaskArtifactUpdateEvent(Model, frozen=True, kw_only=True):
    """A new artifact, or a chunk of one (``append``), possibly its last (``last_chunk``)."""

    task_id: str
    context_id: str
    artifact: Artifact
    append: bool = False
    last_chunk: bool = False
    metadata: dict[str, Any] | None = None


class StreamResponse(Model, frozen=True, kw_only=True):
    """One streamed event (and the push-notification body): exactly one member is set."""

    task: Task | None = None
    message: Message | None = None
    status_update: TaskStatusUpdateEvent | None = None
    artifact_update: TaskArtifactUpdateEvent | None = None

    def __post_init__(self) -> None:
        members = (
            (self.task is not None)
            + (self.message is not None)
            + (self.status_update is not None)
            + (self.artifact_update is not None)
        )
        if members != 1:
            raise ValueError(
                "a StreamResponse carries exactly one of task, message, statusUpdate, "
                "artifactUpdate"
            )

    @property
    def payload(self) -> Task | Message | TaskStatusUpdateEvent | TaskArtifactUpdateEvent:
        """The one member that is set."""
        for value in (self.task, self.message, self.status_update, self.artifact_update):
            if value is not None:
                return value
        raise AssertionError("unreachable: validated in __post_init__")


class SendMessageResponse(Model, frozen=True, kw_only=True):
    """The result of SendMessage: a task, or a direct message reply."""

    task: Task | None = None
    message: Message | None = None

    def __post_init__(self) -> None:
        if (self.task is None) == (self.message is None):
            raise ValueError("a SendMessageResponse carries exactly one of task or message")

    @property
    def payload(self) -> Task | Message:
        return self.task if self.task is not None else self.message  # type: ignore[return-value]
