"""``ctx.history``: the prior turns of a conversation, read from the task store.

Each test talks to a real app (in process, its lifespan entered) over JSON-RPC: the ``chat``
skill answers with what ``ctx.history`` gave it, so every assertion is on what a handler saw.
Memory, SQLite and PostgreSQL; across a restart on one SQLite file; across two replicas on
one PostgreSQL schema; and a second principal reusing a contextId sees none of the first's.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from peerwire import Agent, TaskContext
from peerwire.errors import InvalidParamsError
from peerwire.security import APIKeyVerifier, Principal
from peerwire.server.context import HISTORY_MAX_LIMIT
from peerwire.server.stores import MemoryTaskStore, SQLiteTaskStore
from peerwire.server.stores.base import TaskStore
from peerwire.server.stores.postgres import PostgresTaskStore
from peerwire.testing import in_process
from peerwire.types import APIKeySecurityScheme, SecurityRequirement, SecurityScheme, StringList

from ._services import PG_DSN, fresh_schema

KEYS = {"k-alice": Principal("alice"), "k-bob": Principal("bob")}
_ids = itertools.count(1)


def _agent() -> Agent:
    agent = Agent(
        "Memory",
        security_schemes={
            "key": SecurityScheme(
                api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-API-Key")
            )
        },
        security_requirements=[SecurityRequirement(schemes={"key": StringList()})],
    )

    @agent.skill()
    async def chat(ctx: TaskContext) -> str:
        text = ctx.message.parts[0].text or ""
        limit = int(text.split("=", 1)[1]) if text.startswith("limit=") else 50
        turns = await ctx.history(limit=limit)
        seen = [f"{t.role.name.lower()}:{t.parts[0].text}" for t in turns]
        assert all(t.task_id and t.task_id != ctx.task_id for t in turns)
        return f"re {text} after [{', '.join(seen)}]"

    @agent.skill()
    async def bad_limit(ctx: TaskContext) -> str:
        for limit in (0, HISTORY_MAX_LIMIT + 1):
            with pytest.raises(InvalidParamsError, match="between 1 and"):
                await ctx.history(limit=limit)
        return "refused"

    return agent


async def _say(http: httpx.AsyncClient, key: str, context_id: str, text: str) -> str:
    params: dict[str, Any] = {
        "message": {
            "messageId": f"m-{next(_ids)}",
            "role": "ROLE_USER",
            "contextId": context_id,
            "parts": [{"text": text}],
            "metadata": {"skill": "chat"},
        }
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
    headers = {"A2A-Version": "1.0", "X-API-Key": key}
    answer = (await http.post("/", json=body, headers=headers)).json()
    assert "result" in answer, answer
    task = answer["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", answer
    assert task["contextId"] == context_id
    return str(task["artifacts"][0]["parts"][0]["text"])


def _app(store: TaskStore) -> Any:
    return in_process(_agent(), store=store, auth={"key": APIKeyVerifier(KEYS)}, shutdown_grace=1.0)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TaskStore]:
    if request.param == "memory":
        yield MemoryTaskStore()
    elif request.param == "sqlite":
        yield SQLiteTaskStore(tmp_path / "tasks.db")
    else:
        async with fresh_schema() as schema:
            yield PostgresTaskStore(PG_DSN, schema=schema, min_size=0, max_size=4)


async def test_a_handler_reads_the_prior_turns_oldest_first(store: TaskStore) -> None:
    async with _app(store) as http:
        assert await _say(http, "k-alice", "c1", "one") == "re one after []"
        assert await _say(http, "k-alice", "c1", "two") == (
            "re two after [user:one, agent:re one after []]"
        )
        third = await _say(http, "k-alice", "c1", "three")
        assert third == (
            "re three after [user:one, agent:re one after [], "
            "user:two, agent:re two after [user:one, agent:re one after []]]"
        )
        # Bounded: the newest turns, still oldest first.
        assert await _say(http, "k-alice", "c1", "limit=2") == (
            f"re limit=2 after [user:three, agent:{third}]"
        )
        # Another context of the same owner is another conversation.
        assert await _say(http, "k-alice", "c2", "elsewhere") == "re elsewhere after []"


async def test_a_second_principal_reusing_the_context_id_sees_none_of_it(
    store: TaskStore,
) -> None:
    async with _app(store) as http:
        await _say(http, "k-alice", "shared", "secret")
        # contextIds are the caller's to choose: Bob picking Alice's shares nothing.
        assert await _say(http, "k-bob", "shared", "hello") == "re hello after []"
        assert await _say(http, "k-bob", "shared", "again") == (
            "re again after [user:hello, agent:re hello after []]"
        )
        assert (await _say(http, "k-alice", "shared", "more")).startswith(
            "re more after [user:secret, agent:re secret after []]"
        )


async def test_a_limit_out_of_range_is_refused(store: TaskStore) -> None:
    async with _app(store) as http:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendMessage",
            "params": {
                "message": {
                    "messageId": f"m-{next(_ids)}",
                    "role": "ROLE_USER",
                    "parts": [{"text": "x"}],
                    "metadata": {"skill": "bad_limit"},
                }
            },
        }
        headers = {"A2A-Version": "1.0", "X-API-Key": "k-alice"}
        answer = (await http.post("/", json=body, headers=headers)).json()
        assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", answer


async def test_the_memory_survives_a_restart_on_sqlite(tmp_path: Path) -> None:
    database = tmp_path / "tasks.db"
    async with _app(SQLiteTaskStore(database)) as http:
        await _say(http, "k-alice", "c1", "before")
    async with _app(SQLiteTaskStore(database)) as http:
        assert await _say(http, "k-alice", "c1", "after") == (
            "re after after [user:before, agent:re before after []]"
        )


@pytest.mark.services
async def test_two_replicas_on_one_postgres_schema_share_the_memory() -> None:
    async with fresh_schema() as schema:

        def replica() -> Any:
            return _app(PostgresTaskStore(PG_DSN, schema=schema, min_size=0, max_size=4))

        async with replica() as first, replica() as second:
            await _say(first, "k-alice", "c1", "here")
            assert await _say(second, "k-alice", "c1", "there") == (
                "re there after [user:here, agent:re here after []]"
            )
            assert await _say(second, "k-bob", "c1", "mine") == "re mine after []"
