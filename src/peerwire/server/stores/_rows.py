"""How tasks and events become table rows and back: ProtoJSON bodies and an event kind.

Bodies are the protocol's own ProtoJSON, so a row can be read by anything that speaks A2A and
survives peerwire upgrades that keep the wire format. Rebuilding a task folds its events onto
its snapshot with ``TaskRecord.apply``, the same rule that accepted them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ...protocol import Event, TaskRecord, ends_blocking_wait, sort_key
from ...types import (
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskStatusUpdateEvent,
    decode,
    encode,
)
from .base import EventsAfter, OutboxRow

__all__ = [
    "PUSH_SUFFIX",
    "AppendPlan",
    "copy_record",
    "decode_outbox_row",
    "decode_push_config",
    "encode_push_config",
    "event_body",
    "events_after_rows",
    "from_ms",
    "outbox_row_id",
    "outbox_row_id_sql",
    "plan_append",
    "push_body",
    "push_prefix",
    "record_from_rows",
    "snapshot_body",
    "status_key",
    "task_row",
    "to_ms",
]

_KIND_OF: dict[type[Event], str] = {
    TaskStatusUpdateEvent: "status",
    TaskArtifactUpdateEvent: "artifact",
    Message: "message",
}
_TYPE_OF: dict[str, type[Event]] = {kind: type_ for type_, kind in _KIND_OF.items()}


def event_body(event: Event) -> tuple[str, bytes]:
    """``(kind, body)`` of an event row."""
    return _KIND_OF[type(event)], encode(event)


# How each pushed kind of event is wrapped into the StreamResponse it travels in: the member
# named after it. The caller's own messages ("message" rows) are not pushed back to them.
_PUSH_PREFIX = {"status": b'{"statusUpdate":', "artifact": b'{"artifactUpdate":'}
PUSH_SUFFIX = b"}"


def push_prefix(kind: str) -> bytes | None:
    """What goes before an event row's body to make its ``StreamResponse`` (``PUSH_SUFFIX``
    goes after), or ``None`` for an event that is not pushed."""
    return _PUSH_PREFIX.get(kind)


def push_body(kind: str, body: bytes) -> bytes | None:
    """The ProtoJSON ``StreamResponse`` a pushed event is sent as, from its event row's
    ``(kind, body)`` (a wrapper around the same bytes: nothing is encoded twice), or ``None``
    for an event that is not pushed."""
    prefix = _PUSH_PREFIX.get(kind)
    return None if prefix is None else prefix + body + PUSH_SUFFIX


def outbox_row_id(task_id: str, config_id: str, seq: int) -> str:
    """An outbox row's id: the same for every attempt, so receivers can deduplicate by it."""
    return f"{task_id}/{config_id}/{seq}"


def outbox_row_id_sql(task_id: str, config_id: str, seq: str) -> str:
    """``outbox_row_id`` as a SQL expression over the three given SQL expressions."""
    return f"{task_id} || '/' || {config_id} || '/' || {seq}"


def decode_outbox_row(values: Sequence[Any]) -> OutboxRow:
    """An ``OutboxRow`` from the ``_sql.OUTBOX_COLUMNS`` of a table row."""
    row_id, task_id, config_id, seq, body, attempts, next_attempt_at, state, last_error = values
    return OutboxRow(
        id=row_id,
        task_id=task_id,
        config_id=config_id,
        seq=int(seq),
        body=bytes(body),
        attempts=int(attempts),
        next_attempt_at=from_ms(int(next_attempt_at)),
        state=state,
        last_error=last_error,
    )


def to_ms(seconds: float) -> int:
    """Seconds since the epoch as the integer milliseconds the outbox columns hold."""
    return round(seconds * 1000)


def from_ms(milliseconds: int) -> float:
    return milliseconds / 1000


def snapshot_body(record: TaskRecord) -> bytes:
    return encode(record.snapshot())


def status_key(record: TaskRecord) -> str:
    return sort_key(record.status.timestamp)


def task_row(record: TaskRecord, tenant: str, owner: str) -> tuple[Any, ...]:
    """A new task's ``tasks`` row, in ``INSERT_TASK``'s column order (the snapshot is the
    task as created, at its version)."""
    return (
        record.id,
        tenant,
        owner,
        record.context_id,
        record.state.value,
        status_key(record),
        record.version,
        snapshot_body(record),
        record.version,
    )


