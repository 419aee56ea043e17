"""Traced runs of real agents on loopback, each in a process of its own.

OpenTelemetry's global TracerProvider can be set once per process, and a process that traces
sends ``traceparent`` on every call it makes: so the tests run their scenarios here, in a
child process (``python tests/ops/_traced_agents.py SCENARIO BINDING``), which prints what
it saw as one JSON document: every span the in-memory exporter holds, and the scenario's
own findings. ``none`` runs with no provider at all.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import httpx

from peerwire import Agent, Client
from peerwire.client.transports.base import CallOptions
from peerwire.client.transports.grpc import GrpcTransport
from peerwire.client.transports.grpc_v03 import GrpcV03Transport
from peerwire.client.transports.jsonrpc import JsonRpcV03Transport
from peerwire.client.transports.rest import RestV03Transport
from peerwire.ops import tracing
from peerwire.testing import live_server
from peerwire.types import Binding, Message, Part, Role, SendMessageRequest, SendMessageResponse

TIMEOUT_S = 30.0
# A valid W3C context the tests know: version 00, a trace id, a parent span id, sampled.
KNOWN_TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
KNOWN_PARENT_ID = "00f067aa0ba902b7"
KNOWN_TRACEPARENT = f"00-{KNOWN_TRACE_ID}-{KNOWN_PARENT_ID}-01"
V03_PARENT_ID = "00f067aa0ba90303"
V03_TRACEPARENT = f"00-{KNOWN_TRACE_ID}-{V03_PARENT_ID}-01"
MALFORMED = ("garbage", "00-xyz-00f067aa0ba902b7-01", "00-" + "0" * 32 + "-" + "0" * 16 + "-01")


def install_provider() -> Any:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter


def agent_b() -> Agent:
    agent = Agent("Warehouse", description="Counts stock")

    @agent.skill()
    async def count(text: str) -> str:
        from opentelemetry import trace

        with trace.get_tracer("warehouse").start_as_current_span("warehouse.lookup"):
            await asyncio.sleep(0)
        return f"{text}: 7 left"

    return agent


def agent_a(binding: str, b_url: list[str]) -> Agent:
    agent = Agent("Inventory", description="Asks the warehouse")

    @agent.skill()
    async def ask(text: str) -> str:
        from opentelemetry import trace

        # The skill's own work (an LLM call, say), then a call to agent B inside it.
        with trace.get_tracer("inventory").start_as_current_span("inventory.plan"):
            async with Client.connect(b_url[0], bindings=[binding], timeout=TIMEOUT_S) as b:
                task = await b.send(text)
        return str(task.status.state.value)

    return agent


def grpc_agent_options(binding: str) -> dict[str, Any]:
    return {"grpc_port": 0} if binding == Binding.GRPC else {}


async def chain(binding: str) -> dict[str, Any]:
    """client -> A -> B, blocking send, then a stream through the same two hops."""
    from opentelemetry import trace

    found: dict[str, Any] = {}
    b_url: list[str] = []
    async with (
        live_server(agent_b(), store="memory", **grpc_agent_options(binding)) as b,
        live_server(agent_a(binding, b_url), store="memory", **grpc_agent_options(binding)) as a,
    ):
        b_url.append(b)
        tracer = trace.get_tracer("test")
        async with Client.connect(a, bindings=[binding], timeout=TIMEOUT_S) as client:
            with tracer.start_as_current_span("test.send"):
                task = await client.send("bolts")
            found["send_state"] = task.status.state.value
            found["send_task"] = task.id
            with tracer.start_as_current_span("test.get"):
                await client.get_task(task.id)
            events = 0
            with tracer.start_as_current_span("test.stream"):
                async for _ in client.stream("nuts"):
                    events += 1
            found["stream_events"] = events
            with tracer.start_as_current_span("test.missing"):
                try:
                    await client.get_task("no-such-task")
                except Exception as exc:  # TaskNotFoundError, as the test checks
                    found["missing_error"] = type(exc).__name__
    return found


async def traceparents(binding: str) -> dict[str, Any]:
    """Raw requests carrying a known, then malformed, ``traceparent``: answered all the same."""
    found: dict[str, Any] = {"answers": []}
    async with live_server(agent_b(), store="memory", **grpc_agent_options(binding)) as b:
        async with Client.connect(b, bindings=[binding], timeout=TIMEOUT_S) as client:
            interface = client.interface
        for value in (KNOWN_TRACEPARENT, *MALFORMED):
            found["answers"].append(await _raw_send(binding, b, interface.url, value))
        found["v03_answer"] = await _v03_send(binding, interface.url)
    return found


async def _v03_send(binding: str, url: str) -> str:
    """SendMessage as A2A 0.3 (its own transport) with ``V03_TRACEPARENT``."""
    request = SendMessageRequest(
        message=Message(message_id="m-v03", role=Role.USER, parts=[Part(text="bolts")])
    )
    options = CallOptions(headers={"traceparent": V03_TRACEPARENT})
    async with httpx.AsyncClient(timeout=TIMEOUT_S) as http:
        transport: Any
        if binding == Binding.GRPC:
            transport = GrpcV03Transport(url)
        elif binding == Binding.JSONRPC:
            transport = JsonRpcV03Transport(url, http)
        else:
            transport = RestV03Transport(url, http)
        try:
            answer = await transport.call("SendMessage", request, SendMessageResponse, options)
        finally:
            await transport.aclose()
    assert answer.task is not None
    return str(answer.task.status.state.value)


async def _raw_send(binding: str, base: str, url: str, traceparent: str) -> str:
    """SendMessage with ``traceparent`` set by hand; the state of the task it answers."""
    message = {
        "messageId": f"m-{len(traceparent)}-{hash(traceparent) & 0xFFFF}",
        "role": "ROLE_USER",
        "parts": [{"text": "bolts"}],
    }
    headers = {"A2A-Version": "1.0", "traceparent": traceparent, "tracestate": "k=v"}
    if binding == Binding.GRPC:
        transport = GrpcTransport(url)
        try:
            request = SendMessageRequest(
                message=Message(
                    message_id=message["messageId"], role=Role.USER, parts=[Part(text="bolts")]
                )
            )
            answer = await transport.call(
                "SendMessage", request, SendMessageResponse, CallOptions(headers=headers)
            )
        finally:
            await transport.aclose()
        assert answer.task is not None
        return str(answer.task.status.state.value)
    async with httpx.AsyncClient(timeout=TIMEOUT_S) as http:
        if binding == Binding.JSONRPC:
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": {"message": message},
            }
            reply = await http.post(url, json=body, headers=headers)
            return str(reply.json()["result"]["task"]["status"]["state"])
        reply = await http.post(f"{url}/message:send", json={"message": message}, headers=headers)
        return str(reply.json()["task"]["status"]["state"])


async def untraced(binding: str) -> dict[str, Any]:
    """No provider: the calls work, and peerwire never even imported OpenTelemetry."""
    found = await chain_without_tracer(binding)
    found["enabled"] = tracing.refresh()
    found["otel_imported"] = "opentelemetry.trace" in sys.modules
    return found


async def api_only(binding: str) -> dict[str, Any]:
    """The API imported (a library uses it) but no SDK configured: nothing traced either."""
    import opentelemetry.trace  # noqa: F401 (imported for its effect: the API is loaded)

    found = await chain_without_tracer(binding)
    found["enabled"] = tracing.refresh()
    return found


async def chain_without_tracer(binding: str) -> dict[str, Any]:
    seen: list[str | None] = []

    agent = Agent("Headers", description="Tells whether a traceparent came")

    @agent.skill()
    async def echo(text: str) -> str:
        return text

    async with live_server(agent, store="memory", **grpc_agent_options(binding)) as url:
        client = await Client.connect(url, bindings=[binding], timeout=TIMEOUT_S)
        async with client:
            task = await client.send("bolts")
            events = [event async for event in client.stream("nuts")]
            seen.append(str(task.status.state.value))
    return {"states": seen, "stream_events": len(events)}


async def late(binding: str) -> dict[str, Any]:
    """A provider installed after the app was built (before it started): picked up."""
    from peerwire import create_app

    holder: list[Any] = []

    def build(public_url: str) -> Any:
        app = create_app(agent_b(), store="memory", public_url=public_url)
        holder.append(install_provider())  # after the app, before its lifespan
        return app

    async with live_server(build) as url:
        started = tracing.enabled()  # the app's lifespan looked again (no Client built yet)
        client = await Client.connect(url, bindings=[Binding.JSONRPC], timeout=TIMEOUT_S)
        async with client:
            task = await client.send("bolts")
    LATE_EXPORTER.extend(holder)
    return {"state": task.status.state.value, "enabled": started}


LATE_EXPORTER: list[Any] = []


async def missing(binding: str) -> dict[str, Any]:
    """OpenTelemetry not installed (its import fails), though the environment names a
    provider: everything works, untraced."""
    found = await chain_without_tracer(binding)
    found["enabled"] = tracing.refresh()
    return found


def handlers_agent() -> Agent:
    agent = Agent("Workshop", description="Slow work, and a broken tool")

    @agent.skill()
    async def slow(text: str) -> str:
        await asyncio.sleep(0.5)  # outlives the non-blocking send that started it
        return text

    @agent.skill()
    async def broken(text: str) -> str:
        raise KeyError("missing")

    return agent


async def handlers(binding: str) -> dict[str, Any]:
    """A handler that outlives its request (a non-blocking send), and one that raises."""
    from opentelemetry import trace

    found: dict[str, Any] = {}
    tracer = trace.get_tracer("test")
    async with live_server(handlers_agent(), store="memory", **grpc_agent_options(binding)) as url:
        client = await Client.connect(url, bindings=[binding], timeout=TIMEOUT_S)
        async with client:
            with tracer.start_as_current_span("test.later"):
                task = await client.send("soon", skill="slow", return_immediately=True)
            found["later_first_state"] = task.status.state.value
            with tracer.start_as_current_span("test.subscribe"):
                found["subscribe_events"] = len([e async for e in client.subscribe(task.id)])
            for _ in range(200):  # bounded: 10 s at most
                task = await client.get_task(task.id)
                if task.status.state.value == "TASK_STATE_COMPLETED":
                    break
                await asyncio.sleep(0.05)
            found["later_state"] = task.status.state.value
            with tracer.start_as_current_span("test.broken"):
                failed = await client.send("now", skill="broken")
            found["broken_state"] = failed.status.state.value
    return found


SCENARIOS = {
    "chain": chain,
    "handlers": handlers,
    "traceparents": traceparents,
    "none": untraced,
    "api": api_only,
    "missing": missing,
    "late": late,
}


def span_record(span: Any) -> dict[str, Any]:
    parent = span.parent
    return {
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": format(span.context.trace_id, "032x"),
        "span_id": format(span.context.span_id, "016x"),
        "parent_id": None if parent is None else format(parent.span_id, "016x"),
        "parent_remote": None if parent is None else parent.is_remote,
        "attributes": dict(span.attributes or {}),
        "status": span.status.status_code.name,
        "description": span.status.description,
        "start": span.start_time,
        "end": span.end_time,
    }


def main() -> None:
    scenario, binding = sys.argv[1], sys.argv[2]
    if scenario == "missing":
        sys.modules["opentelemetry"] = None  # type: ignore[assignment]  # its import fails
        os.environ["OTEL_PYTHON_TRACER_PROVIDER"] = "sdk_tracer_provider"
    exporter = None if scenario in ("none", "api", "missing", "late") else install_provider()
    found = asyncio.run(SCENARIOS[scenario](binding))
    if LATE_EXPORTER:
        exporter = LATE_EXPORTER[0]
    spans = [] if exporter is None else [span_record(s) for s in exporter.get_finished_spans()]
    json.dump({"found": found, "spans": spans}, sys.stdout)


if __name__ == "__main__":
    main()
