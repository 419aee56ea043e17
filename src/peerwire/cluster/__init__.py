"""Scale-out: several processes sharing one store (PostgreSQL) and Redis.

``RedisBus`` (redis_bus.py) carries every task's events between processes; the work queue
(work_queue.py) hands tasks to whichever process consumes it, with per-task leases and a
control channel; ``Placement`` (placement.py) decides where a handler runs and runs the
sweeper; ``run_worker`` (worker.py) is a process that only runs handlers
(``peerwire worker``). docs/DEPLOYMENT.md says how to deploy them.

Everything here but ``run_worker`` needs the ``redis`` extra; the names are imported on
first use, so ``import peerwire.cluster`` works without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .redis_bus import RedisBus
    from .work_queue import RedisWorkQueue
    from .worker import run_worker

__all__ = ["RedisBus", "RedisWorkQueue", "run_worker"]

_HOMES = {"RedisBus": "redis_bus", "RedisWorkQueue": "work_queue", "run_worker": "worker"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'peerwire.cluster' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{home}", __name__), name)
