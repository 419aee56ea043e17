"""``historyLength`` (A2A spec §3.2.4): unset means all, 0 none, n the n latest, < 0 invalid."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from ..errors import FieldViolation, InvalidParamsError

__all__ = ["check_history_length", "trim_history"]

T = TypeVar("T")


def check_history_length(history_length: int | None, field: str = "historyLength") -> None:
    if history_length is not None and history_length < 0:
        raise InvalidParamsError(
            f"{field} must be 0 or more, got {history_length}",
            field_violations=(FieldViolation(field=field, description="must be >= 0"),),
        )


def trim_history(history: Sequence[T], history_length: int | None) -> list[T]:
    """The most recent ``history_length`` entries in chronological order."""
    check_history_length(history_length)
    if history_length is None:
        return list(history)
    if history_length == 0:
        return []
    return list(history[-history_length:])
