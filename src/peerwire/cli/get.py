"""``peerwire get URL TASK_ID``: a task as it stands now."""

from __future__ import annotations

from typing import Annotated

import typer

from ._app import app
from ._auth import caller_auth
from ._exits import EXIT_CODES_HELP, exit_code
from ._options import (
    ApiKeyOption,
    BearerOption,
    BindingOption,
    HeaderOption,
    JsonOption,
    TaskIdArgument,
    TimeoutOption,
    UrlArgument,
)
from ._render import console, print_json, print_task
from ._session import connect, run


@app.command("get", epilog=EXIT_CODES_HELP)
def get_command(
    url: UrlArgument,
    task_id: TaskIdArgument,
    history: Annotated[
        int | None,
        typer.Option("--history", min=0, help="Show at most this many latest messages."),
    ] = None,
    json: JsonOption = False,
    binding: BindingOption = None,
    timeout: TimeoutOption = 60.0,
    header: HeaderOption = None,
    bearer: BearerOption = None,
    api_key: ApiKeyOption = None,
) -> None:
    """Show a task: its state, artifacts and history."""
    auth = caller_auth(header, bearer, api_key)

    async def main() -> int:
        async with connect(url, binding, timeout, auth=auth) as client:
            task = await client.get_task(task_id, history_length=history)
            streaming = bool(client.card.capabilities.streaming)
        if json:
            print_json(task)
        else:
            print_task(console(), task, url=url, streaming=streaming, history=True)
        return exit_code(task.status.state)

    run(main, auth)