def record_from_rows(
    snapshot: bytes, snapshot_version: int, events: Iterable[tuple[str, bytes]]
) -> TaskRecord:
    """The task at its latest version: the snapshot with the later events folded in."""
    record = TaskRecord.from_task(decode(snapshot, Task), snapshot_version)
    for kind, body in events:
        record.apply(decode(body, _TYPE_OF[kind]))
    return record


def events_after_rows(
    after: int,
    version: int,
    snapshot_version: int,
    snapshot: bytes | None,
    rows: Iterable[tuple[int, str, bytes]],
) -> EventsAfter:
    """``TaskStore.events_after(task, after)`` from a relational store's rows: the task row's
    ``version`` and ``snapshot_version``, its ``snapshot`` when that is past ``after`` (else
    ``None``), and the ``(version, kind, body)`` event rows above both."""
    if version <= after:
        return EventsAfter(version, [])
    if snapshot is None:  # every event after ``after`` is still a row of its own
        return EventsAfter(version, [(v, decode(body, _TYPE_OF[kind])) for v, kind, body in rows])
    record = record_from_rows(snapshot, snapshot_version, ((kind, body) for _, kind, body in rows))
    return EventsAfter(version, None, record.snapshot())


def encode_push_config(config: TaskPushNotificationConfig) -> bytes:
    return encode(config)


def decode_push_config(body: bytes) -> TaskPushNotificationConfig:
    return decode(body, TaskPushNotificationConfig)


# Not frozen: a plan is built for every append, and frozen fields cost twice as much to set.
@dataclass(slots=True)
class AppendPlan:
    """An append validated and turned into what to write (see ``plan_append``)."""

    base: int
    """The version the batch was validated against: the compare-and-swap's expected one."""
    status_changed: bool
    """Whether the batch holds a status update (else ``state`` and ``status_key`` are the
    task's current ones, and a store need not rewrite them)."""
    version: int
    """The task's version once the batch is in."""
    state: str
    status_key: str
    snapshot: bytes | None
    """The whole task at ``version`` when it is rewritten now (absorbing the event rows)."""
    rows: list[tuple[int, str, bytes]]
    """``(version, kind, body)`` of each event row, when the snapshot is not rewritten."""
    after: TaskRecord | None
    """A copy of the record with the batch applied, when validating needed one."""


def plan_append(
    record: TaskRecord,
    events: Sequence[Event],
    *,
    snapshot_version: int,
    snapshot_every: int,
) -> AppendPlan:
    """Validate ``events`` against ``record`` (``TaskRecord.apply``) and plan their rows.

    Raises ``IllegalTransitionError`` and changes nothing for a batch the state machine
    refuses. The snapshot is rewritten when the task settles (terminal or interrupted) or
    ``snapshot_every`` events after the last one; otherwise each event is a row of its own.
    """
    base = record.version
    version = base + len(events)
    last_status = next(
        (e.status for e in reversed(events) if isinstance(e, TaskStatusUpdateEvent)), None
    )
    settles = last_status is not None and ends_blocking_wait(last_status.state)
    rewrite = settles or version - snapshot_version >= snapshot_every
    after = None
    if rewrite or len(events) > 1:
        # A batch is validated on a copy, so a bad event leaves nothing applied.
        after = copy_record(record)
        for event in events:
            after.apply(event)
    else:
        record.check(events[0])
    status = record.status if last_status is None else last_status
    return AppendPlan(
        base=base,
        status_changed=last_status is not None,
        version=version,
        state=status.state.value,
        status_key=sort_key(status.timestamp),
        snapshot=snapshot_body(after) if rewrite and after is not None else None,
        rows=[]
        if rewrite
        else [(base + offset, *event_body(event)) for offset, event in enumerate(events, 1)],
        after=after,
    )


def copy_record(record: TaskRecord) -> TaskRecord:
    """An independent record at the same state (lists copied; their items are frozen)."""
    return TaskRecord(
        record.id,
        record.context_id,
        record.status,
        history=list(record.history),
        artifacts=list(record.artifacts),
        metadata=record.metadata,
        version=record.version,
    )
