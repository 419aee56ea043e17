"""``peerwire cancel URL TASK_ID``: ask the agent to cancel a task."""

from __future__ import annotations

from ..types import TaskState
from ._app import app
from ._options import BindingOption, JsonOption, TaskIdArgument, TimeoutOption, UrlArgument
from ._render import console, print_json, print_task, state_label
from ._session import EXIT_OK, CommandError, connect, run


@app.command("cancel")
def cancel_command(
    url: UrlArgument,
    task_id: TaskIdArgument,
    json: JsonOption = False,
    binding: BindingOption = None,
    timeout: TimeoutOption = 60.0,
) -> None:
    """Cancel a task. Exits 0 once it is CANCELED, 1 if it cannot be."""

    async def main() -> int:
        async with connect(url, binding, timeout) as client:
            task = await client.cancel_task(task_id)
        if json:
            print_json(task)
        else:
            print_task(console(), task)
        if task.status.state is not TaskState.CANCELED:
            # Cancel is best effort (facts §2.3 (5)): the agent may have finished first.
            state = state_label(task.status.state).plain
            raise CommandError(f"task {task_id} was not canceled: it is {state}")
        return EXIT_OK

    run(main)
