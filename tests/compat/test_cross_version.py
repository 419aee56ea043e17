"""One task, both versions: a task started over A2A 0.3 is read and continued over 1.0, and the
other way round, over JSON-RPC and HTTP+JSON alike (one Dispatcher, store and state machine)."""

from __future__ import annotations

from peerwire import Agent
from peerwire.client import CardCache, Client
from peerwire.types import Task, TaskState

from .conftest import v03_message, wire


async def test_started_over_0_3_read_and_continued_over_1_0(agent: Agent) -> None:
    async with wire(agent) as w:
        asked = await w.result(
            "message/send", {"message": v03_message("x", metadata={"skill": "ask"})}
        )
        assert asked["status"]["state"] == "input-required"
        async with Client.connect(w.url, card_cache=CardCache()) as client:
            assert client.interface.protocol_version == "1.0", "the dual card reads as 1.0"
            seen = await client.get_task(asked["id"])
            assert seen.status.state is TaskState.INPUT_REQUIRED
            assert seen.history[0].text == "x"
            done = await client.send("zebra", task_id=asked["id"])
        assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED
        # ... and read back over 0.3 REST, in the 0.3 proto's shape.
        response = await w.http.get(f"{w.url}/rest/v1/tasks/{asked['id']}")
    task = response.json()
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [m["role"] for m in task["history"]] == ["ROLE_USER", "ROLE_AGENT", "ROLE_USER"]
    assert task["artifacts"][0]["parts"] == [{"text": "defined zebra"}]


async def test_started_over_1_0_continued_over_0_3(agent: Agent) -> None:
    async with wire(agent) as w:
        async with Client.connect(w.url, card_cache=CardCache()) as client:
            asked = await client.send("x", skill="ask")
        assert isinstance(asked, Task) and asked.status.state is TaskState.INPUT_REQUIRED
        follow_up = v03_message("zebra", taskId=asked.id, contextId=asked.context_id)
        events = await w.events("message/stream", {"message": follow_up})
        assert events[-1]["status"]["state"] == "completed" and events[-1]["final"] is True
        task = await w.result("tasks/get", {"id": asked.id})
    assert task["artifacts"][0]["parts"] == [{"kind": "text", "text": "defined zebra"}]
    assert [m["role"] for m in task["history"]] == ["user", "agent", "user"]


async def test_tasks_started_over_0_3_are_listed_over_1_0(agent: Agent) -> None:
    async with wire(agent) as w, Client.connect(w.url, card_cache=CardCache()) as client:
        message = v03_message("y", metadata={"skill": "echo"})
        begun = await w.result("message/send", {"message": message})
        rest = await w.http.post(
            f"{w.url}/rest/v1/message:send",
            json={
                "message": {
                    "messageId": "r-1",
                    "role": "ROLE_USER",
                    "content": [{"text": "z"}],
                    "metadata": {"skill": "echo"},
                },
                "configuration": {"blocking": True},
            },
        )
        listed = {t.id for t in await client.list_tasks()}
        read = await client.get_task(begun["id"])
    assert begun["id"] in listed and rest.json()["task"]["id"] in listed
    assert read.artifacts[0].text == "y"
