"""Notifications survive SIGKILL: ``peerwire serve --push`` on a SQLite file is killed while
notifications are still undelivered, started again on the same file, and the webhook then has
every event of the task exactly once, in order; what was delivered before is not sent again.

The receiver (in this process) acknowledges by notification id and counts acknowledgements
per id. It takes the first notifications, then refuses the rest until the restart, so the kill
lands with rows delivered, rows backing off and rows waiting behind them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import httpx
import pytest

from peerwire.server.stores import SQLiteTaskStore
from peerwire.server.stores.base import OutboxRow

from ._rpc import Rpc, state_of, user_message
from ._webhook import Received, Receiver, receiving
from .push_agent import STEPS, step_of

REPO = Path(__file__).resolve().parents[2]
PEERWIRE = Path(sys.executable).with_name("peerwire")
STARTUP_TIMEOUT_S = 30.0
WAIT_S = 30.0
TAKEN_BEFORE_KILL = 3


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.asynccontextmanager
async def serve(db: Path, log: Path) -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    port = _free_port()
    arguments = [
        "serve",
        "tests.server.push_agent:agent",
        "--port",
        str(port),
        "--store",
        f"sqlite:{db}",
        "--no-grpc",
        "--push",
        "--push-allow",
        "127.0.0.1",
        "--push-attempts",
        "100",
        "--push-retry-delay",
        "2.0",
        "--push-timeout",
        "2",
    ]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    with log.open("ab") as sink:
        process = await asyncio.create_subprocess_exec(
            PEERWIRE, *arguments, cwd=db.parent, env=env, stdout=sink, stderr=sink
        )
    url = f"http://127.0.0.1:{port}"
    try:
        await _until_ready(process, url, log)
        yield process, url
    finally:
        if process.returncode is None:
            process.kill()
            with anyio.fail_after(15):
                await process.wait()


async def _until_ready(process: asyncio.subprocess.Process, url: str, log: Path) -> None:
    async with httpx.AsyncClient(trust_env=False, timeout=5) as http:
        with anyio.fail_after(STARTUP_TIMEOUT_S):
            for _ in range(10_000):
                if process.returncode is not None:
                    output = await anyio.Path(log).read_text()
                    pytest.fail(f"peerwire serve exited early:\n{output}")
                with contextlib.suppress(httpx.TransportError):
                    card = await http.get(url + "/.well-known/agent-card.json")
                    if card.status_code == 200:
                        assert card.json()["capabilities"]["pushNotifications"] is True
                        return
                await anyio.sleep(0.05)  # the process gives no other signal that it listens


@contextlib.asynccontextmanager
async def reading(db: Path) -> AsyncIterator[SQLiteTaskStore]:
    """A second store on the server's file, to read what the server has committed."""
    reader = SQLiteTaskStore(db, readers=1)
    await reader.open()
    try:
        yield reader
    finally:
        await reader.close()


async def outbox_until(
    reader: SQLiteTaskStore, task_id: str, done: Callable[[list[OutboxRow]], bool]
) -> list[OutboxRow]:
    """The task's outbox rows once ``done(rows)``: another process writes them, so there is
    nothing to await but its commits (polled, bounded in count and time)."""
    with anyio.fail_after(WAIT_S):
        for _ in range(10_000):
            rows = await reader.outbox(task_id)
            if rows and done(rows):
                return rows
            await anyio.sleep(0.02)
    raise AssertionError("unreachable")


async def test_undelivered_notifications_survive_sigkill_exactly_once(tmp_path: Path) -> None:
    db, log = tmp_path / "tasks.db", tmp_path / "serve.log"
    restarted = False

    def answer(request: Received) -> int:
        if restarted:
            return 200
        first_ids = list(dict.fromkeys(r.notification_id for r in receiver.received))
        taken = request.notification_id in first_ids[:TAKEN_BEFORE_KILL]
        return 200 if taken or len(first_ids) < TAKEN_BEFORE_KILL else 503

    receiver = Receiver(answer)
    async with receiving(receiver):
        hook = receiver.url + "/hook"
        async with serve(db, log) as (process, url):
            async with httpx.AsyncClient(trust_env=False, timeout=WAIT_S) as http:
                params = {
                    "message": user_message("go", metadata={"skill": "steps"}),
                    "configuration": {"taskPushNotificationConfig": {"url": hook, "token": "t"}},
                }
                task = (await Rpc(http, url).result("SendMessage", params))["task"]
            assert state_of(task) == "TASK_STATE_COMPLETED"  # every event is stored
            # Kill once the next notification has been refused and is backing off (at least
            # a second, per --push-retry-delay), so no attempt is in flight at the kill.
            async with reading(db) as reader:
                rows = await outbox_until(
                    reader, task["id"], lambda rows: rows[TAKEN_BEFORE_KILL].last_error != ""
                )
                process.send_signal(signal.SIGKILL)
            with anyio.fail_after(15):
                assert await process.wait() == -signal.SIGKILL
        assert rows[TAKEN_BEFORE_KILL].last_error == "HTTP 503"
        assert [r.state for r in rows[:TAKEN_BEFORE_KILL]] == ["delivered"] * TAKEN_BEFORE_KILL
        assert {r.state for r in rows[TAKEN_BEFORE_KILL:]} == {"pending"}
        before = len(receiver.received)
        delivered_before = {r.notification_id for r in receiver.accepted}
        assert len(delivered_before) == TAKEN_BEFORE_KILL

        restarted = True
        async with serve(db, log), reading(db) as reader:
            # Generous: were an attempt in flight at the kill after all, its row would wait
            # for its lease (--push-timeout + 30 s) rather than its backoff.
            await receiver.until(lambda r: len(r.acks) >= len(STEPS), timeout=2 * WAIT_S)
            rows = await outbox_until(
                reader, task["id"], lambda rows: all(r.state == "delivered" for r in rows)
            )

    accepted = receiver.accepted
    assert [step_of(r.json) for r in accepted] == STEPS, "every event, in order"
    assert sorted(receiver.acks.values()) == [1] * len(STEPS), "each exactly once"
    assert [r.notification_id for r in accepted] == [r.id for r in rows]
    after = receiver.received[before:]
    assert not {r.notification_id for r in after} & delivered_before, "nothing delivered twice"
    assert {r.headers["x-a2a-notification-token"] for r in receiver.received} == {"t"}
