"""``peerwire demo fulfillment``: an order orchestrator delegating to three agents, shown live.

The Risk, Inventory and Logistics agents (``peerwire.samples.fulfillment``) are served in this
process on free loopback ports; the Order Fulfillment Agent runs as a process of its own
(``python -m peerwire.samples.fulfillment.orchestrator``), its tasks and its delegation ledger
in a SQLite file in a temporary folder, so that the demo can kill it with SIGKILL and start it
again on the same file. Five orders go through: one that completes, one whose carrier booking
fails (the stock lock is undone), one that needs a manual review (the demo answers the
question), one canceled mid-way (every remote task is canceled), and one during which the
orchestrator is killed and restarted (it picks up its open delegations; nothing is booked
twice). Three sources are printed as they speak: the order's task (a stream), the
orchestrator's ledger on disk (read here, every 50 ms), and the three agents themselves.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.text import Text

from ..client import Client
from ..delegation import EntryStatus, LedgerEntry, SQLiteLedgerStore
from ..protocol import TERMINAL
from ..samples.fulfillment.inventory import InventoryAgent
from ..samples.fulfillment.logistics import LogisticsAgent
from ..samples.fulfillment.risk import RiskAgent
from ..server._loopback import live_server
from ..types import Message, Task, TaskState, TaskStatusUpdateEvent, decode
from ._exits import EXIT_OK
from ._render import state_label
from ._session import CommandError
from ._states import state_name

__all__ = ["FulfillmentDemo"]

_DEMO_TIMEOUT_S = 120.0  # the whole demo takes some 15 s; this only bounds a hang
_STEP_TIMEOUT_S = 30.0
_START_TIMEOUT_S = 30.0
_LEDGER_POLL_S = 0.05
_SHUTDOWN_GRACE_S = 1.0
# Long enough that a lock and a booking are still working when the demo cancels the order
# or kills the orchestrator, short enough that they end while it is down.
_SLOW_STOCK_S = 2.0
# Each agent's every task takes this long, so that each step can be seen (and the ledger,
# read every 50 ms, is seen open before it is seen done).
_WORK_S = 0.25
_SLOW_CARRIER_S = 2.5
_LABEL_WIDTH = 16


class FulfillmentDemo:
    """The walk-through: ``run`` starts the four agents, sends five orders, stops them."""

    def __init__(self, out: Console) -> None:
        self.out = out
        self._step = 0
        self._names: dict[str, str] = {}
        said = self._peer_said
        self.risk = RiskAgent(work_seconds=_WORK_S, report=said)
        self.inventory = InventoryAgent(
            slow_seconds=_SLOW_STOCK_S, work_seconds=_WORK_S, report=said
        )
        self.logistics = LogisticsAgent(
            slow_seconds=_SLOW_CARRIER_S, work_seconds=_WORK_S, report=said
        )

    async def run(self) -> int:
        with tempfile.TemporaryDirectory() as folder:
            async with asyncio.timeout(_DEMO_TIMEOUT_S):
                await self._run(Path(folder))
        self.out.print()
        self.out.print(
            Text("Stopped all four agents; the orchestrator's store was temporary.", "bold")
        )
        return EXIT_OK

    async def _run(self, folder: Path) -> None:
        db = folder / "orders.db"
        async with (
            live_server(self.risk.agent, shutdown_grace=_SHUTDOWN_GRACE_S) as risk_url,
            live_server(self.inventory.agent, shutdown_grace=_SHUTDOWN_GRACE_S) as inventory_url,
            live_server(self.logistics.agent, shutdown_grace=_SHUTDOWN_GRACE_S) as logistics_url,
        ):
            self._names = {
                risk_url: self.risk.agent.name,
                inventory_url: self.inventory.agent.name,
                logistics_url: self.logistics.agent.name,
            }
            orchestrator = Orchestrator(
                folder, db, risk=risk_url, inventory=inventory_url, logistics=logistics_url
            )
            async with orchestrator.running() as url:
                self._introduce(risk_url, inventory_url, logistics_url, url, orchestrator, db)
                ledger = SQLiteLedgerStore(db)
                await ledger.open()
                try:
                    async with Client.connect(url) as client:
                        await self._completes(client, ledger)
                        await self._booking_fails(client, ledger)
                        await self._manual_review(client, ledger)
                        await self._canceled_mid_way(client, ledger)
                    await self._killed_and_restarted(orchestrator, ledger)
                finally:
                    await ledger.close()

    # -- the orders -------------------------------------------------------------------------

    async def _completes(self, client: Client, ledger: SQLiteLedgerStore) -> None:
        self._heading("A normal order completes")
        text = "ORD-1001: 3 widgets, 240 EUR"
        async with self._watching(ledger) as watch:
            task = await self._stream(client, text, watch)
        self._expect(task, TaskState.COMPLETED)
        self._bookings("ORD-1001")

    async def _booking_fails(self, client: Client, ledger: SQLiteLedgerStore) -> None:
        self._heading("The carrier booking fails: the stock lock is undone")
        text = "ORD-1002: 2 widgets, 160 EUR, no carrier"
        async with self._watching(ledger) as watch:
            task = await self._stream(client, text, watch)
            self._expect(task, TaskState.FAILED)
            await self._until(
                lambda: self.inventory.releases["ORD-1002"] == 1, "the stock to be released"
            )
            await self._settled(ledger, task.id)
        held = self.inventory.locks.get("ORD-1002", 0)
        self._note(f"ORD-1002 holds {held} widgets now; {self.inventory.stock} are free")

    async def _manual_review(self, client: Client, ledger: SQLiteLedgerStore) -> None:
        self._heading("An order that needs a manual review: the demo answers the question")
        text = "ORD-1003: 1 widget, 5000 EUR"
        async with self._watching(ledger) as watch:
            asked = await self._stream(client, text, watch)
            self._expect(asked, TaskState.INPUT_REQUIRED)
            answer = "yes, approved by the demo"
            done = await self._stream(client, answer, watch, task_id=asked.id)
        self._expect(done, TaskState.COMPLETED)
        self._bookings("ORD-1003")

    async def _canceled_mid_way(self, client: Client, ledger: SQLiteLedgerStore) -> None:
        self._heading("An order canceled mid-way: the cancel reaches every agent")
        text = "ORD-1004: 1 widget, 80 EUR, slow stock, slow carrier"
        async with self._watching(ledger) as watch:
            self._sent(f'SendMessage "{text}" (returns at once)')
            parent = await self._task(client.send(text, return_immediately=True))
            watch.scope = parent.id
            # The steps still open just before the cancel: each must end CANCELED there.
            open_steps = await self._until_open(ledger, parent.id, ("lock", "book"))
            await watch.look()
            self._sent(f"CancelTask {parent.id}")
            started = time.monotonic()
            canceled = await client.cancel_task(parent.id)
            took = (time.monotonic() - started) * 1000
            self._said("order", Text.assemble(state_label(canceled.status.state)))
            self._expect(canceled, TaskState.CANCELED)
            self._note(f"CancelTask answered after {took:.0f} ms, the remote tasks canceled first:")
            for entry in open_steps:
                async with Client.connect(entry.agent) as peer:
                    there = await peer.get_task(entry.remote_task_id)
                self._said(
                    _label(self._names.get(entry.agent, entry.agent)),
                    Text.assemble(
                        f"GetTask {entry.remote_task_id}: ", state_label(there.status.state)
                    ),
                )
                self._expect(there, TaskState.CANCELED)
            await self._settled(ledger, parent.id)

    async def _killed_and_restarted(
        self, orchestrator: Orchestrator, ledger: SQLiteLedgerStore
    ) -> None:
        self._heading("The orchestrator is killed (SIGKILL) mid-order and started again")
        text = "ORD-1005: 2 widgets, 160 EUR, slow stock, slow carrier"
        async with self._watching(ledger) as watch:
            async with Client.connect(orchestrator.url) as client:
                self._sent(f'SendMessage "{text}" (returns at once)')
                parent = await self._task(client.send(text, return_immediately=True))
            watch.scope = parent.id
            await self._until_open(ledger, parent.id, ("lock", "book"))
            await watch.look()
            pid = orchestrator.kill()
            self._sent(f"SIGKILL the Order Fulfillment Agent (pid {pid})")
            await orchestrator.wait()
            self._note("the ledger on disk, with nobody following it:")
            for entry in await ledger.entries(scope=parent.id):
                self._ledger_said(entry, _where(entry, self._names.get(entry.agent, "")))
            self._sent("start the Order Fulfillment Agent again, on the same store and port")
            async with orchestrator.running(), Client.connect(orchestrator.url) as client:
                self._note(
                    f"running again (pid {orchestrator.pid}): the order's handler runs again "
                    "and gets each delegation back from the ledger instead of sending it"
                )
                task = await self._poll(client, parent.id)
                await self._settled(ledger, parent.id)
        self._expect(task, TaskState.COMPLETED)
        self._bookings("ORD-1005")
        self._note("nothing sent or booked twice: each agent got the order once and booked it once")

    # -- following the order ----------------------------------------------------------------

    async def _stream(
        self, client: Client, text: str, watch: LedgerWatch, *, task_id: str | None = None
    ) -> Task:
        """Stream ``text`` (on ``task_id``) to the orchestrator, printing each update; the
        task where the stream left it (ended, or waiting for an answer)."""
        on = f" on task {task_id}" if task_id else ""
        self._sent(f'SendStreamingMessage "{text}"{on}')
        streamed = ""
        async with asyncio.timeout(_STEP_TIMEOUT_S):
            async with contextlib.aclosing(client.stream(text, task_id=task_id)) as events:  # type: ignore[type-var]
                async for event in events:
                    if isinstance(event, Message):
                        raise CommandError(f"the orchestrator answered with a message: {event}")
                    if isinstance(event, Task):
                        streamed = watch.scope = event.id
                        self._order_status(event.status.state, event.status.message)
                    elif isinstance(event, TaskStatusUpdateEvent):
                        self._order_status(event.status.state, event.status.message)
                    else:
                        for line in event.artifact.text.splitlines():
                            self._said("order", f"artifact {event.artifact.name}: {line}")
            if not streamed:
                raise CommandError("the orchestrator's stream ended before its task arrived")
            return await client.get_task(streamed)

    async def _poll(self, client: Client, task_id: str) -> Task:
        """GetTask until the task ends, printing each state it is seen in."""
        seen: TaskState | None = None
        async with asyncio.timeout(_STEP_TIMEOUT_S):
            while True:
                task = await client.get_task(task_id)
                if task.status.state is not seen:
                    seen = task.status.state
                    self._order_status(seen, task.status.message)
                if seen in TERMINAL:
                    for artifact in task.artifacts:
                        for line in artifact.text.splitlines():
                            self._said("order", f"artifact {artifact.name}: {line}")
                    return task
                await asyncio.sleep(0.1)

    async def _until_open(
        self, ledger: SQLiteLedgerStore, parent: str, keys: tuple[str, ...]
    ) -> list[LedgerEntry]:
        """Wait until every step of ``keys`` has a task at its agent, one at least still
        open (all of them, unless the machine is so busy that one ended first); the entries
        of those still open."""
        async with asyncio.timeout(_STEP_TIMEOUT_S):
            while True:
                found = {e.key: e for e in await ledger.entries(scope=parent)}
                steps = [found[k] for k in keys if k in found and found[k].remote_task_id]
                still_open = [e for e in steps if e.status is EntryStatus.OPEN]
                if len(steps) == len(keys) and still_open:
                    return still_open
                await asyncio.sleep(_LEDGER_POLL_S)

    async def _settled(self, ledger: SQLiteLedgerStore, parent: str) -> None:
        """Wait until no entry of the order is still to run (the compensations included)."""
        unsettled = {EntryStatus.INTENT, EntryStatus.OPEN, EntryStatus.DUE}
        async with asyncio.timeout(_STEP_TIMEOUT_S):
            while True:  # the ledger is a file another process writes: polled
                if all(e.status not in unsettled for e in await ledger.entries(scope=parent)):
                    return
                await asyncio.sleep(_LEDGER_POLL_S)

    async def _until(self, check: Callable[[], bool], what: str) -> None:
        try:
            async with asyncio.timeout(_STEP_TIMEOUT_S):
                while True:  # the agents' counters, checked as the ledger is
                    if check():
                        return
                    await asyncio.sleep(_LEDGER_POLL_S)
        except TimeoutError:
            raise CommandError(f"step {self._step} of the demo waited in vain for {what}") from None

    @contextlib.asynccontextmanager
    async def _watching(self, ledger: SQLiteLedgerStore) -> AsyncIterator[LedgerWatch]:
        """Print the order's ledger entries as they change, until the block ends (and once
        more then, so the last changes are printed too)."""
        watch = LedgerWatch(ledger, self._ledger_said, self._names)
        follower = asyncio.create_task(watch.follow())
        try:
            yield watch
        finally:
            follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follower
        await watch.look()

    # -- printing ---------------------------------------------------------------------------

    def _introduce(
        self,
        risk_url: str,
        inventory_url: str,
        logistics_url: str,
        url: str,
        orchestrator: Orchestrator,
        db: Path,
    ) -> None:
        out = self.out
        out.print(Text("peerwire demo fulfillment: one order, four A2A agents", style="bold"))
        out.print(f"  Risk Agent               {risk_url}  may ask for a manual review")
        out.print(f"  Inventory Agent          {inventory_url}  locks stock, once per order")
        out.print(f"  Logistics Agent          {logistics_url}  books a carrier, once per order")
        out.print(
            f"  Order Fulfillment Agent  {url}  its own process (pid {orchestrator.pid}): "
            "risk first, then stock and carrier at once"
        )
        out.print(f"  The orchestrator keeps its tasks and its delegation ledger in {db}")
        out.print(
            "  Lines show who speaks: the order (its task, streamed), the ledger (read from "
            "that file), each agent."
        )

    def _heading(self, title: str) -> None:
        self._step += 1
        self.out.print()
        self.out.print(Text(f"{self._step}. {title}", style="bold underline"))

    def _sent(self, what: str) -> None:
        self.out.print(Text(f"→ {what}", style="bold cyan"))

    def _note(self, what: str) -> None:
        self.out.print(Text(f"  {what}", style="italic"))

    def _said(self, who: str, what: str | Text) -> None:
        line = Text(f"  {who:<{_LABEL_WIDTH}}", style="bold")
        line.append(what if isinstance(what, Text) else Text(what))
        self.out.print(line)

    def _peer_said(self, agent: str, what: str) -> None:
        self._said(_label(agent), what)

    def _ledger_said(self, entry: LedgerEntry, what: str) -> None:
        self._said("ledger", f"{entry.key:<8} {what}")

    def _order_status(self, state: TaskState, message: Message | None) -> None:
        said = f": {message.text}" if message is not None and message.text else ""
        self._said("order", Text.assemble(state_label(state), said))

    def _bookings(self, number: str) -> None:
        inventory, logistics = self.inventory, self.logistics
        self._note(
            f"{number}: inventory got {inventory.requests[number]} lock request(s), "
            f"booked {inventory.bookings[number]}; logistics got "
            f"{logistics.requests[number]} booking request(s), booked "
            f"{logistics.bookings[number]}"
        )
        if inventory.bookings[number] != 1 or logistics.bookings[number] != 1:
            raise CommandError(f"step {self._step}: {number} was not booked exactly once")

    async def _task(self, sending: Awaitable[Task | Message]) -> Task:
        answer = await sending
        if isinstance(answer, Message):
            raise CommandError(f"the orchestrator answered with a message: {answer.text}")
        return answer

    def _expect(self, task: Task, wanted: TaskState) -> None:
        if task.status.state is not wanted:
            raise CommandError(
                f"step {self._step} of the demo expected task {task.id} to be "
                f"{state_name(wanted)}, it is {state_name(task.status.state)}"
            )


@dataclass
class LedgerWatch:
    """Reads one order's ledger entries and says what changed since the last look."""

    ledger: SQLiteLedgerStore
    say: Callable[[LedgerEntry, str], None]
    names: dict[str, str]
    """Agent names by URL."""
    scope: str = ""
    """The order's task id (set once known)."""

    def __post_init__(self) -> None:
        self._seen: dict[str, tuple[str, ...]] = {}

    async def follow(self) -> None:
        while True:
            await self.look()
            await asyncio.sleep(_LEDGER_POLL_S)

    async def look(self) -> None:
        if not self.scope:
            return
        for entry in await self.ledger.entries(scope=self.scope):
            now = (entry.status.value, entry.remote_task_id, entry.remote_state, entry.reason)
            if self._seen.get(entry.key) != now:
                self._seen[entry.key] = now
                self.say(entry, _where(entry, self.names.get(entry.agent, "")))


