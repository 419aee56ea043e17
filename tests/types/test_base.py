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


def test_now_timestamp_is_rfc3339_utc_with_six_digits() -> None:
    before = time.time()
    stamp = now_timestamp()
    after = time.time()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z", stamp)
    # Accurate to the millisecond (the last three digits order the stamps within it).
    assert before - 0.001 <= parse_timestamp(stamp).timestamp() <= after + 0.001


def test_now_timestamp_never_repeats_within_a_process() -> None:
    # ListTasks puts the newest first: stamps taken in a burst must still be in order.
    stamps = [now_timestamp() for _ in range(10_000)]
    assert stamps == sorted(stamps)
    assert len(set(stamps)) == len(stamps)


def test_now_timestamp_moves_on() -> None:
    first = now_timestamp()
    time.sleep(0.002)
    assert now_timestamp() > first


def test_now_timestamp_keeps_six_digits_through_a_protobuf_timestamp() -> None:
    # ProtoJSON writes a Timestamp with 3, 6 or 9 digits: a stamp ending in 000 would come
    # back from gRPC shortened, and no longer equal to the one the store and JSON carry.
    stamps = [now_timestamp() for _ in range(3000)]
    assert not [stamp for stamp in stamps if stamp.endswith("000Z")]
