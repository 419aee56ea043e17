"""A compensation that keeps failing is retried with backoff, then parked in the dead-letter
list; ``peerwire delegations list --dead`` shows it and ``peerwire delegations retry`` runs it
again (from another process, on the same SQLite file)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from peerwire import Agent, Client, Task, TaskContext, TaskState
from peerwire.delegation import Completed, DelegationHub, EntryStatus, SQLiteLedgerStore
from peerwire.testing import live_server

from ._peers import PeerAgent, wait_for

PEERWIRE = Path(sys.executable).with_name("peerwire")


async def _cli(*arguments: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        PEERWIRE,
        *arguments,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, output.decode()


async def test_failing_compensation_lands_in_dead_letters_and_is_retried_from_the_cli(
    tmp_path: Path,
) -> None:
    db = tmp_path / "orchestrator.db"
    peer = PeerAgent()
    peer.release_failures = 1_000
    async with live_server(peer.agent) as peer_url:
        orchestrator = Agent("Orchestrator")

        @orchestrator.skill()
        async def order(ctx: TaskContext) -> str:
            lock = await ctx.delegate(peer_url, "book stock-9", key="lock")
            assert isinstance(await lock.result(), Completed)
            await lock.compensate_with(peer_url, "release stock-9", key="release")
            raise RuntimeError("the carrier could not be booked")

        hub = DelegationHub(
            SQLiteLedgerStore(db), compensation_attempts=3, compensation_backoff=0.05
        )
        ledger = SQLiteLedgerStore(db)
        async with live_server(orchestrator, store=f"sqlite:{db}", delegations=hub) as url:
            async with Client.connect(url) as client:
                parent = await client.send("go")
            assert isinstance(parent, Task) and parent.status.state is TaskState.FAILED
            await ledger.open()
            try:

                async def dead() -> bool:
                    entry = await ledger.find("", parent.id, "release")
                    return entry is not None and entry.status is EntryStatus.DEAD

                await wait_for(dead, limit=20, what="the compensation to give up")
                entry = await ledger.find("", parent.id, "release")
            finally:
                await ledger.close()
        assert entry is not None and entry.runs == 3
        assert "release of stock-9 failed" in entry.reason

        code, listing = await _cli("delegations", "list", "--dead", "--store", f"sqlite:{db}")
        assert code == 0, listing
        assert entry.id in listing and "release" in listing
        code, listing = await _cli("delegations", "list", "--json", "--store", f"sqlite:{db}")
        rows = [json.loads(line) for line in listing.splitlines()]
        assert {(r["key"], r["status"]) for r in rows} == {
            ("lock", "completed"),
            ("release", "dead"),
        }

        # Still failing: the retry says so and the entry stays in the dead letters.
        code, said = await _cli("delegations", "retry", entry.id, "--store", f"sqlite:{db}")
        assert code != 0 and "failed" in said
        peer.release_failures = 0
        code, said = await _cli("delegations", "retry", entry.id, "--store", f"sqlite:{db}")
        assert code == 0, said
        assert "completed" in said
    assert peer.releases == {"stock-9": 1}
    await ledger.open()
    try:
        after = await ledger.get(entry.id)
    finally:
        await ledger.close()
    assert after is not None and after.status is EntryStatus.COMPLETED
