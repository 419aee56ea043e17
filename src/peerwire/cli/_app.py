"""The typer application every command module registers on."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="peerwire",
    help="Serve, call and inspect Agent2Agent (A2A) 1.0 agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Serve, call and inspect Agent2Agent (A2A) 1.0 agents."""
