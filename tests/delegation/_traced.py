"""A traced delegation, in a process of its own (OpenTelemetry's provider is set once per
process): prints every finished span as JSON (name, span id, parent id)."""

from __future__ import annotations

import asyncio
import json

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from peerwire import Agent, Client, TaskContext
from peerwire.delegation import Completed
from peerwire.testing import live_server


async def main() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    peer = Agent("Peer")

    @peer.skill()
    async def book(text: str) -> str:
        return f"booked {text}"

    async with live_server(peer) as peer_url:
        orchestrator = Agent("Orchestrator")

        @orchestrator.skill()
        async def order(ctx: TaskContext) -> str:
            d = await ctx.delegate(peer_url, "seat", key="book")
            outcome = await d.result()
            assert isinstance(outcome, Completed)
            return outcome.text

        async with live_server(orchestrator) as url, Client.connect(url) as client:
            await client.send("go")
    spans = [
        {
            "name": span.name,
            "id": span.context.span_id if span.context else None,
            "parent": span.parent.span_id if span.parent else None,
        }
        for span in exporter.get_finished_spans()
    ]
    print(json.dumps(spans))


if __name__ == "__main__":
    asyncio.run(main())
