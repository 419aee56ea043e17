"""The task metrics users asked for, scraped from /metrics of real agents on loopback: the
build info, a bounded ``skill`` label on the task counters, the task duration histogram
(created to terminal), and the tasks waiting for their client counted in the store itself
(PostgreSQL shared by two agents: either one's page shows the other's tasks), cached for
the sample interval.
"""

from __future__ import annotations

import asyncio
import platform
import socket
import uuid
from importlib import metadata
from pathlib import Path

import pytest
from server._services import fresh_schema  # tests/server: a schema of its own, dropped after

from peerwire import Agent, Client, TaskContext
from peerwire.ops import Metrics
from peerwire.protocol import TaskRecord
from peerwire.server.stores import MemoryTaskStore, SQLiteTaskStore, TaskStore
from peerwire.server.stores.postgres import PostgresTaskStore
from peerwire.testing import live_server
from peerwire.types import Binding, TaskState, TaskStatus, now_timestamp

from .test_metrics import Samples, eventually, scrape, value

PG_DSN = "postgresql://postgres@127.0.0.1:5432/test"


def desk() -> Agent:
    """An agent with three skills: one that answers, one that asks, one that waits."""
    agent = Agent("Desk Agent")
    gate = asyncio.Event()
    agent.gate = gate  # type: ignore[attr-defined]

    @agent.router
    def route(message: object) -> str:
        return str((getattr(message, "metadata", None) or {}).get("skill", "echo"))

    @agent.skill()
    async def echo(text: str) -> str:
        return text

    @agent.skill()
    async def approve(ctx: TaskContext) -> str:
        answer = await ctx.ask("Approve?")
        return f"answered {answer.text}"

    @agent.skill()
    async def wait(ctx: TaskContext) -> str:
        await ctx.start_work()
        await gate.wait()
        return "done"

    return agent


def histogram_count(samples: Samples, state: str, skill: str) -> float:
    return value(samples, "peerwire_task_duration_seconds_count", state=state, skill=skill)


async def test_build_info_names_the_peerwire_and_python_versions() -> None:
    async with live_server(desk()) as url:
        samples = await scrape(url)
    labels = {"version": metadata.version("peerwire"), "python": platform.python_version()}
    assert value(samples, "peerwire_build_info", **labels) == 1
    assert len([name for name, _ in samples if name == "peerwire_build_info"]) == 1


async def test_task_counters_carry_the_skill_and_only_declared_ones() -> None:
    async with live_server(desk()) as url:
        async with Client.connect(url, bindings=[Binding.JSONRPC]) as client:
            for _ in range(2):
                await client.send("hi")
            asked = await client.send("pay", metadata={"skill": "approve"})
            await client.send("yes", task_id=asked.id)  # type: ignore[union-attr]
        samples = await scrape(url)
    assert value(samples, "peerwire_tasks_created_total", skill="echo") == 2
    assert value(samples, "peerwire_tasks_created_total", skill="approve") == 1
    assert value(samples, "peerwire_tasks_finished_total", state="completed", skill="echo") == 2
    done = {"state": "completed", "skill": "approve"}
    assert value(samples, "peerwire_tasks_finished_total", **done) == 1
    skills = {
        dict(labels)["skill"]
        for name, labels in samples
        if name.startswith("peerwire_task") and "skill" in dict(labels)
    }
    assert skills <= {"echo", "approve", "wait"}


def test_a_skill_the_card_does_not_declare_is_counted_as_unknown() -> None:
    metrics = Metrics()
    metrics.declare_skills(["echo"])
    for skill in ("echo", "no-such-skill", "another-one"):
        metrics.task_created(skill)
        metrics.task_finished(TaskState.FAILED, skill)
    page = metrics.render()[0].decode()
    assert 'peerwire_tasks_created_total{skill="echo"} 1.0' in page
    assert 'peerwire_tasks_created_total{skill="unknown"} 2.0' in page
    assert 'peerwire_tasks_finished_total{skill="unknown",state="failed"} 2.0' in page
    assert "no-such-skill" not in page and "another-one" not in page


