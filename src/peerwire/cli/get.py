"""``peerwire get URL TASK_ID``: a task as it stands now."""

from __future__ import annotations

from typing import Annotated

import typer

from ._app import app
from ._options import BindingOption, JsonOption, TaskIdArgument, TimeoutOption, UrlArgument
from ._render import console, print_json, print_task
from ._session import EXIT_CODES_HELP, connect, exit_code, run


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
) -> None:
    """Show a task: its state, artifacts and history."""

    async def main() -> int:
        async with connect(url, binding, timeout) as client:
            task = await client.get_task(task_id, history_length=history)
        if json:
            print_json(task)
        else:
            print_task(console(), task, url=url, history=True)
        return exit_code(task.status.state)

    run(main)
