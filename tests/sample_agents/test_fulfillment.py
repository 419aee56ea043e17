"""The order-fulfillment sample (peerwire.samples.fulfillment): four agents on loopback, each
scenario checked at the peers themselves (their task states, what they booked)."""

from __future__ import annotations

import time
from pathlib import Path

from peerwire import Client, Task, TaskState
from peerwire.cli.serve import load_agent
from peerwire.delegation import EntryStatus, SQLiteLedgerStore
from peerwire.samples.fulfillment.orchestrator import Limits
from peerwire.samples.fulfillment.orders import parse_order

from ._fulfillment import remote_state, serving_all, wait_until

CASCADE_S = 2.0  # the parent's cancel reaches every remote task within this


async def _send(client: Client, text: str, *, task_id: str | None = None) -> Task:
    answer = await client.send(text, task_id=task_id)
    assert isinstance(answer, Task), answer
    return answer


async def _entries(ledger: SQLiteLedgerStore, parent: str) -> dict[str, EntryStatus]:
    return {e.key: e.status for e in await ledger.entries(scope=parent)}


def test_an_order_line_names_its_number_quantity_value_and_words() -> None:
    order = parse_order("ord-17: 3 widgets, 1250.5 EUR, Slow  Carrier")
    assert order is not None
    assert (order.number, order.quantity, order.value) == ("ORD-17", 3, 1250.5)
    assert order.says("slow carrier") and not order.says("no carrier")
    assert parse_order("three widgets please") is None


def test_each_agent_can_be_served_by_name() -> None:
    """``peerwire serve peerwire.samples.fulfillment.<module>:agent`` finds an agent."""
    served = {
        name: load_agent(f"peerwire.samples.fulfillment.{name}:agent")
        for name in ("risk", "inventory", "logistics", "orchestrator")
    }
    assert {name: [s.id for s in agent.skills] for name, agent in served.items()} == {
        "risk": ["check"],
        "inventory": ["lock", "release"],
        "logistics": ["book"],
        "orchestrator": ["fulfil"],
    }
    assert served["orchestrator"].on_restart == "resume"


async def test_a_normal_order_books_each_step_once_and_discards_the_release(
    tmp_path: Path,
) -> None:
    async with serving_all(tmp_path / "orders.db") as (peers, client, ledger):
        task = await _send(client, "ORD-1001: 3 widgets, 240 EUR")
        assert task.status.state is TaskState.COMPLETED, task.status
        entries = await _entries(ledger, task.id)
    (artifact,) = task.artifacts
    assert artifact.text == (
        "ORD-1001: 3 locked\nORD-1001: booked with Rapid Freight, tracking RF-1001"
    )
    assert peers.risk.checks == {"ORD-1001": 1} and not peers.risk.reviews
    assert peers.inventory.requests == peers.inventory.bookings == {"ORD-1001": 1}
    assert peers.logistics.requests == peers.logistics.bookings == {"ORD-1001": 1}
    assert peers.inventory.stock == 97 and not peers.inventory.releases
    assert entries == {
        "risk": EntryStatus.COMPLETED,
        "lock": EntryStatus.COMPLETED,
        "release": EntryStatus.DISCARDED,
        "book": EntryStatus.COMPLETED,
    }


async def test_a_failed_booking_releases_the_stock(tmp_path: Path) -> None:
    async with serving_all(tmp_path / "orders.db") as (peers, client, ledger):
        task = await _send(client, "ORD-1002: 2 widgets, no carrier")
        assert task.status.state is TaskState.FAILED
        assert task.status.message is not None
        assert "book: " in task.status.message.text
        assert "no carrier serves ORD-1002" in task.status.message.text

        async def released() -> bool:
            return peers.inventory.releases["ORD-1002"] == 1

        await wait_until(released, what="the release (the lock's compensation)")
        entries = await _entries(ledger, task.id)
    assert entries["release"] is EntryStatus.COMPLETED
    assert entries["book"] is EntryStatus.FAILED
    assert peers.inventory.bookings == {"ORD-1002": 1}, "locked once, then released"
    assert peers.inventory.stock == 100 and peers.inventory.locks == {}
    assert not peers.logistics.bookings


async def test_a_booking_past_its_time_limit_is_canceled_and_the_stock_released(
    tmp_path: Path,
) -> None:
    limits = Limits(logistics=0.5)
    async with serving_all(tmp_path / "orders.db", limits=limits) as (peers, client, ledger):
        task = await _send(client, "ORD-1006: 1 widget, slow carrier")
        assert task.status.state is TaskState.FAILED
        assert task.status.message is not None and "timed out" in task.status.message.text

        async def released() -> bool:
            return peers.inventory.releases["ORD-1006"] == 1

        await wait_until(released, what="the release after the time limit")
        (book,) = [e for e in await ledger.entries(scope=task.id) if e.key == "book"]
        assert book.status is EntryStatus.TIMED_OUT
        assert await remote_state(peers.logistics_url, book.remote_task_id) is TaskState.CANCELED
    assert peers.logistics.cancels == {"ORD-1006": 1} and not peers.logistics.bookings
    assert peers.inventory.stock == 100


