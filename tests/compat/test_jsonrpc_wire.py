"""A2A 0.3 JSON-RPC on the wire: hand-written 0.3 requests, as the official 0.3 SDKs send them
(no ``A2A-Version`` header, ``kind``-tagged parts, lowercase roles), and the exact 0.3 shapes
back: bare results with ``kind``, kebab-case states, ``final`` on status updates, errors with an
object ``data``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
import httpx

from peerwire import Agent
from peerwire.bindings.sse import SSEParser

from .conftest import TIMEOUT_S, WEBHOOK, Gate, Wire, rpc, v03_message, wire

_V10_SPELLINGS = ("TASK_STATE_", "ROLE_", '"statusUpdate"', '"artifactUpdate"')


def to(skill: str, text: str = "hello", **fields: Any) -> dict[str, Any]:
    return v03_message(text, metadata={"skill": skill}, **fields)


def assert_v03(document: Any) -> None:
    text = json.dumps(document)
    for spelling in _V10_SPELLINGS:
        assert spelling not in text, (spelling, text)


async def test_message_send_answers_the_bare_task_in_0_3_shape(agent: Agent) -> None:
    async with wire(agent) as w:
        task = await w.result("message/send", {"message": to("echo", "hello")})
    assert_v03(task)
    assert task["kind"] == "task"
    assert set(task) == {"kind", "id", "contextId", "status", "artifacts", "history"}
    assert task["status"]["state"] == "completed"
    assert task["status"]["timestamp"].endswith("Z")
    [artifact] = task["artifacts"]
    assert artifact["parts"] == [{"kind": "text", "text": "hello"}]
    [message] = task["history"]
    assert message["kind"] == "message" and message["role"] == "user"
    assert message["taskId"] == task["id"] and message["contextId"] == task["contextId"]
    assert message["parts"] == [{"kind": "text", "text": "hello"}]


async def test_file_and_data_parts_cross_both_ways(agent: Agent) -> None:
    parts = [
        {"kind": "text", "text": "see"},
        {"kind": "file", "file": {"bytes": "aGk=", "mimeType": "text/plain", "name": "a.txt"}},
        {"kind": "file", "file": {"uri": "https://example.com/b.png", "mimeType": "image/png"}},
        {"kind": "data", "data": {"n": 1}},
        {"kind": "data", "data": {"value": [1, 2]}, "metadata": {"data_part_compat": True}},
    ]
    async with wire(agent) as w:
        task = await w.result("message/send", {"message": to("inspect", parts=parts)})
    [artifact] = task["artifacts"]
    [part] = artifact["parts"]
    assert part["kind"] == "data"
    seen = part["data"]["parts"]
    assert [p["kind"] for p in seen] == ["text", "raw", "url", "data", "data"]
    assert seen[1]["raw"] == "aGk=" and seen[1]["mediaType"] == "text/plain"
    assert seen[1]["filename"] == "a.txt"
    assert seen[2]["url"] == "https://example.com/b.png"
    assert seen[3]["data"] == {"n": 1}
    assert seen[4]["data"] == [1, 2], "a wrapped non-object value is unwrapped"
    assert task["history"][0]["parts"] == parts, "the message is stored and shown as sent"


async def test_blocking_false_returns_at_once(agent: Agent, gate: Gate) -> None:
    async with wire(agent) as w:
        params = {"message": to("slow"), "configuration": {"blocking": False}}
        task = await w.result("message/send", params)
        assert task["status"]["state"] in ("submitted", "working")
        await gate.started.wait()
        gate.release.set()
        with anyio.fail_after(TIMEOUT_S):
            while task["status"]["state"] != "completed":
                await asyncio.sleep(0.01)
                task = await w.result("tasks/get", {"id": task["id"]})


async def test_message_stream_sends_0_3_events_and_a_final_status(agent: Agent) -> None:
    async with wire(agent) as w:
        events = await w.events("message/stream", {"message": to("echo", "hi")})
    assert_v03(events)
    assert [e["kind"] for e in events] == [
        "task",
        "status-update",
        "artifact-update",
        "status-update",
    ]
    task, working, artifact, completed = events
    assert task["status"]["state"] == "submitted"
    assert working["status"]["state"] == "working" and working["final"] is False
    assert artifact["artifact"]["parts"] == [{"kind": "text", "text": "hi"}]
    assert artifact["taskId"] == task["id"] and artifact["lastChunk"] is True
    assert completed["status"]["state"] == "completed" and completed["final"] is True


async def test_input_required_is_continued_by_task_id(agent: Agent) -> None:
    async with wire(agent) as w:
        events = await w.events("message/stream", {"message": to("ask")})
        last = events[-1]
        assert last["kind"] == "status-update" and last["final"] is True
        assert last["status"]["state"] == "input-required"
        question = last["status"]["message"]
        assert question["kind"] == "message" and question["role"] == "agent"
        assert question["parts"] == [{"kind": "text", "text": "Which term?"}]
        task_id, context_id = last["taskId"], last["contextId"]
        follow_up = v03_message("zebra", taskId=task_id, contextId=context_id)
        task = await w.result("message/send", {"message": follow_up})
    assert task["id"] == task_id and task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"][0]["text"] == "defined zebra"
    assert [m["role"] for m in task["history"]] == ["user", "agent", "user"]


async def test_tasks_get_honours_history_length(agent: Agent) -> None:
    async with wire(agent) as w:
        task = await w.result("message/send", {"message": to("echo")})
        got = await w.result("tasks/get", {"id": task["id"], "historyLength": 0})
        assert "history" not in got
        got = await w.result("tasks/get", {"id": task["id"], "metadata": {"ignored": True}})
    assert got == task


async def test_tasks_cancel(agent: Agent, gate: Gate) -> None:
    async with wire(agent) as w:
        params = {"message": to("slow"), "configuration": {"blocking": False}}
        task = await w.result("message/send", params)
        await gate.started.wait()
        canceled = await w.result("tasks/cancel", {"id": task["id"]})
        assert canceled["kind"] == "task" and canceled["status"]["state"] == "canceled"
        done = await w.result("message/send", {"message": to("echo")})
        refused = (await w.call("tasks/cancel", {"id": done["id"]}))["error"]
    assert refused["code"] == -32002
    assert refused["data"]["reason"] == "TASK_NOT_CANCELABLE"
    assert refused["data"]["metadata"] == {"taskId": done["id"]}


async def test_tasks_resubscribe_follows_a_running_task(agent: Agent, gate: Gate) -> None:
    async with wire(agent) as w:
        params = {"message": to("slow"), "configuration": {"blocking": False}}
        task = await w.result("message/send", params)
        await gate.started.wait()
        events = await _resubscribed(w, task["id"], gate)
    assert_v03(events)
    assert events[0]["kind"] == "task" and events[0]["status"]["state"] == "working"
    assert events[-1]["kind"] == "status-update" and events[-1]["final"] is True
    assert events[-1]["status"]["state"] == "completed"


async def _resubscribed(w: Wire, task_id: str, gate: Gate) -> list[dict[str, Any]]:
    """tasks/resubscribe's events; the task is released once the first one has arrived."""
    parser = SSEParser()
    found: list[dict[str, Any]] = []
    body = rpc("tasks/resubscribe", {"id": task_id})
    with anyio.fail_after(TIMEOUT_S):
        async with w.http.stream("POST", w.url + "/", json=body) as response:
            assert response.headers["content-type"] == "text/event-stream"
            async for chunk in response.aiter_raw():
                found.extend(json.loads(data)["result"] for data in parser.feed(chunk))
                if found:
                    gate.release.set()
    return found


