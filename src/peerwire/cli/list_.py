"""``peerwire list URL``: every task the agent shows you, all pages."""

from __future__ import annotations

from typing import Annotated

import typer

from ..types import ListTasksResponse, Task, TaskState
from ._app import app
from ._options import BindingOption, JsonOption, TimeoutOption, UrlArgument
from ._render import console, print_json, print_task_line
from ._session import EXIT_OK, connect, run

_STATE_NAMES = [s.value.removeprefix("TASK_STATE_").lower() for s in TaskState][1:]


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
            help=f"Only tasks in this state: {', '.join(_STATE_NAMES)}.",
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
) -> None:
    """List tasks, newest update first, fetching every page.

    --json prints one ListTasksResponse holding the tasks of all pages.
    """
    status = _state(state) if state is not None else None

    async def main() -> int:
        tasks: list[Task] = []
        async with connect(url, binding, timeout) as client:
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

    run(main)


def _state(name: str) -> TaskState:
    """``completed``, ``COMPLETED`` or ``TASK_STATE_COMPLETED``."""
    wanted = name.strip().upper().removeprefix("TASK_STATE_")
    for candidate in TaskState:
        if candidate is not TaskState.UNSPECIFIED and candidate.value == "TASK_STATE_" + wanted:
            return candidate
    raise typer.BadParameter(
        f"unknown state {name!r} (one of {', '.join(_STATE_NAMES)})", param_hint="--state"
    )
