"""A worker taking over: the worker running a fan-out of delegations is SIGKILLed; the
cluster's sweeper hands the task to the other worker, whose handler runs again
(``on_restart="resume"``), finds the three delegations in the ledger (PostgreSQL, shared by
every process), follows them on, and the peer counts each booking exactly once."""

from __future__ import annotations

from pathlib import Path

import pytest
from cluster._cluster import cluster, until_terminal
from server._rpc import state_of

from peerwire.delegation import EntryStatus
from peerwire.delegation.postgres import PostgresLedgerStore
from peerwire.testing import live_server

from ._peers import PeerAgent, wait_for

pytestmark = pytest.mark.services


async def test_the_worker_that_takes_over_books_nothing_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    peer = PeerAgent()
    async with live_server(peer.agent) as peer_url:
        monkeypatch.setenv("PEER_URL", peer_url)  # the cluster's processes inherit it
        async with cluster(tmp_path, replicas=1, workers=2, agent="delegating_agent") as running:
            (replica,) = running.replicas
            assert replica.rpc is not None
            sent = await replica.rpc.result(
                "SendMessage",
                {
                    "message": {
                        "messageId": "order-1",
                        "role": "ROLE_USER",
                        "parts": [{"text": "order 1"}],
                    },
                    "configuration": {"returnImmediately": True},
                },
            )
            task_id = sent["task"]["id"]
            ledger = PostgresLedgerStore.from_url(running.store)
            await ledger.open()
            try:

                async def all_open() -> bool:
                    entries = await ledger.entries(scope=task_id)
                    return (
                        sum(peer.bookings.values()) == 3
                        and len(entries) == 3
                        and all(e.status is EntryStatus.OPEN for e in entries)
                    )

                await wait_for(all_open, limit=30, what="three open delegations")
                (first,) = running.runs(task_id)
                holder = next(w for w in running.workers if w.pid == first.pid)
                await running.kill(holder)
                peer.gate.set()
                await until_terminal(replica.rpc, [task_id], 60)
                task = await replica.rpc.get(task_id)
                entries = [e for e in await ledger.entries(scope=task_id) if e.kind == "step"]
            finally:
                await ledger.close()
            assert state_of(task) == "TASK_STATE_COMPLETED"
            runs = running.runs(task_id)
            assert len(runs) == 2 and runs[1].pid != holder.pid
    assert peer.bookings == {"a": 1, "b": 1, "c": 1}
    assert [e.status for e in entries] == [EntryStatus.COMPLETED] * 3
