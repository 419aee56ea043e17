"""Catching up after a reconnect: the updates that lead from what the caller saw to a snapshot.

A stream that dropped is followed again through SubscribeToTask, whose first event is a full
snapshot (A2A spec §3.5.2). Handing the caller that snapshot would make everyone who prints chunks
as they come print them again; instead the difference is expressed as ordinary updates: an
artifact that grew gets one ``append`` with just its new parts, a new or rewritten artifact
arrives whole, a changed status once. They are folded into the caller's ``TaskRecord`` with
the protocol's own rules, so what the caller has afterwards is exactly the snapshot.
"""

from __future__ import annotations

import msgspec

from ..protocol import TaskRecord
from ..types import Artifact, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent

__all__ = ["Update", "catch_up"]

Update = TaskStatusUpdateEvent | TaskArtifactUpdateEvent


def catch_up(record: TaskRecord, snapshot: Task) -> list[Update]:
    """The updates from ``record`` to ``snapshot``, applied to ``record``.

    Raises ``IllegalTransitionError`` if the snapshot cannot follow what was seen (its task
    moved backwards, or it is another task).
    """
    known = {a.artifact_id: a for a in record.artifacts}
    updates: list[Update] = []
    for artifact in snapshot.artifacts:
        before = known.get(artifact.artifact_id)
        if before == artifact:
            continue
        if before is not None and _grew(before, artifact):
            chunk = msgspec.structs.replace(artifact, parts=artifact.parts[len(before.parts) :])
            updates.append(_artifact_update(snapshot, chunk, append=True))
        else:
            updates.append(_artifact_update(snapshot, artifact, append=False))
    if snapshot.status != record.status:
        # Last, as on the wire: a terminal status is the final word of a stream.
        updates.append(
            TaskStatusUpdateEvent(
                task_id=snapshot.id, context_id=snapshot.context_id, status=snapshot.status
            )
        )
    for update in updates:
        record.apply(update)
    record.history = list(snapshot.history)
    record.metadata = snapshot.metadata
    return updates


def _grew(before: Artifact, after: Artifact) -> bool:
    """Whether ``after`` is ``before`` with more parts appended (chunks we missed)."""
    count = len(before.parts)
    return len(after.parts) > count and after.parts[:count] == before.parts


def _artifact_update(
    snapshot: Task, artifact: Artifact, *, append: bool
) -> TaskArtifactUpdateEvent:
    return TaskArtifactUpdateEvent(
        task_id=snapshot.id, context_id=snapshot.context_id, artifact=artifact, append=append
    )
