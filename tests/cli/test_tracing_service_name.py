"""``peerwire serve --tracing``: the agent's name is the spans' ``service.name`` unless the
environment names the service (``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``), as
OpenTelemetry's variables do everywhere. Each case in a process of its own: the tracer
provider is set once per process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROGRAM = (
    "from opentelemetry import trace\n"
    "from peerwire.cli._tracing import TracingName, install_tracing\n"
    "install_tracing(TracingName.console, 'Inventory')\n"
    "print(trace.get_tracer_provider().resource.attributes['service.name'])\n"
)


@pytest.mark.parametrize(
    ("environment", "named"),
    [
        ({}, "Inventory"),
        ({"OTEL_SERVICE_NAME": "inventory-eu"}, "inventory-eu"),
        ({"OTEL_RESOURCE_ATTRIBUTES": "team=ops, service.name=stock"}, "stock"),
        ({"OTEL_RESOURCE_ATTRIBUTES": "team=ops"}, "Inventory"),
    ],
)
def test_the_environment_names_the_service_before_the_agent_does(
    environment: dict[str, str], named: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")} | environment
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == named
