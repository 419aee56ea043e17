"""Group commit: the writes of one turn of the event loop sent to a server together.

A busy process issues many small writes at about the same moment (a worker's handlers, started
from one read of the work queue, all finish in the same turn of the loop). Sent one by one,
each costs a round trip: a system call each way, a wake-up of the server, a commit. A
``Coalescer`` gathers the items submitted during one turn and hands them to its ``flush``
function as one batch, at the end of that turn; while ``concurrency`` flushes are under way,
newer items wait and go together in the next one. An idle process gains nothing and loses
nothing measurable (the flush starts in the next turn of the loop), a busy one sends a
fraction of the round trips.

Each submitter gets its own item's result, or the flush's exception. A submitter cancelled
before its batch is sent is left out of it; one cancelled later does not stop the batch (the
others wait for it): whether its write happened is then unknown to it, as for any write
cancelled under way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

__all__ = ["Coalescer"]

T = TypeVar("T")
R = TypeVar("R")


class Coalescer(Generic[T, R]):
    """Calls ``flush(items)`` (its results in the items' order) for the items ``submit``ted in
    one turn of the loop, at most ``max_batch`` at once, with up to ``concurrency`` flushes
    under way at a time."""

    def __init__(
        self,
        flush: Callable[[list[T]], Awaitable[Sequence[R]]],
        *,
        max_batch: int = 64,
        concurrency: int = 2,
    ) -> None:
        if max_batch < 1 or concurrency < 1:
            raise ValueError("max_batch and concurrency must be >= 1")
        self._flush = flush
        self.max_batch = max_batch
        self.concurrency = concurrency
        self._pending: list[tuple[T, asyncio.Future[R]]] = []
        self._scheduled = False
        self._running: set[asyncio.Task[None]] = set()

    @property
    def flushing(self) -> int:
        """How many flushes are under way."""
        return len(self._running)

    async def submit(self, item: T) -> R:
        """``item``'s result, once the batch it went in was flushed."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[R] = loop.create_future()
        self._pending.append((item, future))
        self._schedule(loop)
        return await future

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self._scheduled and len(self._running) < self.concurrency:
            # At the end of this turn: every item submitted meanwhile goes in the batch.
            self._scheduled = True
            loop.call_soon(self._start)

    def _start(self) -> None:
        self._scheduled = False
        loop = asyncio.get_running_loop()
        while self._pending and len(self._running) < self.concurrency:
            # Submitters cancelled while they waited are left out.
            pending = [one for one in self._pending if not one[1].done()]
            batch, self._pending = pending[: self.max_batch], pending[self.max_batch :]
            if not batch:
                break
            task = loop.create_task(self._run(batch))
            self._running.add(task)
            task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[None]) -> None:
        self._running.discard(task)
        if self._pending:
            self._schedule(asyncio.get_running_loop())

    async def _run(self, batch: list[tuple[T, asyncio.Future[R]]]) -> None:
        try:
            results = await self._flush([item for item, _ in batch])
        except asyncio.CancelledError:
            for _, future in batch:
                future.cancel()
            raise
        except Exception as exc:  # every submitter of the batch gets the failure
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        if len(results) != len(batch):  # a bug in the flush: never a silent wrong answer
            error = RuntimeError(f"a flush of {len(batch)} items gave {len(results)} results")
            for _, future in batch:
                if not future.done():
                    future.set_exception(error)
            return
        for (_, future), result in zip(batch, results, strict=True):
            if not future.done():
                future.set_result(result)
