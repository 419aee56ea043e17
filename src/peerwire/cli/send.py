"""``peerwire send URL TEXT``: send one message; ``--stream`` shows the task's events live."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import msgspec
import typer

from ..client import Client
from ..types import Message, SendMessageResponse
from ._app import app
from ._options import BindingOption, JsonOption, TimeoutOption, UrlArgument
from ._render import StreamView, console, follow, print_json, print_message, print_task, spinner
from ._session import EXIT_OK, CommandError, connect, exit_code, run


@app.command("send")
def send_command(
    url: UrlArgument,
    text: Annotated[str, typer.Argument(help="The message text (may be empty).")],
    task: Annotated[
        str | None, typer.Option("--task", help="Continue this task (answer its question).")
    ] = None,
    context: Annotated[
        str | None, typer.Option("--context", help="Send within this conversation context.")
    ] = None,
    stream: Annotated[
        bool, typer.Option("--stream", help="Stream: show each state and artifact as it comes.")
    ] = False,
    data: Annotated[
        str | None,
        typer.Option("--data", help="Add a data part: a JSON value.", show_default=False),
    ] = None,
    file: Annotated[
        list[Path] | None,
        typer.Option(
            "--file",
            exists=True,
            dir_okay=False,
            readable=True,
            help="Attach a local file (repeatable).",
            show_default=False,
        ),
    ] = None,
    skill: Annotated[
        str | None, typer.Option("--skill", help="The skill to use (a peerwire agent's id).")
    ] = None,
    json: JsonOption = False,
    binding: BindingOption = None,
    timeout: TimeoutOption = 60.0,
) -> None:
    """Send one message to an agent and show what it answers.

    Exits 0 when the task completes (or the agent replies with a message), 3 when it needs
    input or authorization, 4 when it fails, is rejected or canceled, 1 on any error.
    """
    content: dict[str, Any] = {
        "task_id": task,
        "context_id": context,
        "files": list(file or ()),
        "skill": skill,
    }
    if data is not None:
        content["data"] = _json_value(data)

    async def main() -> int:
        async with connect(url, binding, timeout) as client:
            if stream:
                return await _streamed(client, url, text, content, json)
            return await _blocking(client, url, text, content, json)

    run(main)


async def _blocking(
    client: Client, url: str, text: str, content: dict[str, Any], as_json: bool
) -> int:
    out = console()
    with spinner(out, f"Waiting for {client.card.name}…", enabled=not as_json):
        answer = await client.send(text, **content)
    if isinstance(answer, Message):
        if as_json:
            print_json(SendMessageResponse(message=answer))
        else:
            print_message(out, answer)
        return EXIT_OK
    if as_json:
        print_json(SendMessageResponse(task=answer))
    else:
        print_task(out, answer, url=url)
    return exit_code(answer.status.state)


async def _streamed(
    client: Client, url: str, text: str, content: dict[str, Any], as_json: bool
) -> int:
    if not client.card.capabilities.streaming:
        raise CommandError(
            f"{client.card.name} does not stream (its card says capabilities.streaming is "
            "not true); send without --stream"
        )
    view = StreamView(console(), url=url, quiet=as_json)
    await follow(view, client.stream(text, **content), client.card.name, as_json=as_json)
    return EXIT_OK if view.state is None else exit_code(view.state)  # None: a message reply


def _json_value(text: str) -> Any:
    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError as exc:
        raise typer.BadParameter(f"not JSON: {exc}", param_hint="--data") from None
