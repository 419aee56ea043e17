"""The in-memory ``TaskStore``: for tests, benchmarks and agents whose tasks may die with them."""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import TaskNotFoundError, VersionConflictError
from ...protocol import TERMINAL, Event, ListQuery, TaskRecord, select_page, sort_key
from ...types import Task, TaskPushNotificationConfig
from .base import StoredTaskInfo

__all__ = ["MemoryTaskStore"]


class _Entry:
    __slots__ = ("owner", "record", "tenant")

    def __init__(self, record: TaskRecord, tenant: str, owner: str) -> None:
        self.record = record
        self.tenant = tenant
        self.owner = owner


class MemoryTaskStore:
    """Tasks in a dict. Appends fold in place; nothing is copied per event."""

    # ``append`` never awaits anything that suspends: a cancel cannot land between storing an
    # event and its publication (the runner skips shielding that pair for such stores).
    appends_never_suspend = True

    def __init__(self) -> None:
        self._tasks: dict[str, _Entry] = {}
        self._push: dict[str, dict[str, TaskPushNotificationConfig]] = {}

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def create(self, record: TaskRecord, *, tenant: str, owner: str) -> None:
        if record.id in self._tasks:
            raise VersionConflictError(
                record.id, expected=0, actual=self._tasks[record.id].record.version
            )
        self._tasks[record.id] = _Entry(record, tenant, owner)

    async def load(
        self, task_id: str, *, tenant: str, owner: str | None = None
    ) -> TaskRecord | None:
        entry = self._tasks.get(task_id)
        if entry is None or entry.tenant != tenant or (owner is not None and entry.owner != owner):
            return None
        return entry.record

    async def append(
        self, task_id: str, events: Sequence[Event], *, expected_version: int | None = None
    ) -> int:
        entry = self._tasks.get(task_id)
        if entry is None:
            raise TaskNotFoundError(f"Task {task_id} was not found", metadata={"taskId": task_id})
        record = entry.record
        if expected_version is not None and expected_version != record.version:
            raise VersionConflictError(task_id, expected=expected_version, actual=record.version)
        if len(events) > 1:
            _check_all(record, events)
        for event in events:
            record.apply(event)
        return record.version

    async def list_tasks(
        self, query: ListQuery, *, tenant: str, owner: str | None
    ) -> tuple[list[Task], str, int]:
        candidates = (
            (
                sort_key(e.record.status.timestamp),
                task_id,
                e.record.status.state,
                e.record.context_id,
                e.record,
            )
            for task_id, e in self._tasks.items()
            if e.tenant == tenant and (owner is None or e.owner == owner)
        )
        records, token, total = select_page(query, candidates)
        tasks = [
            r.snapshot(
                history_length=query.history_length, include_artifacts=query.include_artifacts
            )
            for r in records
        ]
        return tasks, token, total

    async def unfinished(self) -> list[StoredTaskInfo]:
        return [
            StoredTaskInfo(task_id, e.record.context_id, e.tenant, e.owner, e.record.state)
            for task_id, e in self._tasks.items()
            if e.record.state not in TERMINAL
        ]

    async def delete_terminal_before(self, status_key: str) -> int:
        doomed = [
            task_id
            for task_id, e in self._tasks.items()
            if e.record.state in TERMINAL and sort_key(e.record.status.timestamp) < status_key
        ]
        for task_id in doomed:
            del self._tasks[task_id]
            self._push.pop(task_id, None)
        return len(doomed)

    async def save_push_config(self, config: TaskPushNotificationConfig) -> None:
        if config.task_id not in self._tasks:
            raise TaskNotFoundError(
                f"Task {config.task_id} was not found", metadata={"taskId": config.task_id}
            )
        self._push.setdefault(config.task_id, {})[config.id] = config

    async def get_push_config(
        self, task_id: str, config_id: str
    ) -> TaskPushNotificationConfig | None:
        return self._push.get(task_id, {}).get(config_id)

    async def list_push_configs(self, task_id: str) -> list[TaskPushNotificationConfig]:
        return list(self._push.get(task_id, {}).values())

    async def delete_push_config(self, task_id: str, config_id: str) -> None:
        self._push.get(task_id, {}).pop(config_id, None)


def _check_all(record: TaskRecord, events: Sequence[Event]) -> None:
    """Validate a batch on a scratch copy so a bad event leaves the stored record untouched."""
    scratch = TaskRecord(
        record.id,
        record.context_id,
        record.status,
        history=list(record.history),
        artifacts=list(record.artifacts),
        metadata=record.metadata,
        version=record.version,
    )
    for event in events:
        scratch.apply(event)
