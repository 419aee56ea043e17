"""Starting an app's lifespan on its first request, for hosts that never run it.

Starlette, FastAPI and Litestar do not run the lifespan of an app they mount, so the store,
runner and push deliverer of a mounted peerwire app would never start. ``FirstUse`` starts
the lifespan in a task of its own (with a fresh context: nothing of the first request's
context variables leaks into the runner) when the first request finds it stopped; requests
arriving meanwhile wait for that one start.

Nobody says when such a server stops, so the lifespan ends with the event loop or the
interpreter:

* ``asyncio.run`` (uvicorn, hypercorn, ``uvloop.run``) cancels every task left at its end,
  this one too, and waits for them: the lifespan's exit runs then. Handlers still running
  are cancelled (their tasks fail, as after a restart) rather than given the grace; the
  deliverer stops; the store closes (SQLite's threads and files).
* At interpreter exit, a loop still running (in a daemon thread) or stopped but not closed
  gets a graceful stop run on it, bounded by the runner's grace.
* A loop closed without cancelling its tasks cannot run anything any more: nothing is
  closed, as with any other task left on it. Run the lifespan (the host's lifespan, or
  ``lifespan=``) for a graceful drain: see docs/howto/mounting.md.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import logging
from collections.abc import Callable

__all__ = ["FirstUse"]

log = logging.getLogger("peerwire.server")

Lifespan = Callable[[], contextlib.AbstractAsyncContextManager[None]]

# Runs started here and not yet ended: held so a pending run is never garbage collected (an
# event loop keeps only weak references to its tasks), and stopped at interpreter exit.
_RUNNING: set[FirstUse] = set()
# Beyond the runner's grace, for the store and the deliverer to close at interpreter exit.
_EXIT_SLACK_S = 5.0


class FirstUse:
    """Runs ``lifespan`` in its own task from the first ``start()`` until ``stop()``, the end
    of its event loop, or interpreter exit. ``on_loop_end`` is called when the loop's end
    cancelled it (so a later loop may start it again)."""

    def __init__(
        self, lifespan: Lifespan, *, name: str, grace: float, on_loop_end: Callable[[], None]
    ) -> None:
        self._lifespan = lifespan
        self._name = name
        self._grace = grace
        self._on_loop_end = on_loop_end
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._started: asyncio.Future[None] | None = None
        self._stop: asyncio.Event | None = None

    @property
    def active(self) -> bool:
        """Whether a run is starting or running."""
        return self._task is not None and not self._task.done()

    async def start(self) -> None:
        """Start the lifespan unless it is starting or running, and wait until it has started.

        Raises what its startup raised (a later ``start()`` tries again).
        """
        started = self._started
        if started is None:
            loop = asyncio.get_running_loop()
            started = self._started = loop.create_future()
            self._stop = stop = asyncio.Event()
            self._loop = loop
            self._task = loop.create_task(
                self._run(started, stop),
                name=f"peerwire: lifespan of {self._name!r}, started by its first request",
                context=contextvars.Context(),
            )
            _RUNNING.add(self)
            self._task.add_done_callback(lambda _: _RUNNING.discard(self))
        # Shielded: a request that gives up waiting must not cancel the start for the others.
        await asyncio.shield(started)

    async def stop(self) -> None:
        """End the run (gracefully: the runner drains) and wait for it; on the run's loop."""
        task, stop = self._task, self._stop
        if task is None or task.done() or stop is None:
            return
        stop.set()
        await asyncio.wait({task})

    async def _run(self, started: asyncio.Future[None], stop: asyncio.Event) -> None:
        log.info("peerwire: starting %r on its first request (no lifespan ran)", self._name)
        try:
            async with self._lifespan():
                started.set_result(None)
                await stop.wait()
        except asyncio.CancelledError:
            if not started.done():
                started.cancel()
            self._on_loop_end()
            raise
        except Exception as exc:
            if started.done():
                log.exception("peerwire: stopping %r failed", self._name)
            else:
                log.error("peerwire: %r could not start", self._name, exc_info=exc)
                started.set_exception(exc)
                started.exception()  # retrieved: the waiting requests may all have gone
        finally:
            if self._started is started:
                self._started = None

    def _stop_at_exit(self) -> None:
        task, loop = self._task, self._loop
        if task is None or task.done() or loop is None or loop.is_closed():
            return
        limit = self._grace + _EXIT_SLACK_S
        try:
            if loop.is_running():  # in another thread, a daemon one: exit does not wait for it
                asyncio.run_coroutine_threadsafe(self.stop(), loop).result(limit)
            else:
                loop.run_until_complete(asyncio.wait_for(self.stop(), limit))
        except Exception:
            log.exception("peerwire: stopping %r at exit failed", self._name)


@atexit.register
def _stop_all_at_exit() -> None:
    for run in list(_RUNNING):
        run._stop_at_exit()
