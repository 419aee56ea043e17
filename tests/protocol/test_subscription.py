"""Which refusal of SubscribeToTask is the expected one: its task had finished (A2A §3.1.6)."""

from __future__ import annotations

import pytest

from peerwire.errors import InvalidParamsError, UnsupportedOperationError
from peerwire.protocol import TERMINAL, finished_task_refusal, is_finished_task_refusal
from peerwire.types import TaskState


@pytest.mark.parametrize("state", sorted(TERMINAL, key=lambda s: s.value))
def test_the_refusal_names_the_task_and_its_state_and_is_known_again(state: TaskState) -> None:
    refusal = finished_task_refusal("t-1", state, "; why")
    assert isinstance(refusal, UnsupportedOperationError)
    assert refusal.metadata == {"taskId": "t-1", "state": state.value}
    assert refusal.message.startswith(f"Task t-1 is {state.value}: ") and refusal.message.endswith(
        "; why"
    )
    assert is_finished_task_refusal("SubscribeToTask", refusal)
    # The same answer to another operation is not this refusal.
    assert not is_finished_task_refusal("SendMessage", refusal)


def test_other_refusals_stay_errors() -> None:
    no_streaming = UnsupportedOperationError("This agent does not support streaming")
    assert not is_finished_task_refusal("SubscribeToTask", no_streaming)
    waiting = UnsupportedOperationError(
        "no longer waiting", metadata={"taskId": "t", "state": TaskState.WORKING.value}
    )
    assert not is_finished_task_refusal("SubscribeToTask", waiting, streaming=True)
    other = InvalidParamsError("bad", metadata={"state": TaskState.COMPLETED.value})
    assert not is_finished_task_refusal("SubscribeToTask", other, streaming=True)


def test_from_an_agent_that_says_no_state_streaming_decides() -> None:
    # Another SDK's refusal carries no state: if the agent streams, a finished task is the
    # only cause the spec leaves for it.
    bare = UnsupportedOperationError("Task t is in a terminal state")
    assert is_finished_task_refusal("SubscribeToTask", bare, streaming=True)
    assert not is_finished_task_refusal("SubscribeToTask", bare, streaming=False)