async def test_push_configs_are_set_got_listed_and_deleted(agent: Agent) -> None:
    async with wire(agent) as w:
        task = await w.result("message/send", {"message": to("echo")})
        task_id = task["id"]
        config = {
            "url": WEBHOOK,
            "token": "secret",
            "authentication": {"schemes": ["Bearer", "Basic"], "credentials": "t0k"},
        }
        stored = await w.result(
            "tasks/pushNotificationConfig/set",
            {"taskId": task_id, "pushNotificationConfig": config},
        )
        expected = {
            "taskId": task_id,
            "pushNotificationConfig": {
                "id": task_id,  # none given: the task's id, as the 0.3 reference SDK does
                "url": WEBHOOK,
                "token": "secret",
                "authentication": {"schemes": ["Bearer"], "credentials": "t0k"},
            },
        }
        assert stored == expected
        named = {"taskId": task_id, "pushNotificationConfig": {"id": "second", "url": WEBHOOK}}
        await w.result("tasks/pushNotificationConfig/set", named)
        by_id = {"id": task_id, "pushNotificationConfigId": task_id}
        assert await w.result("tasks/pushNotificationConfig/get", by_id) == expected
        first = await w.result("tasks/pushNotificationConfig/get", {"id": task_id})
        assert first == expected, "without a config id: the task's first config"
        listed = await w.result("tasks/pushNotificationConfig/list", {"id": task_id})
        assert [c["pushNotificationConfig"]["id"] for c in listed] == [task_id, "second"]
        for config_id in (task_id, "second"):
            removed = {"id": task_id, "pushNotificationConfigId": config_id}
            assert await w.result("tasks/pushNotificationConfig/delete", removed) is None
        assert await w.result("tasks/pushNotificationConfig/list", {"id": task_id}) == []
        missing = (await w.call("tasks/pushNotificationConfig/get", {"id": task_id}))["error"]
    assert missing["code"] == -32001


