"""What a delegation came to: one typed outcome per call, never a bare exception.

Every outcome says which call it is (``key``, ``agent``, ``remote_task_id``) and why
(``describe()``), so a fan-out's results can be told apart and logged as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..types import Artifact, Message, Task, TaskState

__all__ = [
    "Canceled",
    "Completed",
    "Failed",
    "FailureCause",
    "Outcome",
    "Rejected",
    "Stalled",
    "TimedOut",
]

FailureCause = Literal[
    "task_failed", "interrupted", "refused", "unreachable", "not_found", "invalid_response"
]
"""Why a delegation failed: the remote task failed; the remote task failed because its
agent's process stopped while it worked (the status says ``INTERRUPTED``,
``peerwire.protocol.reasons``: it may have acted first); the agent refused the message (an
A2A error: nothing was done); the agent could not be reached (the task may or may not exist
there: see docs/DELEGATION.md, the exactly-once window); the agent no longer knows the task;
the agent answered something that is not A2A. Every cause but ``refused`` may have acted:
the step's undo runs (docs/DELEGATION.md, "What may have acted")."""


@dataclass(frozen=True, slots=True)
class _Outcome:
    key: str
    agent: str
    remote_task_id: str

    def describe(self) -> str:
        raise AssertionError("every outcome overrides describe")  # pragma: no cover

    @property
    def ok(self) -> bool:
        """True for ``Completed`` only."""
        return False


@dataclass(frozen=True, slots=True)
class Completed(_Outcome):
    """The remote task completed (or the agent answered with a message, ``task`` None)."""

    task: Task | None = None
    message: Message | None = None
    """The agent's direct reply, when it answered with a message instead of a task."""
    artifacts: tuple[Artifact, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return True

    @property
    def text(self) -> str:
        """The text of the artifacts (or of the reply message), joined by newlines."""
        if self.message is not None:
            return self.message.text
        return "\n".join(artifact.text for artifact in self.artifacts if artifact.text)

    def describe(self) -> str:
        return f"{self.key}: completed" + (
            f" (remote task {self.remote_task_id})" if self.remote_task_id else " (a message)"
        )


@dataclass(frozen=True, slots=True)
class Failed(_Outcome):
    reason: str
    cause: FailureCause = "task_failed"
    task: Task | None = None

    def describe(self) -> str:
        return f"{self.key}: failed ({self.cause}): {self.reason}"


@dataclass(frozen=True, slots=True)
class Rejected(_Outcome):
    reason: str
    task: Task | None = None

    def describe(self) -> str:
        return f"{self.key}: rejected: {self.reason}"


@dataclass(frozen=True, slots=True)
class Canceled(_Outcome):
    reason: str
    task: Task | None = None

    def describe(self) -> str:
        return f"{self.key}: canceled: {self.reason}"


@dataclass(frozen=True, slots=True)
class TimedOut(_Outcome):
    """The deadline passed while the remote task was ``state`` (SUBMITTED or WORKING, or a
    stall past ``stall_deadline``); it was then canceled at the agent (``reason`` says how
    that went)."""

    state: TaskState
    reason: str
    task: Task | None = None

    def describe(self) -> str:
        return f"{self.key}: timed out: {self.reason}"


@dataclass(frozen=True, slots=True)
class Stalled(_Outcome):
    """The remote task waits for someone: INPUT_REQUIRED or AUTH_REQUIRED. Not a failure:
    answer it with ``Delegation.answer`` (or cancel it)."""

    state: TaskState
    question: Message | None
    task: Task | None = None

    @property
    def question_text(self) -> str:
        return self.question.text if self.question is not None else ""

    def describe(self) -> str:
        what = "input" if self.state is TaskState.INPUT_REQUIRED else "authorization"
        return f"{self.key}: stalled, the agent needs {what}: {self.question_text or '(no text)'}"


Outcome = Completed | Failed | Rejected | Canceled | TimedOut | Stalled
"""What ``Delegation.result()`` returns."""
