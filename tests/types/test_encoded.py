"""``Encoded``: an A2A object already in canonical ProtoJSON, which ``encode`` hands back as it
is and ``decode`` turns back into the object."""

from __future__ import annotations

import pytest

from peerwire.types import Encoded, Task, TaskState, TaskStatus, encode


def _task() -> Task:
    return Task(id="t-1", context_id="c-1", status=TaskStatus(state=TaskState.COMPLETED))


def test_encode_returns_the_bytes_themselves() -> None:
    json = encode(_task())
    encoded = Encoded(json, Task)
    assert encode(encoded) is json


def test_decode_gives_back_the_object() -> None:
    task = _task()
    assert Encoded(encode(task), Task).decode() == task


def test_other_values_still_encode_and_unknown_ones_still_fail() -> None:
    assert encode({"a": [1, "x"]}) == b'{"a":[1,"x"]}'
    with pytest.raises(TypeError):
        encode(object())
