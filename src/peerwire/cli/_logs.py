"""The logging options ``peerwire serve`` and ``peerwire worker`` share (docs/OPERATIONS.md)."""

from __future__ import annotations

import contextlib
import enum
import logging
from collections.abc import Iterator
from typing import Annotated

import typer

from ..ops.logs import root_writes_json

__all__ = ["LogFormatName", "LogFormatOption", "LogLevelOption", "exits_logged"]


class LogFormatName(enum.StrEnum):
    """The names ``--log-format`` takes (``peerwire.ops.LOG_FORMATS``)."""

    text = "text"
    json = "json"


def _known_level(value: str) -> str:
    if value.strip().upper() not in logging.getLevelNamesMapping():
        raise typer.BadParameter("expected debug, info, warning, error or critical")
    return value.strip().lower()


LogLevelOption = Annotated[
    str,
    typer.Option(
        callback=_known_level,
        help="Level of peerwire's log records (info: the start-up line, readiness changes, "
        "skills that raised).",
    ),
]

LogFormatOption = Annotated[
    LogFormatName,
    typer.Option(
        case_sensitive=False,
        help="How records are written to stderr: text, or json (one object a line, with "
        "task_id, context_id, skill, tenant ... as members).",
    ),
]


_EXIT = logging.getLogger("peerwire.cli")


@contextlib.contextmanager
def exits_logged() -> Iterator[None]:
    """Once ``--log-format json`` put its handler on the root logger, an exit that says why
    (``SystemExit("peerwire: cannot listen ...")``) is one CRITICAL record of
    ``peerwire.cli``: Python would write its text as a plain line, the one line of stderr
    that is not JSON. Usage errors before that (and text logs) are left as they are."""
    try:
        yield
    except SystemExit as exc:
        if not isinstance(exc.code, str) or not root_writes_json():
            raise
        _EXIT.critical("%s", exc.code)
        raise SystemExit(1) from None
