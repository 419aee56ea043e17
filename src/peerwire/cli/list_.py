"""``peerwire list URL``: every task the agent shows you, all pages."""

from __future__ import annotations

from typing import Annotated

import typer

from ..types import ListTasksResponse, Task, TaskState
from ._app import app
from ._auth import caller_auth
from ._exits import EXIT_OK
from ._options import (
    ApiKeyOption,
    BearerOption,
    BindingOption,
    HeaderOption,
    JsonOption,
    TimeoutOption,
    UrlArgument,
)
from ._render import console, print_json, print_task_line
from ._session import connect, run
from ._states import STATE_NAMES, parse_state


@app.command("list")
def list_command(
    url: UrlArgument,
    context: Annotated[
        str | None, typer.Option("--context", help="Only tasks of this context.")
    ] = None,
    state: Annotated[
        str | None,
        typer.Option(
            "--state",
            help=(
                f"Only tasks in this state: {', '.join(STATE_NAMES)} (any case, '_' for '-', "
                "or the wire name TASK_STATE_...)."
            ),
            show_default=False,
        ),
    ] = None,
    page_size: Annotated[
        int | None,
        typer.Option("--page-size", min=1, max=100, help="Tasks per request (all are shown)."),
    ] = None,
    json: JsonOption = False,
    binding: BindingOption = None,
    timeout: TimeoutOption = 60.0,
    header: HeaderOption = None,
    bearer: BearerOption = None,
    api_key: ApiKeyOption = None,
) -> None:
    """List tasks, newest update first, fetching every page.

    --json prints one ListTasksResponse holding the tasks of all pages.
    """
    status = _state(state) if state is not None else None
    auth = caller_auth(header, bearer, api_key)

    async def main() -> int:
        tasks: list[Task] = []
        async with connect(url, binding, timeout, auth=auth) as client:
            async for task in client.list_tasks(
                context_id=context, status=status, page_size=page_size
            ):
                tasks.append(task)
        if json:
            print_json(
                ListTasksResponse(
                    tasks=tasks, next_page_token="", page_size=len(tasks), total_size=len(tasks)
                )
            )
            return EXIT_OK
        out = console()
        for task in tasks:
            print_task_line(out, task)
        out.print(f"{len(tasks)} task{'' if len(tasks) == 1 else 's'}")
        return EXIT_OK

    run(main, auth)


def _state(name: str) -> TaskState:
    state = parse_state(name)
    if state is None:
        raise typer.BadParameter(
            f"unknown state {name!r} (one of {', '.join(STATE_NAMES)})", param_hint="--state"
        )
    return state
