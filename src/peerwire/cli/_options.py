"""Arguments and options the calling commands share, so each means the same everywhere."""

from __future__ import annotations

import enum
from typing import Annotated

import typer

from ._auth import ENV_API_KEY, ENV_BEARER, ENV_HEADERS

__all__ = [
    "ApiKeyOption",
    "BearerOption",
    "BindingName",
    "BindingOption",
    "FileBytesName",
    "HeaderOption",
    "JsonOption",
    "TaskIdArgument",
    "TimeoutOption",
    "UrlArgument",
    "V03FileBytesOption",
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

# The agent's card says which credentials it takes and where they go; these options give
# them (see _auth.py). Their variables are read by _auth, not by typer, so that a variable
# and its flag combine as documented.
_AUTH_PANEL = "Authentication"

HeaderOption = Annotated[
    list[str] | None,
    typer.Option(
        "--header",
        "-H",
        metavar="NAME:VALUE",
        help=(
            "Send this header with every request, the card's too (repeatable). Also "
            f"{ENV_HEADERS}: one NAME:VALUE a line."
        ),
        show_default=False,
        rich_help_panel=_AUTH_PANEL,
    ),
]

BearerOption = Annotated[
    str | None,
    typer.Option(
        "--bearer",
        metavar="TOKEN",
        help=(
            "A bearer token, sent as 'Authorization: Bearer TOKEN' where the card asks for "
            f"one (HTTP Bearer, OAuth 2.0, OpenID Connect). Also {ENV_BEARER}."
        ),
        show_default=False,
        rich_help_panel=_AUTH_PANEL,
    ),
]

ApiKeyOption = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        metavar="KEY",
        help=(
            "An API key, sent where the card's API key scheme says (its header, query "
            f"parameter or cookie). Also {ENV_API_KEY}."
        ),
        show_default=False,
        rich_help_panel=_AUTH_PANEL,
    ),
]


class FileBytesName(enum.StrEnum):
    """The names ``--v03-file-bytes`` takes (``peerwire.compat.v03.files.FileBytes``)."""

    auto = "auto"
    content = "content"
    base64 = "base64"


V03FileBytesOption = Annotated[
    FileBytesName,
    typer.Option(
        "--v03-file-bytes",
        case_sensitive=False,
        help="File bytes to an A2A 0.3 agent over HTTP+JSON or gRPC: base64 sends the base64 "
        "text a2a-sdk agents expect; auto and content send the content (docs/COMPATIBILITY.md).",
    ),
]
