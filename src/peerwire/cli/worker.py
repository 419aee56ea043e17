"""``peerwire worker MODULE:ATTR``: run the tasks that ``peerwire serve`` replicas accept."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

import typer

from ..cluster.worker import run_worker, stop_on_signals
from ._app import app
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
    log_level: Annotated[str, typer.Option(help="Log level.")] = "warning",
) -> None:
    """Run an agent's tasks from the shared work queue (no HTTP; see docs/DEPLOYMENT.md)."""
    if concurrency < 1:
        raise typer.BadParameter("must be at least 1", param_hint="--concurrency")
    queue = work_queue(bus, lease_ttl, reclaim_idle, sweep_every)
    task_store, event_bus_ = shared_store(store), event_bus(bus)
    agent = load_agent(target)
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(name)s %(message)s")

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
        )

    _event_loop_runner()(main())


def _event_loop_runner() -> Callable[[Coroutine[Any, Any, None]], None]:
    """uvloop when installed, as ``peerwire serve`` runs: a worker's time goes to small
    Redis and PostgreSQL round trips, which uvloop's transports make cheaper."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run
    return uvloop.run
