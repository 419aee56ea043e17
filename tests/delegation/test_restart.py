"""Replay-safe delegation across a real SIGKILL: ``peerwire serve`` on a SQLite file is killed
mid fan-out, started again on the same file; the handler runs again (``on_restart="resume"``),
finds its three delegations in the ledger, sends none of them again, follows them on, and
the peer counts each booking exactly once."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx
import pytest

from peerwire import Agent, Client, Task, TaskContext, TaskState
from peerwire.delegation import (
    CANCEL_UNCONFIRMED,
    DelegationHub,
    EntryStatus,
    MemoryLedgerStore,
    SQLiteLedgerStore,
)
from peerwire.testing import live_server

from ._garbage import unused_port
from ._peers import PeerAgent, wait_for

REPO = Path(__file__).resolve().parents[2]
PEERWIRE = Path(sys.executable).with_name("peerwire")


def orchestrator(
    db: Path, log: Path, peer_url: str
) -> contextlib.AbstractAsyncContextManager[tuple[asyncio.subprocess.Process, str]]:
    return serving("tests.delegation.orchestrator_agent:agent", db, log, peer_url)


@contextlib.asynccontextmanager
async def serving(
    target: str,
    db: Path,
    log: Path,
    peer_url: str = "",
    *,
    port: int | None = None,
    env: dict[str, str] | None = None,
) -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    """``peerwire serve TARGET`` on a SQLite file, once it answers for its card (``port``:
    the same one again, for a restart; ``env``: more of the environment)."""
    port = port or unused_port()
    env = {
        **os.environ,
        **(env or {}),
        "PEER_URL": peer_url,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    arguments = [
        "serve",
        target,
        "--port",
        str(port),
        "--store",
        f"sqlite:{db}",
        "--no-grpc",
    ]
    with log.open("ab") as sink:
        process = await asyncio.create_subprocess_exec(
            PEERWIRE, *arguments, cwd=db.parent, env=env, stdout=sink, stderr=sink
        )
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(trust_env=False, timeout=5) as http:
            with anyio.fail_after(30):
                while True:
                    if process.returncode is not None:
                        pytest.fail(
                            f"peerwire serve exited early:\n{await anyio.Path(log).read_text()}"
                        )
                    with contextlib.suppress(httpx.TransportError):
                        if (await http.get(url + "/.well-known/agent-card.json")).is_success:
                            break
                    await anyio.sleep(0.05)
        yield process, url
    finally:
        if process.returncode is None:
            process.kill()
            with anyio.fail_after(15):
                await process.wait()


async def test_sigkill_mid_fan_out_resumes_and_books_nothing_twice(tmp_path: Path) -> None:
    db, log = tmp_path / "orchestrator.db", tmp_path / "serve.log"
    peer = PeerAgent()
    ledger = SQLiteLedgerStore(db)
    async with live_server(peer.agent) as peer_url:
        async with orchestrator(db, log, peer_url) as (process, url):
            async with Client.connect(url) as client:
                parent = await client.send("order 1", return_immediately=True)
            assert isinstance(parent, Task)

            async def all_open() -> bool:
                if sum(peer.bookings.values()) < 3:
                    return False
                entries = await ledger.entries(scope=parent.id)
                return len(entries) == 3 and all(
                    e.status is EntryStatus.OPEN and e.remote_task_id for e in entries
                )

            await ledger.open()
            try:
                await wait_for(all_open, limit=20, what="three open delegations")
            finally:
                await ledger.close()
            process.send_signal(signal.SIGKILL)
            await process.wait()

        peer.gate.set()  # the bookings can finish now; nobody follows them until the restart
        async with orchestrator(db, log, peer_url) as (_, url), Client.connect(url) as client:

            async def parent_done() -> bool:
                task = await client.get_task(parent.id)
                return task.status.state is TaskState.COMPLETED

            await wait_for(parent_done, limit=30, what="the replayed order to complete")
            task = await client.get_task(parent.id)
    assert task.artifacts[0].text == "booked a, booked b, booked c"
    assert peer.bookings == {"a": 1, "b": 1, "c": 1}
    assert sorted(m for m in peer.received if m.startswith("hold")) == [
        "hold a",
        "hold b",
        "hold c",
    ]


async def test_a_peer_killed_mid_delegation_leaves_an_explained_entry(tmp_path: Path) -> None:
    """The peer dies (SIGKILL) with a delegated task open. The parent's cancel still ends the
    parent at once (the cascade is bounded), and the ledger says the remote task could not be
    canceled (it stays open, to be canceled later); the peer, back on its file, has it."""
    remote: list[str] = []
    hub = DelegationHub(MemoryLedgerStore())
    orchestrator_agent = Agent("Orchestrator")
    peer_db, peer_log = tmp_path / "peer.db", tmp_path / "peer.log"
    async with serving("tests.delegation.peer_agent:agent", peer_db, peer_log) as (peer, peer_url):

        @orchestrator_agent.skill()
        async def order(ctx: TaskContext) -> None:
            d = await ctx.delegate(peer_url, "slow k1", key="k1")
            remote.append(d.remote_task_id)
            await d.result()

        async with (
            live_server(orchestrator_agent, delegations=hub) as url,
            Client.connect(url) as client,
        ):
            parent = await client.send("go", return_immediately=True)
            assert isinstance(parent, Task)

            async def sent() -> bool:
                return bool(remote and remote[0])

            await wait_for(sent, what="the delegation")
            peer.send_signal(signal.SIGKILL)
            await peer.wait()
            canceled = await client.cancel_task(parent.id)
            assert canceled.status.state is TaskState.CANCELED
    (entry, end) = await hub.store.entries(scope=parent.id, with_end=True)
    assert (end.kind, end.status) == ("end", EntryStatus.CANCELED)
    assert entry.status is EntryStatus.OPEN and entry.remote_task_id == remote[0]
    assert "the cancel did not reach" in entry.reason
    # Left open and flagged: the hub keeps canceling it (its agent never confirmed).
    assert entry.cause == CANCEL_UNCONFIRMED and entry.cancel_unconfirmed
