"""``ctx.caller``: who sent the message a skill is handling, for the first message and for
every answer ``ctx.ask`` returns; after a restart, the callers recorded with the task.

The same principal answers with different credentials (only a task's owner can continue
it): an API key granting ``read``, one granting ``read`` and ``admin``.
"""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest

from peerwire import Agent, Caller, TaskContext
from peerwire.security import APIKeyVerifier, Principal
from peerwire.server.stores import SQLiteTaskStore
from peerwire.testing import in_process
from peerwire.types import APIKeySecurityScheme, SecurityRequirement, SecurityScheme, StringList

KEYS = {
    "k-read": Principal("alice", scopes=frozenset({"read"}), claims={"name": "Alice"}),
    "k-admin": Principal("alice", scopes=frozenset({"read", "admin"}), claims={"name": "Al"}),
    "k-bob": Principal("bob", scopes=frozenset({"read", "admin"})),
}
_ids = itertools.count(1)


def _agent(seen: list[Caller]) -> Agent:
    agent = Agent(
        "Callers",
        security_schemes={
            "key": SecurityScheme(
                api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-API-Key")
            )
        },
        security_requirements=[SecurityRequirement(schemes={"key": StringList()})],
    )

    @agent.skill()
    async def interview(ctx: TaskContext) -> str:
        seen.append(ctx.caller)
        for question in ("first?", "second?"):
            await ctx.ask(question)
            seen.append(ctx.caller)
        return "admin" if "admin" in ctx.caller.scopes else "read only"

    return agent


async def _send(
    http: httpx.AsyncClient, key: str, text: str, tenant: str = "", **message: Any
) -> dict[str, Any]:
    params: dict[str, Any] = {
        "message": {
            "messageId": f"m-{next(_ids)}",
            "role": "ROLE_USER",
            "parts": [{"text": text}],
            **message,
        }
    }
    if tenant:
        params["tenant"] = tenant
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
    headers = {"A2A-Version": "1.0", "X-API-Key": key}
    answer = (await http.post("/", json=body, headers=headers)).json()
    return answer  # type: ignore[no-any-return]


def _task(answer: dict[str, Any]) -> dict[str, Any]:
    assert "result" in answer, answer
    return answer["result"]["task"]  # type: ignore[no-any-return]


async def test_the_skill_sees_who_sent_each_message() -> None:
    seen: list[Caller] = []
    auth = {"key": APIKeyVerifier(KEYS)}
    async with in_process(_agent(seen), auth=auth, shutdown_grace=1.0) as http:
        task = _task(await _send(http, "k-read", "start", tenant="acme"))
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        follow = {"taskId": task["id"], "contextId": task["contextId"]}
        # Bob cannot answer Alice's task: only its owner's messages reach the skill.
        refused = await _send(http, "k-bob", "me too", tenant="acme", **follow)
        assert refused["error"]["code"] == -32001
        task = _task(await _send(http, "k-admin", "as admin", tenant="acme", **follow))
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        task = _task(await _send(http, "k-read", "as reader", tenant="acme", **follow))
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert task["artifacts"][0]["parts"][0]["text"] == "read only"
    assert [(c.id, c.tenant, c.scopes, c.recorded) for c in seen] == [
        ("alice", "acme", {"read"}, False),
        ("alice", "acme", {"read", "admin"}, False),
        ("alice", "acme", {"read"}, False),
    ]
    assert all(c.principal.scheme == "key" for c in seen)


async def test_an_anonymous_caller_is_the_empty_principal() -> None:
    seen: list[Caller] = []
    agent = Agent("Open")

    @agent.skill()
    async def who(ctx: TaskContext) -> str:
        seen.append(ctx.caller)
        return "ok"

    async with in_process(agent) as http:
        task = _task(await _send(http, "", "hello"))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    (caller,) = seen
    assert caller.id == "" and caller.scopes == frozenset() and not caller.recorded
    assert caller.tenant == ""