async def test_the_duration_runs_from_creation_to_the_terminal_state() -> None:
    agent = desk()
    held_for = 0.3
    async with live_server(agent) as url:
        async with Client.connect(url, bindings=[Binding.JSONRPC]) as client:
            task = await client.send("go", metadata={"skill": "wait"}, return_immediately=True)
            await asyncio.sleep(held_for)
            agent.gate.set()  # type: ignore[attr-defined]
            # Waiting for input is part of a task's life too.
            asked = await client.send("pay", metadata={"skill": "approve"})
            await asyncio.sleep(held_for)
            await client.send("yes", task_id=asked.id)  # type: ignore[union-attr]
        samples = await eventually(
            url, lambda s: histogram_count(s, "completed", "wait") == 1, "the wait task ended"
        )
    assert task.id  # type: ignore[union-attr]
    for skill in ("wait", "approve"):
        labels = {"state": "completed", "skill": skill}
        assert histogram_count(samples, "completed", skill) == 1
        assert value(samples, "peerwire_task_duration_seconds_sum", **labels) >= held_for
        # The bucket at a day holds it: every observation is counted in +Inf and below.
        assert value(samples, "peerwire_task_duration_seconds_bucket", le="+Inf", **labels) == 1
        assert value(samples, "peerwire_task_duration_seconds_bucket", le="0.01", **labels) == 0


class CountingStore(PostgresTaskStore):
    """The real PostgreSQL store, counting how often the metrics ask it for its count."""

    counted = 0

    async def count_waiting(self) -> dict[TaskState, int] | None:
        CountingStore.counted += 1
        return await super().count_waiting()


@pytest.mark.services
async def test_tasks_waiting_for_input_are_counted_in_the_shared_store() -> None:
    async with fresh_schema() as schema:
        first = PostgresTaskStore(PG_DSN, schema=schema)
        second = CountingStore(PG_DSN, schema=schema)
        async with (
            live_server(desk(), store=first, metrics=Metrics(store_every=0.2)) as first_url,
            live_server(desk(), store=second, metrics=Metrics(store_every=0.2)) as second_url,
        ):
            async with Client.connect(first_url, bindings=[Binding.JSONRPC]) as client:
                asked = [await client.send("pay", metadata={"skill": "approve"}) for _ in range(3)]
            assert {task.status.state for task in asked} == {TaskState.INPUT_REQUIRED}  # type: ignore[union-attr]
            # The second agent never saw these tasks: its page counts them from the store.
            waiting = {"state": "input_required"}
            await eventually(
                second_url,
                lambda s: value(s, "peerwire_tasks_waiting", **waiting) == 3,
                "three tasks waiting in the store",
            )
            samples = await scrape(second_url)
            assert value(samples, "peerwire_tasks_waiting", state="auth_required") == 0
            async with Client.connect(second_url, bindings=[Binding.JSONRPC]) as client:
                # Answered through the second agent: the first one's page follows the store.
                await client.send("yes", task_id=asked[0].id)  # type: ignore[union-attr]
            await eventually(
                first_url,
                lambda s: value(s, "peerwire_tasks_waiting", **waiting) == 2,
                "two tasks waiting once one was answered",
            )


@pytest.mark.services
async def test_the_count_is_cached_for_the_sample_interval() -> None:
    async with fresh_schema() as schema:
        store = CountingStore(PG_DSN, schema=schema)
        async with live_server(desk(), store=store, metrics=Metrics(store_every=3600)) as url:
            CountingStore.counted = 0
            for _ in range(5):
                await scrape(url)
            assert CountingStore.counted == 1


@pytest.mark.services
@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgresql"])
async def test_each_store_counts_its_waiting_tasks_by_state(kind: str, tmp_path: Path) -> None:
    async with fresh_schema() as schema:
        store: TaskStore = (
            MemoryTaskStore()
            if kind == "memory"
            else SQLiteTaskStore(str(tmp_path / "tasks.db"))
            if kind == "sqlite"
            else PostgresTaskStore(PG_DSN, schema=schema)
        )
        await store.open()
        try:
            states = [TaskState.INPUT_REQUIRED] * 2 + [
                TaskState.AUTH_REQUIRED,
                TaskState.WORKING,
                TaskState.COMPLETED,
            ]
            for n, state in enumerate(states):
                record = TaskRecord(
                    str(uuid.uuid4()),
                    str(uuid.uuid4()),
                    TaskStatus(state=state, timestamp=now_timestamp()),
                    version=1,
                )
                await store.create(record, tenant=f"tenant-{n % 2}", owner="someone")
            assert await store.count_waiting() == {
                TaskState.INPUT_REQUIRED: 2,
                TaskState.AUTH_REQUIRED: 1,
            }
        finally:
            await store.close()


async def test_a_metrics_port_of_its_own_counts_the_waiting_tasks_too() -> None:
    """The page served from a thread (``metrics_port``) asks the store in the agent's loop."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    metrics = Metrics(store_every=0.2)
    async with live_server(desk(), metrics=metrics, metrics_port=port) as url:
        async with Client.connect(url, bindings=[Binding.JSONRPC]) as client:
            await client.send("pay", metadata={"skill": "approve"})
        await eventually(
            f"http://127.0.0.1:{port}",
            lambda s: value(s, "peerwire_tasks_waiting", state="input_required") == 1,
            "the waiting task on the metrics port",
        )