async def test_errors_carry_0_3_codes_and_an_object_data(agent: Agent) -> None:
    async with wire(agent) as w:
        unknown = (await w.call("tasks/get", {"id": "no-such-task"}))["error"]
        bad_role = (await w.call("message/send", {"message": to("echo", role="robot")}))["error"]
        no_id = (await w.call("tasks/get", {}))["error"]
        card = (await w.call("agent/getAuthenticatedExtendedCard"))["error"]
    assert unknown == {
        "code": -32001,
        "message": "Task no-such-task was not found",
        "data": {
            "reason": "TASK_NOT_FOUND",
            "domain": "a2a-protocol.org",
            "metadata": {"taskId": "no-such-task"},
        },
    }
    assert bad_role["code"] == -32602
    assert bad_role["data"]["fieldViolations"][0]["field"] == "params.message.role"
    assert no_id["code"] == -32602 and "params.id" in no_id["message"]
    assert card["code"] == -32004, "this agent offers no extended card"


async def test_a_0_3_part_outside_the_input_modes_is_refused_with_its_0_3_code(
    agent: Agent,
) -> None:
    image = {"kind": "file", "file": {"uri": "https://example.com/b.png", "mimeType": "image/png"}}
    async with wire(agent) as w:
        refused = (await w.call("message/send", {"message": to("echo", parts=[image])}))["error"]
    assert refused["code"] == -32005
    assert refused["data"]["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"
    assert "image/png" in refused["message"]


async def test_the_shape_decides_whatever_the_version_header_says(agent: Agent) -> None:
    async with wire(agent, lenient_version=True) as w:
        for version in ("1.0", "0.3"):
            answer = await w.call(
                "message/send", {"message": to("echo")}, **{"A2A-Version": version}
            )
            assert answer["result"]["kind"] == "task", version
        # A 1.0 method without the header keeps today's rule (here: lenient, so 1.0).
        listed = await w.call("ListTasks", {})
    assert "tasks" in listed["result"]


async def test_a_1_0_method_without_a_header_is_still_refused(agent: Agent) -> None:
    async with wire(agent) as w:
        answer = await w.call("GetTask", {"id": "x"})
    assert answer["error"]["code"] == -32009


async def test_with_0_3_off_its_methods_are_unknown(agent: Agent) -> None:
    async with wire(agent, serve_v03=False) as w:
        answer = await w.call("message/send", {"message": to("echo")})
        card = (await w.http.get(w.url + "/.well-known/agent-card.json")).json()
    assert answer["error"]["code"] == -32601
    assert "0.3" in answer["error"]["message"]
    assert "url" not in card and "preferredTransport" not in card


async def test_malformed_0_3_bodies_are_refused_as_0_3(agent: Agent) -> None:
    async with wire(agent) as w:
        body = json.dumps(rpc("message/send", {"message": to("echo")}))
        response = await w.http.post(
            w.url + "/", content=body, headers={"content-type": "text/plain"}
        )
        no_params = await w.call("message/send")
    error = response.json()["error"]
    assert error["code"] == -32005 and isinstance(error["data"], dict)
    assert no_params["error"]["code"] == -32602


async def test_extensions_travel_under_0_3_s_header_name(agent: Agent) -> None:
    async with wire(agent) as w:
        response = await w.http.post(
            w.url + "/",
            json=rpc("message/send", {"message": to("echo")}),
            headers={"X-A2A-Extensions": "urn:example:unknown"},
        )
    assert response.json()["result"]["kind"] == "task"
    assert "x-a2a-extensions" not in response.headers, "none of them is this agent's"


async def test_a_stream_of_a_finished_task_is_refused(agent: Agent) -> None:
    async with wire(agent) as w:
        task = await w.result("message/send", {"message": to("echo")})
        response = await w.http.post(w.url + "/", json=rpc("tasks/resubscribe", {"id": task["id"]}))
    assert isinstance(response, httpx.Response)
    assert response.json()["error"]["code"] == -32004
