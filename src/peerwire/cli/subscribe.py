"""``peerwire subscribe URL TASK_ID``: follow a running task until it ends or needs input."""

from __future__ import annotations

from ..errors import UnsupportedOperationError
from ._app import app
from ._options import BindingOption, JsonOption, TaskIdArgument, TimeoutOption, UrlArgument
from ._render import StreamView, console, follow
from ._session import EXIT_CODES_HELP, CommandError, connect, exit_code, run


@app.command("subscribe", epilog=EXIT_CODES_HELP)
def subscribe_command(
    url: UrlArgument,
    task_id: TaskIdArgument,
    json: JsonOption = False,
    binding: BindingOption = None,
    timeout: TimeoutOption = 60.0,
) -> None:
    """Follow a running task live: its state now, then every update until it ends."""

    async def main() -> int:
        async with connect(url, binding, timeout) as client:
            view = StreamView(console(), url=url, quiet=json)
            try:
                await follow(view, client.subscribe(task_id), client.card.name, as_json=json)
            except UnsupportedOperationError as exc:
                if view.state is not None:
                    raise
                # The spec refuses to subscribe to a finished task (facts §2.3 (6)).
                raise CommandError(
                    f"{exc.message} (UnsupportedOperationError); a finished task is shown by "
                    f"'peerwire get {url} {task_id}'"
                ) from None
        if view.state is None:  # the client rejects such a stream first; kept for clarity
            raise CommandError(f"the subscription to task {task_id} sent no task")
        return exit_code(view.state)

    run(main)
