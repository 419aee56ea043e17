"""Which task an incoming message belongs to: a new one, or one it continues."""

from __future__ import annotations

import msgspec

from ..errors import InvalidParamsError, TaskNotFoundError, UnsupportedOperationError
from ..types import Message, TaskState
from .states import TERMINAL

__all__ = ["Continue", "NewTask", "no_longer_waiting", "resolve_continuation"]


# Structs rather than frozen dataclasses: one is built per message, and a frozen dataclass
# sets each field through ``object.__setattr__`` (several times slower).


class NewTask(msgspec.Struct, frozen=True, gc=False):
    """Start a task. ``context_id`` is the client's (adopted, even if unknown) or ``""`` to mint."""

    context_id: str


class Continue(msgspec.Struct, frozen=True, gc=False):
    """The message continues an existing, non-terminal task."""

    task_id: str
    context_id: str


def resolve_continuation(
    message: Message,
    existing: tuple[str, TaskState] | None,
) -> NewTask | Continue:
    """Decide what ``message`` starts or continues.

    ``existing`` is ``(context_id, state)`` of the task named by ``message.task_id`` as the
    caller may see it, or ``None`` when there is no such task (or it is not visible).
    """
    if not message.task_id:
        return NewTask(context_id=message.context_id)
    if existing is None:
        raise TaskNotFoundError(
            f"Task {message.task_id} was not found", metadata={"taskId": message.task_id}
        )
    context_id, state = existing
    if message.context_id and message.context_id != context_id:
        raise InvalidParamsError(
            f"message.contextId {message.context_id!r} does not match the context of task "
            f"{message.task_id}",
            metadata={"taskId": message.task_id},
        )
    if state in TERMINAL:
        raise UnsupportedOperationError(
            f"Task {message.task_id} is in a terminal state ({state.value}) and accepts no "
            "more messages; start a new task in the same context instead",
            metadata={"taskId": message.task_id},
        )
    return Continue(task_id=message.task_id, context_id=context_id)


def no_longer_waiting(task_id: str, state: TaskState) -> UnsupportedOperationError:
    """The refusal of a message that answers a question another message answered first.

    A task waiting for its caller (INPUT_REQUIRED, AUTH_REQUIRED) takes one answer: the first
    recorded wins (a compare-and-swap on the task's version), and a message that finds the
    task no longer waiting for it (``state`` now) gets this, the error for a message a task
    cannot take in its current state, as a message to a terminal task does.
    """
    return UnsupportedOperationError(
        f"Task {task_id} is no longer waiting for input: another message answered it first, "
        f"and it is {state.value} now",
        metadata={"taskId": task_id, "state": state.value},
    )
