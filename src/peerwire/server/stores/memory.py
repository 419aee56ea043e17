"""The in-memory ``TaskStore``: for tests, benchmarks and agents whose tasks may die with them."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence

from ...errors import TaskNotFoundError, VersionConflictError
from ...protocol import TERMINAL, Event, ListQuery, TaskRecord, select_page, sort_key
from ...types import Task, TaskPushNotificationConfig, TaskState, decode, encode
from ._rows import event_body, outbox_row_id, push_body
from .base import OutboxRow, StoredTaskInfo

__all__ = ["MemoryTaskStore"]


class _Entry:
    """One stored task. A finished task is compacted to its encoded snapshot.

    A live task keeps its mutable ``TaskRecord`` (events fold in place). Once terminal it can
    never change again, so it is kept as one ``bytes`` blob plus the few fields listing needs:
    a handful of objects the garbage collector does not track, instead of a record, lists and
    dicts per task (measured: the collector's work over many stored tasks dominated a busy
    server's profile).
    """

    __slots__ = (
        "blob",
        "context_id",
        "owner",
        "record",
        "state",
        "status_key",
        "tenant",
        "version",
    )

    def __init__(self, record: TaskRecord, tenant: str, owner: str) -> None:
        self.record: TaskRecord | None = record
        self.blob = b""
        self.tenant = tenant
        self.owner = owner
        self.context_id = record.context_id
        self.state = record.state
        self.status_key = ""
        self.version = record.version
        self.refresh(record)

    def refresh(self, record: TaskRecord) -> None:
        """Called after every append; compacts the task once it is terminal."""
        self.state = record.state
        self.version = record.version
        if record.state in TERMINAL:
            self.status_key = sort_key(record.status.timestamp)
            self.blob = encode(record.snapshot())
            self.record = None

    def summary(self) -> tuple[str, TaskState]:
        """The status sort key and state, without decoding a compacted task."""
        record = self.record
        if record is not None:
            return sort_key(record.status.timestamp), record.state
        return self.status_key, self.state

    def load(self) -> TaskRecord:
        if self.record is not None:
            return self.record
        return TaskRecord.from_task(decode(self.blob, Task), version=self.version)


class MemoryTaskStore:
    """Tasks in a dict. Appends fold in place; nothing is copied per event."""

    # ``append`` never awaits anything that suspends: a cancel cannot land between storing an
    # event and its publication (the runner skips shielding that pair for such stores).
    appends_never_suspend = True

    def __init__(self) -> None:
        self._tasks: dict[str, _Entry] = {}
        self._push: dict[str, dict[str, TaskPushNotificationConfig]] = {}
        self._outbox: dict[str, OutboxRow] = {}
        # The ids of pending rows in the order they were written, "oldest first" (a dict as an
        # ordered set): claiming never walks the delivered rows that pile up.
        self._pending: dict[str, None] = {}
        self._outbox_listener: Callable[[], None] | None = None

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def create(self, record: TaskRecord, *, tenant: str, owner: str) -> None:
        if record.id in self._tasks:
            raise VersionConflictError(record.id, expected=0, actual=self._tasks[record.id].version)
        self._tasks[record.id] = _Entry(record, tenant, owner)

    async def load(
        self, task_id: str, *, tenant: str, owner: str | None = None
    ) -> TaskRecord | None:
        entry = self._tasks.get(task_id)
        if entry is None or entry.tenant != tenant or (owner is not None and entry.owner != owner):
            return None
        return entry.load()

    async def append(
        self, task_id: str, events: Sequence[Event], *, expected_version: int | None = None
    ) -> int:
        entry = self._tasks.get(task_id)
        if entry is None:
            raise TaskNotFoundError(f"Task {task_id} was not found", metadata={"taskId": task_id})
        record = entry.load()
        if expected_version is not None and expected_version != record.version:
            raise VersionConflictError(task_id, expected=expected_version, actual=record.version)
        if len(events) > 1:
            _check_all(record, events)
        base = record.version
        for event in events:
            record.apply(event)
        entry.refresh(record)
        configs = self._push.get(task_id)
        if configs:
            self._queue_notifications(task_id, base, events, list(configs))
        return record.version

    def _queue_notifications(
        self, task_id: str, base: int, events: Sequence[Event], config_ids: list[str]
    ) -> None:
        now = time.time()
        written = False
        for seq, event in enumerate(events, start=base + 1):
            body = push_body(*event_body(event))
            if body is None:
                continue
            written = True
            for config_id in config_ids:
                row_id = outbox_row_id(task_id, config_id, seq)
                self._pending[row_id] = None
                self._outbox[row_id] = OutboxRow(
                    id=row_id,
                    task_id=task_id,
                    config_id=config_id,
                    seq=seq,
                    body=body,
                    attempts=0,
                    next_attempt_at=now,
                    state="pending",
                    last_error="",
                )
        if written and self._outbox_listener is not None:
            self._outbox_listener()

    async def list_tasks(
        self, query: ListQuery, *, tenant: str, owner: str | None
    ) -> tuple[list[Task], str, int]:
        candidates: list[tuple[str, str, TaskState, str, _Entry]] = []
        for task_id, e in self._tasks.items():
            if e.tenant == tenant and (owner is None or e.owner == owner):
                key, state = e.summary()
                candidates.append((key, task_id, state, e.context_id, e))
        entries, token, total = select_page(query, candidates)
        tasks = [
            e.load().snapshot(
                history_length=query.history_length, include_artifacts=query.include_artifacts
            )
            for e in entries
        ]
        return tasks, token, total

    async def unfinished(self) -> list[StoredTaskInfo]:
        return [
            StoredTaskInfo(task_id, e.context_id, e.tenant, e.owner, e.state)
            for task_id, e in self._tasks.items()
            if e.state not in TERMINAL
        ]

    async def delete_terminal_before(self, status_key: str) -> int:
        doomed = [
            task_id
            for task_id, e in self._tasks.items()
            if e.state in TERMINAL and e.summary()[0] < status_key
        ]
        for task_id in doomed:
            del self._tasks[task_id]
            self._push.pop(task_id, None)
        gone = set(doomed)
        self._drop_outbox(lambda row: row.task_id in gone)
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
        self._drop_outbox(
            lambda row: (
                row.task_id == task_id and row.config_id == config_id and row.state == "pending"
            )
        )

    def _drop_outbox(self, doomed: Callable[[OutboxRow], bool]) -> None:
        for row_id in [row_id for row_id, row in self._outbox.items() if doomed(row)]:
            del self._outbox[row_id]
            self._pending.pop(row_id, None)

    # -- the push outbox ----------------------------------------------------------------------

    def on_outbox(self, listener: Callable[[], None] | None) -> None:
        self._outbox_listener = listener

    async def claim_due(self, now: float, *, limit: int, lease: float) -> list[OutboxRow]:
        heads: set[tuple[str, str]] = set()
        claimed: list[OutboxRow] = []
        for row_id in self._pending:
            if len(claimed) >= limit:
                break
            row = self._outbox[row_id]
            pair = (row.task_id, row.config_id)
            if pair in heads:
                continue  # a config's later rows wait for its earliest pending one
            heads.add(pair)
            if row.next_attempt_at <= now:
                taken = dataclasses.replace(
                    row, attempts=row.attempts + 1, next_attempt_at=now + lease
                )
                self._outbox[row.id] = taken
                claimed.append(taken)
        return claimed

    async def mark_delivered(self, row_id: str) -> None:
        self._settle(row_id, state="delivered", body=b"", last_error="")

    async def mark_retry(self, row_id: str, next_attempt_at: float, error: str) -> None:
        self._settle(row_id, next_attempt_at=next_attempt_at, last_error=error)

    async def mark_failed(self, row_id: str, error: str) -> None:
        self._settle(row_id, state="failed", last_error=error)

    def _settle(self, row_id: str, **changes: object) -> None:
        row = self._outbox.get(row_id)
        if row is not None and row.state == "pending":
            settled = dataclasses.replace(row, **changes)  # type: ignore[arg-type]
            self._outbox[row_id] = settled
            if settled.state != "pending":
                del self._pending[row_id]

    async def outbox(self, task_id: str) -> list[OutboxRow]:
        rows = [row for row in self._outbox.values() if row.task_id == task_id]
        return sorted(rows, key=lambda row: (row.seq, row.config_id))


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
