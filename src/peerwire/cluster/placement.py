"""Where handlers run when processes share a work queue (``Runner(queue=...)``).

A replica that accepts a task queues a job; whichever process consumes the queue takes the
task's lease and runs its handler with ``ask``'s replay rule (the answers are the task's
recorded user messages after the first), so starting, continuing and resuming are one path.
A cancel or a follow-up for a handler elsewhere goes over the control channel to the lease's
holder. The sweeper compares the store (the source of truth) with the leases: an active task
that nobody holds on two sweeps in a row lost its job or its worker, and is queued again or
failed, per the agent's ``on_restart``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from redis.exceptions import RedisError

from ..errors import IllegalTransitionError, ServerBusyError, TaskNotFoundError
from ..protocol import TERMINAL
from ..types import (
    Message,
    Role,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    decode,
    encode,
    now_timestamp,
)
from .work_queue import ControlMessage, Job, JobKind, RedisWorkQueue

if TYPE_CHECKING:
    from ..server.runner import Runner, _Live

__all__ = ["WORKER_STOPPED", "Placement"]

log = logging.getLogger("peerwire.placement")

WORKER_STOPPED = "the worker running this task stopped"
_ACTIVE = (TaskState.SUBMITTED, TaskState.WORKING)
_RETRY_S = 0.5
_FULL_WAIT_S = 0.05
_READ_BATCH = 64


class Placement:
    """The runner's side of a shared queue: consuming jobs, leases, control, the sweeper."""

    def __init__(self, runner: Runner, queue: RedisWorkQueue, *, consume: bool) -> None:
        self.runner = runner
        self.queue = queue
        self.consume = consume
        # How long a cancel waits for the remote handler to record CANCELED before this
        # process records it (the holder may have died with its lease still running).
        self.cancel_wait = queue.lease_ttl + 5.0
        self._loops: list[asyncio.Task[None]] = []
        self._consumer: asyncio.Task[None] | None = None
        self._suspects: dict[str, TaskState] = {}
        self._open = False

    # -- lifetime -------------------------------------------------------------------------

    async def begin(self, group: asyncio.TaskGroup) -> None:
        await self.queue.open()
        self._open = True
        loops: list[Coroutine[Any, Any, None]] = [self._sweep_forever()]
        if self.consume:
            ready = asyncio.Event()
            loops += [self._heartbeat_forever(), self.queue.listen_control(self._on_control, ready)]
            self._consumer = group.create_task(self._consume_forever(), name="peerwire consumer")
            self._loops.append(self._consumer)
        self._loops += [group.create_task(loop) for loop in loops]
        if self.consume:
            # Only once the control channel listens is a cancel sure to reach this process.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.queue.socket_timeout):
                    await ready.wait()

    async def stop_taking_work(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            consumer.cancel()
            await asyncio.wait({consumer})

    async def end(self) -> None:
        loops, self._loops = self._loops, []
        for loop in loops:
            loop.cancel()
        if loops:
            await asyncio.wait(loops)
        if self._open:
            self._open = False
            await self.queue.close()

    # -- accepting work -----------------------------------------------------------------------

    async def enqueue(self, task_id: str, tenant: str, kind: JobKind, owner: str = "") -> None:
        await self.queue.enqueue(task_id, tenant, owner, kind)

    async def continue_elsewhere(
        self, task_id: str, context_id: str, follow_up: Message, tenant: str, owner: str
    ) -> None:
        """Record the follow-up, then hand it to the handler holding the task, or queue it."""
        working = TaskStatusUpdateEvent(
            task_id=task_id,
            context_id=context_id,
            status=TaskStatus(state=TaskState.WORKING, timestamp=now_timestamp()),
        )
        await self.runner._append_and_publish(task_id, (follow_up, working), (working,))
        if await self.queue.lease_holder(task_id) is not None:
            # If the holder stops before acting on it, the task is WORKING and unheld: the
            # sweeper resumes it, follow-up included.
            await self.queue.send_control(ControlMessage("deliver", task_id, encode(follow_up)))
        else:
            await self.queue.enqueue(task_id, tenant, owner, "continue")

    async def cancel_elsewhere(self, task_id: str) -> None:
        """Ask the lease holder to cancel its handler; wait (bounded) for the outcome.

        The runner then records CANCELED itself if nobody did (no holder, or a holder that
        died): recording it twice is refused by the state machine, not applied.
        """
        if await self.queue.lease_holder(task_id) is None:
            return
        loop = asyncio.get_running_loop()
        give_up = loop.time() + self.cancel_wait
        with self.runner.bus.subscribe(task_id) as subscription:
            await self.queue.send_control(ControlMessage("cancel", task_id))
            while (remaining := give_up - loop.time()) > 0:
                try:
                    item = await subscription.next(0, remaining)
                except StopAsyncIteration:
                    return
                if item is None:
                    return
                event = item[1]
                if isinstance(event, TaskStatusUpdateEvent) and event.status.state in TERMINAL:
                    return

    # -- running jobs -------------------------------------------------------------------------

    async def run_leased(self, live: _Live) -> None:
        """Run the handler, then let go of its task."""
        try:
            await self.runner._run(live)
        finally:
            with contextlib.suppress(RedisError, OSError, RuntimeError):
                await asyncio.shield(self.queue.release_lease(live.ctx.task_id))

    async def _consume_forever(self) -> None:
        runner = self.runner
        while runner._accepting:
            free = runner.max_working - runner._working
            if free <= 0:
                # Polling while full, briefly: a handler finishing is not an event we await.
                await asyncio.sleep(_FULL_WAIT_S)
                continue
            try:
                jobs = await self.queue.read(min(free, _READ_BATCH))
            except (RedisError, OSError) as exc:
                log.warning("peerwire: reading the work queue failed, retrying: %s", exc)
                await asyncio.sleep(_RETRY_S)
                continue
            for job in jobs:
                try:
                    await self._take(job)
                except Exception:  # one bad job must not stop this worker
                    log.exception("peerwire: job for task %s failed", job.task_id)

    async def _take(self, job: Job) -> None:
        runner = self.runner
        record = await runner.store.load(job.task_id, tenant=job.tenant)
        if (
            record is None
            or record.state not in _ACTIVE
            or job.task_id in runner._live
            or not await self.queue.take_lease(job.task_id)
        ):
            # Finished, waiting for its caller, or held by a live worker: a duplicate.
            await self.queue.ack(job)
            return
        await self.queue.ack(job)
        user_messages = [m for m in record.history if m.role is Role.USER]
        if not user_messages or (job.kind == "recover" and runner.agent.on_restart == "fail"):
            try:
                await runner._emit_status(
                    record.id, record.context_id, TaskState.FAILED, WORKER_STOPPED
                )
            finally:
                await self.queue.release_lease(job.task_id)
            return
        try:
            skill = runner.agent.route(user_messages[0])
        except Exception as exc:  # the agent changed since the task was accepted
            try:
                await runner._emit_status(record.id, record.context_id, TaskState.FAILED, str(exc))
            finally:
                await self.queue.release_lease(job.task_id)
            return
        runner._start(
            skill,
            task_id=record.id,
            context_id=record.context_id,
            message=user_messages[0],
            tenant=job.tenant,
            owner=job.owner,
            state=record.state,
            answers=user_messages[1:],
            latest=user_messages[-1] if len(user_messages) > 1 else None,
        )

    # -- leases and control -------------------------------------------------------------------

    async def _heartbeat_forever(self) -> None:
        while True:
            await asyncio.sleep(self.queue.lease_ttl / 3)
            for task_id in list(self.runner._live):
                try:
                    # Re-takes a lease Redis lost (a restart) as well as renewing it.
                    if not await self.queue.take_lease(task_id):
                        log.warning("peerwire: task %s is held by another worker now", task_id)
                except (RedisError, OSError) as exc:
                    log.warning("peerwire: renewing the lease of %s failed: %s", task_id, exc)
                    break

    async def _on_control(self, message: ControlMessage) -> None:
        live = self.runner._live.get(message.task_id)
        if live is None:
            return
        if message.action == "cancel":
            live.stop(TaskState.CANCELED)
            return
        try:
            self.runner.deliver(message.task_id, decode(message.body, Message))
        except ServerBusyError:
            # Nothing lost: the follow-up is recorded; the handler resumes after a restart.
            log.warning("peerwire: at capacity, follow-up for %s not delivered", message.task_id)
        except Exception:
            log.exception("peerwire: a follow-up for %s could not be delivered", message.task_id)

    # -- the sweeper --------------------------------------------------------------------------

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self.queue.sweep_every)
            try:
                await self.sweep()
            except Exception:  # the store or Redis being away now is retried next period
                log.exception("peerwire: sweeping for unheld tasks failed")

    async def sweep(self) -> None:
        """Queue again (or fail) active tasks that no worker held on two sweeps in a row."""
        runner = self.runner
        active = [
            info
            for info in await runner.store.unfinished()
            if info.state in _ACTIVE and info.task_id not in runner._live
        ]
        unheld = await self.queue.unheld([info.task_id for info in active])
        found = {info.task_id: info for info in active if info.task_id in unheld}
        due = [info for task_id, info in found.items() if self._suspects.get(task_id) is info.state]
        self._suspects = {
            task_id: info.state
            for task_id, info in found.items()
            if self._suspects.get(task_id) is not info.state
        }
        for info in due:
            if info.state is TaskState.SUBMITTED:
                # Never started (its job was lost): starting it is no restart.
                await self.queue.enqueue(info.task_id, info.tenant, info.owner, "start")
            elif runner.agent.on_restart == "resume":
                await self.queue.enqueue(info.task_id, info.tenant, info.owner, "recover")
            else:
                try:
                    await runner._emit_status(
                        info.task_id, info.context_id, TaskState.FAILED, WORKER_STOPPED
                    )
                except (IllegalTransitionError, TaskNotFoundError):
                    log.debug("task %s changed while being swept", info.task_id)
