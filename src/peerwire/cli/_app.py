"""The typer application every command module registers on."""

from __future__ import annotations

from typing import Annotated

import typer

from .._version import __version__
from ._exits import EXIT_CODES_HELP

app = typer.Typer(
    name="peerwire",
    help="Serve, call and inspect Agent2Agent (A2A) 1.0 agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Click's own help wraps long option names and text to the terminal; rich's tables cut
    # them short ("--message-retent…") at 80 columns.
    rich_markup_mode=None,
)


def _print_version(wanted: bool) -> None:
    if wanted:
        typer.echo(f"peerwire {__version__}")
        raise typer.Exit()


@app.callback(epilog=EXIT_CODES_HELP)
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print peerwire's version and exit.",
            callback=_print_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """Serve, call and inspect Agent2Agent (A2A) 1.0 agents."""
