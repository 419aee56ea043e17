"""The task state machine: the one place that knows which state may follow which.

The spec publishes no formal table; this one is what its text implies: a task may
be created in any real state, active and interrupted tasks may move to any non-initial state
(and repeat their own, for a new status message), and terminal is terminal.
"""

from __future__ import annotations

from ..errors import IllegalTransitionError
from ..types import TaskState

__all__ = [
    "ACTIVE",
    "INITIAL",
    "INTERRUPTED",
    "TERMINAL",
    "can_transition",
    "check_transition",
    "closes_stream",
    "ends_blocking_wait",
    "is_interrupted",
    "is_terminal",
]

S = TaskState

ACTIVE = frozenset({S.SUBMITTED, S.WORKING})
INTERRUPTED = frozenset({S.INPUT_REQUIRED, S.AUTH_REQUIRED})
TERMINAL = frozenset({S.COMPLETED, S.FAILED, S.CANCELED, S.REJECTED})
# States a task may be created in: any real state (an agent may finish or reject at once).
INITIAL = ACTIVE | INTERRUPTED | TERMINAL

_AFTER_STARTED = frozenset({S.WORKING}) | INTERRUPTED | TERMINAL
_ALLOWED: dict[TaskState, frozenset[TaskState]] = {
    S.SUBMITTED: frozenset({S.SUBMITTED}) | _AFTER_STARTED,
    S.WORKING: _AFTER_STARTED,
    S.INPUT_REQUIRED: _AFTER_STARTED,
    S.AUTH_REQUIRED: _AFTER_STARTED,
    S.COMPLETED: frozenset(),
    S.FAILED: frozenset(),
    S.CANCELED: frozenset(),
    S.REJECTED: frozenset(),
    S.UNSPECIFIED: frozenset(),
}


def is_terminal(state: TaskState) -> bool:
    return state in TERMINAL


def is_interrupted(state: TaskState) -> bool:
    return state in INTERRUPTED


def can_transition(current: TaskState | None, new: TaskState) -> bool:
    """Whether a task in ``current`` (``None``: not created yet) may move to ``new``."""
    if current is None:
        return new in INITIAL
    return new in _ALLOWED[current]


def check_transition(current: TaskState | None, new: TaskState, task_id: str = "") -> None:
    """Raise ``IllegalTransitionError`` unless ``current`` may move to ``new``."""
    if can_transition(current, new):
        return
    subject = f"task {task_id}" if task_id else "a task"
    if current is None:
        message = f"{subject} cannot be created in state {new.value}"
    elif current in TERMINAL:
        message = (
            f"{subject} is {current.value}, a terminal state: it can never change again "
            f"(attempted {new.value})"
        )
    else:
        message = f"{subject} cannot move from {current.value} to {new.value}"
    raise IllegalTransitionError(current, new, message, task_id=task_id or None)


def ends_blocking_wait(state: TaskState) -> bool:
    """A blocking SendMessage returns once the task is terminal or interrupted (A2A spec §3.2.2)."""
    return state in TERMINAL or state in INTERRUPTED


def closes_stream(state: TaskState) -> bool:
    """A stream closes at a terminal state and at INPUT_REQUIRED, not at AUTH_REQUIRED."""
    return state in TERMINAL or state is S.INPUT_REQUIRED
