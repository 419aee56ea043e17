"""ListTasks rules (A2A spec §3.1.4): validation, filters, ordering, cursor pages, totalSize."""

from __future__ import annotations

import base64
import math
from datetime import UTC, datetime, timedelta

import pytest

from peerwire.errors import InvalidParamsError
from peerwire.protocol import list_query, select_page, sort_key
from peerwire.protocol.paging import ListQuery
from peerwire.types import (
    ListTasksRequest,
    ListTasksResponse,
    Task,
    TaskState,
    TaskStatus,
    decode,
    encode,
)

S = TaskState
BASE = datetime(2026, 1, 1, tzinfo=UTC)


def stamp(seconds: float) -> str:
    moment = BASE + timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def task(
    task_id: str,
    timestamp: str | None,
    state: TaskState = S.WORKING,
    context_id: str = "c-1",
) -> Task:
    return Task(
        id=task_id, context_id=context_id, status=TaskStatus(state=state, timestamp=timestamp)
    )


def candidates(tasks: list[Task]) -> list[tuple[str, str, TaskState, str, Task]]:
    return [(sort_key(t.status.timestamp), t.id, t.status.state, t.context_id, t) for t in tasks]


def page(request: ListTasksRequest, tasks: list[Task]) -> tuple[list[str], str, int]:
    items, token, total = select_page(list_query(request), candidates(tasks))
    return [t.id for t in items], token, total


def field_of(err: InvalidParamsError) -> list[str]:
    return [v.field for v in err.field_violations]


# --- validation -------------------------------------------------------------------------------


def test_defaults() -> None:
    query = list_query(ListTasksRequest())
    assert query == ListQuery(
        context_id="",
        status=None,
        page_size=50,
        cursor=None,
        history_length=None,
        status_after=None,
        include_artifacts=False,
    )


def test_default_page_size_is_50() -> None:
    tasks = [task(f"t-{i:03d}", stamp(i)) for i in range(120)]
    ids, token, total = page(ListTasksRequest(), tasks)
    assert len(ids) == 50
    assert token != ""
    assert total == 120


@pytest.mark.parametrize("size", [1, 2, 50, 99, 100])
def test_page_size_within_bounds(size: int) -> None:
    assert list_query(ListTasksRequest(page_size=size)).page_size == size


@pytest.mark.parametrize("size", [0, -1, 101, 150, 2**31 - 1])
def test_page_size_out_of_bounds_is_rejected(size: int) -> None:
    with pytest.raises(InvalidParamsError) as caught:
        list_query(ListTasksRequest(page_size=size))
    assert field_of(caught.value) == ["pageSize"]
    assert str(size) in caught.value.message


def test_page_size_from_a_numeric_string_is_validated_too() -> None:
    request = decode(b'{"pageSize":"150"}', ListTasksRequest)
    with pytest.raises(InvalidParamsError):
        list_query(request)


@pytest.mark.parametrize("length", [-1, -5])
def test_negative_history_length_is_rejected(length: int) -> None:
    with pytest.raises(InvalidParamsError) as caught:
        list_query(ListTasksRequest(history_length=length))
    assert field_of(caught.value) == ["historyLength"]


@pytest.mark.parametrize("length", [0, 3])
def test_history_length_is_carried(length: int) -> None:
    assert list_query(ListTasksRequest(history_length=length)).history_length == length


def test_include_artifacts() -> None:
    assert list_query(ListTasksRequest(include_artifacts=True)).include_artifacts is True
    assert list_query(ListTasksRequest(include_artifacts=False)).include_artifacts is False


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    "token",
    [
        "not a token!",
        "abc",
        "%%%",
        _b64(b"not json"),
        _b64(b"null"),
        _b64(b'"ab"'),  # a 2-character string would unpack into two values
        _b64(b'{"k":1,"t":2}'),  # so would a 2-key object
        _b64(b'["only-one"]'),
        _b64(b'["a","b","c"]'),
        _b64(b'[1,"t-1"]'),
        _b64(b'["2026",null]'),
        _b64(b"\xff\xfe\xfd"),
        _b64(b"[" * 5000),  # deeper than the JSON parser goes
    ],
)
def test_bad_page_tokens_are_rejected(token: str) -> None:
    with pytest.raises(InvalidParamsError) as caught:
        list_query(ListTasksRequest(page_token=token))
    assert field_of(caught.value) == ["pageToken"]


def test_empty_page_token_is_the_first_page() -> None:
    assert list_query(ListTasksRequest(page_token="")).cursor is None


@pytest.mark.parametrize("stamp", ["9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+23:59"])
def test_a_status_timestamp_after_beyond_the_calendar_in_utc_is_rejected(stamp: str) -> None:
    with pytest.raises(InvalidParamsError) as caught:
        list_query(ListTasksRequest(status_timestamp_after=stamp))
    assert field_of(caught.value) == ["statusTimestampAfter"]


