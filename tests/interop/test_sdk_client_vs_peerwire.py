"""The official a2a-sdk client drives peerwire's Glossary Agent (peerwire.samples) over JSON-RPC.

The same scenarios as the harness self-test (test_sdk_peer_selftest.py), with a peerwire
server in the SDK server's place: the SDK's view of our wire must match its view of its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import pytest

from peerwire.samples.glossary import agent
from peerwire.testing import live_server

pytestmark = pytest.mark.interop

CHUNKS = ["A record is a final class that is a transparent", " carrier for its components."]
RECORD_ARTIFACT = {
    "artifactId": "definition",
    "name": "definition",
    "parts": [{"text": chunk} for chunk in CHUNKS],
}

RunSdkClient = Callable[..., list[dict[str, Any]]]


@pytest.fixture
async def glossary_url() -> AsyncIterator[str]:
    async with live_server(agent) as url:
        yield url


async def drive(run_sdk_client: RunSdkClient, url: str, scenario: str, **kw: Any) -> list[Any]:
    # The SDK client is a subprocess; waiting for it in a worker thread keeps our server's
    # event loop (the same loop as this test) serving it meanwhile.
    lines = await anyio.to_thread.run_sync(lambda: run_sdk_client(url, "jsonrpc", scenario, **kw))
    assert all("error" not in line for line in lines), lines
    return lines


def only(lines: list[dict[str, Any]], op: str) -> list[dict[str, Any]]:
    return [line for line in lines if line.get("op") == op]


def state(task: dict[str, Any]) -> str:
    return str(task["status"]["state"])


def status_text(task_or_event: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in task_or_event["status"]["message"]["parts"])


async def test_card(run_sdk_client: RunSdkClient, glossary_url: str) -> None:
    [line] = only(await drive(run_sdk_client, glossary_url, "card"), "card")
    card = line["card"]
    assert card["name"] == "Glossary Agent"
    assert card["supportedInterfaces"][0] == {
        "url": f"{glossary_url}/",
        "protocolBinding": "JSONRPC",
        "protocolVersion": "1.0",
    }
    assert card["capabilities"]["streaming"] is True
    assert {s["id"] for s in card["skills"]} == {"define", "slow"}


async def test_send_record(run_sdk_client: RunSdkClient, glossary_url: str) -> None:
    [line] = only(await drive(run_sdk_client, glossary_url, "send"), "send")
    task = line["response"]["task"]
    assert state(task) == "TASK_STATE_COMPLETED"
    assert task["artifacts"] == [RECORD_ARTIFACT]


async def test_a_repeated_message_id_makes_two_tasks(
    run_sdk_client: RunSdkClient, glossary_url: str
) -> None:
    """The SDK does not activate peerwire's idempotent-send extension: the same messageId
    sent twice is two messages to it, as A2A 1.0 has it, and each makes its own task."""
    lines = only(await drive(run_sdk_client, glossary_url, "repeat"), "send")
    first, second = (line["response"]["task"] for line in lines)
    assert first["id"] != second["id"]
    assert state(first) == state(second) == "TASK_STATE_COMPLETED"
    assert first["history"][0]["messageId"] == second["history"][0]["messageId"]


async def test_send_unknown_term_fails(run_sdk_client: RunSdkClient, glossary_url: str) -> None:
    lines = await drive(run_sdk_client, glossary_url, "send", text="monad")
    task = only(lines, "send")[0]["response"]["task"]
    assert state(task) == "TASK_STATE_FAILED"
    assert status_text(task) == "I do not know the term 'monad'."


async def test_stream_record_in_two_chunks(run_sdk_client: RunSdkClient, glossary_url: str) -> None:
    lines = await drive(run_sdk_client, glossary_url, "stream")
    events = [line["event"] for line in only(lines, "stream")]
    assert "task" in events[0], "a task stream starts with the Task"
    task_id = events[0]["task"]["id"]
    chunks = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    assert [c["artifact"]["parts"] for c in chunks] == [[{"text": c}] for c in CHUNKS]
    assert {c["artifact"]["artifactId"] for c in chunks} == {"definition"}
    assert not chunks[0].get("append") and not chunks[0].get("lastChunk")
    assert chunks[1].get("append") is True and chunks[1].get("lastChunk") is True
    assert state(events[-1]["statusUpdate"]) == "TASK_STATE_COMPLETED"
    assert {e[kind]["taskId"] for e in events[1:] for kind in e} == {task_id}


async def test_get_task(run_sdk_client: RunSdkClient, glossary_url: str) -> None:
    lines = await drive(run_sdk_client, glossary_url, "get")
    [sent], [got] = only(lines, "send"), only(lines, "get")
    assert got["task"]["id"] == sent["response"]["task"]["id"]
    assert state(got["task"]) == "TASK_STATE_COMPLETED"
    assert got["task"]["artifacts"] == [RECORD_ARTIFACT]


async def test_list_tasks(run_sdk_client: RunSdkClient, glossary_url: str) -> None:
    lines = await drive(run_sdk_client, glossary_url, "list")
    [sent], [listed] = only(lines, "send"), only(lines, "list")
    response = listed["response"]
    tasks = {t["id"]: t for t in response["tasks"]}
    task = tasks[sent["response"]["task"]["id"]]
    assert state(task) == "TASK_STATE_COMPLETED"
    assert "artifacts" not in task, "ListTasks omits artifacts unless includeArtifacts"
    assert response["totalSize"] == len(response["tasks"]) == 1


async def test_input_required_then_continue(
    run_sdk_client: RunSdkClient, glossary_url: str
) -> None:
    lines = await drive(run_sdk_client, glossary_url, "input_required")
    first, final = (line["response"]["task"] for line in only(lines, "send"))
    assert state(first) == "TASK_STATE_INPUT_REQUIRED"
    assert status_text(first) == "Which term should I define?"
    assert (final["id"], final["contextId"]) == (first["id"], first["contextId"])
    assert state(final) == "TASK_STATE_COMPLETED"
    assert final["artifacts"] == [RECORD_ARTIFACT]


async def test_cancel(run_sdk_client: RunSdkClient, glossary_url: str) -> None:
    lines = await drive(run_sdk_client, glossary_url, "cancel")
    [sent], [canceled] = only(lines, "send"), only(lines, "cancel")
    assert state(sent["response"]["task"]) in {"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"}
    assert canceled["task"]["id"] == sent["response"]["task"]["id"]
    assert state(canceled["task"]) == "TASK_STATE_CANCELED"


async def test_subscribe(run_sdk_client: RunSdkClient, glossary_url: str) -> None:
    lines = await drive(run_sdk_client, glossary_url, "subscribe")
    [sent] = only(lines, "send")
    events = [line["event"] for line in only(lines, "subscribe")]
    task_id = sent["response"]["task"]["id"]
    assert events[0]["task"]["id"] == task_id, "a subscription starts with the Task"
    updates = [e["statusUpdate"] for e in events[1:]]
    assert updates and all(u["taskId"] == task_id for u in updates)
    assert state(updates[-1]) == "TASK_STATE_COMPLETED"
    assert status_text(updates[-1]) == "Done thinking."
    assert {state(u) for u in updates[:-1]} == {"TASK_STATE_WORKING"}
