"""Arguments and options the calling commands share, so each means the same everywhere."""

from __future__ import annotations

import enum
from typing import Annotated

import typer

__all__ = [
    "BindingName",
    "BindingOption",
    "JsonOption",
    "TaskIdArgument",
    "TimeoutOption",
    "UrlArgument",
]

UrlArgument = Annotated[
    str,
    typer.Argument(
        help="The agent's base URL (the card is at /.well-known/agent-card.json), or the card's.",
        show_default=False,
    ),
]

TaskIdArgument = Annotated[str, typer.Argument(help="The task's id.", show_default=False)]


class BindingName(enum.StrEnum):
    """The names ``--binding`` takes: those of ``peerwire serve --interfaces``."""

    jsonrpc = "jsonrpc"
    rest = "rest"
    grpc = "grpc"


BindingOption = Annotated[
    BindingName | None,
    typer.Option(
        "--binding",
        case_sensitive=False,
        help="Call the card's interface of this binding (default: the card's first usable one).",
        show_default=False,
    ),
]

TimeoutOption = Annotated[
    float,
    typer.Option(
        "--timeout",
        min=0.001,
        help="Seconds to wait for each answer, and for the next event of a stream.",
    ),
]

JsonOption = Annotated[
    bool,
    typer.Option(
        "--json",
        help="Print the A2A objects themselves as JSON (a stream: one StreamResponse a line).",
    ),
]