def _label(agent: str) -> str:
    """``Risk Agent`` -> ``risk``: how an agent's lines are labeled."""
    return agent.removesuffix(" Agent").lower()


def _where(entry: LedgerEntry, agent: str) -> str:
    """One line on a ledger entry: where it stands and why."""
    status = entry.status
    remote = f"its task {entry.remote_task_id}" if entry.remote_task_id else ""
    state = entry.remote_state.removeprefix("TASK_STATE_").lower().replace("_", "-")
    why = f" ({entry.reason})" if entry.reason else ""
    if entry.kind == "compensation":
        if status is EntryStatus.REGISTERED:
            return f"registered as the undo of {entry.compensates!r}: {_text(entry)!r} to {agent}"
        if status is EntryStatus.DUE:
            return f"due: compensation to run{why}"
        if status in (EntryStatus.INTENT, EntryStatus.OPEN):
            return f"compensation running{', ' + remote if remote else ''}"
        return f"compensation {status.value}{why}"
    if status is EntryStatus.INTENT:
        return f"recorded, about to be sent to the {agent}"
    if status is EntryStatus.OPEN:
        return f"delegated to the {agent}: {remote}, {state or 'submitted'}"
    return f"{status.value.replace('_', ' ')}{why}"


def _text(entry: LedgerEntry) -> str:
    """The text of the message the entry sends."""
    return decode(entry.message, Message).text


