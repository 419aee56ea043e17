"""A task's life as the inspector shows it: what happened to it, in order, and its artifacts
assembled from their chunks. Sans-I/O: fed the payloads a ``Client`` yields, read as JSON.

One ``TaskTimeline`` per task the page has seen. ``apply`` takes a ``Task`` (a snapshot: from
a blocking send, GetTask, or the first event of a stream), a ``TaskStatusUpdateEvent`` or a
``TaskArtifactUpdateEvent``; each becomes one entry of the timeline. An artifact chunk with
``append`` extends the artifact of that id, without it replaces it, as the spec's streaming
rules say (A2A spec §3.1.2), so the page shows the text growing chunk by chunk.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from ..protocol import INTERRUPTED, TERMINAL
from ..types import (
    Artifact,
    Message,
    Part,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)

__all__ = ["MAX_ENTRIES", "TaskTimeline", "describe_part", "describe_parts", "short_state"]

# A task that streams for hours must not grow the page without end: the oldest entries go.
MAX_ENTRIES = 500


def short_state(state: TaskState) -> str:
    """``TASK_STATE_INPUT_REQUIRED`` -> ``INPUT_REQUIRED``: how the page names states."""
    return state.value.removeprefix("TASK_STATE_")


def describe_part(part: Part) -> str:
    """One part as text: its text, its data as JSON, or what file it is."""
    if part.text is not None:
        return part.text
    if part.raw is not None:
        kind = part.media_type or "application/octet-stream"
        return f"[file {part.filename or '(unnamed)'} ({kind}, {len(part.raw)} bytes)]"
    if part.url is not None:
        return f"[file at {part.url}]"
    return json.dumps(part.data, ensure_ascii=False, sort_keys=True)


def describe_parts(parts: list[Part]) -> str:
    return "".join(describe_part(part) for part in parts)


@dataclass
class _AssembledArtifact:
    artifact_id: str
    name: str
    parts: list[Part]
    chunks: int = 1
    complete: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "artifactId": self.artifact_id,
            "name": self.name,
            "text": describe_parts(self.parts),
            "chunks": self.chunks,
            "complete": self.complete,
        }


@dataclass
class TaskTimeline:
    """What the inspector knows of one task."""

    task_id: str
    context_id: str = ""
    binding: str = ""
    agent: str = ""  # the agent's URL, as the page was inspecting it when the task came
    agent_name: str = ""  # its card's name then
    state: TaskState = TaskState.UNSPECIFIED
    question: str = ""  # what an INPUT_REQUIRED (or AUTH_REQUIRED) status asks
    entries: list[dict[str, Any]] = field(default_factory=list)
    artifacts: dict[str, _AssembledArtifact] = field(default_factory=dict)
    dropped: int = 0  # entries dropped past MAX_ENTRIES

    @property
    def is_final(self) -> bool:
        return self.state in TERMINAL

    def note(self, kind: str, text: str, **extra: Any) -> None:
        """Add an entry the page shows as is: a message sent, a stream closing, an error."""
        self.entries.append({"at": time.time(), "kind": kind, "text": text, **extra})
        if len(self.entries) > MAX_ENTRIES:
            del self.entries[0]
            self.dropped += 1

    def apply(self, payload: Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent) -> None:
        if isinstance(payload, Task):
            self._snapshot(payload)
        elif isinstance(payload, TaskStatusUpdateEvent):
            self.context_id = payload.context_id or self.context_id
            self._status(payload.status.state, payload.status.message, "status")
        else:
            self._chunk(payload)

    def _snapshot(self, task: Task) -> None:
        self.context_id = task.context_id or self.context_id
        self.artifacts = {
            artifact.artifact_id: _AssembledArtifact(
                artifact.artifact_id, artifact.name, list(artifact.parts), complete=True
            )
            for artifact in task.artifacts
        }
        names = ", ".join(a.name or a.artifact_id for a in task.artifacts)
        self._status(
            task.status.state,
            task.status.message,
            "snapshot",
            artifacts=names,
        )

    def _status(self, state: TaskState, message: Message | None, kind: str, **extra: Any) -> None:
        self.state = state
        said = describe_parts(message.parts) if message is not None else ""
        self.question = said if state in INTERRUPTED else ""
        self.note(kind, said, state=short_state(state), **extra)

    def _chunk(self, event: TaskArtifactUpdateEvent) -> None:
        self.context_id = event.context_id or self.context_id
        artifact: Artifact = event.artifact
        known = self.artifacts.get(artifact.artifact_id)
        if event.append and known is not None:
            known.parts.extend(artifact.parts)
            known.chunks += 1
            known.name = artifact.name or known.name
        else:
            known = self.artifacts[artifact.artifact_id] = _AssembledArtifact(
                artifact.artifact_id, artifact.name, list(artifact.parts)
            )
        known.complete = event.last_chunk
        self.note(
            "artifact",
            describe_parts(artifact.parts),
            artifactId=artifact.artifact_id,
            name=known.name,
            append=event.append,
            lastChunk=event.last_chunk,
            assembled=describe_parts(known.parts),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.task_id,
            "contextId": self.context_id,
            "binding": self.binding,
            "agent": self.agent,
            "agentName": self.agent_name,
            "state": short_state(self.state),
            "final": self.is_final,
            "question": self.question,
            "entries": self.entries,
            "dropped": self.dropped,
            "artifacts": [a.to_json() for a in self.artifacts.values()],
        }
