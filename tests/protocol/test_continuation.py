"""Which task a message starts or continues."""

from __future__ import annotations

import pytest

from peerwire.errors import (
    InvalidParamsError,
    TaskNotFoundError,
    UnsupportedOperationError,
    wire_info,
)
from peerwire.protocol import Continue, NewTask, resolve_continuation
from peerwire.types import Message, Part, Role, TaskState

S = TaskState
NON_TERMINAL = [S.SUBMITTED, S.WORKING, S.INPUT_REQUIRED, S.AUTH_REQUIRED]
TERMINAL = [S.COMPLETED, S.FAILED, S.CANCELED, S.REJECTED]


def message(task_id: str = "", context_id: str = "", **extra: object) -> Message:
    return Message(
        message_id="m-1",
        role=Role.USER,
        parts=[Part(text="hi")],
        task_id=task_id,
        context_id=context_id,
        **extra,  # type: ignore[arg-type]
    )


def test_no_ids_starts_a_task_in_a_context_to_be_minted() -> None:
    assert resolve_continuation(message(), None) == NewTask(context_id="")


def test_context_only_starts_a_new_task_in_that_context() -> None:
    assert resolve_continuation(message(context_id="c-1"), None) == NewTask(context_id="c-1")


def test_unknown_client_context_is_adopted_not_replaced() -> None:
    assert resolve_continuation(message(context_id="never-seen"), None) == NewTask("never-seen")


def test_reference_task_ids_need_no_existing_task() -> None:
    msg = message(context_id="c-1", reference_task_ids=["t-old", "t-gone"])
    assert resolve_continuation(msg, None) == NewTask(context_id="c-1")


def test_no_task_id_ignores_whatever_existing_says() -> None:
    # existing describes message.task_id; without one it is irrelevant
    assert resolve_continuation(message(), ("c-9", S.COMPLETED)) == NewTask(context_id="")


def test_unknown_task_id_is_task_not_found() -> None:
    with pytest.raises(TaskNotFoundError) as caught:
        resolve_continuation(message(task_id="t-404"), None)
    assert caught.value.metadata == {"taskId": "t-404"}
    assert wire_info(caught.value).jsonrpc_code == -32001
    assert "t-404" in caught.value.message


def test_unknown_task_id_is_not_found_even_with_a_context() -> None:
    with pytest.raises(TaskNotFoundError):
        resolve_continuation(message(task_id="t-404", context_id="c-1"), None)


@pytest.mark.parametrize("state", NON_TERMINAL, ids=lambda s: s.name)
def test_task_id_only_continues_and_infers_the_context(state: TaskState) -> None:
    assert resolve_continuation(message(task_id="t-1"), ("c-1", state)) == Continue("t-1", "c-1")


@pytest.mark.parametrize("state", NON_TERMINAL, ids=lambda s: s.name)
def test_matching_ids_continue(state: TaskState) -> None:
    got = resolve_continuation(message(task_id="t-1", context_id="c-1"), ("c-1", state))
    assert got == Continue(task_id="t-1", context_id="c-1")


@pytest.mark.parametrize("state", NON_TERMINAL, ids=lambda s: s.name)
def test_mismatching_context_is_invalid_params(state: TaskState) -> None:
    with pytest.raises(InvalidParamsError) as caught:
        resolve_continuation(message(task_id="t-1", context_id="c-other"), ("c-1", state))
    assert wire_info(caught.value).jsonrpc_code == -32602
    assert caught.value.metadata == {"taskId": "t-1"}
    assert "c-other" in caught.value.message


@pytest.mark.parametrize("state", TERMINAL, ids=lambda s: s.name)
def test_terminal_task_is_unsupported_operation(state: TaskState) -> None:
    with pytest.raises(UnsupportedOperationError) as caught:
        resolve_continuation(message(task_id="t-1", context_id="c-1"), ("c-1", state))
    err = caught.value
    assert wire_info(err).jsonrpc_code == -32004  # not a new task, not -32602
    assert err.metadata == {"taskId": "t-1"}
    assert state.value in err.message


@pytest.mark.parametrize("state", TERMINAL, ids=lambda s: s.name)
def test_terminal_task_with_task_id_only(state: TaskState) -> None:
    with pytest.raises(UnsupportedOperationError):
        resolve_continuation(message(task_id="t-1"), ("c-1", state))


def test_results_are_immutable_values() -> None:
    result = resolve_continuation(message(task_id="t-1"), ("c-1", S.WORKING))
    assert isinstance(result, Continue)
    with pytest.raises(AttributeError):
        result.task_id = "other"  # type: ignore[misc]
    assert NewTask("c") == NewTask("c") and NewTask("c") != NewTask("d")
