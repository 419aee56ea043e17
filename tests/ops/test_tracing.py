"""Traces across agent hops: client -> agent A -> agent B as one trace, on every binding.

Real agents on loopback, traced by the OpenTelemetry SDK into an in-memory exporter. Each
scenario runs in a child process (``_traced_agents.py``): the global TracerProvider can be
set only once per process, and a traced process sends ``traceparent`` on every call, which
no other test module should see.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from peerwire.types import Binding

HERE = Path(__file__).parent
SCRIPT = HERE / "_traced_agents.py"
BINDINGS = (Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC)
KNOWN_TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
KNOWN_PARENT_ID = "00f067aa0ba902b7"
V03_PARENT_ID = "00f067aa0ba90303"

Span = dict[str, Any]


@cache
def run(scenario: str, binding: str) -> dict[str, Any]:
    """What the scenario found and every span it exported (run once per test session)."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), scenario, binding],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=HERE.parents[1],
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def only(spans: list[Span], test: Callable[[Span], bool]) -> Span:
    matching = [s for s in spans if test(s)]
    assert len(matching) == 1, [(s["name"], s["kind"]) for s in matching]
    return matching[0]


def children(spans: list[Span], parent: Span) -> list[Span]:
    return [s for s in spans if s["parent_id"] == parent["span_id"]]


def child(spans: list[Span], parent: Span, name: str, kind: str) -> Span:
    return only(children(spans, parent), lambda s: s["name"] == name and s["kind"] == kind)


def trace_of(spans: list[Span], root: Span) -> list[Span]:
    return [s for s in spans if s["trace_id"] == root["trace_id"]]


@pytest.mark.parametrize("binding", BINDINGS)
def test_client_agent_a_agent_b_is_one_trace(binding: str) -> None:
    result = run("chain", binding)
    spans: list[Span] = result["spans"]
    assert result["found"]["send_state"] == "TASK_STATE_COMPLETED"
    root = only(spans, lambda s: s["name"] == "test.send")
    assert root["parent_id"] is None

    # The caller's CLIENT span, and agent A's SERVER span under it (from the wire).
    to_a = child(spans, root, "SendMessage", "CLIENT")
    at_a = child(spans, to_a, "SendMessage", "SERVER")
    assert at_a["parent_remote"] is True
    # A blocking send's span lasts until its task settles: A's handler runs in it, so the
    # skill's own work nests right under it.
    plan = child(spans, at_a, "inventory.plan", "INTERNAL")
    assert at_a["start"] <= plan["start"] and plan["end"] <= at_a["end"]
    # A's skill calls B: its CLIENT span, then B's SERVER span, B's skill's own work.
    to_b = child(spans, plan, "SendMessage", "CLIENT")
    at_b = child(spans, to_b, "SendMessage", "SERVER")
    lookup = child(spans, at_b, "warehouse.lookup", "INTERNAL")

    hops = [root, to_a, at_a, plan, to_b, at_b, lookup]
    assert {s["trace_id"] for s in hops} == {root["trace_id"]}
    # Nothing of this send leaked into another trace, or came twice.
    assert len(trace_of(spans, root)) == len(hops)
    assert all(s["status"] != "ERROR" for s in hops)


