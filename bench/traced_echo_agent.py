"""The benchmark agent (bench/echo_agent.py) with OpenTelemetry in the process: what tracing
costs (docs/PERFORMANCE.md, "Observability overhead").

``PEERWIRE_BENCH_TRACING`` says how much of it:

* ``sdk`` (the ``peerwire-traced`` target): the OpenTelemetry SDK's ``TracerProvider``, its
  ``SimpleSpanProcessor`` and an in-memory exporter that keeps the latest spans (bounded, so a
  long run does not grow): every span is made, ended and exported as it ends, in the request's
  own time. Nothing leaves the process, so what is measured is peerwire's tracing and the
  SDK's span handling, not a collector's network.
* ``batch`` (the ``peerwire-traced-batch`` target): the same provider with the
  ``BatchSpanProcessor`` production setups use, its exporter dropping what it is handed: a
  span's end only queues it, a thread of the SDK's exports in batches.
* ``sampled`` (the ``peerwire-traced-sampled`` target): ``sdk`` with a sampler that keeps one
  trace in ten (``ParentBased(TraceIdRatioBased(0.1))``), the usual remedy at high rates.
* ``api`` (the ``peerwire-otel-api`` target): the API imported, as a library that uses it
  would, and no provider configured: tracing off, though OpenTelemetry is loaded.

    PEERWIRE_BENCH_TRACING=sdk peerwire serve bench.traced_echo_agent:agent --store memory
"""

from __future__ import annotations

import collections
import os
import threading
from collections.abc import Sequence
from typing import Any

from bench.echo_agent import agent

__all__ = ["agent"]

# Spans kept for a look after the run; older ones are dropped.
_KEPT_SPANS = 10_000


def _install_sdk(batch: bool, sampled: bool) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SimpleSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    class LatestSpans(SpanExporter):
        """The in-memory exporter, bounded."""

        def __init__(self) -> None:
            self._lock = threading.Lock()
            self.spans: collections.deque[Any] = collections.deque(maxlen=_KEPT_SPANS)

        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            with self._lock:
                self.spans.extend(spans)
            return SpanExportResult.SUCCESS

    class Dropped(SpanExporter):
        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    if sampled:
        from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

        provider = TracerProvider(sampler=ParentBased(TraceIdRatioBased(0.1)))
    else:
        provider = TracerProvider()
    if batch:
        provider.add_span_processor(BatchSpanProcessor(Dropped()))
    else:
        provider.add_span_processor(SimpleSpanProcessor(LatestSpans()))
    trace.set_tracer_provider(provider)


_MODE = os.environ.get("PEERWIRE_BENCH_TRACING", "sdk")
if _MODE in ("sdk", "batch", "sampled"):
    _install_sdk(batch=_MODE == "batch", sampled=_MODE == "sampled")
elif _MODE == "api":
    import opentelemetry.trace  # noqa: F401 (loaded, as a library using it would; no provider)
else:
    raise SystemExit(f"PEERWIRE_BENCH_TRACING must be sdk, batch, sampled or api, not {_MODE!r}")
