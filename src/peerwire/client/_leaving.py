"""Cancelling the remote task of a call its caller left early (``cancel_on_exit``).

A local ``send``/``stream``/``subscribe`` that is cancelled, times out or whose iterator is
closed before its task settled leaves the agent working for nobody. With ``cancel_on_exit``
the client then sends CancelTask for the task it learned, under these rules:

* bounded: the cancel gets ``CANCEL_TIMEOUT_S`` seconds, then is given up (and logged);
* shielded: it runs in a task of its own, so the cancellation that ended the call does not
  cancel it too; the client's ``aclose`` waits for those still running (bounded as well);
* quiet: its failure is logged, never raised over the exception that ended the call (a task
  that finished meanwhile answers ``TaskNotCancelableError``: that is no failure at all).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import anyio

from ..errors import PeerwireError, TaskNotCancelableError, TaskNotFoundError
from ..types import Task

__all__ = ["CANCEL_TIMEOUT_S", "RemoteCancels"]

log = logging.getLogger("peerwire.client")

CANCEL_TIMEOUT_S = 5.0


class RemoteCancels:
    """The cancels a client sent for calls left early, each in a task it owns."""

    __slots__ = ("_cancel", "_running", "timeout")

    def __init__(
        self, cancel: Callable[[str], Awaitable[Task]], timeout: float = CANCEL_TIMEOUT_S
    ) -> None:
        self._cancel = cancel
        self._running: set[asyncio.Task[None]] = set()
        self.timeout = timeout

    async def cancel(self, task_id: str | Callable[[], Awaitable[str | None]], why: str) -> None:
        """Cancel the remote task (``task_id``, or a function that finds it first) and wait
        for that within the time limit, unless this caller is cancelled again meanwhile:
        then the cancel goes on without it, and the caller's cancellation goes on up."""
        running = asyncio.ensure_future(self._send(task_id, why))
        self._running.add(running)
        running.add_done_callback(self._running.discard)
        # The cancel scope that ended the call (anyio's) is not delivered again here; a new
        # cancellation of the caller is raised, and the cancel is sent all the same
        # (``aclose`` waits for it): swallowing it would end the caller with the call's
        # own error, after the whole wait.
        with anyio.CancelScope(shield=True):
            await asyncio.shield(running)

    async def _send(self, task_id: str | Callable[[], Awaitable[str | None]], why: str) -> None:
        found: str | None = task_id if isinstance(task_id, str) else None
        try:
            with anyio.fail_after(self.timeout):
                if found is None:
                    assert not isinstance(task_id, str)
                    found = await task_id()
                    if found is None:
                        log.warning(
                            "peerwire: %s, but the agent never said which task it made, so it "
                            "was not canceled",
                            why,
                        )
                        return
                await self._cancel(found)
            log.info("peerwire: %s; canceled its task %s at the agent", why, found)
        except (TaskNotCancelableError, TaskNotFoundError):
            log.debug("peerwire: task %s had already finished when %s", found, why)
        except TimeoutError:
            log.warning(
                "peerwire: %s; canceling its task %s got no answer within %g s",
                why,
                found,
                self.timeout,
            )
        except (PeerwireError, OSError) as exc:
            log.warning("peerwire: %s; canceling its task %s failed: %s", why, found, exc)

    async def wait(self) -> None:
        """Let the cancels still running finish (each is bounded in time)."""
        while self._running:
            await asyncio.wait(set(self._running))