class Orchestrator:
    """The Order Fulfillment Agent as a process of its own: started, killed, started again
    on the same store and port."""

    def __init__(
        self, folder: Path, db: Path, *, risk: str, inventory: str, logistics: str
    ) -> None:
        self.folder = folder
        self.log = folder / "orchestrator.log"
        self.arguments = [
            "-m",
            "peerwire.samples.fulfillment.orchestrator",
            *("--risk", risk, "--inventory", inventory, "--logistics", logistics),
            *("--store", f"sqlite:{db}"),
        ]
        self.url = ""
        self.port = 0
        self._process: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int:
        return self._process.pid if self._process is not None else 0

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        """Start it (on the port it had, if it ran before) and yield its URL; stop it after."""
        with self.log.open("ab") as sink:
            process = self._process = await asyncio.create_subprocess_exec(
                sys.executable,
                *self.arguments,
                "--port",
                str(self.port),
                cwd=self.folder,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=sink,
            )
        try:
            assert process.stdout is not None
            line = ""
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_START_TIMEOUT_S):
                    line = (await process.stdout.readline()).decode()
            if not line.startswith("listening on "):
                log = self.log.read_text(errors="replace").strip().splitlines()[-5:]
                raise CommandError(
                    "the Order Fulfillment Agent did not start: " + (" | ".join(log) or line)
                )
            self.url = line.removeprefix("listening on ").strip()
            self.port = int(self.url.rsplit(":", 1)[1])
            yield self.url
        finally:
            await self._stop(process)

    def kill(self) -> int:
        """SIGKILL (on POSIX; TerminateProcess elsewhere): no chance to clean up."""
        assert self._process is not None
        if os.name == "posix":
            self._process.send_signal(signal.SIGKILL)
        else:
            self._process.kill()
        return self._process.pid

    async def wait(self) -> None:
        assert self._process is not None
        async with asyncio.timeout(_START_TIMEOUT_S):
            await self._process.wait()

    async def _stop(self, process: asyncio.subprocess.Process) -> None:
        if process.returncode is None:
            process.terminate()  # serve() shuts down on SIGTERM
            try:
                async with asyncio.timeout(_SHUTDOWN_GRACE_S + 5):
                    await process.wait()
            except TimeoutError:
                process.kill()
                await process.wait()
