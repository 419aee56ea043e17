"""The protocol's rules, sans I/O: the one home of every A2A rule the code base applies.

Nothing here performs I/O or imports asyncio, httpx, starlette, uvicorn or grpc (a test checks
this): the state machine (``states``), which task a message continues (``continuation``),
folding events into tasks (``fold``), ``historyLength`` (``history``), ListTasks paging
(``paging``), service-parameter negotiation (``negotiation``), the refusal of a
subscription to a finished task (``subscription``) and the machine-readable reason a status
message carries (``reasons``).
"""

from .continuation import Continue, NewTask, no_longer_waiting, resolve_continuation
from .fold import Event, TaskRecord, fold_events
from .history import check_history_length, trim_history
from .media import covers, part_media_type, uncovered_parts
from .negotiation import (
    PROTOCOL_VERSION,
    active_extensions,
    check_version,
    format_extensions,
    negotiate_extensions,
    parse_extensions,
)
from .paging import ListQuery, list_query, select_page, sort_key
from .reasons import (
    INTERRUPTED_REASON,
    STATUS_REASON_KEY,
    status_reason,
    status_reason_metadata,
)
from .states import (
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
from .subscription import TASK_FINISHED, finished_task_refusal, is_finished_task_refusal

__all__ = [
    "ACTIVE",
    "INITIAL",
    "INTERRUPTED",
    "INTERRUPTED_REASON",
    "PROTOCOL_VERSION",
    "STATUS_REASON_KEY",
    "TASK_FINISHED",
    "TERMINAL",
    "Continue",
    "Event",
    "ListQuery",
    "NewTask",
    "TaskRecord",
    "active_extensions",
    "can_transition",
    "check_history_length",
    "check_transition",
    "check_version",
    "closes_stream",
    "covers",
    "ends_blocking_wait",
    "finished_task_refusal",
    "fold_events",
    "format_extensions",
    "is_finished_task_refusal",
    "is_interrupted",
    "is_terminal",
    "list_query",
    "negotiate_extensions",
    "no_longer_waiting",
    "parse_extensions",
    "part_media_type",
    "resolve_continuation",
    "select_page",
    "sort_key",
    "status_reason",
    "status_reason_metadata",
    "trim_history",
    "uncovered_parts",
]
