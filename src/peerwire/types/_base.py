"""The base every A2A type shares, and the proto enums.

Wire rules live in the base class so no type restates them: camelCase member names, fields
equal to their proto default omitted (presence fields use ``None`` and are emitted whenever
set), instances immutable and invisible to the cyclic garbage collector (they never form
cycles, and a busy server holds hundreds of thousands of them).
"""

from __future__ import annotations

import enum
import time
from datetime import UTC, datetime
from typing import Annotated, Any, Self

import msgspec

__all__ = [
    "Model",
    "Role",
    "TaskState",
    "Timestamp",
    "now_timestamp",
    "parse_timestamp",
]


class Model(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    rename="camel",
    omit_defaults=True,
    gc=False,
):
    """Base of every A2A object: frozen, keyword-only, ProtoJSON on the wire."""

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` applied, the object itself unchanged (it is frozen)::

            extended = card.replace(skills=[*card.skills, admin_skill])

        Each change is a field name (snake_case, as the constructor takes it) and its new
        value; the new object is checked as the constructor checks it (``__post_init__``).
        An unknown name raises ``TypeError``.
        """
        return msgspec.structs.replace(self, **changes)


class TaskState(enum.Enum):
    """The state of a task (A2A spec §4.1). Values are the ProtoJSON names."""

    UNSPECIFIED = "TASK_STATE_UNSPECIFIED"
    SUBMITTED = "TASK_STATE_SUBMITTED"
    WORKING = "TASK_STATE_WORKING"
    COMPLETED = "TASK_STATE_COMPLETED"
    FAILED = "TASK_STATE_FAILED"
    CANCELED = "TASK_STATE_CANCELED"
    INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
    REJECTED = "TASK_STATE_REJECTED"
    AUTH_REQUIRED = "TASK_STATE_AUTH_REQUIRED"

    # Members are singletons that compare by identity, so they hash by identity too: in C,
    # where Enum's own __hash__ is a Python call (state checks run on every event).
    __hash__ = object.__hash__

    @property
    def number(self) -> int:
        """The proto enum number (gRPC wire value)."""
        return _TASK_STATE_NUMBERS[self]

    @classmethod
    def from_number(cls, number: int) -> TaskState:
        return _TASK_STATES_BY_NUMBER[number]


_TASK_STATE_NUMBERS = {
    TaskState.UNSPECIFIED: 0,
    TaskState.SUBMITTED: 1,
    TaskState.WORKING: 2,
    TaskState.COMPLETED: 3,
    TaskState.FAILED: 4,
    TaskState.CANCELED: 5,
    TaskState.INPUT_REQUIRED: 6,
    TaskState.REJECTED: 7,
    TaskState.AUTH_REQUIRED: 8,
}
_TASK_STATES_BY_NUMBER = {n: s for s, n in _TASK_STATE_NUMBERS.items()}


class Role(enum.Enum):
    """Who authored a message (A2A spec §4.1)."""

    UNSPECIFIED = "ROLE_UNSPECIFIED"
    USER = "ROLE_USER"
    AGENT = "ROLE_AGENT"

    __hash__ = object.__hash__  # as TaskState's: identity, in C

    @property
    def number(self) -> int:
        return _ROLE_NUMBERS[self]

    @classmethod
    def from_number(cls, number: int) -> Role:
        return _ROLES_BY_NUMBER[number]


_ROLE_NUMBERS = {Role.UNSPECIFIED: 0, Role.USER: 1, Role.AGENT: 2}
_ROLES_BY_NUMBER = {n: r for r, n in _ROLE_NUMBERS.items()}

# google.protobuf.Timestamp in its JSON form. Kept as the string itself: servers create far more
# timestamps than they parse, and a str costs no GC tracking. The pattern is RFC 3339 in UTC.
_RFC3339 = r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$"
Timestamp = Annotated[str, msgspec.Meta(pattern=_RFC3339)]


_last_millisecond = -1  # the millisecond the current stamps are in
_millisecond_prefix = ""  # "YYYY-MM-DDTHH:MM:SS.mmm" of it
_sequence = 0  # how many stamps it has had
_last_second = -1
_second_prefix = ""
# The last three digits of a stamp and its "Z": the stamp's place within its millisecond.
_ORDER_DIGITS = tuple(f"{i:03d}Z" for i in range(1000))
_time = time.time


def now_timestamp() -> str:
    """The current time as an RFC 3339 UTC timestamp with six fractional digits, strictly
    increasing within a process.

    ListTasks orders tasks by status timestamp, newest first: stamps that never repeat keep
    that order the order things happened in, even for tasks created within one millisecond
    (ids are random, so a tie broken by id would be a random order). The first three digits
    are the millisecond; the last three number the stamps taken within it (001, 002, ...),
    so a stamp is accurate to the millisecond and costs a table lookup, not a formatting
    (formatting microseconds on every call was ~1% of a SendMessage). Never 000: a stamp's
    six digits then survive the round trip through a protobuf Timestamp, whose JSON form
    would shorten ``.123000`` to ``.123``. A clock that steps back, or 999 stamps in one
    millisecond, carries on from the last stamp instead.
    """
    global _last_millisecond, _millisecond_prefix, _sequence
    millisecond = int(_time() * 1000)
    if millisecond > _last_millisecond:
        _last_millisecond = millisecond
        _millisecond_prefix = _prefix(millisecond)
        _sequence = 1
        return _millisecond_prefix + "001Z"
    _sequence += 1
    if _sequence == 1000:
        _last_millisecond += 1
        _millisecond_prefix = _prefix(_last_millisecond)
        _sequence = 1
    return _millisecond_prefix + _ORDER_DIGITS[_sequence]


def _prefix(millisecond: int) -> str:
    """``YYYY-MM-DDTHH:MM:SS.mmm`` of ``millisecond``; the date and time formatted once per
    second (strftime was a visible share of a request)."""
    global _last_second, _second_prefix
    second, fraction = divmod(millisecond, 1000)
    if second != _last_second:
        _second_prefix = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S.")
        _last_second = second
    return f"{_second_prefix}{fraction:03d}"


def parse_timestamp(value: str) -> datetime:
    """Parse a ProtoJSON timestamp (any fraction, ``Z`` or an offset) to an aware datetime."""
    text = value.strip()
    if text[-1:] in ("Z", "z"):
        text = text[:-1] + "+00:00"
    if "." in text:
        # datetime.fromisoformat on 3.11 takes at most 6 fractional digits; ProtoJSON allows 9.
        head, _, rest = text.partition(".")
        digits = ""
        while rest and rest[0].isdigit():
            digits, rest = digits + rest[0], rest[1:]
        text = f"{head}.{(digits + '000000')[:6]}{rest}"
    parsed = datetime.fromisoformat(text.replace("t", "T"))
    if parsed.tzinfo is None:
        raise ValueError(f"timestamp {value!r} has no time zone")
    return parsed.astimezone(UTC)
