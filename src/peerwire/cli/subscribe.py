"""``peerwire subscribe URL TASK_ID``: follow a running task until it ends or needs input."""

from __future__ import annotations

from ..errors import UnsupportedOperationError
from ..protocol import ends_blocking_wait
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
from ._render import Silent, StreamView, console, follow
from ._session import CommandError, connect, run, still_running


@app.command("subscribe", epilog=EXIT_CODES_HELP)
def subscribe_command(
    url: UrlArgument,
    task_id: TaskIdArgument,
    json: JsonOption = False,
    binding: BindingOption = None,
    timeout: TimeoutOption = 60.0,
    header: HeaderOption = None,
    bearer: BearerOption = None,
    api_key: ApiKeyOption = None,
) -> None:
    """Follow a running task live: its state now, then every update until it ends.

    An agent silent for --timeout seconds ends the command with exit code 5: the task is
    still running.
    """
    auth = caller_auth(header, bearer, api_key)

    async def main() -> int:
        async with connect(url, binding, timeout, auth=auth) as client:
            view = StreamView(console(), url=url, quiet=json)
            events = client.subscribe(task_id)
            try:
                await follow(view, events, client.card.name, as_json=json, idle=timeout)
            except UnsupportedOperationError as exc:
                if view.state is not None:
                    raise
                # The spec refuses to subscribe to a finished task (A2A spec §3.1.6).
                raise CommandError(
                    f"{exc.message} (UnsupportedOperationError); a finished task is shown by "
                    f"'peerwire get {url} {task_id}'"
                ) from None
            except Silent:
                if view.state is None:
                    raise CommandError(
                        f"{client.card.name} said nothing within {timeout:g} s (the --timeout) "
                        f"about task {task_id}"
                    ) from None
                if ends_blocking_wait(view.state):
                    view.finish()  # auth-required: the stream stays open while it waits
                    return exit_code(view.state)
                return still_running(
                    url, task_id, view.state, f"no event for {timeout:g} s", auth=auth
                )
        if view.state is None:  # the client rejects such a stream first; kept for clarity
            raise CommandError(f"the subscription to task {task_id} sent no task")
        return exit_code(view.state)

    run(main, auth)
