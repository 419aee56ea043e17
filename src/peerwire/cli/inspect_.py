"""``peerwire inspect [URL]``: a local web page that shows what an A2A agent says on the wire
(docs/INSPECTOR.md)."""

from __future__ import annotations

from typing import Annotated

import typer

from ._app import app

_DEFAULT_PORT = 8787  # peerwire.inspect.DEFAULT_PORT (imported only when the command runs)


@app.command("inspect")
def inspect_command(
    url: Annotated[
        str,
        typer.Argument(
            help="The agent to inspect (its base URL, or its card's); or type one in the page.",
            show_default=False,
        ),
    ] = "",
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="Where the page listens. Loopback unless you say otherwise: the inspector "
            "holds the credentials you give it.",
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="The page's port (0: any free one).")] = (
        _DEFAULT_PORT
    ),
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the page in the default browser.")
    ] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds each call to the agent may take.")
    ] = 30.0,
    ledger: Annotated[
        str | None,
        typer.Option(
            "--ledger",
            help="The agent's delegation ledger, to show each task's delegations: its store "
            "(sqlite:PATH or postgresql://...), as given to peerwire serve --store. Read only.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve the inspector: the agent's card, conversations as timelines, the raw wire (as
    curl), tasks and push configs, credentials, and a self-check, in a local web page."""
    from ..httpd import CannotListenError
    from ..inspect import run_inspector
    from ..inspect.page_io import InspectorError

    if not 0 <= port <= 65535:
        typer.echo(f"error: --port {port} is not a port (0-65535)", err=True)
        raise typer.Exit(2)
    try:
        run_inspector(
            url, host=host, port=port, open_browser=open_browser, timeout=timeout, ledger=ledger
        )
    except InspectorError as exc:
        typer.echo(f"error: --ledger: {exc.message}", err=True)
        raise typer.Exit(2) from None
    except (CannotListenError, OSError) as exc:
        typer.echo(f"error: cannot listen on {host}:{port}: {exc}", err=True)
        raise typer.Exit(1) from None