@pytest.mark.parametrize("binding", BINDINGS)
def test_spans_carry_the_a2a_attributes(binding: str) -> None:
    result = run("chain", binding)
    spans: list[Span] = result["spans"]
    task_id = result["found"]["send_task"]
    root = only(spans, lambda s: s["name"] == "test.send")
    to_a = child(spans, root, "SendMessage", "CLIENT")
    at_a = child(spans, to_a, "SendMessage", "SERVER")
    for span in (to_a, at_a):
        attributes = span["attributes"]
        assert attributes["a2a.method.name"] == "SendMessage"
        assert attributes["a2a.binding"] == binding
        assert attributes["a2a.protocol.version"] == "1.0"
        assert attributes["gen_ai.agent.name"] == "Inventory"
        assert attributes["a2a.task.id"] == task_id
        assert attributes["a2a.task.state"] == "TASK_STATE_COMPLETED"
        assert attributes["gen_ai.conversation.id"]
        assert attributes["a2a.message.id"]
    assert to_a["attributes"]["server.address"] == "127.0.0.1"
    assert isinstance(to_a["attributes"]["server.port"], int)
    assert (
        at_a["attributes"]["gen_ai.conversation.id"] == to_a["attributes"]["gen_ai.conversation.id"]
    )
    # A unary call that is no message: GetTask names its task.
    get = only(spans, lambda s: s["name"] == "test.get")
    at_get = child(spans, child(spans, get, "GetTask", "CLIENT"), "GetTask", "SERVER")
    assert at_get["attributes"]["a2a.task.id"] == task_id
    assert at_get["attributes"]["a2a.task.state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_stream_is_one_span_on_each_side(binding: str) -> None:
    result = run("chain", binding)
    spans: list[Span] = result["spans"]
    root = only(spans, lambda s: s["name"] == "test.stream")
    to_a = child(spans, root, "SendStreamingMessage", "CLIENT")
    at_a = child(spans, to_a, "SendStreamingMessage", "SERVER")
    # One span per stream, never one per event: the count is an attribute.
    assert [s["name"] for s in children(spans, root)] == ["SendStreamingMessage"]
    events = result["found"]["stream_events"]
    assert events >= 3  # the task, working, ..., completed
    assert to_a["attributes"]["a2a.stream.events"] == events
    assert at_a["attributes"]["a2a.stream.events"] >= events
    for span in (to_a, at_a):
        assert span["attributes"]["a2a.task.state"] == "TASK_STATE_COMPLETED"
        assert span["attributes"]["a2a.task.id"]
    # The stream's handler still nests, and calls B within the same trace.
    handler = child(spans, at_a, "invoke_agent Inventory", "INTERNAL")
    to_b = child(
        spans, child(spans, handler, "inventory.plan", "INTERNAL"), "SendMessage", "CLIENT"
    )
    assert to_b["trace_id"] == root["trace_id"]
    assert to_a["start"] <= at_a["start"] and at_a["end"] <= to_a["end"]


@pytest.mark.parametrize("binding", BINDINGS)
def test_an_error_is_the_wire_reason_and_the_bounded_message(binding: str) -> None:
    result = run("chain", binding)
    spans: list[Span] = result["spans"]
    assert result["found"]["missing_error"] == "TaskNotFoundError"
    root = only(spans, lambda s: s["name"] == "test.missing")
    to_a = child(spans, root, "GetTask", "CLIENT")
    at_a = child(spans, to_a, "GetTask", "SERVER")
    for span in (to_a, at_a):
        assert span["status"] == "ERROR"
        assert span["attributes"]["error.type"] == "TASK_NOT_FOUND"
        assert span["description"] == "Task no-such-task was not found"
        assert span["attributes"]["a2a.task.id"] == "no-such-task"


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_known_traceparent_is_the_parent_and_a_malformed_one_starts_a_trace(
    binding: str,
) -> None:
    result = run("traceparents", binding)
    answers = result["found"]["answers"]
    # Every request was answered as any other: a malformed traceparent is never an error.
    assert answers == ["TASK_STATE_COMPLETED"] * len(answers)
    servers = [
        s
        for s in result["spans"]
        if s["kind"] == "SERVER" and s["attributes"]["a2a.protocol.version"] == "1.0"
    ]
    assert len(servers) == len(answers)
    known, *malformed = sorted(servers, key=lambda s: s["start"])
    assert known["trace_id"] == KNOWN_TRACE_ID
    assert known["parent_id"] == KNOWN_PARENT_ID
    assert known["parent_remote"] is True
    for span in malformed:
        assert span["parent_id"] is None  # a new trace, of its own
        assert span["trace_id"] != KNOWN_TRACE_ID
        assert span["status"] != "ERROR"
    assert len({s["trace_id"] for s in malformed}) == len(malformed)


@pytest.mark.parametrize("binding", BINDINGS)
def test_no_tracer_configured_traces_nothing_and_imports_nothing(binding: str) -> None:
    result = run("none", binding)
    found = result["found"]
    assert found["states"] == ["TASK_STATE_COMPLETED"]
    assert found["stream_events"] >= 3
    assert found["enabled"] is False
    assert found["otel_imported"] is False  # not even imported: no start-up cost either


def test_the_api_without_an_sdk_traces_nothing() -> None:
    result = run("api", Binding.JSONRPC)
    assert result["found"]["states"] == ["TASK_STATE_COMPLETED"]
    assert result["found"]["enabled"] is False


@pytest.mark.parametrize("binding", BINDINGS)
def test_an_a2a_03_request_is_traced_the_same(binding: str) -> None:
    result = run("traceparents", binding)
    assert result["found"]["v03_answer"] == "TASK_STATE_COMPLETED"
    span = only(
        result["spans"],
        lambda s: s["kind"] == "SERVER" and s["attributes"]["a2a.protocol.version"] == "0.3",
    )
    assert span["name"] == "SendMessage"
    assert (span["trace_id"], span["parent_id"]) == (KNOWN_TRACE_ID, V03_PARENT_ID)
    assert span["attributes"]["a2a.binding"] == binding
    assert span["attributes"]["a2a.task.state"] == "TASK_STATE_COMPLETED"
    # Its handler runs in it as in a 1.0 request's: the skill's own span nests under it.
    nested = only(result["spans"], lambda s: s["parent_id"] == span["span_id"])
    assert nested["name"] == "warehouse.lookup"


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_handler_that_outlives_its_request_keeps_its_own_span(binding: str) -> None:
    result = run("handlers", binding)
    spans: list[Span] = result["spans"]
    assert result["found"]["later_state"] == "TASK_STATE_COMPLETED"
    root = only(spans, lambda s: s["name"] == "test.later")
    at_server = child(spans, child(spans, root, "SendMessage", "CLIENT"), "SendMessage", "SERVER")
    handler = child(spans, at_server, "invoke_agent Workshop", "INTERNAL")
    # The non-blocking send answered at once; the handler's span ends with the handler.
    assert at_server["attributes"]["a2a.task.state"] != "TASK_STATE_COMPLETED"
    assert handler["end"] > at_server["end"]
    assert handler["status"] != "ERROR"
    assert handler["attributes"] == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "Workshop",
        "a2a.skill.id": "slow",
        "a2a.task.id": at_server["attributes"]["a2a.task.id"],
        "gen_ai.conversation.id": at_server["attributes"]["gen_ai.conversation.id"],
        "a2a.task.state": "TASK_STATE_COMPLETED",
    }


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_skill_that_raises_marks_the_span_it_ran_in(binding: str) -> None:
    result = run("handlers", binding)
    spans: list[Span] = result["spans"]
    assert result["found"]["broken_state"] == "TASK_STATE_FAILED"
    root = only(spans, lambda s: s["name"] == "test.broken")
    to_server = child(spans, root, "SendMessage", "CLIENT")
    at_server = child(spans, to_server, "SendMessage", "SERVER")
    # A blocking send: the handler ran in the request's span, which says how it failed.
    assert children(spans, at_server) == []
    assert at_server["status"] == "ERROR"
    assert at_server["attributes"]["error.type"] == "KeyError"
    assert at_server["description"] == "'missing'"  # the reason the task fails with, no more
    assert at_server["attributes"]["a2a.task.state"] == "TASK_STATE_FAILED"
    # The caller got an answer (a failed task), not an error.
    assert to_server["status"] != "ERROR"
    assert to_server["attributes"]["a2a.task.state"] == "TASK_STATE_FAILED"


