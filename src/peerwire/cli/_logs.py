"""The logging options ``peerwire serve`` and ``peerwire worker`` share (docs/OPERATIONS.md)."""

from __future__ import annotations

import enum
import logging
from typing import Annotated

import typer

__all__ = ["LogFormatName", "LogFormatOption", "LogLevelOption"]


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
