"""``peerwire demo``: two A2A agents on this machine, one calling the other, step by step.

It serves the Glossary Agent and the Brief Agent (``peerwire.samples``, installed with the
package) on free loopback ports in this process, their tasks in SQLite files in a temporary
folder (nothing is written to the current one), and walks through the protocol: the card, a
blocking send, a stream, GetTask, a question and its answer on the same task, one agent
calling another (and failing), and a cancel. Each step prints what went in and what came out;
``--wire`` adds the HTTP traffic itself. Everything it started is stopped before it exits.

``peerwire demo fulfillment`` is the other walk-through: an order orchestrator delegating to
three agents (``_fulfillment.py``).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Annotated

import anyio
import httpx
import typer
from rich.console import Console
from rich.text import Text

from ..client import Client
from ..types import Message, Task, TaskState, TaskStatusUpdateEvent
from ._app import app
from ._exits import EXIT_OK
from ._render import StreamView, console, print_card, print_task, state_label
from ._session import CommandError, run
from ._states import state_name
from ._wire import WireTap

__all__ = ["Demo", "demo_command", "fulfillment_command"]

_CALL_TIMEOUT_S = 30.0
_DEMO_TIMEOUT_S = 120.0  # the whole walk-through takes a few seconds; this only bounds a hang
_SHUTDOWN_GRACE_S = 2.0
_UPDATES_BEFORE_CANCEL = 2


# A group, so that ``peerwire demo`` runs the walk-through and ``peerwire demo fulfillment``
# the order-fulfillment one.
demo_app = typer.Typer(name="demo")  # its help: demo_command's docstring
app.add_typer(demo_app)


@demo_app.callback(invoke_without_command=True)
def demo_command(
    ctx: typer.Context,
    wire: Annotated[
        bool, typer.Option("--wire", help="Also show the HTTP requests and responses.")
    ] = False,
) -> None:
    """Watch two agents talk A2A: a card, tasks, a stream, a question, a cancel.

    Serves the Glossary and Brief sample agents on loopback and stops them at the end.

    `peerwire demo fulfillment`: an orchestrator delegating to three agents instead.
    """
    if ctx.invoked_subcommand is not None:
        return
    run(lambda: Demo(console(), wire=wire).run())


@demo_app.command("fulfillment")
def fulfillment_command() -> None:
    """Watch an orchestrator delegate to three agents, through a failure, a cancel, a crash.

    Parallel calls with time limits, a failed booking undone, a question passed on, a cancel
    that reaches every agent, the orchestrator SIGKILLed and restarted without booking twice.

    Serves the Risk, Inventory and Logistics sample agents on loopback and runs the Order
    Fulfillment Agent as a process of its own (its SQLite store in a temporary folder);
    stops them all at the end.
    """
    from ._fulfillment import FulfillmentDemo  # the samples, only when this demo runs

    run(lambda: FulfillmentDemo(console()).run())


class Demo:
    """The walk-through. ``run`` starts the agents, takes every step, and stops the agents."""

    def __init__(self, out: Console, *, wire: bool = False) -> None:
        self.out = out
        self.wire = wire
        self._step = 0

    async def run(self) -> int:
        # Imported only when the demo runs: the other commands need neither the samples nor
        # the server extra.
        from ..samples.brief import make_agent as make_brief_agent
        from ..samples.glossary import agent as glossary_agent
        from ..server._loopback import live_server

        with anyio.fail_after(_DEMO_TIMEOUT_S), tempfile.TemporaryDirectory() as folder:
            stores = Path(folder)
            async with (
                live_server(
                    glossary_agent,
                    store=f"sqlite:{stores / 'glossary.db'}",
                    shutdown_grace=_SHUTDOWN_GRACE_S,
                ) as glossary_url,
                live_server(
                    make_brief_agent(glossary_url),
                    store=f"sqlite:{stores / 'brief.db'}",
                    shutdown_grace=_SHUTDOWN_GRACE_S,
                ) as brief_url,
            ):
                self._introduce(glossary_url, brief_url, stores)
                # Each client fetches its agent's card as it connects: under the step's heading.
                self._heading("An agent starts by publishing a card")
                async with self._client(glossary_url) as glossary:
                    self._card(glossary, glossary_url)
                    await self._blocking(glossary)
                    streamed = await self._streaming(glossary)
                    await self._get_task(glossary, streamed)
                    await self._input_required(glossary)
                    self._heading("One agent calls another")
                    async with self._client(brief_url) as brief:
                        await self._agent_to_agent(brief)
                        await self._agent_to_agent_fails(brief)
                    await self._cancel(glossary)
            self.out.print()
            self.out.print(Text("Stopped both agents; their task stores were temporary.", "bold"))
        return EXIT_OK

    # -- the steps --------------------------------------------------------------------------

    def _introduce(self, glossary_url: str, brief_url: str, stores: Path) -> None:
        out = self.out
        out.print(Text("peerwire demo: two A2A 1.0 agents on this machine", style="bold"))
        out.print(f"  Glossary Agent  {glossary_url}  defines Java terms")
        out.print(f"  Brief Agent     {brief_url}  asks the Glossary Agent for each term")
        out.print(f"  Their tasks are kept in SQLite files under {stores}")

    def _card(self, glossary: Client, url: str) -> None:
        if not self.wire:
            self._sent(f"GET {url}/.well-known/agent-card.json")
        print_card(self.out, glossary.card)

    async def _blocking(self, glossary: Client) -> None:
        self._heading("One message in, one task out")
        self._sent('SendMessage "record" (waits until the task is done)')
        task = await self._task(glossary.send("record"))
        print_task(self.out, task)
        self._expect(task, TaskState.COMPLETED)

    async def _streaming(self, glossary: Client) -> Task:
        self._heading("Streaming shows the lifecycle")
        self._sent('SendStreamingMessage "record"')
        view = StreamView(self.out)
        async with contextlib.aclosing(glossary.stream("record")) as events:  # type: ignore[type-var]
            async for event in events:
                view.show(event)
        if view.record is None:
            raise CommandError("the demo's stream ended before the task arrived")
        task = view.record.snapshot()
        view.finish()
        self._expect(task, TaskState.COMPLETED)
        return task

    async def _get_task(self, glossary: Client, streamed: Task) -> None:
        self._heading("The task outlives the call")
        self._sent(f"GetTask {streamed.id}")
        task = await glossary.get_task(streamed.id)
        print_task(self.out, task)
        self._expect(task, TaskState.COMPLETED)

    async def _input_required(self, glossary: Client) -> None:
        self._heading("An agent can ask for more, and the same task carries on")
        self._sent('SendMessage "" (no term)')
        asked = await self._task(glossary.send(""))
        print_task(self.out, asked)
        self._expect(asked, TaskState.INPUT_REQUIRED)
        self._sent(f'SendMessage "sealed class" on task {asked.id}')
        answered = await self._task(glossary.send("sealed class", task_id=asked.id))
        print_task(self.out, answered)
        self._expect(answered, TaskState.COMPLETED)
        same = "yes" if answered.id == asked.id else "NO"
        self.out.print(Text(f"  same task both turns: {same}"))

    async def _agent_to_agent(self, brief: Client) -> None:
        self.out.print("The Brief Agent is a server to us and a client of the Glossary Agent.")
        self._sent('Brief Agent: SendMessage "record, sealed class"')
        task = await self._task(brief.send("record, sealed class"))
        print_task(self.out, task)
        self._expect(task, TaskState.COMPLETED)

    async def _agent_to_agent_fails(self, brief: Client) -> None:
        self._heading("When the other agent fails, its caller says whose problem it was")
        self._sent('Brief Agent: SendMessage "record, monad"')
        task = await self._task(brief.send("record, monad"))
        print_task(self.out, task)
        self._expect(task, TaskState.FAILED)

    async def _cancel(self, glossary: Client) -> None:
        self._heading("A slow task, canceled mid-way")
        self._sent('SendStreamingMessage "slow" (thinks for 5 s, reporting progress)')
        view = StreamView(self.out)
        updates = 0
        canceled: Task | None = None
        async with contextlib.aclosing(glossary.stream("slow", skill="slow")) as events:  # type: ignore[type-var]
            async for event in events:
                view.show(event)
                if isinstance(event, TaskStatusUpdateEvent) and event.status.message is not None:
                    updates += 1
                if (
                    updates == _UPDATES_BEFORE_CANCEL
                    and canceled is None
                    and view.record is not None
                ):
                    self._sent(f"CancelTask {view.record.id} (after {updates} updates)")
                    canceled = await glossary.cancel_task(view.record.id)
                    self._received(canceled)
        if canceled is None or view.record is None:
            raise CommandError("the slow task ended before the demo could cancel it")
        self._expect(view.record.snapshot(), TaskState.CANCELED)

    # -- helpers ----------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _client(self, url: str) -> AsyncIterator[Client]:
        """A client whose HTTP traffic is printed with ``--wire``."""
        transport = WireTap(self.out) if self.wire else None
        async with (
            httpx.AsyncClient(transport=transport, timeout=_CALL_TIMEOUT_S) as http,
            Client.connect(url, http_client=http, timeout=_CALL_TIMEOUT_S) as client,
        ):
            yield client

    async def _task(self, sending: Awaitable[Task | Message]) -> Task:
        """The Task a send answers with (these agents never reply with a bare message)."""
        answer = await sending
        if isinstance(answer, Message):
            raise CommandError(f"the demo expected a task, the agent replied: {answer.text}")
        return answer

    def _heading(self, title: str) -> None:
        self._step += 1
        self.out.print()
        self.out.print(Text(f"{self._step}. {title}", style="bold underline"))

    def _sent(self, what: str) -> None:
        self.out.print(Text(f"→ {what}", style="bold cyan"))

    def _received(self, task: Task) -> None:
        self.out.print(
            Text.assemble(("← ", "bold green"), f"Task {task.id}  ", state_label(task.status.state))
        )

    def _expect(self, task: Task, wanted: TaskState) -> None:
        if task.status.state is not wanted:
            raise CommandError(
                f"step {self._step} of the demo expected task {task.id} to be "
                f"{state_name(wanted)}, it is {state_name(task.status.state)}"
            )