def test_bad_status_timestamp_after_is_rejected() -> None:
    with pytest.raises(InvalidParamsError) as caught:
        list_query(ListTasksRequest(status_timestamp_after="2026-13-45T00:00:00Z"))
    assert field_of(caught.value) == ["statusTimestampAfter"]


def test_unknown_status_name_is_rejected_when_decoding() -> None:
    with pytest.raises(InvalidParamsError):
        decode(b'{"status":"TASK_STATE_SLEEPING"}', ListTasksRequest)


# --- filters ----------------------------------------------------------------------------------

MIXED = [
    task("t-sub", stamp(1), S.SUBMITTED),
    task("t-wrk", stamp(2), S.WORKING),
    task("t-done", stamp(3), S.COMPLETED, context_id="c-2"),
    task("t-inp", stamp(4), S.INPUT_REQUIRED, context_id="c-2"),
    task("t-auth", stamp(5), S.AUTH_REQUIRED),
]


def test_unspecified_status_means_no_filter() -> None:
    assert list_query(ListTasksRequest(status=S.UNSPECIFIED)).status is None
    ids, _, total = page(ListTasksRequest(status=S.UNSPECIFIED), MIXED)
    assert total == 5
    assert set(ids) == {"t-sub", "t-wrk", "t-done", "t-inp", "t-auth"}


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (S.SUBMITTED, ["t-sub"]),
        (S.COMPLETED, ["t-done"]),
        (S.AUTH_REQUIRED, ["t-auth"]),
        (S.CANCELED, []),
    ],
)
def test_status_filter(state: TaskState, expected: list[str]) -> None:
    ids, token, total = page(ListTasksRequest(status=state), MIXED)
    assert (ids, token, total) == (expected, "", len(expected))


def test_context_filter() -> None:
    assert page(ListTasksRequest(context_id="c-2"), MIXED) == (["t-inp", "t-done"], "", 2)
    assert page(ListTasksRequest(context_id="c-404"), MIXED) == ([], "", 0)


def test_filters_combine() -> None:
    request = ListTasksRequest(context_id="c-2", status=S.COMPLETED)
    assert page(request, MIXED) == (["t-done"], "", 1)


def test_status_timestamp_after_is_inclusive() -> None:
    tasks = [task("t-before", stamp(9.999)), task("t-at", stamp(10)), task("t-after", stamp(11))]
    ids, _, total = page(ListTasksRequest(status_timestamp_after=stamp(10)), tasks)
    assert ids == ["t-after", "t-at"]
    assert total == 2


def test_status_timestamp_after_compares_instants_not_spellings() -> None:
    tasks = [task("t-at", "2026-01-01T00:00:10.000Z"), task("t-before", "2026-01-01T00:00:09Z")]
    # the same instant written with an offset and without a fraction
    request = ListTasksRequest(status_timestamp_after="2026-01-01T01:00:10+01:00")
    assert page(request, tasks)[0] == ["t-at"]


def test_tasks_without_timestamp_fail_a_timestamp_filter() -> None:
    tasks = [task("t-none", None), task("t-new", stamp(5))]
    assert page(ListTasksRequest(status_timestamp_after=stamp(0)), tasks)[0] == ["t-new"]


# --- ordering ---------------------------------------------------------------------------------


def test_newest_status_first() -> None:
    tasks = [task("t-a", stamp(1)), task("t-c", stamp(3)), task("t-b", stamp(2))]
    assert page(ListTasksRequest(), tasks)[0] == ["t-c", "t-b", "t-a"]


def test_ties_are_broken_by_id_descending() -> None:
    tasks = [task(i, stamp(7)) for i in ("t-2", "t-10", "t-1", "t-3")]
    assert page(ListTasksRequest(), tasks)[0] == ["t-3", "t-2", "t-10", "t-1"]


def test_order_is_by_instant_across_timestamp_spellings() -> None:
    tasks = [
        task("t-whole-second", "2026-01-01T00:00:00Z"),  # a string compare would put "Z" last
        task("t-plus-1ms", "2026-01-01T00:00:00.001Z"),
        task("t-offset-earlier", "2026-01-01T00:59:59.500+01:00"),  # 23:59:59.500Z the day before
        task("t-nanos", "2026-01-01T00:00:00.000500000Z"),
    ]
    assert page(ListTasksRequest(), tasks)[0] == [
        "t-plus-1ms",
        "t-nanos",
        "t-whole-second",
        "t-offset-earlier",
    ]


def test_tasks_without_timestamp_come_last() -> None:
    tasks = [task("t-none", None), task("t-old", stamp(0)), task("t-new", stamp(1))]
    assert page(ListTasksRequest(), tasks)[0] == ["t-new", "t-old", "t-none"]