async def test_a_manual_review_is_asked_of_the_caller_and_answered_on_the_risk_task(
    tmp_path: Path,
) -> None:
    async with serving_all(tmp_path / "orders.db") as (peers, client, ledger):
        asked = await _send(client, "ORD-1003: 1 widget, 5000 EUR")
        assert asked.status.state is TaskState.INPUT_REQUIRED
        assert asked.status.message is not None
        question = asked.status.message.text
        assert question.startswith("The Risk Agent asks: ORD-1003 needs a manual review")
        assert "5000 EUR is over 1000 EUR" in question
        assert not peers.inventory.requests, "nothing locked before the review"
        done = await _send(client, "yes, approved by Sam", task_id=asked.id)
        assert done.status.state is TaskState.COMPLETED, done.status
        (risk,) = [e for e in await ledger.entries(scope=asked.id) if e.key == "risk"]
        # The answer went to the same remote task: one check, one review, completed there.
        assert await remote_state(peers.risk_url, risk.remote_task_id) is TaskState.COMPLETED
    assert peers.risk.checks == peers.risk.reviews == {"ORD-1003": 1}
    assert peers.inventory.bookings == peers.logistics.bookings == {"ORD-1003": 1}


async def test_a_declined_review_rejects_the_order_and_locks_nothing(tmp_path: Path) -> None:
    async with serving_all(tmp_path / "orders.db") as (peers, client, _):
        asked = await _send(client, "ORD-1007: 1 widget, please review")
        assert asked.status.state is TaskState.INPUT_REQUIRED
        done = await _send(client, "no: unknown customer", task_id=asked.id)
    assert done.status.state is TaskState.REJECTED
    assert done.status.message is not None
    assert "declined by manual review: no: unknown customer" in done.status.message.text
    assert not peers.inventory.requests and not peers.logistics.requests


async def test_canceling_the_order_mid_way_cancels_every_remote_task(tmp_path: Path) -> None:
    async with serving_all(tmp_path / "orders.db") as (peers, client, ledger):
        parent = await client.send(
            "ORD-1004: 1 widget, slow stock, slow carrier", return_immediately=True
        )
        assert isinstance(parent, Task)

        async def both_working() -> bool:
            entries = await ledger.entries(scope=parent.id)
            working = [
                e
                for e in entries
                if e.key in ("lock", "book") and e.status is EntryStatus.OPEN and e.remote_task_id
            ]
            return len(working) == 2 and peers.inventory.requests["ORD-1004"] == 1

        await wait_until(both_working, what="the lock and the booking to be open")
        remote = {
            e.key: (e.agent, e.remote_task_id)
            for e in await ledger.entries(scope=parent.id)
            if e.kind == "step"
        }
        canceled = await client.cancel_task(parent.id)
        assert canceled.status.state is TaskState.CANCELED
        started = time.monotonic()
        for key in ("lock", "book"):
            url, task_id = remote[key]

            async def canceled_there(url: str = url, task_id: str = task_id) -> bool:
                return await remote_state(url, task_id) is TaskState.CANCELED

            await wait_until(canceled_there, limit=CASCADE_S, what=f"{key} CANCELED at its peer")
        assert time.monotonic() - started < CASCADE_S
        assert await remote_state(*remote["risk"]) is TaskState.COMPLETED, "it had ended"

        async def release_ran() -> bool:
            return (await _entries(ledger, parent.id))["release"] is EntryStatus.COMPLETED

        await wait_until(release_ran, what="the release to run (the lock may have acted)")
    assert peers.inventory.cancels == {"ORD-1004": 1} and not peers.inventory.bookings
    assert peers.logistics.cancels == {"ORD-1004": 1} and not peers.logistics.bookings
    assert peers.inventory.stock == 100


async def test_canceling_the_order_during_the_review_cancels_the_risk_task(
    tmp_path: Path,
) -> None:
    async with serving_all(tmp_path / "orders.db") as (peers, client, ledger):
        asked = await _send(client, "ORD-1008: 1 widget, review")
        assert asked.status.state is TaskState.INPUT_REQUIRED
        (risk,) = await ledger.entries(scope=asked.id)
        canceled = await client.cancel_task(asked.id)
        assert canceled.status.state is TaskState.CANCELED
        assert await remote_state(peers.risk_url, risk.remote_task_id) is TaskState.CANCELED
    assert peers.risk.cancels == {"ORD-1008": 1}
    assert not peers.inventory.requests and not peers.logistics.requests
