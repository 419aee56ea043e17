"""A worker process: runs the handlers of tasks that replicas accepted (``peerwire worker``).

A worker serves no HTTP. It opens the shared store and bus, consumes the work queue with a
``Runner`` until ``stop`` is set (SIGTERM or SIGINT from the command line), then drains like a
server: working handlers get ``shutdown_grace`` seconds to finish.
"""

from __future__ import annotations

import asyncio
import signal
from typing import TYPE_CHECKING

from ..server.agent import Agent
from ..server.bus import EventBus
from ..server.runner import Runner
from ..server.stores.base import TaskStore

if TYPE_CHECKING:  # the "redis" extra: the command line imports this module without it
    from .work_queue import RedisWorkQueue

__all__ = ["run_worker", "stop_on_signals"]


async def run_worker(
    agent: Agent,
    *,
    store: TaskStore,
    bus: EventBus,
    queue: RedisWorkQueue,
    stop: asyncio.Event,
    max_working: int = 100,
    shutdown_grace: float = 10.0,
) -> None:
    """Run ``agent``'s tasks from ``queue`` until ``stop`` is set."""
    from .placement import Placement  # the "redis" extra, as the queue is

    await store.open()
    try:
        await bus.open()
        try:
            runner = Runner(
                agent,
                store,
                bus,
                max_working=max_working,
                shutdown_grace=shutdown_grace,
                placement=Placement(queue, consume=True),
            )
            async with runner:
                await runner.recover()
                await stop.wait()
        finally:
            await bus.close()
    finally:
        await store.close()


def stop_on_signals(stop: asyncio.Event) -> None:
    """Set ``stop`` on SIGTERM and SIGINT (call from within the running loop)."""
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
