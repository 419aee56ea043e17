"""ListTasks rules (A2A spec §3.1.4): validation, filtering, ordering and opaque page tokens.

Tasks are ordered by status timestamp, newest first, ties broken by task id (descending) so
the order is total. A page token is the position of the last task of the previous page:
``(sort key, id)``, base64url-encoded JSON. Stores that sort in SQL use ``sort_key`` and
``ListQuery.cursor`` to write the same ``WHERE`` clause.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from ..errors import FieldViolation, InvalidParamsError
from ..types import ListTasksRequest, TaskState, parse_timestamp
from .history import check_history_length

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "ListQuery",
    "decode_page_token",
    "encode_page_token",
    "list_query",
    "select_page",
    "sort_key",
]

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 100
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ListQuery:
    """A validated ListTasksRequest, in the form stores filter with."""

    context_id: str
    status: TaskState | None
    page_size: int
    cursor: tuple[str, str] | None
    history_length: int | None
    status_after: str | None
    include_artifacts: bool

    def matches(self, context_id: str, state: TaskState, status_key: str) -> bool:
        if self.context_id and context_id != self.context_id:
            return False
        if self.status is not None and state is not self.status:
            return False
        return self.status_after is None or status_key >= self.status_after

    def after_cursor(self, status_key: str, task_id: str) -> bool:
        return self.cursor is None or (status_key, task_id) < self.cursor


def _invalid(field: str, description: str) -> InvalidParamsError:
    return InvalidParamsError(
        f"Invalid parameters: {field} {description}",
        field_violations=(FieldViolation(field=field, description=description),),
    )


def sort_key(timestamp: str | None) -> str:
    """A string that sorts like the instant ``timestamp`` names (UTC, microseconds)."""
    if not timestamp:
        return ""
    # Fast paths for the forms servers write: this one's 2026-01-01T00:00:00.000000Z (every
    # event's stamp passes here: parsing it was ~3% of a SendMessage) and milliseconds.
    if len(timestamp) == 27 and timestamp[19] == "." and timestamp[26] == "Z":
        return timestamp[:26]
    if len(timestamp) == 24 and timestamp[19] == "." and timestamp[23] == "Z":
        return timestamp[:23] + "000"
    return parse_timestamp(timestamp).strftime("%Y-%m-%dT%H:%M:%S.%f")


def encode_page_token(status_key: str, task_id: str) -> str:
    raw = json.dumps([status_key, task_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_page_token(token: str) -> tuple[str, str]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        decoded = json.loads(raw)
    except (binascii.Error, ValueError, TypeError, RecursionError):
        raise _invalid("pageToken", "is not a token this server issued") from None
    # Only the two-element list encode_page_token writes: a 2-char string or a 2-key object
    # would otherwise unpack "successfully".
    if not isinstance(decoded, list) or len(decoded) != 2:
        raise _invalid("pageToken", "is not a token this server issued")
    key, task_id = decoded
    if not isinstance(key, str) or not isinstance(task_id, str):
        raise _invalid("pageToken", "is not a token this server issued")
    return key, task_id


def list_query(request: ListTasksRequest) -> ListQuery:
    """Validate ``request``: 1 <= pageSize <= 100, historyLength >= 0, a real token."""
    page_size = DEFAULT_PAGE_SIZE if request.page_size is None else request.page_size
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise _invalid("pageSize", f"must be between 1 and {MAX_PAGE_SIZE}, got {page_size}")
    check_history_length(request.history_length)
    status_after = None
    if request.status_timestamp_after is not None:
        try:
            status_after = sort_key(request.status_timestamp_after)
        except (ValueError, OverflowError):  # OverflowError: out of range once in UTC
            raise _invalid("statusTimestampAfter", "is not an RFC 3339 timestamp") from None
    status = None if request.status is TaskState.UNSPECIFIED else request.status
    return ListQuery(
        context_id=request.context_id,
        status=status,
        page_size=page_size,
        cursor=decode_page_token(request.page_token) if request.page_token else None,
        history_length=request.history_length,
        status_after=status_after,
        include_artifacts=bool(request.include_artifacts),
    )


def select_page(
    query: ListQuery, candidates: Iterable[tuple[str, str, TaskState, str, T]]
) -> tuple[list[T], str, int]:
    """Filter, order and page ``(status_key, task_id, state, context_id, item)`` tuples.

    Returns the page's items, the next page token (``""`` on the last page) and the number
    of matching tasks before paging.
    """
    matching = [c for c in candidates if query.matches(c[3], c[2], c[0])]
    matching.sort(key=lambda c: (c[0], c[1]), reverse=True)
    after = [c for c in matching if query.after_cursor(c[0], c[1])]
    page = after[: query.page_size]
    more = len(after) > query.page_size
    token = encode_page_token(page[-1][0], page[-1][1]) if more and page else ""
    return [c[4] for c in page], token, len(matching)
