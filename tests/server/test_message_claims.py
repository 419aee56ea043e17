"""Message-id claims stay bounded: the sweep removes every expired claim, on a timer the app's
lifespan owns, on every store; a message id longer than ``MAX_MESSAGE_ID_LENGTH`` is refused
on every binding before anything is stored.

Real stores (memory, a SQLite file, a PostgreSQL schema of the test's own) and real servers.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path

import anyio
import pytest

from peerwire import Agent, Client, Message, Part, Role, Task, TaskContext
from peerwire.client import CardCache
from peerwire.errors import InvalidParamsError
from peerwire.protocol.extensions import IDEMPOTENT_SEND_EXTENSION
from peerwire.server import create_app
from peerwire.server.idempotency import MAX_MESSAGE_ID_LENGTH, MessageLedger
from peerwire.server.stores import MemoryTaskStore, SQLiteTaskStore, TaskStore
from peerwire.server.stores.postgres import PostgresTaskStore
from peerwire.testing import live_server
from peerwire.testing.servers import in_process
from peerwire.testing.store_suite import new_record
from peerwire.types import Binding

from ._services import PG_DSN, fresh_schema

WAIT_S = 20.0


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TaskStore]:
    kind = request.param
    if kind == "memory":
        memory = MemoryTaskStore()
        await memory.open()
        yield memory
        await memory.close()
    elif kind == "sqlite":
        sqlite = SQLiteTaskStore(tmp_path / "tasks.db")
        await sqlite.open()
        yield sqlite
        await sqlite.close()
    else:
        async with fresh_schema() as schema:
            postgres = PostgresTaskStore(PG_DSN, schema=schema, min_size=0, max_size=4)
            await postgres.open()
            yield postgres
            await postgres.close()


def _message(message_id: str, context_id: str = "") -> Message:
    return Message(
        message_id=message_id, role=Role.USER, parts=[Part(text="x")], context_id=context_id
    )


async def _claim(ledger: MessageLedger, count: int) -> None:
    """``count`` claims with fresh message ids, as many sends would make them."""
    for start in range(0, count, 100):
        await asyncio.gather(
            *(
                ledger.create(new_record(), tenant="", owner="", message=_message(f"m-{n}"))
                for n in range(start, min(start + 100, count))
            )
        )


async def _until(condition: Callable[[], bool]) -> None:
    with anyio.fail_after(WAIT_S):
        # The timer offers nothing to await; poll its count, bounded by the timeout.
        while not condition():  # noqa: ASYNC110
            await asyncio.sleep(0.01)


async def test_a_sweep_removes_every_expired_claim_not_one_batch(store: TaskStore) -> None:
    clock = [time.time()]
    ledger = MessageLedger(store, timedelta(seconds=1), clock=lambda: clock[0], sweep_limit=1000)
    await _claim(ledger, 2100)
    clock[0] += 2
    assert await ledger.sweep() == 2100, "a sweep is sized to what expired"
    assert await store.forget_message_ids(clock[0] + 3600, limit=10) == 0, "none left"


async def test_a_sweep_leaves_the_claims_not_yet_expired(store: TaskStore) -> None:
    clock = [time.time()]
    ledger = MessageLedger(store, timedelta(seconds=10), clock=lambda: clock[0], sweep_limit=2)
    await _claim(ledger, 5)
    clock[0] += 5
    assert await ledger.sweep() == 0
    again = new_record()
    held = await ledger.create(again, tenant="", owner="", message=_message("m-0"))
    assert held != again.id, "a live claim still names its task"


async def test_the_timer_sweeps_without_any_send_and_stops_on_exit(store: TaskStore) -> None:
    ledger = MessageLedger(store, timedelta(milliseconds=200), sweep_every=0.05)
    await _claim(ledger, 5)
    async with ledger:
        assert ledger.sweeping
        await _until(lambda: ledger.swept == 5)
    assert not ledger.sweeping, "the timer is cancelled and awaited when the block ends"
    assert await store.forget_message_ids(time.time() + 3600, limit=10) == 0


async def test_the_sweep_interval_and_batch_are_checked() -> None:
    store = MemoryTaskStore()
    assert MessageLedger(store, timedelta(seconds=1)).sweep_every == 60.0
    with pytest.raises(ValueError, match="sweep_limit"):
        MessageLedger(store, sweep_limit=0)
    with pytest.raises(ValueError, match="sweep_every"):
        MessageLedger(store, sweep_every=0)


def _agent() -> Agent:
    agent = Agent("Claims")

    @agent.skill()
    async def echo(ctx: TaskContext, text: str) -> str:
        return text

    return agent


async def test_the_app_lifespan_owns_the_sweep() -> None:
    app = create_app(_agent(), message_retention=timedelta(milliseconds=200))
    ledger = app.dispatcher.messages
    assert ledger is not None and not ledger.sweeping
    ledger.sweep_every = 0.05
    async with in_process(app) as http:
        assert ledger.sweeping, "the lifespan starts the timer"
        for n in range(3):
            body = {
                "jsonrpc": "2.0",
                "id": n,
                "method": "SendMessage",
                "params": {
                    "message": {
                        "messageId": f"m-{n}",
                        "role": "ROLE_USER",
                        "parts": [{"text": "hi"}],
                    }
                },
            }
            # Only a caller that activates idempotent sends leaves a claim to sweep.
            headers = {"A2A-Version": "1.0", "A2A-Extensions": IDEMPOTENT_SEND_EXTENSION}
            answer = await http.post("/", json=body, headers=headers)
            assert "result" in answer.json(), answer.text
        await _until(lambda: ledger.swept == 3)
    assert not ledger.sweeping, "and stops it on shutdown"


BINDINGS = pytest.mark.parametrize(
    "binding", [Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC], ids=["jsonrpc", "rest", "grpc"]
)


@BINDINGS
async def test_a_message_id_over_the_bound_is_refused_before_anything_is_stored(
    binding: str,
) -> None:
    context = f"long-{uuid.uuid4()}"
    async with (
        live_server(_agent(), grpc_port=0, shutdown_grace=1.0) as url,
        Client.connect(url, bindings=[binding], card_cache=CardCache()) as client,
    ):
        for length in (MAX_MESSAGE_ID_LENGTH + 1, 4 * 1024 * 1024):
            too_long = _message("m" * length, context)
            with pytest.raises(InvalidParamsError, match=f"at most {MAX_MESSAGE_ID_LENGTH}"):
                await client.send(too_long)
            with pytest.raises(InvalidParamsError, match="messageId"):
                async for _ in client.stream(too_long):
                    raise AssertionError("a refused stream has no events")
        assert await client.list_tasks(context_id=context) == []
        at_bound = _message("m" * MAX_MESSAGE_ID_LENGTH, context)
        assert isinstance(await client.send(at_bound), Task), "at the bound, accepted"
