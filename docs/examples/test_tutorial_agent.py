"""Testing the tutorial's agent with peerwire.testing (run with pytest and pytest-asyncio)."""

import httpx
import pytest

from peerwire import Client, TaskArtifactUpdateEvent, TaskState
from peerwire.testing import in_process, live_server

from tutorial_agent import agent

pytestmark = pytest.mark.asyncio


async def test_count_over_a_real_socket() -> None:
    async with live_server(agent) as url, Client.connect(url) as client:
        task = await client.send("one two three")
        assert task.status.state is TaskState.COMPLETED
        assert task.artifacts[0].text == "3 words"


async def test_spell_streams_one_chunk_per_letter() -> None:
    async with live_server(agent) as url, Client.connect(url) as client:
        chunks = [
            event.artifact.text
            async for event in client.stream("abc", skill="spell")
            if isinstance(event, TaskArtifactUpdateEvent)
        ]
    assert chunks == ["A", "B", "C"]


async def test_greet_asks_then_answers_on_the_same_task() -> None:
    async with live_server(agent) as url, Client.connect(url) as client:
        task = await client.send("", skill="greet")
        assert task.status.state is TaskState.INPUT_REQUIRED
        task = await client.send("Grace", task_id=task.id)
        assert task.artifacts[0].text == "Hello, Grace!"


async def test_the_card_in_process() -> None:
    async with in_process(agent) as http:  # no socket: httpx calls the ASGI app directly
        response = await http.get("/.well-known/agent-card.json")
    assert response.status_code == httpx.codes.OK
    assert [skill["id"] for skill in response.json()["skills"]] == ["count", "spell", "greet"]
