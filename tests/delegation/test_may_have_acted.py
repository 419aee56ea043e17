"""Steps of unknown effect are undone, and an undo is not lost to a crash.

Real processes: the downstream agent is ``peerwire serve`` on a SQLite file, logging every
effect to a file of its own (``effect_agent``), SIGKILLed after its effect and started again
on the same file and port (its restart policy fails the interrupted task, saying
``INTERRUPTED`` in the status); effects are counted from that log."""

from __future__ import annotations

import signal
from pathlib import Path

from peerwire import Agent, Client, Message, Task, TaskContext, TaskState
from peerwire.delegation import (
    DelegationHub,
    EntryStatus,
    Failed,
    Outcome,
    SQLiteLedgerStore,
    Undo,
)
from peerwire.delegation.entries import unsettled
from peerwire.protocol import INTERRUPTED_REASON, status_reason
from peerwire.testing import live_server
from peerwire.types import decode

from ._garbage import unused_port
from ._peers import wait_for
from .test_restart import serving

EFFECTS = "tests.delegation.effect_agent:agent"


def effects(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


async def test_a_step_killed_after_its_effect_is_failed_interrupted_and_undone(
    tmp_path: Path,
) -> None:
    effect_log = tmp_path / "effects.log"
    env = {"EFFECT_LOG": str(effect_log), "FAIL_RELEASES": str(tmp_path / "no-such-flag")}
    peer_db, peer_log, port = tmp_path / "peer.db", tmp_path / "peer.log", unused_port()
    outcomes: list[Outcome] = []
    hub = DelegationHub(SQLiteLedgerStore(tmp_path / "orchestrator.db"))
    orchestrator = Agent("Orchestrator")

    @orchestrator.skill()
    async def order(ctx: TaskContext) -> str:
        peer = f"http://127.0.0.1:{port}"
        booked = await ctx.delegate(
            peer, "book o1", key="book", compensate=Undo(peer, "release o1")
        )
        outcomes.append(await booked.result())
        raise RuntimeError(outcomes[-1].describe())

    async with live_server(orchestrator, delegations=hub) as url, Client.connect(url) as client:
        async with serving(EFFECTS, peer_db, peer_log, port=port, env=env) as (peer, _):
            parent = await client.send("order", return_immediately=True)
            assert isinstance(parent, Task)

            async def booked() -> bool:
                return effects(effect_log) == ["book o1"]

            await wait_for(booked, limit=20, what="the booking")
            peer.send_signal(signal.SIGKILL)  # after its effect, before it completes
            await peer.wait()
        async with serving(EFFECTS, peer_db, peer_log, port=port, env=env) as (_, peer_url):

            async def undone() -> bool:
                # The release is logged at the agent before the ledger records it completed.
                undo = await hub.store.find("", parent.id, "book/undo")
                return undo is not None and undo.status is EntryStatus.COMPLETED

            await wait_for(undone, limit=40, what="the release (the booking may have acted)")
            failed = await client.get_task(parent.id)
            entries = {e.key: e for e in await hub.store.entries(scope=parent.id)}
            undo = entries["book/undo"]
            # The undo's idempotency key is its ledger-drawn messageId: the same message
            # sent again (a retry after a crash) is deduplicated by the peerwire agent.
            async with Client.connect(peer_url) as peer_client:
                again = await peer_client.send(decode(undo.message, Message))
                remote = await peer_client.get_task(entries["book"].remote_task_id)
    assert failed.status.state is TaskState.FAILED
    (outcome,) = outcomes
    assert isinstance(outcome, Failed) and outcome.cause == "interrupted", outcome
    assert status_reason(remote.status.message) == INTERRUPTED_REASON
    assert entries["book"].cause == "interrupted"
    assert undo.status is EntryStatus.COMPLETED
    assert isinstance(again, Task) and again.id == undo.remote_task_id
    assert effects(effect_log) == ["book o1", "release o1"]


async def test_a_kill_right_after_a_failed_undo_run_leaves_the_undo_to_recovery(
    tmp_path: Path,
) -> None:
    """The orchestrator (``peerwire serve``) is SIGKILLed as soon as its undo's first run has
    failed (its outcome and its next run recorded in one write); started again, it runs the
    undo to completion: released exactly once, no row left unsettled."""
    effect_log, refuse = tmp_path / "effects.log", tmp_path / "fail-releases"
    refuse.touch()
    env = {"EFFECT_LOG": str(effect_log), "FAIL_RELEASES": str(refuse)}
    db, log = tmp_path / "orchestrator.db", tmp_path / "orchestrator.log"
    ledger = SQLiteLedgerStore(db)
    async with serving(EFFECTS, tmp_path / "peer.db", tmp_path / "peer.log", env=env) as (
        _,
        peer_url,
    ):
        target = "tests.delegation.undo_orchestrator:agent"
        async with serving(target, db, log, peer_url) as (process, url):
            async with Client.connect(url) as client:
                parent = await client.send("o2", return_immediately=True)
            assert isinstance(parent, Task)
            await ledger.open()
            try:

                async def failed_once() -> bool:
                    undo = await ledger.find("", parent.id, "book/undo")
                    return undo is not None and undo.runs >= 1

                await wait_for(failed_once, limit=30, what="a failed undo run")
                process.send_signal(signal.SIGKILL)
                await process.wait()
                stranded = await ledger.find("", parent.id, "book/undo")
            finally:
                await ledger.close()
        refuse.unlink()
        async with serving(target, db, log, peer_url):

            async def released() -> bool:
                return "release o2" in effects(effect_log)

            await wait_for(released, limit=40, what="the release after the restart")
            await ledger.open()
            try:

                async def settled() -> bool:
                    rows = await ledger.entries(scope=parent.id)
                    return not any(unsettled(e) for e in rows)

                await wait_for(settled, limit=20, what="every row settled")
                undo = await ledger.find("", parent.id, "book/undo")
            finally:
                await ledger.close()
    assert stranded is not None and unsettled(stranded), stranded
    assert undo is not None and undo.status is EntryStatus.COMPLETED
    assert effects(effect_log) == ["book o2", "release o2"]
