"""The ``TaskStore`` interface: what the runner and dispatch need from persistence.

A store owns each task's aggregate. It is append-only in spirit: a task is created once, then
events are appended (validated by the state machine in ``protocol.fold``), each raising the
task's version by one. ``expected_version`` makes an append a compare-and-swap, for
deployments with more than one writer. Every read is scoped by tenant and, when given, by
owner: a task of another tenant or owner is indistinguishable from a missing one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ...protocol import Event, ListQuery, TaskRecord
from ...types import Task, TaskPushNotificationConfig, TaskState

__all__ = ["StoredTaskInfo", "TaskStore"]


@dataclass(frozen=True, slots=True)
class StoredTaskInfo:
    """Who a stored task belongs to and where it stands, for recovery after a restart."""

    task_id: str
    context_id: str
    tenant: str
    owner: str
    state: TaskState


@runtime_checkable
class TaskStore(Protocol):
    async def open(self) -> None:
        """Connect, create or migrate the schema. Called once before use."""

    async def close(self) -> None:
        """Flush and release resources."""

    async def create(self, record: TaskRecord, *, tenant: str, owner: str) -> None:
        """Store a new task at ``record.version``. Raises ``VersionConflictError`` if it exists."""

    async def load(
        self, task_id: str, *, tenant: str, owner: str | None = None
    ) -> TaskRecord | None:
        """The task as a record, or ``None`` if missing or not visible to ``tenant``/``owner``.

        ``owner=None`` skips the owner check (internal use). The caller must not mutate it.
        What ``load`` returns has been stored durably (by stores that are durable at all).
        """

    async def append(
        self, task_id: str, events: Sequence[Event], *, expected_version: int | None = None
    ) -> int:
        """Validate and apply ``events`` in order; return the task's new version.

        Raises ``IllegalTransitionError`` (nothing applied) for an event the state machine
        forbids, ``TaskNotFoundError`` for an unknown task and ``VersionConflictError`` when
        ``expected_version`` is given and is not the stored version.
        """

    async def list_tasks(
        self, query: ListQuery, *, tenant: str, owner: str | None
    ) -> tuple[list[Task], str, int]:
        """One page of the visible tasks matching ``query``: tasks, next token, total."""

    async def unfinished(self) -> list[StoredTaskInfo]:
        """Every task not in a terminal state (for restart recovery)."""

    async def delete_terminal_before(self, status_key: str) -> int:
        """Remove terminal tasks whose status sort key is older than ``status_key``.

        Their events and push configs go with them. Returns how many tasks were removed.
        ``retention_cutoff`` turns a maximum age into such a key.
        """

    # Push-notification configs live with their task (and go when retention removes it).
    # Callers check that the task is visible to the caller first; these do not scope.

    async def save_push_config(self, config: TaskPushNotificationConfig) -> None:
        """Store ``config`` under ``(config.task_id, config.id)``, replacing one with that id.

        Raises ``TaskNotFoundError`` if the task does not exist.
        """

    async def get_push_config(
        self, task_id: str, config_id: str
    ) -> TaskPushNotificationConfig | None: ...

    async def list_push_configs(self, task_id: str) -> list[TaskPushNotificationConfig]:
        """The task's configs in the order they were first saved."""

    async def delete_push_config(self, task_id: str, config_id: str) -> None:
        """Remove the config if it exists (deleting a missing one is not an error)."""
