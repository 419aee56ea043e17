"""Hard deadlines against a hung agent: a real ``peerwire serve`` peer SIGSTOPped mid-call.

The deadline holds within its grace (``cancel_within``: the cancel and the lookup at the
deadline are bounded by it), a cancel the stopped agent cannot confirm leaves the step open
and flagged (never recorded canceled), its undo waits, and once the peer is SIGCONTed the
hub's background cancel finds how the step ended there: the booking that landed is released
exactly once, after it. Effects are counted from the peer's own fsync'd log."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from peerwire import Agent, Client, Task, TaskContext, TaskState
from peerwire.delegation import (
    CANCEL_UNCONFIRMED,
    Call,
    DelegationHub,
    EntryStatus,
    Failed,
    Ledger,
    LedgerEntry,
    MemoryLedgerStore,
    Outcome,
    TimedOut,
    Undo,
)
from peerwire.delegation.entries import unsettled
from peerwire.testing import live_server

from ._garbage import unused_port
from ._peers import PeerAgent, remote_state, wait_for
from .test_restart import serving

DEADLINE = 2.0
GRACE = 2.0  # cancel_within
# Well past deadline + grace, well under the client's 30 s timeout an unbounded cancel hit.
RETURNED_WITHIN = 10.0

Pause = Callable[[str], Awaitable[None]]
"""Called by a step when the peer is to be SIGSTOPped (once the remote task it names, if
any, is WORKING there); returns once it is."""
Step = Callable[[TaskContext, str, Pause], Awaitable[Outcome]]


def effects(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def run_against_stopped_peer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: Step, *, booking: str
) -> tuple[Outcome, float, list[LedgerEntry]]:
    """Serve the effects peer, warm the orchestrator's connection to it, run ``step``, which
    has the peer SIGSTOPped when it calls ``pause`` (what it does next hangs); check the
    state while stopped, SIGCONT, and wait until every entry of the parent is settled. The
    step's outcome, how long it took, the entries."""
    log_path = tmp_path / "effects.log"
    monkeypatch.setenv("PEER_EFFECTS", str(log_path))
    hub = DelegationHub(MemoryLedgerStore(), cancel_within=GRACE, compensation_backoff=0.2)
    warmed, stopped = asyncio.Event(), asyncio.Event()
    results: list[tuple[Outcome, float]] = []
    working_first: list[str] = []
    orchestrator = Agent("Orchestrator")
    db, serve_log = tmp_path / "peer.db", tmp_path / "peer.log"
    async with serving("tests.delegation.effects_agent:agent", db, serve_log) as (peer, url):

        @orchestrator.skill()
        async def order(ctx: TaskContext) -> None:
            # The card fetched and a connection open: what hangs below is the send itself.
            await (await ctx.delegate(url, "ping", key="warm")).result()

            async def pause(remote_task_id: str) -> None:
                working_first.append(remote_task_id)
                warmed.set()
                await stopped.wait()

            began = time.monotonic()
            outcome = await step(ctx, url, pause)
            results.append((outcome, time.monotonic() - began))
            raise RuntimeError(f"the order failed: {outcome.describe()}")

        try:
            async with (
                live_server(orchestrator, delegations=hub) as orchestrator_url,
                Client.connect(orchestrator_url) as client,
            ):
                parent = await client.send("order 1", return_immediately=True)
                assert isinstance(parent, Task)
                await asyncio.wait_for(warmed.wait(), 20)
                if working_first[0]:

                    async def working() -> bool:
                        state = await remote_state(url, working_first[0])
                        return state is TaskState.WORKING

                    await wait_for(working, what="the remote task to work")
                peer.send_signal(signal.SIGSTOP)
                stopped.set()

                async def parent_failed() -> bool:
                    task = await client.get_task(parent.id)
                    return task.status.state is TaskState.FAILED

                await wait_for(parent_failed, limit=30, what="the order to fail")
                entries = {e.key: e for e in await hub.store.entries(scope=parent.id)}
                hung, undo = entries[booking], entries[f"{booking}/undo"]
                # Nobody knows whether the stopped agent booked: not canceled on a guess.
                assert hung.status in (EntryStatus.INTENT, EntryStatus.OPEN), hung
                assert hung.cause == CANCEL_UNCONFIRMED and hung.cancel_unconfirmed
                assert "did not reach" in hung.reason
                # Its undo waits until the agent says how the step ended.
                assert undo.status is EntryStatus.REGISTERED, undo
                assert effects(log_path) == []

                peer.send_signal(signal.SIGCONT)

                async def all_settled() -> bool:
                    rows = await hub.store.entries(scope=parent.id)
                    return not any(unsettled(e) for e in rows)

                await wait_for(all_settled, limit=60, what="the hub to settle the hung step")
                final = await hub.store.entries(scope=parent.id)
        finally:
            if peer.returncode is None:
                peer.send_signal(signal.SIGCONT)
    assert len(results) == 1
    return results[0][0], results[0][1], final


