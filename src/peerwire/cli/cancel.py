"""``peerwire cancel URL TASK_ID``: ask the agent to cancel a task."""

from __future__ import annotations

from ..types import TaskState
from ._app import app
from ._auth import caller_auth
from ._exits import EXIT_CODES_HELP, EXIT_OK, EXIT_RUNNING, exit_code
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
from ._session import CommandError, connect, note, run
from ._states import state_name


@app.command("cancel", epilog=EXIT_CODES_HELP)
def cancel_command(
    url: UrlArgument,
    task_id: TaskIdArgument,
    json: JsonOption = False,
    binding: BindingOption = None,
    timeout: TimeoutOption = 60.0,
    header: HeaderOption = None,
    bearer: BearerOption = None,
    api_key: ApiKeyOption = None,
) -> None:
    """Cancel a task.

    Exits 0 once it is canceled, 5 while the cancel is under way (the agent answered with
    the task still running), 1 if the task ended otherwise.
    """
    auth = caller_auth(header, bearer, api_key)

    async def main() -> int:
        async with connect(url, binding, timeout, auth=auth) as client:
            task = await client.cancel_task(task_id)
            streaming = bool(client.card.capabilities.streaming)
        if json:
            print_json(task)
        else:
            print_task(console(), task, url=url, streaming=streaming)
        state = task.status.state
        if state is TaskState.CANCELED:
            return EXIT_OK
        if exit_code(state) == EXIT_RUNNING:
            # Cancel is best effort and may take effect later (A2A spec §3.1.5).
            note(f"task {task_id} is still {state_name(state)}: not canceled yet", auth)
            return EXIT_RUNNING
        raise CommandError(f"task {task_id} was not canceled: it is {state_name(state)}")

    run(main, auth)
