"""``peerwire worker MODULE:ATTR``: run the tasks that ``peerwire serve`` replicas accept."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

import typer

from ..cluster.worker import run_worker, stop_on_signals
from ..httpd import CannotListenError
from ..ops import configure_logging
from ._app import app
from ._logs import LogFormatName, LogFormatOption, LogLevelOption
from ._scale import LeaseTtl, ReclaimIdle, SweepEvery, event_bus, shared_store, work_queue
from .serve import load_agent


@app.command("worker")
def worker_command(
    target: Annotated[str, typer.Argument(help="The agent whose tasks to run, as MODULE:ATTR.")],
    store: Annotated[str, typer.Option(help="The replicas' store: postgresql://...")],
    bus: Annotated[str, typer.Option(help="The replicas' bus: redis://HOST:PORT[?prefix=NAME]")],
    concurrency: Annotated[
        int,
        typer.Option(help="Most handlers working at once (those waiting for input do not count)."),
    ] = 100,
    lease_ttl: LeaseTtl = 15.0,
    reclaim_idle: ReclaimIdle = 30.0,
    sweep_every: SweepEvery = 30.0,
    shutdown_grace: Annotated[
        float, typer.Option(help="Seconds running tasks get to finish on SIGTERM.")
    ] = 10.0,
    log_level: LogLevelOption = "info",
    log_format: LogFormatOption = LogFormatName.text,
    health_port: Annotated[
        int | None,
        typer.Option(
            help="Serve /healthz (liveness) and /readyz (readiness) on this port, for "
            "Kubernetes probes (docs/OPERATIONS.md); 0 picks a free one.",
            min=0,
            max=65535,
        ),
    ] = None,
    health_host: Annotated[
        str, typer.Option(help="Interface of --health-port (0.0.0.0 in a pod: the kubelet probes).")
    ] = "127.0.0.1",
    metrics_port: Annotated[
        int | None,
        typer.Option(
            help="Serve Prometheus metrics on this port (docs/OPERATIONS.md); 0 picks a free "
            "one. Needs prometheus-client (the metrics extra).",
            min=0,
            max=65535,
        ),
    ] = None,
    metrics_host: Annotated[
        str, typer.Option(help="Interface of --metrics-port (0.0.0.0: scraped from other hosts).")
    ] = "127.0.0.1",
    metrics_token: Annotated[
        str | None,
        typer.Option(
            help="Bearer token a scrape must send (Authorization: Bearer TOKEN).",
            envvar="PEERWIRE_METRICS_TOKEN",
        ),
    ] = None,
) -> None:
    """Run an agent's tasks from the shared work queue (no HTTP; see docs/DEPLOYMENT.md)."""
    if concurrency < 1:
        raise typer.BadParameter("must be at least 1", param_hint="--concurrency")
    queue = work_queue(bus, lease_ttl, reclaim_idle, sweep_every)
    task_store, event_bus_ = shared_store(store), event_bus(bus)
    agent = load_agent(target)
    # The root logger: the agent's own records (logging.getLogger(__name__)) show there too.
    configure_logging(log_level, log_format.value, logger="")

    async def main() -> None:
        stop = asyncio.Event()
        stop_on_signals(stop)
        await run_worker(
            agent,
            store=task_store,
            bus=event_bus_,
            queue=queue,
            stop=stop,
            max_working=concurrency,
            shutdown_grace=shutdown_grace,
            health_port=health_port,
            health_host=health_host,
            metrics_port=metrics_port,
            metrics_host=metrics_host,
            metrics_token=metrics_token,
        )

    try:
        _event_loop_runner()(main())
    except CannotListenError as exc:  # --health-port is taken
        raise SystemExit(f"peerwire: {exc}") from None


def _event_loop_runner() -> Callable[[Coroutine[Any, Any, None]], None]:
    """uvloop when installed, as ``peerwire serve`` runs: a worker's time goes to small
    Redis and PostgreSQL round trips, which uvloop's transports make cheaper."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run
    return uvloop.run
