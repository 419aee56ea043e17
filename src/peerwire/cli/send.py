"""``peerwire send URL TEXT``: send one message; ``--stream`` shows the task's events live.

Without ``--stream`` the command waits for the outcome, at most ``--timeout`` seconds, and
prints only that. It waits over the agent's stream when the card says it streams: the stream's
first event names the task, so a wait that runs out still knows which task to point to
(exit 5, with how to follow it). A blocking SendMessage would lose that id: the agent says it
only in its answer. An agent that does not stream gets the blocking SendMessage.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import anyio
import msgspec
import typer
from rich.text import Text

from ..client import Client, Payload, Settling
from ..compat.v03.files import check_file_bytes
from ..errors import A2ATimeoutError
from ..protocol import ends_blocking_wait
from ..types import Message, SendMessageResponse, Task, TaskState
from ._app import app
from ._auth import CallerAuth, caller_auth
from ._exits import EXIT_CODES_HELP, EXIT_OK, exit_code
from ._options import (
    ApiKeyOption,
    BearerOption,
    BindingOption,
    FileBytesName,
    HeaderOption,
    JsonOption,
    TimeoutOption,
    UrlArgument,
    V03FileBytesOption,
)
from ._render import (
    Silent,
    StreamView,
    console,
    follow,
    print_json,
    print_message,
    print_task,
    spinner,
)
from ._session import CommandError, connect, run, still_running
from ._states import state_name


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
    no_wait: Annotated[
        bool,
        typer.Option(
            "--no-wait",
            help="Return as soon as the task exists (returnImmediately): prints its id.",
        ),
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
    header: HeaderOption = None,
    bearer: BearerOption = None,
    api_key: ApiKeyOption = None,
    v03_file_bytes: V03FileBytesOption = FileBytesName.auto,
) -> None:
    """Send one message to an agent and show what it answers (--stream: as it happens).

    Without --stream or --no-wait it waits for the outcome, at most --timeout seconds. If the
    time runs out first, the task is still running: its id is printed with how to follow it
    (subscribe, get), and the exit code is 5.
    """
    if stream and no_wait:
        raise typer.BadParameter(
            "a stream returns as the task goes; --no-wait is for a single answer",
            param_hint="--no-wait",
        )
    auth = caller_auth(header, bearer, api_key)
    outgoing = _Outgoing(
        text=text,
        task_id=task,
        context_id=context,
        data=None if data is None else _json_value(data),
        files=tuple(file or ()),
        skill=skill,
    )

    async def main() -> int:
        async with connect(
            url, binding, timeout, auth=auth, v03_file_bytes=check_file_bytes(v03_file_bytes.value)
        ) as client:
            call = _Call(client, url, outgoing, json, timeout, auth)
            if no_wait:
                return await call.no_wait()
            if stream:
                return await call.streamed()
            if client.card.capabilities.streaming:
                return await call.awaited_over_stream()
            return await call.blocking()

    run(main, auth)


@dataclass(frozen=True)
class _Outgoing:
    """The message as the options describe it, for ``Client.send`` or ``Client.stream``."""

    text: str
    task_id: str | None
    context_id: str | None
    data: Any  # None: no data part
    files: tuple[Path, ...]
    skill: str | None

    def send(
        self, client: Client, *, return_immediately: bool = False
    ) -> Awaitable[Task | Message]:
        return client.send(
            self.text,
            task_id=self.task_id,
            context_id=self.context_id,
            data=self.data,
            files=self.files,
            skill=self.skill,
            return_immediately=return_immediately,
        )

    def settling(self) -> Settling:
        """What tells, as the stream of this message goes, when its task settled."""
        return Settling(continuing=self.task_id, sent_at=datetime.now(UTC))

    def stream(self, client: Client) -> AsyncIterator[Payload]:
        return client.stream(
            self.text,
            task_id=self.task_id,
            context_id=self.context_id,
            data=self.data,
            files=self.files,
            skill=self.skill,
        )


@dataclass(frozen=True)
class _Call:
    """One ``send``, in each of its ways to wait."""

    client: Client
    url: str
    outgoing: _Outgoing
    as_json: bool
    timeout: float
    auth: CallerAuth

    @property
    def _streaming(self) -> bool:
        return bool(self.client.card.capabilities.streaming)

    async def no_wait(self) -> int:
        answer = await self.outgoing.send(self.client, return_immediately=True)
        return self._answer(answer)

    async def blocking(self) -> int:
        """A blocking SendMessage (the agent does not stream)."""
        out = console()
        try:
            with spinner(out, f"Waiting for {self.client.card.name}…", enabled=not self.as_json):
                answer = await self.outgoing.send(self.client)
        except A2ATimeoutError as exc:
            if exc.task_id is None:
                raise CommandError(
                    f"{self.client.card.name} gave no answer within {self.timeout:g} s (the "
                    "--timeout). It does not stream, so the id of a task it started is only in "
                    "its answer: send with --no-wait to get the id at once, or find the task "
                    f"with 'peerwire list {self.url} --state working'"
                ) from None
            # A continued task: how it stands now, if the agent says so in time.
            with anyio.move_on_after(self.timeout):
                with contextlib.suppress(A2ATimeoutError):
                    now = await self.client.get_task(exc.task_id)
                    if ends_blocking_wait(now.status.state):
                        return self._answer(now)  # done just after the time ran out
                    return self._still_running(now.id, now.status.state, show=now)
            return self._still_running(exc.task_id, None)
        return self._answer(answer)

    async def awaited_over_stream(self) -> int:
        """Wait for what a blocking send would return, over the agent's stream."""
        out = console()
        view = StreamView(out, quiet=True, settling=self.outgoing.settling())
        reply: Message | None = None
        ran_out = False
        name = self.client.card.name
        with (
            spinner(out, f"Waiting for {name}…", enabled=not self.as_json) as status,
            anyio.move_on_after(self.timeout) as waiting,
        ):
            try:
                async with _closing(self.outgoing.stream(self.client)) as events:
                    async for payload in events:
                        if isinstance(payload, Message):
                            reply = payload
                            break
                        view.show(payload)
                        if view.settled:
                            break
                        if status is not None and view.state is not None:
                            status.update(Text(f"{name}: {state_name(view.state)}…"))
            except A2ATimeoutError:
                if view.record is None:
                    raise
                ran_out = True  # the agent fell silent while the task runs
        if reply is not None:
            return self._answer(reply)
        if view.record is None:
            raise CommandError(self._said_nothing())
        task = view.record.snapshot()
        if waiting.cancelled_caught or ran_out:
            return self._still_running(task.id, task.status.state, show=task)
        return self._answer(task)

    async def streamed(self) -> int:
        if not self._streaming:
            raise CommandError(
                f"{self.client.card.name} does not stream (its card says "
                "capabilities.streaming is not true); send without --stream"
            )
        view = StreamView(
            console(), url=self.url, quiet=self.as_json, settling=self.outgoing.settling()
        )
        events = self.outgoing.stream(self.client)
        try:
            await follow(
                view, events, self.client.card.name, as_json=self.as_json, idle=self.timeout
            )
        except Silent:
            if view.record is None:
                raise CommandError(self._said_nothing()) from None
            if view.settled:
                view.finish()  # auth-required: the stream stays open while the task waits
                return exit_code(view.record.state)
            return self._still_running(view.record.id, view.record.state, idle=True)
        return EXIT_OK if view.state is None else exit_code(view.state)  # None: a message reply

    def _answer(self, answer: Task | Message) -> int:
        """Print what the agent answered; the exit code of how its task stands."""
        out = console()
        if isinstance(answer, Message):
            if self.as_json:
                print_json(SendMessageResponse(message=answer))
            else:
                print_message(out, answer)
            return EXIT_OK
        if self.as_json:
            print_json(SendMessageResponse(task=answer))
        else:
            print_task(out, answer, url=self.url, streaming=self._streaming)
        return exit_code(answer.status.state)

    def _still_running(
        self, task_id: str, state: TaskState | None, *, show: Task | None = None, idle: bool = False
    ) -> int:
        """The wait ran out while the task runs: ``show`` the task as last seen, and say how
        to follow it (on stderr: stdout is the result)."""
        if show is not None:
            if self.as_json:
                print_json(SendMessageResponse(task=show))
            else:
                print_task(console(), show)  # no hint of its own: the note has it
        wait = f"{self.timeout:g} s"
        return still_running(
            self.url,
            task_id,
            state,
            f"no event for {wait}" if idle else f"no outcome within {wait}",
            streaming=self._streaming,
            auth=self.auth,
        )

    def _said_nothing(self) -> str:
        return (
            f"{self.client.card.name} said nothing within {self.timeout:g} s (the --timeout), "
            "not even which task the message started"
        )


@contextlib.asynccontextmanager
async def _closing(events: AsyncIterator[Payload]) -> AsyncIterator[AsyncIterator[Payload]]:
    """Closes the stream however its reading ends (the client's streams are generators)."""
    try:
        yield events
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()


def _json_value(text: str) -> Any:
    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError as exc:
        raise typer.BadParameter(f"not JSON: {exc}", param_hint="--data") from None