@pytest.mark.parametrize("answer_key", ["k-admin", "k-read"])
async def test_after_a_restart_replayed_answers_are_recorded_and_the_new_one_is_live(
    tmp_path: Path, answer_key: str
) -> None:
    """The handler runs again from the start: the first message and the answers replayed
    from history come with the callers recorded when they were accepted (``recorded``: the
    principal, its claims and the scopes granted then); the answer that resumed the task
    comes with its own credential."""
    seen: list[Caller] = []
    auth = {"key": APIKeyVerifier(KEYS)}
    database = tmp_path / "tasks.db"
    async with in_process(
        _agent(seen), store=SQLiteTaskStore(database), auth=auth, shutdown_grace=1.0
    ) as http:
        task = _task(await _send(http, "k-admin", "start"))
        follow = {"taskId": task["id"], "contextId": task["contextId"]}
        task = _task(await _send(http, "k-read", "one", **follow))
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert len(seen) == 2
    seen.clear()
    async with in_process(
        _agent(seen), store=SQLiteTaskStore(database), auth=auth, shutdown_grace=1.0
    ) as http:
        task = _task(await _send(http, answer_key, "two", **follow))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    first, replayed, live = seen
    assert first.recorded and replayed.recorded
    assert (first.id, first.scopes, dict(first.principal.claims)) == (
        "alice",
        {"read", "admin"},
        {"name": "Al"},
    ), "the first message's caller, as recorded: not the empty caller of a bare replay"
    assert (replayed.id, replayed.scopes, dict(replayed.principal.claims)) == (
        "alice",
        {"read"},
        {"name": "Alice"},
    ), "each answer's own caller"
    assert first.principal.scheme == replayed.principal.scheme == "key"
    assert not live.recorded and live.id == "alice"
    assert live.scopes == KEYS[answer_key].scopes
    expected = "admin" if answer_key == "k-admin" else "read only"
    assert task["artifacts"][0]["parts"][0]["text"] == expected


async def test_a_replay_without_a_record_fails_closed(tmp_path: Path) -> None:
    """A task whose callers were never recorded (stored before schema version 7): the
    replayed messages come with the owner only and no scopes."""
    seen: list[Caller] = []
    auth = {"key": APIKeyVerifier(KEYS)}
    database = tmp_path / "tasks.db"
    async with in_process(
        _agent(seen), store=SQLiteTaskStore(database), auth=auth, shutdown_grace=1.0
    ) as http:
        task = _task(await _send(http, "k-admin", "start"))
        follow = {"taskId": task["id"], "contextId": task["contextId"]}
    forgotten = sqlite3.connect(database)
    with forgotten:
        forgotten.execute("DELETE FROM task_callers")
    forgotten.close()
    seen.clear()
    async with in_process(
        _agent(seen), store=SQLiteTaskStore(database), auth=auth, shutdown_grace=1.0
    ) as http:
        task = _task(await _send(http, "k-read", "one", **follow))
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    first, live = seen
    assert first.recorded and first.id == "alice" and first.scopes == frozenset()
    assert dict(first.principal.claims) == {}
    assert live.scopes == {"read"} and dict(live.principal.claims) == {"name": "Alice"}


async def test_a_caller_the_store_cannot_record_leaves_the_task_running(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Recording the first message's caller fails (the store refuses that one write): the
    task exists, so the send still answers with it and its handler runs; the log says so."""

    class NoCallers(SQLiteTaskStore):
        async def save_caller(self, task_id: str, message_id: str, caller: bytes) -> None:
            raise OSError("disk full")

    seen: list[Caller] = []
    auth = {"key": APIKeyVerifier(KEYS)}
    async with in_process(
        _agent(seen), store=NoCallers(tmp_path / "tasks.db"), auth=auth, shutdown_grace=1.0
    ) as http:
        task = _task(await _send(http, "k-read", "start"))
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert [c.scopes for c in seen] == [{"read"}], "the live handler has its caller"
    assert any("its caller is not recorded: disk full" in r.getMessage() for r in caplog.records)