def test_sort_key_orders_like_the_instants() -> None:
    assert sort_key("2026-01-01T00:00:00Z") == sort_key("2026-01-01T00:00:00.000Z")
    assert sort_key("2026-01-01T01:00:00+01:00") == sort_key("2026-01-01T00:00:00.000Z")
    assert sort_key("2026-01-01T00:00:00Z") < sort_key("2026-01-01T00:00:00.001Z")
    assert sort_key(None) == sort_key("") == ""
    assert sort_key(None) < sort_key("1970-01-01T00:00:00Z")


# --- walking pages ----------------------------------------------------------------------------


def _store(count: int) -> list[Task]:
    # 237 tasks over 40 distinct timestamps: plenty of ties for the cursor to get through,
    # inserted in a scrambled order.
    order = sorted(range(count), key=lambda i: (i * 7919) % count)
    return [task(f"t-{i:04d}", stamp(i % 40), context_id=f"c-{i % 3}") for i in order]


def _expected_order(tasks: list[Task]) -> list[str]:
    def key(t: Task) -> tuple[datetime, str]:
        assert t.status.timestamp is not None
        return datetime.fromisoformat(t.status.timestamp.replace("Z", "+00:00")), t.id

    return [t.id for t in sorted(tasks, key=key, reverse=True)]


def _walk(request: ListTasksRequest, tasks: list[Task]) -> tuple[list[list[str]], list[int]]:
    pages: list[list[str]] = []
    totals: list[int] = []
    token = ""
    while True:
        ids, token, total = page(
            ListTasksRequest(
                context_id=request.context_id, page_size=request.page_size, page_token=token
            ),
            tasks,
        )
        pages.append(ids)
        totals.append(total)
        if token == "":
            return pages, totals
        assert len(pages) <= len(tasks) + 1, "paging does not terminate"


@pytest.mark.parametrize("size", [None, 1, 7, 10, 79, 100])
def test_walking_every_page_visits_each_task_exactly_once(size: int | None) -> None:
    tasks = _store(237)
    pages, totals = _walk(ListTasksRequest(page_size=size), tasks)
    visited = [task_id for p in pages for task_id in p]
    assert visited == _expected_order(tasks)  # each once, in the global order
    assert len(set(visited)) == 237
    effective = 50 if size is None else size
    assert len(pages) == math.ceil(237 / effective)
    assert all(len(p) == effective for p in pages[:-1])
    assert 1 <= len(pages[-1]) <= effective
    assert totals == [237] * len(pages)


def test_walking_with_a_filter_counts_only_matches() -> None:
    tasks = _store(237)
    pages, totals = _walk(ListTasksRequest(context_id="c-1", page_size=25), tasks)
    visited = [task_id for p in pages for task_id in p]
    expected = _expected_order([t for t in tasks if t.context_id == "c-1"])
    assert visited == expected
    assert totals == [len(expected)] * len(pages)
    assert len(expected) == 79


def test_exactly_full_last_page_has_an_empty_token() -> None:
    tasks = [task(f"t-{i}", stamp(i)) for i in range(20)]
    first, token, _ = page(ListTasksRequest(page_size=10), tasks)
    second, last_token, _ = page(ListTasksRequest(page_size=10, page_token=token), tasks)
    assert len(first) == len(second) == 10
    assert last_token == ""


def test_single_page_and_empty_store() -> None:
    assert page(ListTasksRequest(), [task("t-1", stamp(0))]) == (["t-1"], "", 1)
    assert page(ListTasksRequest(), []) == ([], "", 0)


def test_cursor_is_stable_when_newer_tasks_arrive_between_pages() -> None:
    tasks = [task(f"t-{i:02d}", stamp(i)) for i in range(30)]
    first, token, _ = page(ListTasksRequest(page_size=10), tasks)
    tasks.append(task("t-newest", stamp(1000)))
    rest: list[str] = []
    while token:
        ids, token, _ = page(ListTasksRequest(page_size=10, page_token=token), tasks)
        rest.extend(ids)
    assert "t-newest" not in rest
    assert first + rest == [f"t-{i:02d}" for i in reversed(range(30))]


def test_tokens_are_opaque_url_safe_strings() -> None:
    _, token, _ = page(
        ListTasksRequest(page_size=1), [task("t-1", stamp(0)), task("t-2", stamp(1))]
    )
    assert token
    assert set(token) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


# --- the response on the wire -------------------------------------------------------------------


def test_last_page_response_keeps_next_page_token_and_counts() -> None:
    items, token, total = select_page(list_query(ListTasksRequest()), candidates([]))
    response = ListTasksResponse(tasks=items, next_page_token=token, page_size=50, total_size=total)
    assert encode(response) == b'{"tasks":[],"nextPageToken":"","pageSize":50,"totalSize":0}'
