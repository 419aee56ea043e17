"""Every task belongs to its principal: another principal's task is a task that does not exist.

For each task operation over JSON-RPC, principal B calling on principal A's task gets exactly
the answer B gets for a task id that never existed (same status, same error, same message
with only the id differing): nothing tells B the task is there. ListTasks lists own tasks only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from peerwire import Agent, TaskContext
from peerwire.security import APIKeyVerifier
from peerwire.testing import in_process
from peerwire.types import APIKeySecurityScheme, SecurityRequirement, SecurityScheme, StringList

from ._support import TIMEOUT_S, Rpc, user_message

KEYS = {"k-alice": "alice", "k-bob": "bob"}
NEVER = "00000000-0000-4000-8000-000000000000"


class Gates:
    """The test's hold on the waiting skill: released when the test says, started once it ran."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = asyncio.Event()


def build_agent(gates: Gates) -> Agent:
    agent = Agent(
        "Shared Agent",
        security_schemes={
            "key": SecurityScheme(
                api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-API-Key")
            )
        },
        security_requirements=[SecurityRequirement(schemes={"key": StringList()})],
    )

    @agent.skill()
    async def wait(ctx: TaskContext) -> str:
        await ctx.start_work("working")
        gates.started.set()
        await gates.release.wait()
        return "done"

    return agent


@contextlib.asynccontextmanager
async def callers() -> AsyncIterator[tuple[Rpc, Rpc, Gates]]:
    """Alice and Bob calling one agent (in a context manager: the app's lifespan must be
    entered and left by the same task, which a pytest-asyncio fixture does not guarantee)."""
    gates = Gates()
    async with in_process(
        build_agent(gates), rest_path=None, auth={"key": APIKeyVerifier(KEYS)}, shutdown_grace=1.0
    ) as http:
        base = Rpc(http, "http://testserver/", {})
        try:
            yield base.using(X_API_Key="k-alice"), base.using(X_API_Key="k-bob"), gates
        finally:
            gates.release.set()


async def working_task(alice: Rpc, gates: Gates) -> dict[str, Any]:
    gates.started.clear()
    result = await alice.result(
        "SendMessage",
        {"message": user_message("go"), "configuration": {"returnImmediately": True}},
    )
    with anyio.fail_after(TIMEOUT_S):
        await gates.started.wait()
    return result["task"]  # type: ignore[no-any-return]


def operations(task_id: str) -> dict[str, dict[str, Any]]:
    return {
        "GetTask": {"id": task_id},
        "CancelTask": {"id": task_id},
        "SubscribeToTask": {"id": task_id},
        "SendMessage": {"message": user_message("more", taskId=task_id)},
        "SendStreamingMessage": {"message": user_message("more", taskId=task_id)},
        "CreateTaskPushNotificationConfig": {
            "taskId": task_id,
            "url": "https://hooks.example/a2a",
        },
        "GetTaskPushNotificationConfig": {"taskId": task_id, "id": "c1"},
        "ListTaskPushNotificationConfigs": {"taskId": task_id},
        "DeleteTaskPushNotificationConfig": {"taskId": task_id, "id": "c1"},
    }


def anonymised(response: Any, task_id: str) -> tuple[int, str, str]:
    """Status, content type and body with the task id and request id blanked."""
    body = json.loads(response.content)
    body["id"] = 0
    text = json.dumps(body, sort_keys=True).replace(task_id, "<id>")
    return response.status_code, response.headers["content-type"], text


@pytest.mark.parametrize(
    "method",
    [
        "GetTask",
        "CancelTask",
        "SubscribeToTask",
        "SendMessage",
        "SendStreamingMessage",
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
    ],
)
async def test_another_principals_task_looks_like_no_task(method: str) -> None:
    async with callers() as (alice, bob, gates):
        task = await working_task(alice, gates)
        params = operations(task["id"])[method]
        on_alices = await bob.post(method, params)
        on_nothing = await bob.post(method, operations(NEVER)[method])
        assert anonymised(on_alices, task["id"]) == anonymised(on_nothing, NEVER)
        error = on_alices.json()["error"]
        assert error["code"] in (-32001, -32003), error  # not found (or push not offered)
        # Alice's task is untouched by Bob's attempts, and she can do what he could not.
        mine = await alice.result("GetTask", {"id": task["id"]})
        assert mine["status"]["state"] == "TASK_STATE_WORKING"
        asked = [m["parts"][0]["text"] for m in mine["history"] if m["role"] == "ROLE_USER"]
        assert asked == ["go"]
        if method in ("GetTask", "CancelTask"):
            assert "result" in (await alice.post(method, params)).json()


async def test_list_tasks_shows_only_the_callers_tasks() -> None:
    async with callers() as (alice, bob, gates):
        mine = {(await working_task(alice, gates))["id"] for _ in range(3)}
        theirs = {(await working_task(bob, gates))["id"] for _ in range(2)}
        alice_list = await alice.result("ListTasks", {"pageSize": 100})
        bob_list = await bob.result("ListTasks", {"pageSize": 100})
        assert {t["id"] for t in alice_list["tasks"]} == mine
        assert alice_list["totalSize"] == 3
        assert {t["id"] for t in bob_list["tasks"]} == theirs
        assert bob_list["totalSize"] == 2
        # Filters do not widen the view either.
        context = alice_list["tasks"][0]["contextId"]
        filtered = await bob.result("ListTasks", {"contextId": context})
        assert filtered["tasks"] == [] and filtered["totalSize"] == 0


async def test_bob_naming_alices_context_gets_a_task_of_his_own() -> None:
    async with callers() as (alice, bob, gates):
        task = await working_task(alice, gates)
        gates.release.set()
        own = await bob.result(
            "SendMessage", {"message": user_message("x", contextId=task["contextId"])}
        )
        assert own["task"]["id"] != task["id"]
        listed = await alice.result("ListTasks", {"contextId": task["contextId"]})
        assert [t["id"] for t in listed["tasks"]] == [task["id"]]
