"""A worker process: runs the handlers of tasks that replicas accepted (``peerwire worker``).

A worker serves no HTTP. It opens the shared store and bus, consumes the work queue with a
``Runner`` until ``stop`` is set (SIGTERM or SIGINT from the command line), then drains like a
server: working handlers get ``shutdown_grace`` seconds to finish.

``health_port`` serves ``/healthz`` and ``/readyz`` for it (``ops.HealthServer``; the
Kubernetes probes of docs/OPERATIONS.md): live from the start, ready while its runner takes
work and the store, the bus and the queue answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..ops import HealthServer, Readiness
from ..ops.logs import describe_backend
from ..ops.metrics import Metrics
from ..ops.metrics_http import MetricsPort
from ..server.agent import Agent
from ..server.bus import EventBus
from ..server.delegating import delegation_hub_beside
from ..server.runner import Runner
from ..server.stores.base import TaskStore

if TYPE_CHECKING:  # the "redis" extra: the command line imports this module without it
    from .work_queue import RedisWorkQueue

__all__ = ["run_worker", "stop_on_signals"]

log = logging.getLogger("peerwire.worker")


async def run_worker(
    agent: Agent,
    *,
    store: TaskStore,
    bus: EventBus,
    queue: RedisWorkQueue,
    stop: asyncio.Event,
    max_working: int = 100,
    shutdown_grace: float = 10.0,
    health_port: int | None = None,
    health_host: str = "127.0.0.1",
    on_health: Callable[[HealthServer], None] | None = None,
    metrics_port: int | None = None,
    metrics_host: str = "127.0.0.1",
    metrics_token: str | None = None,
) -> None:
    """Run ``agent``'s tasks from ``queue`` until ``stop`` is set; with ``health_port``
    (``0``: a free one), serve ``/healthz`` and ``/readyz`` on ``health_host`` meanwhile
    (``on_health`` gets the listening ``HealthServer``). With ``metrics_port``, serve its
    Prometheus metrics there (on ``metrics_host``; ``metrics_token``: the bearer token a
    scrape must send; needs prometheus-client)."""
    from .placement import Placement  # the "redis" extra, as the queue is

    metrics = None if metrics_port is None else Metrics()

    runner = Runner(
        agent,
        store,
        bus,
        max_working=max_working,
        shutdown_grace=shutdown_grace,
        placement=Placement(queue, consume=True),
        metrics=metrics,
        delegations=delegation_hub_beside(store),
    )
    checks = {"store": store.check_health, "queue": queue.check_health}
    bus_check = getattr(bus, "check_health", None)
    if bus_check is not None:
        checks["bus"] = bus_check
    readiness = Readiness(checks, accepting=lambda: runner.accepting)
    async with contextlib.AsyncExitStack() as stack:
        health = None
        if health_port is not None:
            # First: live while the store and bus open, ready once the runner takes work.
            health = await stack.enter_async_context(
                HealthServer(readiness, host=health_host, port=health_port)
            )
            if on_health is not None:
                on_health(health)
        if metrics is not None and metrics_port is not None:
            exporter = MetricsPort(
                metrics, host=metrics_host, port=metrics_port, token=metrics_token
            )
            exporter.start()
            stack.callback(exporter.stop)
        await store.open()
        stack.push_async_callback(store.close)
        await bus.open()
        stack.push_async_callback(bus.close)
        async with runner:
            await runner.recover()
            log.info(
                "peerwire: worker running the tasks of %r; store %s; bus %s; work queue %s%s",
                agent.name,
                describe_backend(store),
                describe_backend(bus),
                describe_backend(queue),
                "" if health is None else f"; health on {health.url}",
                extra={"health_url": None if health is None else health.url},
            )
            await stop.wait()


def stop_on_signals(stop: asyncio.Event) -> None:
    """Set ``stop`` on SIGTERM and SIGINT (call from within the running loop)."""
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
