"""``Ledger`` outside a server, and the ledger stores (memory, SQLite, PostgreSQL) alike."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from peerwire import Client, Message, Part, Role, Task, TaskState
from peerwire.delegation import (
    Completed,
    DelegationConflictError,
    DelegationError,
    EntryStatus,
    Failed,
    Ledger,
    LedgerStore,
    MemoryLedgerStore,
    SQLiteLedgerStore,
    Stalled,
    TimedOut,
)
from peerwire.testing import live_server
from tests.server._services import PG_DSN, fresh_schema

from ._peers import PeerAgent, remote_state, wait_for

StoreFactory = Callable[[], contextlib.AbstractAsyncContextManager[Callable[[], LedgerStore]]]


@contextlib.asynccontextmanager
async def _memory() -> AsyncIterator[Callable[[], LedgerStore]]:
    store = MemoryLedgerStore()  # one store: "reopening" it is the same process's memory
    yield lambda: store


@contextlib.asynccontextmanager
async def _sqlite(path: Path) -> AsyncIterator[Callable[[], LedgerStore]]:
    yield lambda: SQLiteLedgerStore(path / "ledger.db")


@contextlib.asynccontextmanager
async def _postgres() -> AsyncIterator[Callable[[], LedgerStore]]:
    from peerwire.delegation.postgres import PostgresLedgerStore

    async with fresh_schema() as schema:
        yield lambda: PostgresLedgerStore(PG_DSN, schema=schema)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> StoreFactory:
    kind = request.param
    if kind == "memory":
        return _memory
    if kind == "sqlite":
        return lambda: _sqlite(tmp_path)
    return _postgres


async def test_a_restarted_job_lists_what_is_open_and_reattaches(stores: StoreFactory) -> None:
    peer = PeerAgent()
    async with live_server(peer.agent) as url, stores() as make:
        async with Ledger(make(), scope="nightly") as ledger:
            held = await ledger.delegate(url, "hold h1", key="order-1/book")
            done = await ledger.delegate(url, "book b1", key="order-2/book")
            assert isinstance(await done.result(), Completed)
            assert held.remote_task_id
        # The job stopped; a new run of it, on the same ledger, finds the open one.
        peer.gate.set()
        async with Ledger(make(), scope="nightly") as ledger:
            still_open = await ledger.open()
            assert [d.key for d in still_open] == ["order-1/book"]
            outcome = await still_open[0].result()
            assert isinstance(outcome, Completed) and outcome.text == "booked h1"
            # Delegating the same key again is the recorded delegation, not a new send.
            again = await ledger.delegate(url, "hold h1", key="order-1/book")
            assert again.remote_task_id == held.remote_task_id
            entries = await ledger.entries()
            assert [(e.key, e.status, e.seq) for e in entries] == [
                ("order-1/book", EntryStatus.COMPLETED, 1),
                ("order-2/book", EntryStatus.COMPLETED, 2),
            ]
            with pytest.raises(DelegationConflictError):
                await ledger.delegate("http://127.0.0.1:1", "x", key="order-1/book")
            other = ledger.for_scope("another-job")
            assert await other.entries() == []
    assert peer.bookings == {"h1": 1, "b1": 1}


async def test_stalled_is_reported_as_stalled_not_as_a_timeout(stores: StoreFactory) -> None:
    peer = PeerAgent()
    async with live_server(peer.agent) as url, stores() as make:
        async with Ledger(make()) as ledger:
            d = await ledger.delegate(url, "ask invoice-3", key="approve", deadline=0.3)
            first = await d.result()
            assert isinstance(first, Stalled) and first.question_text == "approve invoice-3?"
        await asyncio.sleep(0.5)  # past the deadline: a stall does not spend it
        async with Ledger(make()) as ledger:
            (entry,) = await ledger.entries(open_only=True)
            assert entry.stalled and entry.paused_left is not None
            d = await ledger.attach("approve")
            assert isinstance(await d.result(), Stalled)
            await d.answer("yes")
            final = await d.result()
            assert isinstance(final, Completed) and final.text == "invoice-3: yes"
            with pytest.raises(DelegationError):
                await d.answer("again")  # the task no longer waits


async def test_an_intent_sent_before_a_crash_is_found_not_sent_again(tmp_path: Path) -> None:
    """The exactly-once window: the message went out, the process died before it recorded
    the answer. The restarted caller looks for the task (by the context it chose and the
    message id) before it would send again."""
    peer = PeerAgent()
    path = tmp_path / "ledger.db"
    async with live_server(peer.agent) as url:
        async with Ledger(f"sqlite:{path}", scope="job") as ledger:
            d = await ledger.delegate(url, "book w1", key="w1", start=False)
            entry = d.entry
            # What the crashed process had done: counted an attempt, then sent the message.
            await ledger.store.save(entry.replace(attempts=1))
            async with Client.connect(url) as client:
                sent = await client.send(
                    Message(
                        message_id=entry.message_id,
                        context_id=entry.context_id,
                        role=Role.USER,
                        parts=[Part(text="book w1")],
                    )
                )
            assert isinstance(sent, Task)
        async with Ledger(f"sqlite:{path}", scope="job") as ledger:
            outcome = await (await ledger.attach("w1")).result()
    assert isinstance(outcome, Completed) and outcome.remote_task_id == sent.id
    assert peer.bookings == {"w1": 1}


async def test_a_task_the_agent_lost_and_a_terminal_task(tmp_path: Path) -> None:
    first, second = PeerAgent(), PeerAgent()
    path = tmp_path / "ledger.db"
    async with live_server(first.agent) as url, Ledger(f"sqlite:{path}") as ledger:
        held = await ledger.delegate(url, "hold l1", key="lost")
        done = await ledger.delegate(url, "book t1", key="terminal")
        assert isinstance(await done.result(), Completed)
    # The agent came back without its memory store; the URL recorded now reaches it.
    async with live_server(second.agent) as new_url:

        async def connect(_: str) -> Client:
            return await Client.connect(new_url)

        async with Ledger(f"sqlite:{path}", connect=connect) as ledger:
            lost = await (await ledger.attach("lost")).result()
            assert isinstance(lost, Failed) and lost.cause == "not_found"
            assert held.remote_task_id in lost.reason
            # Canceling a delegation that already ended keeps its outcome.
            terminal = await (await ledger.attach("terminal")).cancel()
            assert isinstance(terminal, Completed)
            (lost_entry, terminal_entry) = await ledger.entries()
            assert lost_entry.status is EntryStatus.FAILED and lost_entry.cause == "not_found"
            assert terminal_entry.status is EntryStatus.COMPLETED


async def test_cancel_open_reaches_the_agent(stores: StoreFactory) -> None:
    peer = PeerAgent()
    async with live_server(peer.agent) as url, stores() as make, Ledger(make()) as ledger:
        a = await ledger.delegate(url, "slow c1", key="c1")
        b = await ledger.delegate(url, "slow c2", key="c2")
        outcomes = await ledger.cancel_open("the job was stopped")
        assert [type(o).__name__ for o in outcomes] == ["Canceled", "Canceled"]
        assert await remote_state(url, a.remote_task_id) is TaskState.CANCELED
        assert await remote_state(url, b.remote_task_id) is TaskState.CANCELED
        assert all(e.status is EntryStatus.CANCELED for e in await ledger.entries())
        assert "the job was stopped" in (await ledger.entries())[0].reason


async def test_polling_and_a_stall_answered_elsewhere_within_its_stall_deadline() -> None:
    peer = PeerAgent()
    async with live_server(peer.agent) as url, Ledger("memory") as ledger:
        polled = await ledger.delegate(url, "book p1", key="p1", follow="poll")
        assert isinstance(await polled.result(), Completed)

        waiting = await ledger.delegate(
            url, "ask p2", key="p2", follow="poll", deadline=30, stall_deadline=20
        )
        following = asyncio.ensure_future(waiting.result())

        async def stalled_there() -> bool:
            return await remote_state(url, waiting.remote_task_id) is TaskState.INPUT_REQUIRED

        await wait_for(stalled_there, what="the remote question")
        async with Client.connect(url) as operator:  # someone else answers at the agent
            await operator.send("ok by the operator", task_id=waiting.remote_task_id)
        outcome = await asyncio.wait_for(following, 30)
        assert isinstance(outcome, Completed) and outcome.text == "p2: ok by the operator"


async def test_a_stall_past_its_stall_deadline_times_out_and_is_canceled() -> None:
    peer = PeerAgent()
    async with live_server(peer.agent) as url, Ledger("memory") as ledger:
        d = await ledger.delegate(url, "ask p3", key="p3", stall_deadline=0.3)
        outcome = await d.result()
        assert isinstance(outcome, TimedOut), outcome
        assert outcome.state is TaskState.INPUT_REQUIRED
        assert "stall deadline" in outcome.reason
        assert await remote_state(url, d.remote_task_id) is TaskState.CANCELED
        (entry,) = await ledger.entries()
        assert entry.status is EntryStatus.TIMED_OUT


async def test_a_stall_answered_elsewhere_gets_its_paused_deadline_back() -> None:
    """The deadline stops while the remote task waits; answered by someone else meanwhile,
    the task is followed on with the time that was left, and times out when that runs out
    (without the deadline coming back, ``result()`` would follow the slow task for ever)."""
    peer = PeerAgent()
    async with live_server(peer.agent) as url, Ledger("memory") as ledger:
        d = await ledger.delegate(url, "askslow s9", key="q", deadline=1.0)
        assert isinstance(await d.result(), Stalled)
        await asyncio.sleep(1.2)  # longer than the deadline: a stall does not spend it
        async with Client.connect(url) as operator:
            await operator.send("go on", task_id=d.remote_task_id, return_immediately=True)
        outcome = await asyncio.wait_for(d.result(), 30)
        assert isinstance(outcome, TimedOut), outcome
        assert outcome.state is TaskState.WORKING
        assert await remote_state(url, d.remote_task_id) is TaskState.CANCELED
