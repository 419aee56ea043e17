"""A delegation that follows a remote task which has already ended, traced, in a process of
its own (OpenTelemetry's provider is set once per process). The ledger subscribes, is
refused (the task is finished: UnsupportedOperationError, A2A spec §3.1.6) and reads the
task with GetTask. Prints one JSON document: every finished span (name, kind, status,
attributes) and both agents' request and delegation counters."""

from __future__ import annotations

import asyncio
import json

import httpx
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from peerwire import Agent, Client, TaskContext, TaskState
from peerwire.delegation import Completed
from peerwire.testing import live_server

WAIT_S = 30.0


def _counters(page: str) -> dict[str, float]:
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in page.splitlines()
        if line.startswith(("peerwire_requests_total{", "peerwire_delegation_events_total{"))
    }


async def main() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    peer = Agent("Peer")

    @peer.skill()
    async def book(text: str) -> str:
        await asyncio.sleep(0.2)  # the send answers first (it returns immediately)
        return f"booked {text}"

    async with live_server(peer) as peer_url:
        orchestrator = Agent("Orchestrator")

        @orchestrator.skill()
        async def order(ctx: TaskContext) -> str:
            d = await ctx.delegate(peer_url, "seat", key="book")
            assert d.remote_task_id, d
            async with Client.connect(peer_url) as look, asyncio.timeout(WAIT_S):
                # Waits for the peer's task to end (its subscription follows it to the end).
                async for _ in look.subscribe(d.remote_task_id):
                    pass
                assert (await look.get_task(d.remote_task_id)).status.state is (TaskState.COMPLETED)
            outcome = await d.result()  # the remote task has ended: followed from here
            assert isinstance(outcome, Completed), outcome
            return outcome.text

        async with live_server(orchestrator) as url:
            async with Client.connect(url) as client:
                task = await client.send("go")
            async with httpx.AsyncClient(trust_env=False) as http:
                pages = {
                    "peer": _counters((await http.get(peer_url + "/metrics")).text),
                    "orchestrator": _counters((await http.get(url + "/metrics")).text),
                }
    spans = [
        {
            "name": span.name,
            "kind": span.kind.name,
            "status": span.status.status_code.name,
            "attributes": dict(span.attributes or {}),
        }
        for span in exporter.get_finished_spans()
    ]
    print(json.dumps({"state": task.status.state.value, "spans": spans, "metrics": pages}))


if __name__ == "__main__":
    asyncio.run(main())
