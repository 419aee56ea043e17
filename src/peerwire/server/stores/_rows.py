"""How tasks and events become table rows and back: ProtoJSON bodies and an event kind.

Bodies are the protocol's own ProtoJSON, so a row can be read by anything that speaks A2A and
survives peerwire upgrades that keep the wire format. Rebuilding a task folds its events onto
its snapshot with ``TaskRecord.apply``, the same rule that accepted them.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...protocol import Event, TaskRecord, sort_key
from ...types import (
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskStatusUpdateEvent,
    decode,
    encode,
)

__all__ = [
    "decode_push_config",
    "encode_push_config",
    "event_body",
    "record_from_rows",
    "snapshot_body",
    "status_key",
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


def snapshot_body(record: TaskRecord) -> bytes:
    return encode(record.snapshot())


def status_key(record: TaskRecord) -> str:
    return sort_key(record.status.timestamp)


def record_from_rows(
    snapshot: bytes, snapshot_version: int, events: Iterable[tuple[str, bytes]]
) -> TaskRecord:
    """The task at its latest version: the snapshot with the later events folded in."""
    record = TaskRecord.from_task(decode(snapshot, Task), snapshot_version)
    for kind, body in events:
        record.apply(decode(body, _TYPE_OF[kind]))
    return record


def encode_push_config(config: TaskPushNotificationConfig) -> bytes:
    return encode(config)


def decode_push_config(body: bytes) -> TaskPushNotificationConfig:
    return decode(body, TaskPushNotificationConfig)
