"""``peerwire serve --tracing``: install an OpenTelemetry SDK tracer provider before serving.

peerwire itself only uses the OpenTelemetry API (the ``tracing`` extra) and makes spans once
a provider is configured; this is that configuration for a served agent, so spans need no
code of the user's. ``console`` prints each span as it ends (to stdout, as JSON); ``otlp``
sends them in batches to an OTLP/HTTP collector, configured by the standard
``OTEL_EXPORTER_OTLP_*`` variables (by default ``http://localhost:4318/v1/traces``).
"""

from __future__ import annotations

import enum
import os

import typer

__all__ = ["TracingName", "install_tracing"]


class TracingName(enum.StrEnum):
    """The names ``--tracing`` takes."""

    console = "console"
    otlp = "otlp"


_HINT = "--tracing"
_EXTRA = "pip install 'peerwire[tracing-otlp]'"


def install_tracing(name: TracingName, service_name: str) -> None:
    """Set OpenTelemetry's global tracer provider, exporting as ``name`` says.

    The provider flushes and shuts down at interpreter exit (the SDK's own ``atexit``).
    ``OTEL_SERVICE_NAME`` wins over ``service_name``, as everywhere in OpenTelemetry.
    """
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            ConsoleSpanExporter,
            SimpleSpanProcessor,
        )
    except ImportError as exc:
        raise typer.BadParameter(
            f"tracing needs the OpenTelemetry SDK ({exc.name} is missing): {_EXTRA}",
            param_hint=_HINT,
        ) from None
    processor: SpanProcessor
    if name is TracingName.otlp:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise typer.BadParameter(
                f"--tracing otlp needs the OTLP exporter ({exc.name} is missing): {_EXTRA}",
                param_hint=_HINT,
            ) from None
        processor = BatchSpanProcessor(OTLPSpanExporter())
    else:
        # Each span as it ends: a console is read live, and nothing is lost at a kill.
        processor = SimpleSpanProcessor(ConsoleSpanExporter())
    # Resource.create lets the attributes given win over the environment's: the agent's name
    # is given only when the environment names no service.
    named = {} if _environment_names_service() else {"service.name": service_name}
    provider = TracerProvider(resource=Resource.create(named))
    provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)


def _environment_names_service() -> bool:
    """Whether ``OTEL_SERVICE_NAME``, or ``service.name`` in ``OTEL_RESOURCE_ATTRIBUTES``,
    names the service (the SDK reads both)."""
    if os.environ.get("OTEL_SERVICE_NAME", "").strip():
        return True
    given = os.environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
    return any(item.partition("=")[0].strip() == "service.name" for item in given.split(","))
