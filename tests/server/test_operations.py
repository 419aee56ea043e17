"""The eleven operations over a real server, and the task errors each one can answer.

A refused request must name what was wrong and leave the stored task exactly as it was
(checked with GetTask afterwards).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from peerwire.testing import in_process

from ._agents import Controls, ask_for, workbench
from ._rpc import HEADERS, Rpc, envelope, serving, state_of, status_text, user_message

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def bench() -> AsyncIterator[tuple[Rpc, Controls]]:
    agent, controls = workbench()
    async with serving(agent) as rpc:
        yield rpc, controls


@pytest.fixture
def rpc(bench: tuple[Rpc, Controls]) -> Rpc:
    return bench[0]


@pytest.fixture
def controls(bench: tuple[Rpc, Controls]) -> Controls:
    return bench[1]


async def finished(rpc: Rpc, task_id: str) -> dict[str, Any]:
    """The task once it has settled, followed through SubscribeToTask (no polling)."""
    try:
        async with rpc.subscribe(task_id) as stream:
            await stream.rest()
    except AssertionError:
        pass  # already terminal: nothing to follow
    return await rpc.get(task_id)


# -- SendMessage ---------------------------------------------------------------------------


async def test_send_message_blocks_until_the_task_completes(rpc: Rpc) -> None:
    message = ask_for("echo", "hello")
    task = await rpc.send(message)
    assert state_of(task) == "TASK_STATE_COMPLETED"
    assert task["id"] and task["contextId"]
    assert task["artifacts"] == [
        {
            "artifactId": task["artifacts"][0]["artifactId"],
            "name": "result",
            "parts": [{"text": "hello"}],
        }
    ]
    [sent] = task["history"]
    assert sent["messageId"] == message["messageId"]
    assert (sent["taskId"], sent["contextId"]) == (task["id"], task["contextId"])


async def test_send_message_blocks_until_the_task_is_interrupted(rpc: Rpc) -> None:
    task = await rpc.send(ask_for("ask"))
    assert state_of(task) == "TASK_STATE_INPUT_REQUIRED"
    assert status_text(task) == "first?"
    assert task["status"]["message"]["role"] == "ROLE_AGENT"
    await rpc.result("CancelTask", {"id": task["id"]})


async def test_return_immediately_answers_while_the_handler_works(
    rpc: Rpc, controls: Controls
) -> None:
    task = await rpc.send(ask_for("wait", "ri"), returnImmediately=True)
    assert state_of(task) in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    await controls.started("ri")
    assert state_of(await rpc.get(task["id"])) == "TASK_STATE_WORKING"
    controls.release("ri")
    done = await finished(rpc, task["id"])
    assert state_of(done) == "TASK_STATE_COMPLETED"
    assert done["artifacts"][0]["parts"] == [{"text": "released ri"}]


async def test_history_length_trims_the_returned_task(rpc: Rpc) -> None:
    task = await rpc.send(ask_for("echo", "x"), historyLength=0)
    assert "history" not in task
    full = await rpc.get(task["id"])
    assert len(full["history"]) == 1


async def test_a_message_skill_answers_with_a_message_and_creates_no_task(rpc: Rpc) -> None:
    before = (await rpc.result("ListTasks", {}))["totalSize"]
    result = await rpc.result("SendMessage", {"message": ask_for("reply", "hi")})
    assert set(result) == {"message"}
    reply = result["message"]
    assert reply["role"] == "ROLE_AGENT"
    assert reply["parts"] == [{"text": "re: hi"}]
    assert reply["contextId"]
    assert "taskId" not in reply
    assert (await rpc.result("ListTasks", {}))["totalSize"] == before


async def test_an_unknown_context_id_is_adopted(rpc: Rpc) -> None:
    task = await rpc.send(ask_for("echo", "x", contextId="client-chosen-ctx"))
    assert task["contextId"] == "client-chosen-ctx"
    again = await rpc.send(ask_for("echo", "y", contextId="client-chosen-ctx"))
    assert again["contextId"] == "client-chosen-ctx" and again["id"] != task["id"]


async def test_a_follow_up_with_only_the_task_id_gets_its_context(rpc: Rpc) -> None:
    first = await rpc.send(ask_for("ask"))
    second = await rpc.send(user_message("a", taskId=first["id"]))
    assert second["id"] == first["id"]
    assert second["contextId"] == first["contextId"]
    assert all(m["contextId"] == first["contextId"] for m in second["history"])
    await rpc.result("CancelTask", {"id": first["id"]})


async def test_a_message_to_a_busy_task_is_answered_by_its_next_ask(
    rpc: Rpc, controls: Controls
) -> None:
    task = await rpc.send(ask_for("busy_then_ask", "busy"), returnImmediately=True)
    await controls.started("busy")
    # Accepted while the handler works: stored in the history, the task stays WORKING.
    queued = await rpc.send(user_message("extra", taskId=task["id"]), returnImmediately=True)
    assert state_of(queued) == "TASK_STATE_WORKING"
    assert [m["parts"] for m in queued["history"]][-1] == [{"text": "extra"}]
    controls.release("busy")
    done = await finished(rpc, task["id"])
    assert state_of(done) == "TASK_STATE_COMPLETED", done
    assert done["artifacts"][0]["parts"] == [{"text": "then extra"}]
    # The question was answered before it was asked: the task never stopped for it.
    asked = [m for m in done["history"] if m["parts"] == [{"text": "anything else?"}]]
    assert asked == []


# -- refusals of SendMessage ---------------------------------------------------------------


async def test_a_message_to_a_terminal_task_is_refused(rpc: Rpc) -> None:
    task = await rpc.send(ask_for("echo", "done"))
    for method in ("SendMessage", "SendStreamingMessage"):
        params = {"message": user_message("more", taskId=task["id"])}
        error = await rpc.error(method, params)
        assert error["code"] == -32004
        assert task["id"] in error["message"] and "terminal" in error["message"]
    assert await rpc.get(task["id"]) == task


async def test_a_message_to_an_unknown_task_is_refused(rpc: Rpc) -> None:
    before = (await rpc.result("ListTasks", {}))["totalSize"]
    error = await rpc.error("SendMessage", {"message": user_message("x", taskId="no-such-task")})
    assert error["code"] == -32001 and "no-such-task" in error["message"]
    assert (await rpc.result("ListTasks", {}))["totalSize"] == before


async def test_a_task_id_with_another_context_id_is_refused(rpc: Rpc) -> None:
    task = await rpc.send(ask_for("ask"))
    message = user_message("a", taskId=task["id"], contextId="some-other-context")
    error = await rpc.error("SendMessage", {"message": message})
    assert error["code"] == -32602
    assert "some-other-context" in error["message"] and task["id"] in error["message"]
    assert await rpc.get(task["id"]) == task
    await rpc.result("CancelTask", {"id": task["id"]})


async def test_an_unknown_skill_is_invalid_params(rpc: Rpc) -> None:
    error = await rpc.error("SendMessage", {"message": ask_for("juggle")})
    assert error["code"] == -32602
    assert "'juggle'" in error["message"] and "echo" in error["message"]


async def test_an_inline_push_config_is_refused(rpc: Rpc) -> None:
    before = (await rpc.result("ListTasks", {}))["totalSize"]
    params = {
        "message": ask_for("echo", "x"),
        "configuration": {"taskPushNotificationConfig": {"url": "https://example.test/hook"}},
    }
    error = await rpc.error("SendMessage", params)
    assert error["code"] == -32003 and "push" in error["message"].lower()
    assert (await rpc.result("ListTasks", {}))["totalSize"] == before


# -- GetTask / ListTasks -----------------------------------------------------------------------


async def test_get_task(rpc: Rpc) -> None:
    task = await rpc.send(ask_for("echo", "kept"))
    assert await rpc.get(task["id"]) == task
    trimmed = await rpc.get(task["id"], historyLength=0)
    assert "history" not in trimmed and trimmed["artifacts"] == task["artifacts"]


async def test_get_task_of_an_unknown_id(rpc: Rpc) -> None:
    error = await rpc.error("GetTask", {"id": "ghost"})
    assert error["code"] == -32001 and "ghost" in error["message"]
    assert error["data"][0]["reason"] == "TASK_NOT_FOUND"


async def test_list_tasks_filters_pages_and_omits_artifacts(rpc: Rpc) -> None:
    context = "list-context"
    made = [await rpc.send(ask_for("echo", f"n{i}", contextId=context)) for i in range(3)]
    failed = await rpc.send(ask_for("boom", "x", contextId=context))
    listed = await rpc.result("ListTasks", {"contextId": context})
    assert listed["totalSize"] == 4 and listed["nextPageToken"] == "" and listed["pageSize"] == 50
    assert {t["id"] for t in listed["tasks"]} == {t["id"] for t in [*made, failed]}
    assert all("artifacts" not in t for t in listed["tasks"])

    only_failed = await rpc.result(
        "ListTasks", {"contextId": context, "status": "TASK_STATE_FAILED"}
    )
    assert [t["id"] for t in only_failed["tasks"]] == [failed["id"]]

    with_artifacts = await rpc.result(
        "ListTasks",
        {"contextId": context, "includeArtifacts": True, "status": "TASK_STATE_COMPLETED"},
    )
    assert all(t["artifacts"] for t in with_artifacts["tasks"])

    seen: list[str] = []
    token = ""
    for _ in range(5):
        page = await rpc.result(
            "ListTasks", {"contextId": context, "pageSize": 3, "pageToken": token}
        )
        assert page["totalSize"] == 4 and page["pageSize"] == 3
        seen += [t["id"] for t in page["tasks"]]
        token = page["nextPageToken"]
        if not token:
            break
    assert sorted(seen) == sorted(t["id"] for t in listed["tasks"])
    assert seen == [t["id"] for t in listed["tasks"]], "pages follow the same order"


async def test_list_tasks_refuses_bad_paging(rpc: Rpc) -> None:
    for params, field in (
        ({"pageSize": 0}, "pageSize"),
        ({"pageSize": 101}, "pageSize"),
        ({"pageToken": "not-a-token"}, "pageToken"),
        ({"historyLength": -1}, "historyLength"),
    ):
        error = await rpc.error("ListTasks", params)
        assert error["code"] == -32602 and field in error["message"], error


# -- CancelTask ----------------------------------------------------------------------------


async def test_cancel_a_working_task(rpc: Rpc, controls: Controls) -> None:
    task = await rpc.send(ask_for("wait", "never"), returnImmediately=True)
    await controls.started("never")
    canceled = await rpc.result("CancelTask", {"id": task["id"]})
    assert state_of(canceled) == "TASK_STATE_CANCELED"
    assert task["id"] in controls.canceled, "the skill's on_cancel hook ran"
    assert await rpc.get(task["id"]) == canceled
    # Canceling again is idempotent: the same task comes back (the spec leaves it open).
    assert await rpc.result("CancelTask", {"id": task["id"]}) == canceled


@pytest.mark.parametrize(("skill", "state"), [("echo", "COMPLETED"), ("boom", "FAILED")])
async def test_cancel_of_a_finished_task_is_refused(rpc: Rpc, skill: str, state: str) -> None:
    task = await rpc.send(ask_for(skill, "x"))
    assert state_of(task) == f"TASK_STATE_{state}"
    error = await rpc.error("CancelTask", {"id": task["id"]})
    assert error["code"] == -32002
    assert task["id"] in error["message"] and state in error["message"]
    assert await rpc.get(task["id"]) == task


async def test_cancel_of_an_unknown_task(rpc: Rpc) -> None:
    error = await rpc.error("CancelTask", {"id": "ghost"})
    assert error["code"] == -32001 and "ghost" in error["message"]


# -- SubscribeToTask (streams have their own module) -------------------------------------------


async def test_subscribe_to_a_finished_task_is_refused(rpc: Rpc) -> None:
    task = await rpc.send(ask_for("echo", "x"))
    error = await rpc.error("SubscribeToTask", {"id": task["id"]})
    assert error["code"] == -32004
    assert task["id"] in error["message"] and "GetTask" in error["message"]


async def test_subscribe_to_an_unknown_task(rpc: Rpc) -> None:
    error = await rpc.error("SubscribeToTask", {"id": "ghost"})
    assert error["code"] == -32001 and "ghost" in error["message"]


# -- push configs and the extended card --------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("CreateTaskPushNotificationConfig", {"taskId": "{task}", "url": "https://example.test"}),
        ("GetTaskPushNotificationConfig", {"taskId": "{task}", "id": "c1"}),
        ("ListTaskPushNotificationConfigs", {"taskId": "{task}"}),
        ("DeleteTaskPushNotificationConfig", {"taskId": "{task}", "id": "c1"}),
    ],
)
async def test_push_config_methods_are_not_supported(
    rpc: Rpc, method: str, params: dict[str, str]
) -> None:
    task = await rpc.send(ask_for("echo", "x"))
    filled = {k: v.replace("{task}", task["id"]) for k, v in params.items()}
    error = await rpc.error(method, filled)
    assert error["code"] == -32003
    assert "push notifications" in error["message"].lower()
    assert error["data"][0]["reason"] == "PUSH_NOTIFICATION_NOT_SUPPORTED"
    assert await rpc.get(task["id"]) == task


@pytest.mark.parametrize("params", [None, {}, {"tenant": ""}])
async def test_the_extended_card_is_not_offered(rpc: Rpc, params: Any) -> None:
    error = await rpc.error("GetExtendedAgentCard", params)
    assert error["code"] == -32004 and "extended agent card" in error["message"]


async def test_send_message_returns_at_auth_required(rpc: Rpc, controls: Controls) -> None:
    task = await rpc.send(ask_for("auth", "auth-blocking"))
    assert state_of(task) == "TASK_STATE_AUTH_REQUIRED"
    assert status_text(task) == "sign in at https://example.test/login"
    controls.release("auth-blocking")
    done = await finished(rpc, task["id"])
    assert state_of(done) == "TASK_STATE_COMPLETED"
    assert done["artifacts"][0]["parts"] == [{"text": "the secret"}]


async def test_streaming_methods_need_the_streaming_capability() -> None:
    agent, _ = workbench(streaming=False)
    async with in_process(agent) as http:
        card = (await http.get("/.well-known/agent-card.json")).json()
        assert card["capabilities"]["streaming"] is False
        answer = await http.post(
            "/", json=envelope("SendMessage", {"message": ask_for("ask")}), headers=HEADERS
        )
        task = answer.json()["result"]["task"]
        for method, params in (
            ("SendStreamingMessage", {"message": ask_for("echo", "x")}),
            ("SubscribeToTask", {"id": task["id"]}),
        ):
            response = await http.post("/", json=envelope(method, params), headers=HEADERS)
            error = response.json()["error"]
            assert error["code"] == -32004 and "streaming" in error["message"], method
        listed = await http.post("/", json=envelope("ListTasks", {}), headers=HEADERS)
        assert listed.json()["result"]["totalSize"] == 1, "the refused stream created no task"
