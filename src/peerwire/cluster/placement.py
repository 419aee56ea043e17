"""Where handlers run when processes share a work queue (``Runner(placement=...)``).

A replica that accepts a task queues a job; whichever process consumes the queue takes the
task's lease and runs its handler with ``ask``'s replay rule (the answers are the task's
recorded user messages after the first), so starting, continuing and resuming are one path.
A cancel or a follow-up for a handler elsewhere goes over the control channel to the lease's
holder. The sweeper compares the store (the source of truth) with the leases: an active task
that nobody holds on two sweeps in a row lost its job or its worker, and is queued again or
failed, per the agent's ``on_restart``.

A worker takes the jobs of one read together: their leases, acknowledgements and cancel marks
in one Redis script, their tasks in one store read (``TaskStore.load_many``); while busy it
lets the next jobs gather for ``_GATHER_S`` before it reads again, so each round trip serves
several tasks.

Redis may restart and come back empty, and pub/sub delivers at most once, so the holder does
not rely on what Redis carries. At every lease renewal (every ``lease_ttl / 3``, and at once
when Redis answers again after an outage) it

- re-takes its leases; a task another worker holds now is not ours any more: its handler
  here stops without recording anything;
- stops the handler of a task marked to be canceled (``RedisWorkQueue.request_cancel``) or
  that the store says is CANCELED (its ``on_cancel`` hook runs, here, once), and silently
  the handler of a task the store says another process finished;
- hands a handler waiting in ``ask`` the follow-ups the store has recorded for it that never
  reached it (seen on two renewals in a row, so a delivery under way is not doubled).

A new holder checks the cancel mark and the store after taking the lease, before its handler
starts. No process exits because Redis went away: every Redis operation here is retried, and
a failure is logged and retried later, never raised into the runner's task group.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from redis.exceptions import RedisError

from ..errors import (
    IllegalTransitionError,
    InternalError,
    ServerBusyError,
    StreamEndedError,
    TaskNotFoundError,
)
from ..protocol import ACTIVE, INTERRUPTED, INTERRUPTED_REASON, TERMINAL, TaskRecord
from ..server.context import Caller, decode_caller
from ..types import (
    Message,
    Role,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    decode,
    encode,
    now_timestamp,
)
from ._redis import is_outage
from .work_queue import CANCELED, FRESH, ControlMessage, Job, RedisLife, RedisWorkQueue

if TYPE_CHECKING:
    from ..server.runner import Runner, _Live

__all__ = ["WORKER_STOPPED", "Placement"]

log = logging.getLogger("peerwire.placement")

WORKER_STOPPED = "the worker running this task stopped"
# What a Redis operation raises when Redis is away (``RuntimeError``: see ``is_outage``).
_REDIS_AWAY = (RedisError, OSError, RuntimeError)
_RETRY_S = 0.5
_END_RECANCEL_S = 1.0
_RETRY_MAX_S = 2.0
_FULL_WAIT_S = 0.05
_READ_BATCH = 64
# How long a worker that just took jobs waits before reading again (see _consume_forever).
_GATHER_S = 0.005
# While a cancel waits for the holder, how often it also asks the store (the bus may be away).
_CANCEL_POLL_S = 0.5
_RECHECKS_AT_ONCE = 8


class Placement:
    """The runner's side of a shared queue: consuming jobs, leases, control, the sweeper.

    Built by the composition root (``create_app``, ``run_worker``) and handed to the
    ``Runner``, which attaches itself (``attach``). ``consume=False``: this process only
    accepts work (and sweeps); it runs no handlers.
    """

    def __init__(self, queue: RedisWorkQueue, *, consume: bool) -> None:
        self.queue = queue
        self.consume = consume
        # How long a cancel waits for the remote handler to record CANCELED before this
        # process records it (the holder may have died with its lease still running).
        self.cancel_wait = queue.lease_ttl + 5.0
        self._runner: Runner | None = None
        self._loops: list[asyncio.Task[None]] = []
        self._consumer: asyncio.Task[None] | None = None
        self._suspects: dict[str, TaskState] = {}
        self._life: RedisLife | None = None
        self._renew_now = asyncio.Event()
        # Per live task, what one renewal saw that the next must confirm before acting.
        self._undelivered: dict[str, str] = {}
        self._finished_elsewhere: set[str] = set()
        # Tasks whose handler runs here (``run_leased``), until their outcome is recorded.
        self._holding: set[str] = set()
        self._open = False

    def attach(self, runner: Runner) -> None:
        self._runner = runner

    @property
    def runner(self) -> Runner:
        assert self._runner is not None, "the placement is not attached to a runner"
        return self._runner

    @property
    def healthy(self) -> bool:
        """Whether Redis answered the work queue's last command (readiness)."""
        return self.queue.healthy

    # -- lifetime -------------------------------------------------------------------------

    async def begin(self, group: asyncio.TaskGroup) -> None:
        await self.queue.open()
        self._open = True
        loops: list[Coroutine[Any, Any, None]] = [self._sweep_forever()]
        if self.consume:
            # Back from an outage: re-take the leases now, before any sweeper finds them free.
            self.queue.health.on_change(self._on_health)
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

    def _on_health(self, healthy: bool) -> None:
        if healthy:
            self._renew_now.set()

    async def stop_taking_work(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            consumer.cancel()
            await asyncio.wait({consumer})

    async def end(self) -> None:
        loops, self._loops = self._loops, []
        pending = set(loops)
        while pending:
            # Again until they end: a cancel that lands as a Redis call times out can be
            # lost (a timeout inside redis-py on Python 3.11 swallows it), and a loop that
            # lost it would sleep on, with this wait never done.
            for loop in pending:
                loop.cancel()
            _, pending = await asyncio.wait(pending, timeout=_END_RECANCEL_S)
        if self._open:
            self._open = False
            await self.queue.close()

    # -- accepting work -----------------------------------------------------------------------

    async def start_elsewhere(
        self,
        task_id: str,
        tenant: str,
        owner: str,
        created: TaskRecord | None = None,
        caller: bytes = b"",
    ) -> None:
        """Queue a new task's job (retried while Redis is away, then ``OSError``: the task is
        in the store, SUBMITTED, and the sweeper queues it again once Redis answers). With
        ``created`` (the task as stored), the job carries it, and its first message's
        recorded ``caller`` (``b""``: none): the worker that takes it first, soon, unchanged,
        starts it without reading the store (``_take_all``)."""
        task = b"" if created is None else encode(created.snapshot())
        await self.queue.enqueue(
            task_id, tenant, owner, "start", task=task, caller=caller if task else b""
        )

    async def continue_elsewhere(
        self,
        task_id: str,
        context_id: str,
        follow_up: Message,
        tenant: str,
        owner: str,
        *,
        expected_version: int | None = None,
    ) -> None:
        """Record the follow-up, then hand it to the handler holding the task, or queue it.

        With ``expected_version`` the follow-up answers a task waiting for its caller: it is
        recorded with WORKING by compare-and-swap on that version (``VersionConflictError``:
        another answer came first; the runner refuses this one). Without, it is more input for
        a task already at work, recorded alone.

        Once recorded, nothing here fails the call: a follow-up Redis could not carry is found
        in the store by its holder's next renewal, or (no holder) by the sweeper.
        """
        working = TaskStatusUpdateEvent(
            task_id=task_id,
            context_id=context_id,
            status=TaskStatus(state=TaskState.WORKING, timestamp=now_timestamp()),
        )
        try:
            if expected_version is None:
                await self.runner._append_and_publish(task_id, (follow_up,), ())
            else:
                await self.runner._append_and_publish(
                    task_id, (follow_up, working), (working,), expected_version=expected_version
                )
        except InternalError as exc:  # stored, not published: subscribers read the store
            log.warning("peerwire: task %s: follow-up recorded, not published: %s", task_id, exc)
        try:
            # Marked first: a worker taking the task from now on reads it from the store.
            if await self.queue.changed_then_holder(task_id) is not None:
                # If the holder stops before acting on it, the task is WORKING and unheld:
                # the sweeper resumes it, follow-up included.
                await self.queue.send_control(ControlMessage("deliver", task_id, encode(follow_up)))
            else:
                await self.queue.enqueue(task_id, tenant, owner, "continue")
        except _REDIS_AWAY as exc:
            log.warning("peerwire: task %s: the follow-up waits for Redis: %s", task_id, exc)

    async def cancel_elsewhere(self, task_id: str, tenant: str) -> None:
        """Ask the lease holder to cancel its handler; wait (bounded) for the outcome.

        The task is marked first, so a holder that takes it over later cancels it too. The
        runner then records CANCELED itself if nobody did (no holder, or a holder that died):
        recording it twice is refused by the state machine, not applied. A handler still
        running somewhere after that is stopped at its holder's next renewal.
        """
        runner = self.runner
        loop = asyncio.get_running_loop()
        give_up = loop.time() + self.cancel_wait
        with runner.bus.subscribe(task_id) as subscription:
            try:
                await self.queue.request_cancel(task_id)
                if await self.queue.lease_holder(task_id) is None:
                    return
            except _REDIS_AWAY as exc:
                log.warning("peerwire: task %s: cancel without the holder: %s", task_id, exc)
                return
            closed = False
            while (remaining := give_up - loop.time()) > 0:
                item = None
                if closed:  # the bus went away: the store alone tells
                    await asyncio.sleep(min(remaining, _CANCEL_POLL_S))
                else:
                    try:
                        item = await subscription.next(0, min(remaining, _CANCEL_POLL_S))
                    except (StopAsyncIteration, StreamEndedError):  # closed, or an outage
                        closed = True
                if item is None:
                    record = await runner.store.load(task_id, tenant=tenant)
                    if record is None or record.state in TERMINAL:
                        return
                    continue
                event = item[1]
                if isinstance(event, TaskStatusUpdateEvent) and event.status.state in TERMINAL:
                    return

    # -- running jobs -------------------------------------------------------------------------

    async def run_leased(self, live: _Live) -> None:
        """Run the handler, then let go of its task. Never raises into the task group: a
        process keeps running whatever one task's outcome could not be recorded."""
        task_id = live.ctx.task_id
        # Held until its outcome is recorded: the runner lets go of a handler (``_live``)
        # before that, and a duplicate job must not start the task again meanwhile.
        self._holding.add(task_id)
        try:
            await self.runner._run(live)
        except Exception:
            log.exception("peerwire: task %s: its outcome could not be recorded", task_id)
        finally:
            # A finished task's lease is left to run out (lease_ttl): no job can run it again,
            # and not releasing it spares a round trip per task.
            try:
                if live.ctx.state not in TERMINAL:
                    with contextlib.suppress(*_REDIS_AWAY):
                        await asyncio.shield(self.queue.release_lease(task_id))
            finally:
                self._holding.discard(task_id)

    async def _consume_forever(self) -> None:
        runner = self.runner
        wait = _RETRY_S
        while runner._accepting:
            free = runner.max_working - runner._working
            if free <= 0:
                # Polling while full, briefly: a handler finishing is not an event we await.
                await asyncio.sleep(_FULL_WAIT_S)
                continue
            asked = min(free, _READ_BATCH)
            try:
                jobs = await self.queue.read(asked)
            except Exception as exc:  # never ends the loop: it runs in the runner's task group
                if not is_outage(exc):
                    log.warning("peerwire: reading the work queue failed, retrying: %s", exc)
                await asyncio.sleep(wait)  # an outage the queue's health logs, once
                wait = min(wait * 2, _RETRY_MAX_S)
                continue
            wait = _RETRY_S
            if not jobs:
                continue
            try:
                await self._take_all(jobs)
            except Exception as exc:  # never ends the loop; the jobs were queued again
                if not is_outage(exc):
                    log.exception("peerwire: taking %d job(s) failed", len(jobs))
                await asyncio.sleep(_RETRY_S)
                continue
            if len(jobs) < asked:
                # Busy but caught up: let the next jobs gather for a moment, so one read, one
                # take and one store read serve several of them (an idle worker, blocked in
                # its read, still takes a new job at once).
                await asyncio.sleep(_GATHER_S)

    async def _take_all(self, jobs: list[Job]) -> None:
        """Take one read's jobs together: their leases, acknowledgements and cancel marks in
        one Redis round trip, their tasks in one store read, then start their handlers."""
        runner = self.runner
        wanted: dict[str, Job] = {}
        for job in jobs:
            # Held here already (running, or its outcome being recorded), or twice in this
            # read: a duplicate, only acknowledged.
            if job.task_id not in runner._live and job.task_id not in self._holding:
                wanted.setdefault(job.task_id, job)
        # Held elsewhere: left out (a duplicate too). Canceled: marked while it changed hands.
        taken = await self.queue.take_jobs(jobs, list(wanted.values()))
        leased = [job for task_id, job in wanted.items() if task_id in taken]
        metrics = runner.metrics
        if metrics is not None:
            # Taken over from a consumer that stopped without acknowledging them.
            metrics.reclaimed.inc(sum(1 for job in leased if job.reclaimed))
            now = time.time()
            for job in leased:
                if (queued_at := job.queued_at) is not None:
                    metrics.queue_waited(now - queued_at)
        if not leased:
            return
        # Fresh: the task is as its job carries it (see ``RedisWorkQueue.take_jobs``).
        known = {job.task_id: _created(job) for job in leased if taken[job.task_id] == FRESH}
        carried = {task_id for task_id, record in known.items() if record is not None}
        unknown = [job for job in leased if job.task_id not in carried]
        try:
            # Read after the leases are ours: what each task is now, not before a cancel.
            if unknown:
                read = await runner.store.load_many([(job.task_id, job.tenant) for job in unknown])
                known.update(
                    (job.task_id, record) for job, record in zip(unknown, read, strict=True)
                )
        except BaseException:
            # Acknowledged but not taken: back to the queue (the sweeper would find them too).
            with contextlib.suppress(*_REDIS_AWAY):
                await self.queue.release_leases([job.task_id for job in leased])
                await self.queue.requeue(leased)
            raise
        for job in leased:
            record = known[job.task_id]
            try:
                if record is not None and job.task_id in carried:
                    # What the store holds (cached for the handler's first append, whose
                    # compare-and-swap checks it): no read.
                    runner.store.remember_created(record, tenant=job.tenant, owner=job.owner)
                canceled = taken[job.task_id] == CANCELED
                await self._take(job, record, canceled=canceled, fresh=job.task_id in carried)
            except Exception:  # one bad job must not stop this worker
                log.exception("peerwire: job for task %s failed", job.task_id)

    async def _take(
        self, job: Job, record: TaskRecord | None, *, canceled: bool, fresh: bool = False
    ) -> None:
        """Run ``job``'s task, whose lease is ours and which the store says is ``record``
        (``fresh``: the job carried it, with its first message's caller)."""
        try:
            if record is None or record.state not in ACTIVE:
                # Finished, or waiting for its caller: nothing to run.
                await self.queue.release_lease(job.task_id)
                return
            started = self._start(job, record, fresh=fresh)
        except BaseException:
            with contextlib.suppress(*_REDIS_AWAY):
                await self.queue.release_lease(job.task_id)
            raise
        if isinstance(started, str):
            await self._fail(record, started)
        elif canceled:
            # Canceled while it changed hands: stopped before it begins, its on_cancel hook
            # runs here and CANCELED is recorded (the runner's path for an early cancel).
            started.stop(TaskState.CANCELED)

    def _start(self, job: Job, record: TaskRecord, *, fresh: bool = False) -> _Live | str:
        """Start the task's handler here; or why it cannot run (its task is to fail)."""
        runner = self.runner
        user_messages = [m for m in record.history if m.role is Role.USER]
        if not user_messages or (job.kind == "recover" and runner.agent.on_restart == "fail"):
            return WORKER_STOPPED
        try:
            skill = runner.agent.route(user_messages[0])
        except Exception as exc:  # the agent changed since the task was accepted
            return str(exc)
        return runner._start(
            skill,
            task_id=record.id,
            context_id=record.context_id,
            message=user_messages[0],
            tenant=job.tenant,
            owner=job.owner,
            state=record.state,
            answers=user_messages[1:],
            latest=user_messages[-1] if len(user_messages) > 1 else None,
            known_callers=_carried_callers(job, user_messages[0]) if fresh else None,
            created_at=record.submitted_at(),
        )

    async def _fail(self, record: TaskRecord, text: str) -> None:
        try:
            # A worker that stopped mid-task: it may have acted (``protocol.reasons``).
            reason = INTERRUPTED_REASON if text == WORKER_STOPPED else None
            await self.runner._emit_status(
                record.id, record.context_id, TaskState.FAILED, text, reason=reason
            )
        except (IllegalTransitionError, TaskNotFoundError):
            log.debug("task %s changed before it could be failed", record.id)
        except Exception:
            log.exception("peerwire: task %s could not be failed", record.id)
        finally:
            with contextlib.suppress(*_REDIS_AWAY):
                await self.queue.release_lease(record.id)

    # -- leases and control -------------------------------------------------------------------

    async def _heartbeat_forever(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.queue.lease_ttl / 3):
                    await self._renew_now.wait()
            self._renew_now.clear()
            try:
                await self.renew()
            except Exception:  # the store or Redis being away now is retried next time
                log.exception("peerwire: renewing the leases failed")

    async def renew(self) -> None:
        """Re-take this process's leases and re-check its handlers (the module docstring)."""
        runner = self.runner
        live = {task_id: one for task_id, one in runner._live.items() if not one.ending}
        held = list(self._holding | live.keys())  # ending handlers keep their leases too
        if not held:
            return
        lost: set[str] = set()
        marked: set[str] = set()
        try:
            # Re-takes a lease Redis lost (a restart) as well as renewing it.
            lost = await self.queue.take_leases(held) & live.keys()
            marked = await self.queue.cancel_requested(list(live))
            if runner.metrics is not None:
                runner.metrics.lease_renewals.inc(len(held) - len(lost))
        except _REDIS_AWAY as exc:
            log.debug("peerwire: leases not renewed, Redis is away: %s", exc)
        for task_id in lost:
            log.warning("peerwire: task %s is held by another worker now; stopping here", task_id)
            live.pop(task_id).stop(TaskState.WORKING)  # records nothing: the holder runs it
        for task_id in marked & live.keys():
            live.pop(task_id).stop(TaskState.CANCELED)
        # A few loads at a time: one round trip per renewal period per held task.
        gate = asyncio.Semaphore(_RECHECKS_AT_ONCE)

        async def recheck(one: _Live) -> None:
            async with gate:
                record = await runner.store.load(one.ctx.task_id, tenant=one.ctx.tenant)
            self._recheck(one, record)

        async with asyncio.TaskGroup() as group:
            for one in live.values():
                group.create_task(recheck(one))
        self._undelivered = {t: m for t, m in self._undelivered.items() if t in runner._live}
        self._finished_elsewhere &= runner._live.keys()

    def _recheck(self, live: _Live, record: TaskRecord | None) -> None:
        """Act on what the store says of a live handler's task."""
        task_id = live.ctx.task_id
        if record is not None and record.state is TaskState.CANCELED:
            live.stop(TaskState.CANCELED)  # a cancel that never reached us: on_cancel runs
            return
        if record is None or record.state in TERMINAL:
            # Finished by another process (or deleted). The handler's own last event may be
            # under way: act only when the next renewal finds the same.
            if live.ctx.state not in TERMINAL:
                if task_id in self._finished_elsewhere:
                    live.stop(TaskState.WORKING)
                self._finished_elsewhere.add(task_id)
            return
        self._finished_elsewhere.discard(task_id)
        if not self.runner.is_waiting(task_id):
            self._undelivered.pop(task_id, None)
            return
        unmet = _unmet(record, live.ctx.latest_message)
        if not unmet:
            self._undelivered.pop(task_id, None)
            return
        if self._undelivered.get(task_id) != unmet[0].message_id:
            self._undelivered[task_id] = unmet[0].message_id
            return
        del self._undelivered[task_id]
        log.warning("peerwire: task %s: delivering a follow-up found in the store", task_id)
        if record.state in INTERRUPTED:
            # It asked again after the follow-up was recorded: back to work, on the record.
            self._spawn(self._resume(live, record, unmet))
        else:
            self._hand_over(task_id, unmet)

    async def _resume(self, live: _Live, record: TaskRecord, unmet: list[Message]) -> None:
        try:
            await self.runner._emit_status(record.id, record.context_id, TaskState.WORKING, None)
        except (IllegalTransitionError, TaskNotFoundError):
            return  # it moved on meanwhile: the next renewal looks again
        self._hand_over(record.id, unmet)

    def _hand_over(self, task_id: str, messages: list[Message]) -> None:
        for message in messages:
            self._deliver(task_id, message)

    def _deliver(self, task_id: str, message: Message) -> None:
        """Hand a follow-up to the live handler, unless it already has it."""
        live = self.runner._live.get(task_id)
        if live is None or _has(live, message):
            return
        try:
            self.runner.deliver(task_id, message)
        except ServerBusyError:
            # Nothing lost: the follow-up is recorded; the next renewal offers it again.
            log.warning("peerwire: at capacity, follow-up for %s not delivered", task_id)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        runner = self.runner
        task = asyncio.get_running_loop().create_task(work)
        runner._late_publications.add(task)
        task.add_done_callback(runner._late_publications.discard)

    async def _on_control(self, message: ControlMessage) -> None:
        live = self.runner._live.get(message.task_id)
        if live is None:
            return
        if message.action == "cancel":
            live.stop(TaskState.CANCELED)
            return
        try:
            self._deliver(message.task_id, decode(message.body, Message))
        except Exception:
            log.exception("peerwire: a follow-up for %s could not be delivered", message.task_id)

    # -- the sweeper --------------------------------------------------------------------------

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self.queue.sweep_every)
            try:
                await self.sweep()
            except _REDIS_AWAY as exc:  # retried next period; the queue's health logs it
                log.debug("peerwire: sweep skipped, Redis is away: %s", exc)
            except Exception:  # the store being away now is retried next period
                log.exception("peerwire: sweeping for unheld tasks failed")

    async def sweep(self) -> None:
        """Queue again (or fail) active tasks that no worker held on two sweeps in a row.

        Both sweeps must see the same Redis, up for at least a lease's time to live: a Redis
        that restarted empty holds no leases until their holders re-take them.
        """
        runner = self.runner
        if runner.metrics is not None:
            oldest = await self.queue.oldest_queued_at()
            runner.metrics.queue_sampled(
                await self.queue.backlog(), 0.0 if oldest is None else time.time() - oldest
            )
        # The jobs every consumer is done with leave the stream (it would keep them all).
        # Housekeeping: with Redis away it waits for the next sweep, and the sweep goes on.
        try:
            await self.queue.trim_acknowledged()
        except _REDIS_AWAY as exc:
            log.debug("peerwire: the jobs stream was not trimmed, Redis is away: %s", exc)
        life = await self.queue.life()
        if self._life is None or life.run_id != self._life.run_id:
            self._suspects = {}
        self._life = life
        if life.uptime < self.queue.lease_ttl:
            self._suspects = {}
            return
        active = [
            info
            for info in await runner.store.unfinished()
            if info.state in ACTIVE
            and info.task_id not in runner._live
            and info.task_id not in self._holding
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
            if not await self.queue.claim_requeue(info.task_id):
                continue  # another process's sweeper acts on it this time
            if info.state is TaskState.SUBMITTED:
                # Never started (its job was lost): starting it is no restart.
                await self.queue.enqueue(info.task_id, info.tenant, info.owner, "start")
                action = "requeued_start"
            elif runner.agent.on_restart == "resume":
                await self.queue.enqueue(info.task_id, info.tenant, info.owner, "recover")
                action = "requeued_resume"
            else:
                action = "failed"
                try:
                    await runner._emit_status(
                        info.task_id,
                        info.context_id,
                        TaskState.FAILED,
                        WORKER_STOPPED,
                        reason=INTERRUPTED_REASON,
                    )
                except (IllegalTransitionError, TaskNotFoundError):
                    log.debug("task %s changed while being swept", info.task_id)
                    action = "skipped"
            if runner.metrics is not None:
                runner.metrics.swept(action)


def _carried_callers(job: Job, first: Message) -> dict[str, Caller] | None:
    """The recorded caller of a fresh job's first message, as it carries it (``{}``: the
    caller needed no record); ``None`` if unreadable (then the store is read)."""
    if not job.caller:
        return {}
    try:
        return {first.message_id: decode_caller(job.caller, job.tenant)}
    except Exception:  # not ours to trust: the store says who sent it
        log.warning("peerwire: job for task %s carries an unreadable caller", job.task_id)
        return None


def _created(job: Job) -> TaskRecord | None:
    """The task as created, from the job carrying it (version 1, SUBMITTED); ``None`` if
    what it carries is not that (then the store is read)."""
    try:
        record = TaskRecord.from_task(decode(job.task, Task), 1)
    except Exception:  # not ours to trust: the store says what the task is
        log.warning("peerwire: job for task %s carries an unreadable task", job.task_id)
        return None
    if record.id != job.task_id or record.state is not TaskState.SUBMITTED:
        return None
    return record


def _unmet(record: TaskRecord, latest: Message) -> list[Message]:
    """The user messages the store holds after ``latest`` (what the handler last got)."""
    user_messages = [m for m in record.history if m.role is Role.USER]
    for index, message in enumerate(user_messages):
        if message.message_id == latest.message_id:
            return user_messages[index + 1 :]
    return []


def _has(live: _Live, message: Message) -> bool:
    """Whether the handler already got ``message`` (or holds it in its inbox)."""
    if live.ctx.latest_message.message_id == message.message_id:
        return True
    return any(queued.message_id == message.message_id for queued, _ in live.inbox)
