"""The task state machine against the full transition table its text implies.

The expected table is written out here cell by cell; it is not derived from the module's sets.
"""

from __future__ import annotations

import pytest

from peerwire.errors import IllegalTransitionError, InvalidAgentResponseError
from peerwire.protocol import states
from peerwire.protocol.states import (
    ACTIVE,
    INITIAL,
    INTERRUPTED,
    TERMINAL,
    can_transition,
    check_transition,
    closes_stream,
    ends_blocking_wait,
    is_interrupted,
    is_terminal,
)
from peerwire.types import TaskState

S = TaskState

# Columns: the target state, in proto enum-number order.
COLUMNS = [
    S.UNSPECIFIED,
    S.SUBMITTED,
    S.WORKING,
    S.COMPLETED,
    S.FAILED,
    S.CANCELED,
    S.INPUT_REQUIRED,
    S.REJECTED,
    S.AUTH_REQUIRED,
]
# Rows: the current state (None = the task does not exist yet). "+" legal, "." illegal.
#   creation: any real state (an agent may finish, reject or interrupt at once);
#   SUBMITTED: itself (a new status message), WORKING, interrupted, terminal;
#   WORKING / INPUT_REQUIRED / AUTH_REQUIRED: WORKING, interrupted, terminal (never back to
#   SUBMITTED); terminal: nothing; UNSPECIFIED is never a target and has no way out.
#
#                         UNS SUB WRK CMP FAI CAN INP REJ AUT
TABLE: dict[TaskState | None, str] = {
    None:                "  .   +   +   +   +   +   +   +   + ",
    S.UNSPECIFIED:       "  .   .   .   .   .   .   .   .   . ",
    S.SUBMITTED:         "  .   +   +   +   +   +   +   +   + ",
    S.WORKING:           "  .   .   +   +   +   +   +   +   + ",
    S.COMPLETED:         "  .   .   .   .   .   .   .   .   . ",
    S.FAILED:            "  .   .   .   .   .   .   .   .   . ",
    S.CANCELED:          "  .   .   .   .   .   .   .   .   . ",
    S.INPUT_REQUIRED:    "  .   .   +   +   +   +   +   +   + ",
    S.REJECTED:          "  .   .   .   .   .   .   .   .   . ",
    S.AUTH_REQUIRED:     "  .   .   +   +   +   +   +   +   + ",
}  # fmt: skip


def _cells() -> list[tuple[TaskState | None, TaskState, bool]]:
    cells: list[tuple[TaskState | None, TaskState, bool]] = []
    for source, row in TABLE.items():
        marks = row.split()
        assert len(marks) == len(COLUMNS), f"row {source} has {len(marks)} cells"
        cells.extend(
            (source, target, mark == "+") for target, mark in zip(COLUMNS, marks, strict=True)
        )
    return cells


CELLS = _cells()


def _id(cell: tuple[TaskState | None, TaskState, bool]) -> str:
    source, target, legal = cell
    name = "new" if source is None else source.name
    return f"{name}->{target.name}:{'legal' if legal else 'illegal'}"


def test_table_covers_every_pair() -> None:
    assert set(COLUMNS) == set(TaskState)
    assert set(TABLE) == {None, *TaskState}
    assert len(CELLS) == 10 * 9


@pytest.mark.parametrize("cell", CELLS, ids=_id)
def test_can_transition(cell: tuple[TaskState | None, TaskState, bool]) -> None:
    source, target, legal = cell
    assert can_transition(source, target) is legal


@pytest.mark.parametrize("cell", CELLS, ids=_id)
def test_check_transition(cell: tuple[TaskState | None, TaskState, bool]) -> None:
    source, target, legal = cell
    if legal:
        check_transition(source, target, "t-1")
        return
    with pytest.raises(IllegalTransitionError) as caught:
        check_transition(source, target, "t-1")
    err = caught.value
    assert isinstance(err, InvalidAgentResponseError)  # travels as -32006
    assert err.to_state == target.value
    assert err.from_state == (None if source is None else source.value)
    assert err.metadata["taskId"] == "t-1"
    assert target.value in err.message


def test_check_transition_without_task_id() -> None:
    with pytest.raises(IllegalTransitionError) as caught:
        check_transition(S.COMPLETED, S.WORKING)
    assert "taskId" not in caught.value.metadata
    assert "terminal" in caught.value.message


# The state classes: initial, active, interrupted, terminal.
def test_state_classes() -> None:
    assert frozenset({S.SUBMITTED, S.WORKING}) == ACTIVE
    assert frozenset({S.INPUT_REQUIRED, S.AUTH_REQUIRED}) == INTERRUPTED
    assert frozenset({S.COMPLETED, S.FAILED, S.CANCELED, S.REJECTED}) == TERMINAL
    assert set(TaskState) - {S.UNSPECIFIED} == INITIAL
    assert not (ACTIVE & INTERRUPTED or ACTIVE & TERMINAL or INTERRUPTED & TERMINAL)


@pytest.mark.parametrize("state", list(TaskState), ids=lambda s: s.name)
def test_is_terminal_and_is_interrupted(state: TaskState) -> None:
    terminal = state in {S.COMPLETED, S.FAILED, S.CANCELED, S.REJECTED}
    interrupted = state in {S.INPUT_REQUIRED, S.AUTH_REQUIRED}
    assert is_terminal(state) is terminal
    assert is_interrupted(state) is interrupted


# A2A spec §3.2.2: a blocking SendMessage waits until terminal OR interrupted.
ENDS_BLOCKING_WAIT = {
    S.UNSPECIFIED: False,
    S.SUBMITTED: False,
    S.WORKING: False,
    S.COMPLETED: True,
    S.FAILED: True,
    S.CANCELED: True,
    S.INPUT_REQUIRED: True,
    S.REJECTED: True,
    S.AUTH_REQUIRED: True,
}
# Streams close at terminal states and INPUT_REQUIRED; AUTH_REQUIRED keeps them open (§7.6.1).
CLOSES_STREAM = {
    S.UNSPECIFIED: False,
    S.SUBMITTED: False,
    S.WORKING: False,
    S.COMPLETED: True,
    S.FAILED: True,
    S.CANCELED: True,
    S.INPUT_REQUIRED: True,
    S.REJECTED: True,
    S.AUTH_REQUIRED: False,
}


@pytest.mark.parametrize("state", list(TaskState), ids=lambda s: s.name)
def test_ends_blocking_wait(state: TaskState) -> None:
    assert ends_blocking_wait(state) is ENDS_BLOCKING_WAIT[state]


@pytest.mark.parametrize("state", list(TaskState), ids=lambda s: s.name)
def test_closes_stream(state: TaskState) -> None:
    assert closes_stream(state) is CLOSES_STREAM[state]


def test_auth_required_keeps_the_stream_open_but_ends_the_blocking_wait() -> None:
    assert ends_blocking_wait(S.AUTH_REQUIRED)
    assert not closes_stream(S.AUTH_REQUIRED)


def test_module_exports() -> None:
    assert set(states.__all__) >= {
        "ACTIVE",
        "INITIAL",
        "INTERRUPTED",
        "TERMINAL",
        "can_transition",
        "check_transition",
        "closes_stream",
        "ends_blocking_wait",
    }
