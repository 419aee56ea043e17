"""SubscribeToTask of a finished task: the spec's refusal, and how telemetry tells it apart.

Subscribing to a task in a terminal state is ``UnsupportedOperationError`` (A2A spec §3.1.6;
the other cause the spec gives for that error on SubscribeToTask is an agent without the
streaming capability). A caller that follows a task it has just started (a non-blocking send,
then SubscribeToTask, as the delegation ledger does) meets it whenever the task finished in
between: an answer expected on the happy path, the cue to read the task with GetTask. So
spans and request metrics record it as the outcome ``TASK_FINISHED``, not as an error, on the
server and on the client; the wire answer is the spec's error all the same.
"""

from __future__ import annotations

from ..errors import UnsupportedOperationError
from ..types import TaskState
from .states import TERMINAL

__all__ = ["TASK_FINISHED", "finished_task_refusal", "is_finished_task_refusal"]

TASK_FINISHED = "task_finished"
"""The outcome of a SubscribeToTask refused because its task had finished (the ``outcome``
label of ``peerwire_requests_total``; ``a2a.task.finished`` on its span)."""

_SUBSCRIBE = "SubscribeToTask"
_TERMINAL_NAMES = frozenset(state.value for state in TERMINAL)


def finished_task_refusal(
    task_id: str, state: TaskState, why: str = ""
) -> UnsupportedOperationError:
    """The refusal of a subscription to task ``task_id``, finished as ``state``. Its ErrorInfo
    metadata says ``taskId`` and ``state``, so a peerwire client knows it from an error of
    another cause; ``why`` is added to the message."""
    return UnsupportedOperationError(
        f"Task {task_id} is {state.value}: a finished task has no updates to subscribe to "
        f"(use GetTask){why}",
        metadata={"taskId": task_id, "state": state.value},
    )


def is_finished_task_refusal(method: str, error: BaseException, *, streaming: bool = False) -> bool:
    """Whether ``error``, the answer to the A2A ``method``, refused a subscription because
    its task had finished: an ``UnsupportedOperationError`` to SubscribeToTask whose
    metadata names a terminal ``state``, or, from an agent that says no ``state`` (another
    SDK), one that declares ``streaming`` (``True``: the caller read it on the agent's card),
    since then the task's end is the only cause the spec leaves."""
    if method != _SUBSCRIBE or not isinstance(error, UnsupportedOperationError):
        return False
    state = error.metadata.get("state")
    if state is None:
        return streaming
    return state in _TERMINAL_NAMES
