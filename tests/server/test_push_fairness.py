"""Push delivery is fair between webhooks: dead receivers do not delay a healthy one.

48 webhooks on loopback accept connections and never answer (each attempt to them runs into
``attempt_timeout``), two tasks each, so their notifications alone would fill every delivery
slot; a healthy webhook's notifications must still arrive within one retry interval. Each
dead endpoint gets one attempt at a time (it has not answered yet) and, once it has failed,
none while its circuit is open: its due notifications go back to the outbox without spending
attempts. The circuit's rules one by one (open, half-open, closed, the shared slots) are
``test_push_circuits``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import anyio
import httpx

from peerwire.server.push import PushSettings
from peerwire.server.stores import MemoryTaskStore
from peerwire.testing import live_server

from ._rpc import Rpc, user_message
from ._webhook import Received, Receiver, receiving
from .push_agent import STEPS, build

DEAD = 48
TASKS_PER_DEAD = 2
RETRY_S = 2.0
SETTINGS = PushSettings(
    allow=("127.0.0.1",),
    attempt_timeout=4.0,  # what a dead receiver costs each attempt that reaches it
    retry_delay=RETRY_S,
    max_retry_delay=RETRY_S,
    max_attempts=20,
    poll_interval=0.2,
)
WAIT_S = 30.0


@dataclass
class DeadReceivers:
    """Servers that accept every connection and never answer: black holes with a backlog.
    Counted by port: connections taken, and the most open at once."""

    urls: list[str] = field(default_factory=list)
    accepted: Counter[int] = field(default_factory=Counter)
    open_now: Counter[int] = field(default_factory=Counter)
    most_at_once: Counter[int] = field(default_factory=Counter)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def hold(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        port = writer.get_extra_info("sockname")[1]
        self.accepted[port] += 1
        self.open_now[port] += 1
        self.most_at_once[port] = max(self.most_at_once[port], self.open_now[port])
        # Until the sender gives up (its end closes: EOF after the request) or the test ends.
        gave_up = asyncio.ensure_future(reader.read())
        released = asyncio.ensure_future(self.release.wait())
        try:
            await asyncio.wait(
                {gave_up, released}, timeout=WAIT_S, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            self.open_now[port] -= 1
            for waiting in (gave_up, released):
                waiting.cancel()
            writer.close()


@contextlib.asynccontextmanager
async def dead_receivers(count: int) -> AsyncIterator[DeadReceivers]:
    dead = DeadReceivers()
    servers: list[asyncio.Server] = []
    try:
        for _ in range(count):
            servers.append(await asyncio.start_server(dead.hold, "127.0.0.1", 0))
            dead.urls.append(f"http://127.0.0.1:{servers[-1].sockets[0].getsockname()[1]}/hook")
        yield dead
    finally:
        dead.release.set()
        for server in servers:
            server.close()
        for server in servers:
            await server.wait_closed()


def steps_with_webhook(url: str) -> dict[str, object]:
    return {
        "message": user_message("go", metadata={"skill": "steps"}),
        "configuration": {"taskPushNotificationConfig": {"url": url}},
    }


async def test_dead_webhooks_do_not_delay_a_healthy_one() -> None:
    arrivals: dict[str, float] = {}

    def healthy(received: Received) -> int:
        arrivals.setdefault(received.notification_id, time.monotonic())
        return 200

    store = MemoryTaskStore()
    async with (
        dead_receivers(DEAD) as dead,
        receiving(Receiver(healthy)) as receiver,
        live_server(build(), store=store, push=SETTINGS) as url,
        httpx.AsyncClient(trust_env=False, timeout=WAIT_S) as http,
    ):
        rpc = Rpc(http, url)
        dead_tasks = await asyncio.gather(
            *(
                rpc.result("SendMessage", steps_with_webhook(hook))
                for hook in dead.urls
                for _ in range(TASKS_PER_DEAD)
            )
        )
        # Their notifications alone are more than the slots; now the dead hold what they can.
        assert SETTINGS.max_concurrent < DEAD * TASKS_PER_DEAD
        with anyio.fail_after(WAIT_S):
            while sum(dead.open_now.values()) < min(DEAD, SETTINGS.max_concurrent):  # noqa: ASYNC110
                await asyncio.sleep(0.05)

        # Healthy tasks through the dead ones' first attempts, their timeouts, their open
        # circuits and their probes.
        latencies = []
        until = time.monotonic() + SETTINGS.attempt_timeout + RETRY_S + 1.0
        while time.monotonic() < until:
            sent = time.monotonic()
            task = (await rpc.result("SendMessage", steps_with_webhook(receiver.url + "/hook")))[
                "task"
            ]
            # Notification ids are taskId/configId/version.
            prefix = task["id"] + "/"
            await receiver.until(
                lambda r, prefix=prefix: (
                    sum(n.notification_id.startswith(prefix) for n in r.accepted) >= len(STEPS)
                )
            )
            latencies.append(max(t for n, t in arrivals.items() if n.startswith(prefix)) - sent)
            await asyncio.sleep(0.2)
        # Well within one retry interval, where sharing slots with the dead made it several
        # attempt timeouts.
        assert max(latencies) < RETRY_S, latencies
        assert max(dead.most_at_once.values()) == 1, "one attempt at a time to a silent receiver"
        dead.release.set()  # their attempts end now: the server need not wait them out

    # Every attempt counted in the outbox was a connection a dead receiver took: what was
    # given back while a circuit was open or a probe was out spent nothing.
    counted = 0
    for task in dead_tasks:
        rows = await store.outbox(task["task"]["id"])
        assert rows and all(row.state == "pending" for row in rows)
        counted += sum(row.attempts for row in rows)
    assert counted <= sum(dead.accepted.values())
