"""The inspector shows a task's delegations, read from the agent's ledger (``--ledger``):
grouped per remote agent, each remote task with its state, each step with its undo; and says
in words when it has no ledger or is given one it cannot read."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from peerwire.inspect import InspectorApp, serve_inspector
from peerwire.inspect.page_io import InspectorError

from .delegating import Fulfilment, serve_fulfilment
from .pages import api_client
from .test_backend import connect, no_traceback, task_in, wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")

PEERWIRE = Path(sys.executable).with_name("peerwire")


async def delegations_settled(http: httpx.AsyncClient, task_id: str) -> dict[str, Any]:
    """The task's delegations once its undo has run (it runs after the task failed)."""
    for _ in range(200):
        view = (await http.get(f"/api/tasks/{task_id}/delegations")).json()
        if view["open"] == 0 and view["count"] == 3:
            return dict(view)
        await asyncio.sleep(0.05)
    raise AssertionError(f"the delegations never settled: {view}")


async def test_a_tasks_delegations_are_grouped_per_agent_with_states_and_undo(
    tmp_path: Path,
) -> None:
    async with (
        serve_fulfilment(tmp_path) as shop,
        serve_inspector(ledger=shop.ledger, timeout=10.0) as page,
        api_client(page) as http,
    ):
        assert (await http.get("/api/state")).json()["ledger"] is True
        await connect(http, shop.url)
        await http.post("/api/send", json={"binding": "JSONRPC", "text": "order-7"})
        task = await wait_for(http, task_in("FAILED"), "the fulfilment failing")
        view = await delegations_settled(http, task["id"])
    check_view(view, task["id"], shop)
    assert shop.inventory_peer.releases == {"order-7": 1}


def check_view(view: dict[str, Any], task_id: str, shop: Fulfilment) -> None:
    assert view["taskId"] == task_id
    assert view["ended"]["state"] == "FAILED"
    groups = {group["agent"]: group["entries"] for group in view["agents"]}
    assert set(groups) == {shop.inventory, shop.logistics}
    inventory = {e["key"]: e for e in groups[shop.inventory]}
    assert set(inventory) == {"lock", "release"}
    lock, release = inventory["lock"], inventory["release"]
    assert (lock["kind"], lock["status"], lock["remoteState"]) == ("step", "completed", "COMPLETED")
    assert lock["remoteTaskId"]
    assert lock["compensations"] == [
        {"id": release["id"], "key": "release", "agent": shop.inventory, "status": "completed"}
    ]
    assert (release["kind"], release["compensates"], release["status"]) == (
        "compensation",
        "lock",
        "completed",
    )
    assert release["remoteState"] == "COMPLETED" and release["remoteTaskId"]
    (ship,) = groups[shop.logistics]
    assert (ship["key"], ship["status"], ship["remoteState"]) == ("ship", "failed", "FAILED")
    assert "cannot do order-7" in ship["reason"]


async def test_a_task_without_delegations_has_an_empty_view(tmp_path: Path) -> None:
    async with (
        serve_fulfilment(tmp_path) as shop,
        serve_inspector(ledger=shop.ledger, timeout=10.0) as page,
        api_client(page) as http,
    ):
        view = (await http.get("/api/tasks/no-such-task/delegations")).json()
    assert view == {"taskId": "no-such-task", "ended": None, "agents": [], "count": 0, "open": 0}


async def test_without_a_ledger_the_page_is_told_how_to_give_one(
    inspector: httpx.AsyncClient,
) -> None:
    assert (await inspector.get("/api/state")).json()["ledger"] is False
    refused = await inspector.get("/api/tasks/some-task/delegations")
    assert refused.status_code == 404 and "--ledger" in no_traceback(refused)


async def test_a_ledger_that_cannot_be_read_is_refused_in_words(tmp_path: Path) -> None:
    for spec, said in (
        (f"sqlite:{tmp_path / 'missing.db'}", "no ledger at"),
        ("memory", "memory ledger"),
        ("redis://127.0.0.1", "unknown ledger"),
    ):
        with pytest.raises(InspectorError, match=said):
            InspectorApp(ledger=spec)
    assert not (tmp_path / "missing.db").exists()  # nothing was made where nothing was


async def test_the_cli_refuses_a_missing_ledger_file(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        PEERWIRE,
        "inspect",
        "--port",
        "0",
        "--ledger",
        f"sqlite:{tmp_path / 'nope.db'}",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 2, output
    assert b"--ledger: no ledger at" in output and b"Traceback" not in output
