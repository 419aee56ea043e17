"""Push delivery metrics: attempts by outcome, and the outbox's backlog sampled by the
deliverer's own loop (never by a scrape), on the memory and the SQLite store.

The webhook is a closed port on loopback: every attempt finds no one (``unavailable``), so
the notifications stay in the outbox, retried, and the backlog shows them.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from server._services import PG_DSN, fresh_schema

from peerwire import Agent, Client, PushSettings
from peerwire.testing import live_server
from peerwire.types import Binding

# The deliverer samples the backlog every few seconds: long enough for a few samples.
WAIT_S = 20.0


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def samples(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    async with httpx.AsyncClient(timeout=10) as http:
        page = (await http.get(url + "/metrics")).text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(page)
        for s in family.samples
    }


@pytest.mark.parametrize(
    "store", ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.services)]
)
async def test_attempts_and_the_outbox_backlog_are_measured(store: str, tmp_path: Path) -> None:
    if store != "postgres":
        await _measured(store, tmp_path)
        return
    async with fresh_schema() as schema:
        await _measured(f"{PG_DSN}?schema={schema}", tmp_path)


async def _measured(store: str, tmp_path: Path) -> None:
    agent = Agent("Pushing Agent")

    @agent.skill()
    async def echo(text: str) -> str:
        return text

    spec = f"sqlite:{tmp_path / 'tasks.db'}" if store == "sqlite" else store
    settings = PushSettings(allow=("127.0.0.1",), retry_delay=2.0, attempt_timeout=1.0)
    hook = f"http://127.0.0.1:{closed_port()}/hook"
    async with live_server(agent, store=spec, push=settings) as url:
        async with Client.connect(url, bindings=[Binding.JSONRPC]) as client:
            await client.send("hi", push=hook)
        deadline = asyncio.get_running_loop().time() + WAIT_S
        while True:
            found = await samples(url)
            unavailable = found.get(
                ("peerwire_push_delivery_attempts_total", (("outcome", "unavailable"),)), 0
            )
            rows = found.get(("peerwire_push_outbox_rows", ()), 0)
            age = found.get(("peerwire_push_outbox_oldest_age_seconds", ()), 0)
            if unavailable >= 1 and rows >= 1 and age > 0:
                break
            assert asyncio.get_running_loop().time() < deadline, found
            await asyncio.sleep(0.2)
    assert found.get(("peerwire_push_notifications_failed_total", ()), 0) == 0  # still retried
