"""Push notifications to a config a 0.3 caller registered are sent in 0.3's form: the task as
a bare 0.3 Task (``kind: "task"``), ``application/json``, the token in
``X-A2A-Notification-Token`` and no ``A2A-Version``; a 1.0 config of the same task still gets
1.0 ``StreamResponse``s. The 0.3 SDKs' own clients register them in tests/interop."""

from __future__ import annotations

from typing import Any

from ._rpc import HEADERS, envelope, user_message
from ._webhook import Received
from .push_agent import STEPS
from .test_push import Pushing, delivered, pushing, step_of

V03_HEADERS = {"Content-Type": "application/json"}  # 0.3 callers send no A2A-Version


def v03_message(text: str, **fields: Any) -> dict[str, Any]:
    message = {
        "kind": "message",
        "messageId": f"v03-{text}-{id(fields)}",
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
    }
    message.update(fields)
    return message


async def v03_call(served: Pushing, method: str, params: dict[str, Any]) -> Any:
    response = await served.http.post(
        served.url, json=envelope(method, params), headers=V03_HEADERS
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert "result" in body, body
    return body["result"]


def check_v03(notification: Received, task_id: str, token: str) -> dict[str, Any]:
    assert notification.headers["content-type"] == "application/json"
    assert "a2a-version" not in notification.headers
    assert notification.headers["x-a2a-notification-token"] == token
    task = notification.json
    assert task["kind"] == "task" and task["id"] == task_id
    return task  # type: ignore[no-any-return]


async def test_a_config_set_over_0_3_gets_0_3_tasks_and_a_1_0_config_stream_responses() -> None:
    async with pushing() as served:
        waiting = await v03_call(
            served, "message/send", {"message": v03_message("x", metadata={"skill": "question"})}
        )
        assert waiting["kind"] == "task" and waiting["status"]["state"] == "input-required"
        task_id = waiting["id"]
        await v03_call(
            served,
            "tasks/pushNotificationConfig/set",
            {
                "taskId": task_id,
                "pushNotificationConfig": {"id": "v03", "url": served.hook("/v03"), "token": "t3"},
            },
        )
        response = await served.http.post(
            served.url,
            json=envelope(
                "CreateTaskPushNotificationConfig",
                {"taskId": task_id, "id": "v10", "url": served.hook("/v10"), "token": "t1"},
            ),
            headers=HEADERS,
        )
        assert "result" in response.json(), response.text
        done = await v03_call(
            served,
            "message/send",
            {"message": v03_message("yearly", taskId=task_id, contextId=waiting["contextId"])},
        )
        assert done["status"]["state"] == "completed"
        received = await delivered(served, 2 * len(STEPS))
    v03 = [r for r in received if r.path == "/v03"]
    v10 = [r for r in received if r.path == "/v10"]
    assert [step_of(r) for r in v10] == STEPS
    assert all(r.headers["content-type"] == "application/a2a+json" for r in v10)
    assert len(v03) == len(STEPS)
    tasks = [check_v03(r, task_id, "t3") for r in v03]
    assert tasks[-1]["status"]["state"] == "completed"
    assert tasks[-1]["artifacts"] == done["artifacts"]  # the 0.3 Task, as 0.3 reads it
    assert len({r.notification_id for r in v03}) == len(STEPS)


async def test_an_inline_config_in_a_0_3_rest_send_gets_0_3_tasks() -> None:
    async with pushing() as served:
        body = {
            "message": {
                "messageId": "v03-rest-inline",
                "role": "ROLE_USER",
                "content": [{"text": "go"}],
                "metadata": {"skill": "steps"},
            },
            "configuration": {
                "blocking": True,
                "pushNotification": {"url": served.hook(), "token": "inline"},
            },
        }
        response = await served.http.post(
            served.url + "/rest/v1/message:send", json=body, headers=V03_HEADERS
        )
        assert response.status_code == 200, response.text
        task_id = response.json()["task"]["id"]
        received = await delivered(served, len(STEPS))
    tasks = [check_v03(r, task_id, "inline") for r in received]
    assert tasks[-1]["status"]["state"] == "completed"


async def test_a_1_0_send_with_an_inline_config_is_notified_in_1_0() -> None:
    async with pushing() as served:
        params = {
            "message": user_message("go", metadata={"skill": "steps"}),
            "configuration": {"taskPushNotificationConfig": {"url": served.hook()}},
        }
        response = await served.http.post(
            served.url, json=envelope("SendMessage", params), headers=HEADERS
        )
        assert "result" in response.json(), response.text
        received = await delivered(served, len(STEPS))
    assert [step_of(r) for r in received] == STEPS
    assert all(r.headers["a2a-version"] == "1.0" for r in received)
