"""The harness checks itself: the a2a-sdk client against the a2a-sdk Glossary server.

Every scenario on every binding, before any peerwire code is involved, so a
failure in a later interop test points at peerwire, not at the harness.
"""

from __future__ import annotations

from typing import Any

import pytest

from .sdk_harness import BINDINGS, SdkServer, run_sdk_client

pytestmark = pytest.mark.interop

CHUNKS = ["A record is a final class that is a transparent", " carrier for its components."]
RECORD_ARTIFACT = {
    "artifactId": "definition",
    "name": "definition",
    "parts": [{"text": chunk} for chunk in CHUNKS],
}

by_binding = pytest.mark.parametrize("binding", BINDINGS)


def only(lines: list[dict[str, Any]], op: str) -> list[dict[str, Any]]:
    assert all("error" not in line for line in lines), lines
    return [line for line in lines if line.get("op") == op]


def state(task: dict[str, Any]) -> str:
    return task["status"]["state"]


def status_text(task_or_event: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in task_or_event["status"]["message"]["parts"])


def run(server: SdkServer, binding: str, scenario: str, **kw: Any) -> list[dict[str, Any]]:
    return run_sdk_client(server.base_url, binding, scenario, **kw)


@by_binding
def test_card(sdk_glossary_server: SdkServer, binding: str) -> None:
    [line] = only(run(sdk_glossary_server, binding, "card"), "card")
    card = line["card"]
    base = sdk_glossary_server.base_url
    assert [(i["protocolBinding"], i["url"]) for i in card["supportedInterfaces"]] == [
        ("JSONRPC", f"{base}/"),
        ("HTTP+JSON", f"{base}/rest"),
        ("GRPC", sdk_glossary_server.grpc_address),
    ]
    assert {i["protocolVersion"] for i in card["supportedInterfaces"]} == {"1.0"}
    assert card["capabilities"]["streaming"] is True
    assert not card["capabilities"].get("pushNotifications", False)


@by_binding
def test_send_record(sdk_glossary_server: SdkServer, binding: str) -> None:
    [line] = only(run(sdk_glossary_server, binding, "send"), "send")
    task = line["response"]["task"]
    assert state(task) == "TASK_STATE_COMPLETED"
    assert task["artifacts"] == [RECORD_ARTIFACT]


@by_binding
def test_stream_record_in_two_chunks(sdk_glossary_server: SdkServer, binding: str) -> None:
    events = [line["event"] for line in only(run(sdk_glossary_server, binding, "stream"), "stream")]
    assert "task" in events[0], "a task stream starts with the Task"
    task_id = events[0]["task"]["id"]
    chunks = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    assert [c["artifact"]["parts"] for c in chunks] == [[{"text": c}] for c in CHUNKS]
    assert {c["artifact"]["artifactId"] for c in chunks} == {"definition"}
    assert not chunks[0].get("append") and not chunks[0].get("lastChunk")
    assert chunks[1].get("append") is True and chunks[1].get("lastChunk") is True
    assert state(events[-1]["statusUpdate"]) == "TASK_STATE_COMPLETED"
    assert {e[kind]["taskId"] for e in events[1:] for kind in e} == {task_id}


@by_binding
def test_get_task(sdk_glossary_server: SdkServer, binding: str) -> None:
    lines = run(sdk_glossary_server, binding, "get")
    [sent], [got] = only(lines, "send"), only(lines, "get")
    assert got["task"]["id"] == sent["response"]["task"]["id"]
    assert state(got["task"]) == "TASK_STATE_COMPLETED"
    assert got["task"]["artifacts"] == [RECORD_ARTIFACT]


@by_binding
def test_list_tasks(sdk_glossary_server: SdkServer, binding: str) -> None:
    lines = run(sdk_glossary_server, binding, "list")
    [sent], [listed] = only(lines, "send"), only(lines, "list")
    tasks = {t["id"]: t for t in listed["response"]["tasks"]}
    task = tasks[sent["response"]["task"]["id"]]
    assert state(task) == "TASK_STATE_COMPLETED"
    assert "artifacts" not in task, "ListTasks omits artifacts unless includeArtifacts"


@by_binding
def test_input_required_then_continue(sdk_glossary_server: SdkServer, binding: str) -> None:
    first, final = (
        line["response"]["task"]
        for line in only(run(sdk_glossary_server, binding, "input_required"), "send")
    )
    assert state(first) == "TASK_STATE_INPUT_REQUIRED"
    assert status_text(first) == "Which term should I define?"
    assert (final["id"], final["contextId"]) == (first["id"], first["contextId"])
    assert state(final) == "TASK_STATE_COMPLETED"
    assert final["artifacts"] == [RECORD_ARTIFACT]


@by_binding
def test_cancel(sdk_glossary_server: SdkServer, binding: str) -> None:
    lines = run(sdk_glossary_server, binding, "cancel")
    [sent], [canceled] = only(lines, "send"), only(lines, "cancel")
    assert state(sent["response"]["task"]) in {"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"}
    assert canceled["task"]["id"] == sent["response"]["task"]["id"]
    assert state(canceled["task"]) == "TASK_STATE_CANCELED"


@by_binding
def test_subscribe(sdk_glossary_server: SdkServer, binding: str) -> None:
    lines = run(sdk_glossary_server, binding, "subscribe")
    [sent] = only(lines, "send")
    events = [line["event"] for line in only(lines, "subscribe")]
    task_id = sent["response"]["task"]["id"]
    assert events[0]["task"]["id"] == task_id, "a subscription starts with the Task"
    updates = [e["statusUpdate"] for e in events[1:]]
    assert updates and all(u["taskId"] == task_id for u in updates)
    assert state(updates[-1]) == "TASK_STATE_COMPLETED"
    assert {state(u) for u in updates[:-1]} == {"TASK_STATE_WORKING"}


def test_other_terms(sdk_glossary_server: SdkServer) -> None:
    # The rest of the Glossary Agent, which later tests rely on (one binding is enough).
    [sealed] = only(run(sdk_glossary_server, "jsonrpc", "send", text="sealed class"), "send")
    task = sealed["response"]["task"]
    assert state(task) == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [
        {"text": "A sealed class restricts which other classes may extend it."}
    ]
    [unknown] = only(run(sdk_glossary_server, "jsonrpc", "send", text="monad"), "send")
    task = unknown["response"]["task"]
    assert state(task) == "TASK_STATE_FAILED"
    assert status_text(task) == "I do not know the term 'monad'."


def test_client_reports_errors() -> None:
    # Nothing listens on the discard port: the client prints the error instead of a card.
    lines = run_sdk_client("http://127.0.0.1:9", "jsonrpc", "card", check=False)
    assert lines[-1]["error"]["type"] == "AgentCardResolutionError"
