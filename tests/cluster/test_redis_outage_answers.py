"""A Redis outage answers what it should: a retryable, typed error where the work could not
be done, and the work's own answer where the store took it.

Each test runs a ``redis-server`` of its own (``_cluster.RedisServer``: a free port, nothing
on disk; the machine's Redis is never touched) and kills it.

- The event bus and the work queue, past their retries, raise ``RedisUnavailableError``: a
  ``ServiceUnavailableError`` naming what is away (``event_bus`` / ``work_queue``), with a
  Retry-After, no Redis text, and the 503 / UNAVAILABLE / -32603 of the wire table.
- A replica whose event bus is away still answers the steps it stored (a follow-up, a
  cancel): subscribers read what was not published from the store, so telling the caller to
  retry would make it send the step twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx
import pytest

from peerwire import Agent, Client, Task, TaskContext, TaskState
from peerwire.cluster import RedisBus, RedisUnavailableError, RedisWorkQueue
from peerwire.errors import ServiceUnavailableError, to_jsonrpc_error, to_rest_error
from peerwire.server.stores.sqlite import SQLiteTaskStore
from peerwire.testing import live_server
from peerwire.types import Artifact, Part, TaskArtifactUpdateEvent

from ._cluster import RedisServer

pytestmark = pytest.mark.services

WAIT_S = 30.0
REDIS_TEXT = ("Error 111", "refused", "Connect", "127.0.0.1", "did not answer")


@contextlib.asynccontextmanager
async def redis_server(tmp_path: Path) -> AsyncIterator[RedisServer]:
    redis = RedisServer(tmp_path)
    await redis.start()
    try:
        yield redis
    finally:
        await redis.kill()


def _check_outage(error: ServiceUnavailableError, dependency: str) -> None:
    assert (error.dependency, error.retry_after) == (dependency, 5)
    for text in REDIS_TEXT:
        assert text not in error.message, error.message
    status, body = to_rest_error(error)
    assert status == 503 and body["error"]["status"] == "UNAVAILABLE"
    assert to_jsonrpc_error(error)["code"] == -32603


async def test_the_bus_and_the_queue_past_their_retries_say_what_is_away(tmp_path: Path) -> None:
    prefix = f"pwtest-{secrets.token_hex(4)}"
    async with redis_server(tmp_path) as redis:
        bus = RedisBus(redis.url, prefix=prefix, publish_retry_for=0.5, socket_timeout=1.0)
        queue = RedisWorkQueue(redis.url, prefix=prefix, retry_for=0.5)
        await bus.open()
        await queue.open()
        try:
            await redis.kill()
            event = TaskArtifactUpdateEvent(
                task_id="t1",
                context_id="c1",
                artifact=Artifact(artifact_id="a", parts=[Part(text="x")]),
            )
            with anyio.fail_after(WAIT_S), pytest.raises(ServiceUnavailableError) as published:
                await bus.publish("t1", 1, event)
            _check_outage(published.value, "event_bus")
            with anyio.fail_after(WAIT_S), pytest.raises(RedisUnavailableError) as queued:
                await queue.enqueue("t1", "", "", "start")
            assert isinstance(queued.value, ConnectionError)  # the cluster's own retries
            _check_outage(queued.value, "work_queue")
        finally:
            await bus.close()
            await queue.close()


def _agent() -> Agent:
    agent = Agent("Bussed", description="Publishes its tasks' events on Redis")

    @agent.skill("chat", description="Asks who is asking")
    async def chat(ctx: TaskContext) -> str:
        answer = await ctx.ask("Who is asking?")
        return f"hello {answer.text}"

    @agent.skill("hold", description="Works until canceled")
    async def hold(ctx: TaskContext) -> str:
        await asyncio.sleep(WAIT_S * 4)
        return "held"

    return agent


async def test_steps_the_store_took_while_the_bus_is_away_are_answered(tmp_path: Path) -> None:
    async with redis_server(tmp_path) as redis:
        bus = RedisBus(
            redis.url,
            prefix=f"pwtest-{secrets.token_hex(4)}",
            publish_retry_for=0.5,
            socket_timeout=1.0,
        )
        store = SQLiteTaskStore(str(tmp_path / "tasks.db"))
        async with (
            live_server(_agent(), store=store, bus=bus) as url,
            Client.connect(url) as client,
            httpx.AsyncClient(timeout=WAIT_S) as web,
        ):
            asked = await client.send("", skill="chat")
            held = await client.send("", skill="hold", return_immediately=True)
            assert isinstance(asked, Task) and isinstance(held, Task)
            await redis.kill()
            with anyio.fail_after(WAIT_S):
                answered = await client.send("bob", task_id=asked.id)
                canceled = await client.cancel_task(held.id)
            assert isinstance(answered, Task) and answered.status.state is TaskState.COMPLETED
            assert canceled.status.state is TaskState.CANCELED
            assert (await client.get_task(asked.id)).status.state is TaskState.COMPLETED
            metrics = (await web.get(f"{url}/metrics")).text
            assert 'outcome="INTERNAL_ERROR"' not in metrics
            assert 'outcome="SERVICE_UNAVAILABLE"' not in metrics
