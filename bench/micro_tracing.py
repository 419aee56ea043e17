"""What tracing costs a SendMessage, in process: CPU time per request, tracing off and on.

    .venv/bin/python bench/micro_tracing.py                 # 7 rounds of 3000 requests each
    .venv/bin/python bench/micro_tracing.py --requests 5000 --rounds 9

The bench agent (bench/echo_agent.py) in an ``A2AApp`` with the memory store answers blocking
JSON-RPC SendMessage through raw ASGI calls (no sockets, no HTTP server), each request
carrying a ``traceparent`` as a traced caller's would (``--no-traceparent``: as wrk's do not).
Modes, interleaved round by round: ``off``, no tracer (the path of a process without a
configured ``TracerProvider``: the checks are all that runs); ``sdk``, the OpenTelemetry
SDK's ``TracerProvider`` with a ``SimpleSpanProcessor`` and a bounded in-memory exporter (one
SERVER span per blocking send, exported as it ends); ``dropped``, the SDK with a sampler that
keeps nothing (what a request a ratio sampler leaves out costs). The figure is this
thread's CPU time per request (the loop, the handlers and the SDK all run in it), the median
of the rounds: other processes on the machine change it far less than they change requests
per second. The bench
harness's ``peerwire-traced`` target measures the same over HTTP (docs/PERFORMANCE.md).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.echo_agent import agent
from peerwire.ops import tracing
from peerwire.server import A2AApp, create_app

TRACEPARENT = b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
HEADERS = [
    (b"content-type", b"application/json"),
    (b"a2a-version", b"1.0"),
    (b"traceparent", TRACEPARENT),
]


def install_sdk() -> Any:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    class LatestSpans(SpanExporter):
        def __init__(self) -> None:
            self._lock = threading.Lock()
            self.spans: collections.deque[Any] = collections.deque(maxlen=10_000)
            self.count = 0

        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            with self._lock:
                self.spans.extend(spans)
                self.count += len(spans)
            return SpanExportResult.SUCCESS

    exporter = LatestSpans()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter


async def send(app: A2AApp, number: int) -> None:
    body = (
        b'{"jsonrpc":"2.0","id":%d,"method":"SendMessage","params":{"message":'
        b'{"messageId":"micro-%d","role":"ROLE_USER","parts":[{"text":"hello bench"}]}}}'
        % (number, number)
    )
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/",
        "raw_path": b"/",
        "root_path": "",
        "query_string": b"",
        "headers": HEADERS,
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def respond(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, respond)
    if sent[0]["status"] != 200 or b"TASK_STATE_COMPLETED" not in sent[1]["body"]:
        raise SystemExit(f"unexpected answer: {sent}")


MODES = ("off", "sdk", "dropped")


async def measure(requests: int, rounds: int) -> dict[str, list[float]]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    exporter = install_sdk()
    app = create_app(agent, store="memory")
    assert tracing.enabled(), "the SDK's provider was not found"
    tracers = {
        "off": None,
        "sdk": tracing.STATE.tracer,
        "dropped": TracerProvider(sampler=ALWAYS_OFF).get_tracer(tracing.TRACER_NAME),
    }
    per_request: dict[str, list[float]] = {mode: [] for mode in MODES}
    counter = 0
    async with app.lifespan():
        for _ in range(requests):  # warm-up, untimed
            counter += 1
            await send(app, counter)
        for _ in range(rounds):
            for mode in MODES:
                # "off" is exactly a process without a provider: the one check per layer.
                tracing.STATE.tracer = tracers[mode]
                started = time.thread_time()
                for _ in range(requests):
                    counter += 1
                    await send(app, counter)
                per_request[mode].append((time.thread_time() - started) / requests)
    tracing.STATE.tracer = tracers["sdk"]
    if exporter.count == 0:
        raise SystemExit("the sdk rounds exported no span")
    return per_request


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000, help="requests per round")
    parser.add_argument("--rounds", type=int, default=7, help="rounds per mode (interleaved)")
    parser.add_argument("--no-traceparent", action="store_true", help="requests carry none")
    args = parser.parse_args()
    if args.no_traceparent:
        del HEADERS[2:]
    try:
        import uvloop

        run = uvloop.run
    except ImportError:
        run = asyncio.run
    figures = run(measure(args.requests, args.rounds))
    medians = {mode: statistics.median(figures[mode]) * 1e6 for mode in MODES}
    print(f"{'mode':<9}{'CPU us/request (median)':>26}{'min':>10}{'max':>10}{'/ off':>9}")
    for mode in MODES:
        low, high = min(figures[mode]) * 1e6, max(figures[mode]) * 1e6
        ratio = medians[mode] / medians["off"]
        print(f"{mode:<9}{medians[mode]:>26.1f}{low:>10.1f}{high:>10.1f}{ratio:>9.3f}")


if __name__ == "__main__":
    main()
