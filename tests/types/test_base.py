"""The enums' hashing and ``now_timestamp``."""

from __future__ import annotations

import pickle
import re
import time

from peerwire.types import Role, TaskState, now_timestamp, parse_timestamp


def test_enum_members_work_as_set_and_dict_keys() -> None:
    terminal = frozenset({TaskState.COMPLETED, TaskState.FAILED})
    assert TaskState.COMPLETED in terminal and TaskState.WORKING not in terminal
    assert TaskState("TASK_STATE_FAILED") in terminal
    assert pickle.loads(pickle.dumps(TaskState.FAILED)) in terminal
    by_role = {Role.USER: "u", Role.AGENT: "a"}
    assert by_role[Role("ROLE_AGENT")] == "a"
    assert len(set(TaskState)) == len(TaskState.__members__)


def test_now_timestamp_is_rfc3339_utc_with_milliseconds() -> None:
    before = time.time()
    stamp = now_timestamp()
    after = time.time()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z", stamp)
    # Milliseconds, truncated: at most one millisecond before the time it was taken.
    assert before - 0.001 <= parse_timestamp(stamp).timestamp() <= after


def test_now_timestamp_moves_on() -> None:
    first = now_timestamp()
    time.sleep(0.002)
    assert now_timestamp() > first
