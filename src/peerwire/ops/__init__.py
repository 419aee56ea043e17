"""Operating an agent (docs/OPERATIONS.md): logs, health, metrics and traces.

Below ``server``, ``client``, ``cluster`` and ``cli``, and importing none of them: these
modules are what those parts call as things happen. ``logs``: structured records and the
access log; ``health``: liveness and readiness (``Readiness``, ``/healthz`` and ``/readyz``,
``HealthServer`` for a process without an HTTP port); ``metrics``: the Prometheus
instruments and the ``/metrics`` page (the ``metrics`` extra); ``tracing``: OpenTelemetry
spans of every A2A call and the trace context across hops (the ``tracing`` extra;
``tracing.enabled()``, ``tracing.refresh()``).
"""

from . import tracing
from .health import HEALTHZ_PATH, READYZ_PATH, HealthServer, Readiness, ReadinessReport
from .logs import (
    ACCESS_LOGGER,
    ACCESS_SCOPE_KEY,
    LOG_FORMATS,
    REPEAT_WINDOW_S,
    AccessLog,
    AccessRecord,
    JSONFormatter,
    LogFormat,
    RepeatLimitingHandler,
    TextFormatter,
    configure_logging,
    redact_url,
)
from .metrics import Metrics, MetricsUnavailableError, metrics_available

__all__ = [
    "ACCESS_LOGGER",
    "ACCESS_SCOPE_KEY",
    "HEALTHZ_PATH",
    "LOG_FORMATS",
    "READYZ_PATH",
    "REPEAT_WINDOW_S",
    "AccessLog",
    "AccessRecord",
    "HealthServer",
    "JSONFormatter",
    "LogFormat",
    "Metrics",
    "MetricsUnavailableError",
    "Readiness",
    "ReadinessReport",
    "RepeatLimitingHandler",
    "TextFormatter",
    "configure_logging",
    "metrics_available",
    "redact_url",
    "tracing",
]
