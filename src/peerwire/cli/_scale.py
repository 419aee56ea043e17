"""What ``peerwire serve`` and ``peerwire worker`` share to split work between processes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ..server.bus import EventBus
from ..server.stores import TaskStore, open_store

if TYPE_CHECKING:  # the "redis" extra: every command imports this module, most without it
    from ..cluster.work_queue import RedisWorkQueue

LeaseTtl = Annotated[
    float,
    typer.Option(help="Seconds a task's lease lasts unrenewed: how soon a dead worker is noticed."),
]
ReclaimIdle = Annotated[
    float,
    typer.Option(help="Seconds a job read by a dead worker waits before another takes it."),
]
SweepEvery = Annotated[
    float,
    typer.Option(help="Seconds between comparisons of the store with the workers' leases."),
]


def work_queue(
    bus: str, lease_ttl: float, reclaim_idle: float, sweep_every: float
) -> RedisWorkQueue:
    """The work queue beside a ``redis://`` bus (same server and prefix)."""
    if bus.split("://", 1)[0] not in ("redis", "rediss", "unix"):
        raise typer.BadParameter(
            "sharing work between processes needs a Redis bus (redis://HOST:PORT)",
            param_hint="--bus",
        )
    from ..cluster.work_queue import RedisWorkQueue

    try:
        return RedisWorkQueue.from_url(
            bus, lease_ttl=lease_ttl, reclaim_idle=reclaim_idle, sweep_every=sweep_every
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--lease-ttl/--reclaim-idle") from None


def shared_store(spec: str) -> TaskStore:
    if not spec.startswith(("postgresql://", "postgres://")):
        raise typer.BadParameter(
            "workers and replicas share a PostgreSQL store (postgresql://...)",
            param_hint="--store",
        )
    try:
        return open_store(spec)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--store") from None


def event_bus(spec: str) -> EventBus:
    from ..server.app import open_bus  # the composition root: only commands that run agents

    try:
        return open_bus(spec)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--bus") from None
