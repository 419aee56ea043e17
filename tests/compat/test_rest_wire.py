"""A2A 0.3 HTTP+JSON on the wire: the ``/v1/...`` routes below the REST prefix, bodies in the
0.3 proto's JSON as the official 0.3 SDKs send them, and answers holding only members the 0.3
proto has (the Python SDK parses them strictly)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio

from peerwire import Agent
from peerwire.bindings.sse import SSEParser

from .conftest import TIMEOUT_S, WEBHOOK, Gate, Wire, proto_message, wire

# The members of each 0.3 proto message (a2a.v1), by JSON name.
_PROTO = {
    "Task": {"id", "contextId", "status", "artifacts", "history", "metadata"},
    "TaskStatus": {"state", "message", "timestamp"},
    "Message": {"messageId", "contextId", "taskId", "role", "content", "metadata", "extensions"},
    "Part": {"text", "file", "data", "metadata"},
    "Artifact": {"artifactId", "name", "description", "parts", "metadata", "extensions"},
    "StatusUpdate": {"taskId", "contextId", "status", "final", "metadata"},
    "ArtifactUpdate": {"taskId", "contextId", "artifact", "append", "lastChunk", "metadata"},
    "PushConfig": {"id", "url", "token", "authentication"},
}
BASE = "/rest/v1"


def to(skill: str, text: str = "hello", **fields: Any) -> dict[str, Any]:
    return proto_message(text, metadata={"skill": skill}, **fields)


def check_message(message: dict[str, Any]) -> None:
    assert set(message) <= _PROTO["Message"], message
    for part in message["content"]:
        assert set(part) <= _PROTO["Part"], part


def check_task(task: dict[str, Any]) -> None:
    assert set(task) <= _PROTO["Task"], task
    assert set(task["status"]) <= _PROTO["TaskStatus"]
    if "message" in task["status"]:
        check_message(task["status"]["message"])
    for message in task.get("history", ()):
        check_message(message)
    for artifact in task.get("artifacts", ()):
        assert set(artifact) <= _PROTO["Artifact"]


async def post(w: Wire, path: str, body: Any = None, **kwargs: Any) -> Any:
    response = await w.http.post(w.url + BASE + path, json=body, **kwargs)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    return response.json()


async def get(w: Wire, path: str) -> Any:
    response = await w.http.get(w.url + BASE + path)
    assert response.status_code == 200, response.text
    return response.json()


def blocking(message: dict[str, Any]) -> dict[str, Any]:
    """A SendMessageRequest as the Python SDK sends it (configuration always present)."""
    return {"message": message, "configuration": {"blocking": True, "acceptedOutputModes": []}}


async def test_message_send_answers_the_0_3_proto_shape(agent: Agent) -> None:
    async with wire(agent) as w:
        answer = await post(w, "/message:send", blocking(to("echo", "hello")))
    assert set(answer) == {"task"}
    task = answer["task"]
    check_task(task)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"text": "hello"}]
    [message] = task["history"]
    assert message["role"] == "ROLE_USER" and message["content"] == [{"text": "hello"}]


async def test_without_blocking_a_configured_send_returns_at_once(agent: Agent, gate: Gate) -> None:
    async with wire(agent) as w:
        answer = await post(w, "/message:send", {"message": to("slow"), "configuration": {}})
        task = answer["task"]
        assert task["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
        await gate.started.wait()
        gate.release.set()
        with anyio.fail_after(TIMEOUT_S):
            while task["status"]["state"] != "TASK_STATE_COMPLETED":
                await asyncio.sleep(0.01)
                task = await get(w, f"/tasks/{task['id']}?historyLength=1")
    assert len(task["history"]) == 1


async def test_file_bytes_and_data_parts(agent: Agent) -> None:
    content = [
        {"file": {"fileWithBytes": "aGk=", "mimeType": "text/plain", "name": "a.txt"}},
        {"data": {"data": {"n": 1}}},
    ]
    async with wire(agent) as w:
        answer = await post(w, "/message:send", blocking(to("inspect", content=content)))
    [part] = answer["task"]["artifacts"][0]["parts"]
    seen = part["data"]["data"]["parts"]
    assert seen[0]["raw"] == "aGk=" and seen[0]["filename"] == "a.txt"
    assert seen[1]["data"] == {"n": 1}
    assert answer["task"]["history"][0]["content"] == content


async def test_message_stream_sends_0_3_stream_responses(agent: Agent) -> None:
    async with wire(agent) as w:
        data = await w.sse("POST", BASE + "/message:stream", json=blocking(to("echo", "hi")))
    events = [json.loads(d) for d in data]
    assert [next(iter(e)) for e in events] == [
        "task",
        "statusUpdate",
        "artifactUpdate",
        "statusUpdate",
    ]
    check_task(events[0]["task"])
    assert set(events[1]["statusUpdate"]) <= _PROTO["StatusUpdate"]
    assert "final" not in events[1]["statusUpdate"], "false: omitted, as ProtoJSON does"
    assert set(events[2]["artifactUpdate"]) <= _PROTO["ArtifactUpdate"]
    last = events[3]["statusUpdate"]
    assert last["final"] is True and last["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_cancel_takes_any_body(agent: Agent, gate: Gate) -> None:
    async with wire(agent) as w:
        bodies: list[Any] = [{"name": "tasks/x"}, None]
        for body in bodies:
            gate.started.clear()
            answer = await post(w, "/message:send", {"message": to("slow"), "configuration": {}})
            task_id = answer["task"]["id"]
            await gate.started.wait()
            canceled = await post(w, f"/tasks/{task_id}:cancel", body)
            check_task(canceled)
            assert canceled["id"] == task_id
            assert canceled["status"]["state"] == "TASK_STATE_CANCELLED"


async def test_subscribe_follows_a_running_task(agent: Agent, gate: Gate) -> None:
    async with wire(agent) as w:
        answer = await post(w, "/message:send", {"message": to("slow"), "configuration": {}})
        task_id = answer["task"]["id"]
        await gate.started.wait()
        parser = SSEParser()
        events: list[dict[str, Any]] = []
        with anyio.fail_after(TIMEOUT_S):
            async with w.http.stream(
                "GET", w.url + f"{BASE}/tasks/{task_id}:subscribe"
            ) as response:
                assert response.status_code == 200
                async for chunk in response.aiter_raw():
                    events.extend(json.loads(d) for d in parser.feed(chunk))
                    gate.release.set()
    assert "task" in events[0]
    assert events[-1]["statusUpdate"]["final"] is True


async def test_push_configs_on_their_routes(agent: Agent) -> None:
    async with wire(agent) as w:
        task_id = (await post(w, "/message:send", blocking(to("echo"))))["task"]["id"]
        name = f"tasks/{task_id}/pushNotificationConfigs/c1"
        # The Python SDK's CreateTaskPushNotificationConfigRequest ...
        created = await post(
            w,
            f"/tasks/{task_id}/pushNotificationConfigs",
            {
                "parent": f"tasks/{task_id}",
                "configId": "c1",
                "config": {"name": name, "pushNotificationConfig": {"url": WEBHOOK, "id": "c1"}},
            },
        )
        assert created == {"name": name, "pushNotificationConfig": {"id": "c1", "url": WEBHOOK}}
        # ... and the JavaScript SDK's bare TaskPushNotificationConfig.
        other = f"tasks/{task_id}/pushNotificationConfigs/c2"
        bare = {"name": other, "pushNotificationConfig": {"id": "c2", "url": WEBHOOK}}
        assert await post(w, f"/tasks/{task_id}/pushNotificationConfigs", bare) == bare
        assert await get(w, f"/tasks/{task_id}/pushNotificationConfigs/c1") == created
        listed = await get(w, f"/tasks/{task_id}/pushNotificationConfigs")
        assert [c["name"] for c in listed["configs"]] == [name, other]
        for config_id in ("c1", "c2"):
            deleted = await w.http.delete(
                w.url + f"{BASE}/tasks/{task_id}/pushNotificationConfigs/{config_id}"
            )
            assert deleted.status_code == 200 and deleted.json() == {}
        assert await get(w, f"/tasks/{task_id}/pushNotificationConfigs") == {"configs": []}


async def test_errors_are_0_3_documents(agent: Agent) -> None:
    async with wire(agent) as w:
        missing = await w.http.get(w.url + BASE + "/tasks/nope")
        wrong_verb = await w.http.delete(w.url + BASE + "/message:send")
        not_json = await w.http.post(
            w.url + BASE + "/message:send",
            content=b"{",
            headers={"content-type": "application/json"},
        )
        card = await w.http.get(w.url + BASE + "/card")
    assert missing.status_code == 404
    assert missing.json() == {
        "code": -32001,
        "message": "Task nope was not found",
        "data": {
            "reason": "TASK_NOT_FOUND",
            "domain": "a2a-protocol.org",
            "metadata": {"taskId": "nope"},
        },
    }
    assert wrong_verb.status_code == 405 and wrong_verb.headers["allow"] == "POST"
    assert wrong_verb.json()["code"] == -32601
    assert not_json.status_code == 400 and not_json.json()["code"] == -32700
    assert card.status_code == 400 and card.json()["code"] == -32004


async def test_path_ids_are_decoded_by_the_1_0_rules(agent: Agent) -> None:
    # The same decoder as 1.0's: an invalid escape is an error naming the field, never a
    # lookup of a garbled id.
    async with wire(agent) as w:
        bad_escape = await w.http.get(w.url + BASE + "/tasks/ab%zz")
        not_utf8 = await w.http.get(w.url + BASE + "/tasks/%ff")
    for response, words in ((bad_escape, "percent-encoded"), (not_utf8, "UTF-8")):
        assert response.status_code == 400, response.text
        body = response.json()
        assert body["code"] == -32602
        assert "id" in body["message"] and words in body["message"]


async def test_a_1_0_request_to_a_tenant_called_v1_stays_1_0(agent: Agent) -> None:
    message = {
        "messageId": "t-1",
        "role": "ROLE_USER",
        "parts": [{"text": "hi"}],
        "metadata": {"skill": "echo"},
    }
    async with wire(agent) as w:
        response = await w.http.post(
            w.url + BASE + "/message:send",
            json={"message": message},
            headers={"A2A-Version": "1.0"},
        )
    assert response.headers["content-type"] == "application/a2a+json"
    assert response.json()["task"]["history"][0]["parts"] == [{"text": "hi"}], "1.0's shape"


async def test_with_0_3_off_its_routes_are_404(agent: Agent) -> None:
    async with wire(agent, serve_v03=False) as w:
        response = await w.http.post(w.url + BASE + "/message:send", json=blocking(to("echo")))
        other = await w.http.get(w.url + BASE + "/tasks")
    assert response.status_code == 404
    assert "0.3" in response.json()["error"]["message"]
    # No 0.3 route: ListTasks of 1.0's tenant "v1", refused for its missing A2A-Version.
    assert other.status_code == 400
    assert other.json()["error"]["details"][0]["reason"] == "VERSION_NOT_SUPPORTED"