def test_without_opentelemetry_installed_everything_works() -> None:
    result = run("missing", Binding.JSONRPC)
    assert result["found"]["states"] == ["TASK_STATE_COMPLETED"]
    assert result["found"]["stream_events"] >= 3
    assert result["found"]["enabled"] is False


@pytest.mark.parametrize("binding", BINDINGS)
def test_subscribing_is_one_span_on_each_side(binding: str) -> None:
    result = run("handlers", binding)
    spans: list[Span] = result["spans"]
    events = result["found"]["subscribe_events"]
    assert events >= 2  # the task as it stands, then at least its completion
    root = only(spans, lambda s: s["name"] == "test.subscribe")
    to_server = child(spans, root, "SubscribeToTask", "CLIENT")
    at_server = child(spans, to_server, "SubscribeToTask", "SERVER")
    assert [s["name"] for s in children(spans, root)] == ["SubscribeToTask"]
    assert to_server["attributes"]["a2a.stream.events"] == events
    for span in (to_server, at_server):
        assert span["attributes"]["a2a.task.state"] == "TASK_STATE_COMPLETED"
        assert span["attributes"]["a2a.method.name"] == "SubscribeToTask"
    assert to_server["attributes"]["a2a.task.id"] == at_server["attributes"]["a2a.task.id"]


def test_a_provider_installed_after_the_app_was_built_is_picked_up() -> None:
    result = run("late", Binding.JSONRPC)
    assert result["found"] == {"state": "TASK_STATE_COMPLETED", "enabled": True}
    kinds = sorted((s["name"], s["kind"]) for s in result["spans"])
    assert kinds == [
        ("SendMessage", "CLIENT"),
        ("SendMessage", "SERVER"),
        ("warehouse.lookup", "INTERNAL"),
    ]
