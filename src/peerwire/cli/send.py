"""``peerwire send URL TEXT``: send one message; ``--stream`` shows the task's events live."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import msgspec
import typer

from ..client import Client, Payload
from ..types import Message, SendMessageResponse, Task
from ._app import app
from ._options import BindingOption, JsonOption, TimeoutOption, UrlArgument
from ._render import StreamView, console, follow, print_json, print_message, print_task, spinner
from ._session import EXIT_CODES_HELP, EXIT_OK, CommandError, connect, exit_code, run


@app.command("send", epilog=EXIT_CODES_HELP)
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
    """Send one message to an agent and show what it answers (--stream: as it happens)."""
    outgoing = _Outgoing(
        text=text,
        task_id=task,
        context_id=context,
        data=None if data is None else _json_value(data),
        files=tuple(file or ()),
        skill=skill,
    )

    async def main() -> int:
        async with connect(url, binding, timeout) as client:
            if stream:
                return await _streamed(client, url, outgoing, json)
            return await _blocking(client, url, outgoing, json)

    run(main)


@dataclass(frozen=True)
class _Outgoing:
    """The message as the options describe it, for ``Client.send`` or ``Client.stream``."""

    text: str
    task_id: str | None
    context_id: str | None
    data: Any  # None: no data part
    files: tuple[Path, ...]
    skill: str | None

    def send(self, client: Client) -> Awaitable[Task | Message]:
        return client.send(
            self.text,
            task_id=self.task_id,
            context_id=self.context_id,
            data=self.data,
            files=self.files,
            skill=self.skill,
        )

    def stream(self, client: Client) -> AsyncIterator[Payload]:
        return client.stream(
            self.text,
            task_id=self.task_id,
            context_id=self.context_id,
            data=self.data,
            files=self.files,
            skill=self.skill,
        )


async def _blocking(client: Client, url: str, outgoing: _Outgoing, as_json: bool) -> int:
    out = console()
    with spinner(out, f"Waiting for {client.card.name}…", enabled=not as_json):
        answer = await outgoing.send(client)
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


async def _streamed(client: Client, url: str, outgoing: _Outgoing, as_json: bool) -> int:
    if not client.card.capabilities.streaming:
        raise CommandError(
            f"{client.card.name} does not stream (its card says capabilities.streaming is "
            "not true); send without --stream"
        )
    view = StreamView(console(), url=url, quiet=as_json)
    await follow(view, outgoing.stream(client), client.card.name, as_json=as_json)
    return EXIT_OK if view.state is None else exit_code(view.state)  # None: a message reply


def _json_value(text: str) -> Any:
    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError as exc:
        raise typer.BadParameter(f"not JSON: {exc}", param_hint="--data") from None
