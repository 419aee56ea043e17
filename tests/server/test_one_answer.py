"""One answer per question: of the answers sent at once to a task waiting for input, exactly
one is taken; every other one is refused with ``UnsupportedOperationError`` saying the task is
no longer waiting and what state it is in.

Against live servers, on every store (memory, SQLite, PostgreSQL) with one process, and in
cluster mode (PostgreSQL, Redis bus and work queue) with two replicas in this process, each
with its own store, bus and queue objects (as two processes would have). Both ways a task
waits are covered: a handler parked in ``ctx.ask`` and one that returned after
``require_input`` (the answer re-runs it with the replay rule).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from peerwire import Agent, TaskContext
from peerwire.cluster.redis_bus import RedisBus
from peerwire.cluster.work_queue import RedisWorkQueue
from peerwire.server.stores.postgres import PostgresTaskStore

from ._rpc import Rpc, serving, state_of, user_message
from ._services import PG_DSN, REDIS_URL, fresh_prefix, fresh_schema

ANSWERS = 8


def quiz() -> Agent:
    agent = Agent("Quiz", on_restart="resume")

    @agent.skill()
    async def parked(ctx: TaskContext) -> str:
        """Waits in ``ask``: the answer resumes the handler where it is."""
        answer = await ctx.ask("Colour?")
        return f"got {answer.text}"

    @agent.skill()
    async def returned(ctx: TaskContext) -> None:
        """Asks and returns: the answer runs it again, with the replay rule."""
        if ctx.latest_message is ctx.message:
            await ctx.require_input("Colour?")
        else:
            await ctx.complete(f"got {ctx.latest_message.text}")

    return agent


def ask_for(skill: str) -> dict[str, Any]:
    return user_message("start", metadata={"skill": skill})


async def answer_at_once(rpcs: list[Rpc], task_id: str) -> None:
    """``ANSWERS`` answers sent together (round robin over ``rpcs``): one is taken."""
    answers = [f"colour-{i}" for i in range(ANSWERS)]
    outcomes = await asyncio.gather(
        *(
            rpcs[i % len(rpcs)].call(
                "SendMessage", {"message": user_message(text, taskId=task_id)}, request_id=i
            )
            for i, text in enumerate(answers)
        )
    )
    taken = [answers[i] for i, outcome in enumerate(outcomes) if "result" in outcome]
    refused = [outcome["error"] for outcome in outcomes if "error" in outcome]
    assert len(taken) == 1, outcomes
    assert len(refused) == ANSWERS - 1, outcomes
    for error in refused:
        # UnsupportedOperationError: the task no longer waits (or, once it finished, is
        # terminal: the same error a late message to a finished task gets); either way the
        # message names the state the task is in.
        assert error["code"] == -32004, error
        message = error["message"]
        assert "no longer waiting" in message or "terminal state" in message, error
        assert task_id in message and "TASK_STATE_" in message, error
    winner = next(outcome["result"]["task"] for outcome in outcomes if "result" in outcome)
    assert state_of(winner) == "TASK_STATE_COMPLETED", winner
    task = await rpcs[0].get(task_id)
    assert state_of(task) == "TASK_STATE_COMPLETED"
    said = task["artifacts"][0] if task.get("artifacts") else task["status"]["message"]
    assert said["parts"] == [{"text": f"got {taken[0]}"}], "the handler used the answer taken"
    recorded = [m["parts"][0]["text"] for m in task["history"] if m["role"] == "ROLE_USER"]
    assert recorded == ["start", taken[0]], "only the answer taken is in the history"


async def waiting_task(rpc: Rpc, skill: str) -> str:
    task = await rpc.send(ask_for(skill))
    assert state_of(task) == "TASK_STATE_INPUT_REQUIRED", task
    return str(task["id"])


@contextlib.asynccontextmanager
async def single_process(kind: str, tmp_path: Path) -> AsyncIterator[list[Rpc]]:
    if kind == "memory":
        async with serving(quiz()) as rpc:
            yield [rpc]
    elif kind == "sqlite":
        async with serving(quiz(), store=f"sqlite:{tmp_path / 'tasks.db'}") as rpc:
            yield [rpc]
    else:
        async with (
            fresh_schema() as schema,
            serving(
                quiz(), store=PostgresTaskStore(PG_DSN, schema=schema, min_size=0, max_size=4)
            ) as rpc,
        ):
            yield [rpc]


@contextlib.asynccontextmanager
async def two_replicas() -> AsyncIterator[list[Rpc]]:
    """Cluster mode: two replicas that both run handlers, sharing PostgreSQL and Redis."""
    async with fresh_schema() as schema, fresh_prefix() as prefix:

        def backends() -> dict[str, Any]:
            return {
                "store": PostgresTaskStore(PG_DSN, schema=schema, min_size=0, max_size=4),
                "bus": RedisBus(REDIS_URL, prefix=prefix, block_seconds=1.0),
                "queue": RedisWorkQueue(
                    REDIS_URL, prefix=prefix, lease_ttl=2.0, sweep_every=1.0, block_seconds=0.5
                ),
                "shutdown_grace": 1.0,
            }

        async with serving(quiz(), **backends()) as a, serving(quiz(), **backends()) as b:
            yield [a, b]


STORES = [
    "memory",
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.services),
]


@pytest.mark.parametrize("skill", ["parked", "returned"])
@pytest.mark.parametrize("kind", STORES)
async def test_of_answers_sent_at_once_one_is_taken(kind: str, skill: str, tmp_path: Path) -> None:
    async with single_process(kind, tmp_path) as rpcs:
        await answer_at_once(rpcs, await waiting_task(rpcs[0], skill))


@pytest.mark.services
@pytest.mark.parametrize("skill", ["parked", "returned"])
async def test_of_answers_sent_at_once_to_two_replicas_one_is_taken(skill: str) -> None:
    async with two_replicas() as rpcs:
        await answer_at_once(rpcs, await waiting_task(rpcs[0], skill))