def check_balanced(final: list[LedgerEntry], log_path: Path, item: str) -> None:
    lines = effects(log_path)
    step = next(e for e in final if e.key == f"book-{item}")
    undo = next(e for e in final if e.key == f"book-{item}/undo")
    if f"book {item}" in lines:
        # The booking landed after the deadline: released once, after it.
        assert lines == [f"book {item}", f"release {item}"], lines
        assert undo.status is EntryStatus.COMPLETED, undo
    else:
        # The stopped agent dropped the send (its caller had gone): whether it booked was
        # not known when the step ended, so its undo may run (an undo tolerates nothing to
        # undo), once at most.
        assert lines in ([], [f"release {item}"]), lines
    assert step.status is not EntryStatus.INTENT and not step.cancel_unconfirmed


async def test_a_deadline_holds_within_its_grace_against_a_stopped_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The remote task is made (``return_immediately``), then its agent stops before it
    books: following it hangs past the deadline, and so does the cancel at the deadline.
    Resumed, the agent books (its pause is long over); the hub's next cancel finds the task
    COMPLETED and the undo runs after the booking, once (were the cancel to come first: the
    task CANCELED, nothing booked, the undo once at most)."""

    async def book(ctx: TaskContext, url: str, pause: Pause) -> Outcome:
        d = await ctx.delegate(
            url,
            "slowbook a",
            key="book-a",
            deadline=DEADLINE,
            compensate=Undo(url, "release a"),
        )
        assert d.remote_task_id
        await pause(d.remote_task_id)
        return await d.result()

    outcome, took, final = await run_against_stopped_peer(
        tmp_path, monkeypatch, book, booking="book-a"
    )
    assert isinstance(outcome, TimedOut), outcome
    assert "did not reach" in outcome.reason
    assert took < RETURNED_WITHIN, took
    check_balanced(final, tmp_path / "effects.log", "a")


async def test_cancel_rest_reacts_while_another_send_hangs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fan-out: one call to the stopped agent (its send hangs), one that fails at once at a
    live peer. The failure cancels the hung call without waiting for its send (the group's
    deadline is far off); that cancel is bounded too."""
    failing = PeerAgent("Failing peer")
    async with live_server(failing.agent) as failing_url:

        async def fan_out(ctx: TaskContext, url: str, pause: Pause) -> Outcome:
            await pause("")
            outcomes = await ctx.delegate_all(
                [
                    Call(url, "book b", key="book-b", compensate=Undo(url, "release b")),
                    Call(failing_url, "fail x", key="fail-x"),
                ],
                deadline=120,
                on_failure="cancel_rest",
            )
            assert isinstance(outcomes[1], Failed), outcomes[1]
            return outcomes[0]

        outcome, took, final = await run_against_stopped_peer(
            tmp_path, monkeypatch, fan_out, booking="book-b"
        )
    assert isinstance(outcome, Failed) and outcome.cause == "unreachable", outcome
    assert "did not reach" in outcome.reason
    assert took < RETURNED_WITHIN, took
    check_balanced(final, tmp_path / "effects.log", "b")


async def test_a_lookup_that_cannot_be_made_is_not_taken_for_no_task() -> None:
    """An intent whose sends got no answer (a port nobody listens on): canceling it must ask
    the agent whether a send made a task; when that cannot be asked, the step is left open
    and flagged (once it counted as 'no task' and was recorded canceled), and its undo is
    held, not run."""
    dead_url = f"http://127.0.0.1:{unused_port()}"
    async with Ledger("memory", scope="job", cancel_within=GRACE) as ledger:
        d = await ledger.delegate(
            dead_url, "book z", key="book-z", compensate=Undo(dead_url, "release z")
        )
        assert d.entry.status is EntryStatus.INTENT and d.entry.attempts > 0
        outcome = await d.cancel("the job gave up")
        assert isinstance(outcome, Failed) and outcome.cause == "unreachable", outcome
        assert "could not be asked" in outcome.reason
        entry = d.entry
        assert entry.status is EntryStatus.INTENT and entry.cancel_unconfirmed, entry
        assert await ledger.compensate("the job gave up") == []
        (undo,) = await ledger.entries(kind="compensation")
        assert undo.status is EntryStatus.REGISTERED, undo
