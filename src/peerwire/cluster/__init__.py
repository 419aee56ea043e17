"""Scale-out: several processes sharing one store (PostgreSQL) and Redis.

``RedisBus`` (redis_bus.py) carries every task's events between processes; the work queue
(work_queue.py) hands tasks to whichever process consumes it, with per-task leases and a
control channel; ``Placement`` (placement.py) decides where a handler runs, re-checks the
handlers it holds against the store and runs the sweeper (the ``Runner`` takes it as its
``placement``); ``run_worker`` (worker.py) is a process that only runs handlers
(``peerwire worker``). Redis may restart: every piece retries, reconnects and reports
``healthy`` (_redis.py). docs/DEPLOYMENT.md says how to deploy them and what survives a
Redis restart.

Everything here but ``run_worker`` needs the ``redis`` extra; the names are imported on
first use, so ``import peerwire.cluster`` works without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._redis import RedisUnavailableError
    from .placement import Placement
    from .redis_bus import RedisBus
    from .work_queue import RedisWorkQueue
    from .worker import run_worker

__all__ = ["Placement", "RedisBus", "RedisUnavailableError", "RedisWorkQueue", "run_worker"]

_HOMES = {
    "Placement": "placement",
    "RedisBus": "redis_bus",
    "RedisUnavailableError": "_redis",
    "RedisWorkQueue": "work_queue",
    "run_worker": "worker",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'peerwire.cluster' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{home}", __name__), name)
