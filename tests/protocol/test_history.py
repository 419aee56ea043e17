"""historyLength (A2A spec §3.2.4): unset = all, 0 = none, n = the n most recent, < 0 invalid."""

from __future__ import annotations

import pytest

from peerwire.errors import InvalidParamsError
from peerwire.protocol import check_history_length, trim_history

HISTORY = ["m1", "m2", "m3", "m4", "m5"]  # oldest first


def test_unset_returns_everything_as_a_copy() -> None:
    got = trim_history(HISTORY, None)
    assert got == ["m1", "m2", "m3", "m4", "m5"]
    assert got is not HISTORY
    got.append("x")
    assert HISTORY == ["m1", "m2", "m3", "m4", "m5"]


def test_zero_returns_nothing() -> None:
    assert trim_history(HISTORY, 0) == []


@pytest.mark.parametrize(
    ("length", "expected"),
    [
        (1, ["m5"]),
        (2, ["m4", "m5"]),
        (4, ["m2", "m3", "m4", "m5"]),
        (5, ["m1", "m2", "m3", "m4", "m5"]),
    ],
)
def test_n_returns_the_most_recent_n_in_chronological_order(
    length: int, expected: list[str]
) -> None:
    assert trim_history(HISTORY, length) == expected


@pytest.mark.parametrize("length", [6, 50, 2**31 - 1])
def test_more_than_available_returns_everything(length: int) -> None:
    assert trim_history(HISTORY, length) == HISTORY


@pytest.mark.parametrize("length", [None, 0, 1, 10])
def test_empty_history(length: int | None) -> None:
    assert trim_history([], length) == []


def test_any_sequence_is_accepted() -> None:
    assert trim_history(("a", "b", "c"), 2) == ["b", "c"]


@pytest.mark.parametrize("length", [-1, -5, -(2**31)])
def test_negative_is_a_validation_error(length: int) -> None:
    with pytest.raises(InvalidParamsError) as caught:
        trim_history(HISTORY, length)
    assert [v.field for v in caught.value.field_violations] == ["historyLength"]
    assert str(length) in caught.value.message


@pytest.mark.parametrize("length", [None, 0, 3])
def test_check_accepts_unset_and_non_negative(length: int | None) -> None:
    check_history_length(length)


def test_check_names_the_given_field() -> None:
    with pytest.raises(InvalidParamsError) as caught:
        check_history_length(-2, "configuration.historyLength")
    assert [v.field for v in caught.value.field_violations] == ["configuration.historyLength"]
