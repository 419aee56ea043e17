"""The task runner: one owned background task per running A2A task.

Handlers run in tasks the runner owns for the server's lifetime (held until done, waited
for when it exits, a failure logged), never as loose ``create_task``s. The runner turns what
a handler returns or raises into events, applies the per-task time limit (which does not run
while the handler waits in ``ctx.ask``), caps the number of *working* handlers (those waiting
for input do not count), delivers follow-up messages to a suspended ``ask`` or re-runs the
handler with the replay rule, reaches a running handler on cancel, and on shutdown lets
handlers finish within a grace period.

Every event goes through ``emit``: the store validates and appends it (state machine), then the
bus publishes it at its new version.

The runner uses asyncio's own tasks, timeouts and cancellation rather than anyio's: per A2A
task that is one task, one timer, no cancel scopes, which measured as a large share of a
SendMessage on the in-memory store. Handlers may still use anyio freely (it runs on asyncio).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
import types
from collections import deque
from collections.abc import Callable, Coroutine, Generator, Mapping, Sequence
from typing import Any, NoReturn, Protocol

from .._ids import new_id
from ..delegation import DelegationHub, Delegations, MemoryLedgerStore
from ..errors import (
    IllegalTransitionError,
    ServerBusyError,
    ServiceUnavailableError,
    TaskNotCancelableError,
    TaskNotFoundError,
    VersionConflictError,
)
from ..ops import tracing
from ..ops.metrics import UNKNOWN_SKILL, Metrics
from ..protocol import (
    ACTIVE,
    INTERRUPTED,
    INTERRUPTED_REASON,
    TERMINAL,
    Event,
    TaskRecord,
    ends_blocking_wait,
    no_longer_waiting,
    resolve_continuation,
    status_reason_metadata,
)
from ..protocol.paging import MAX_PAGE_SIZE, ListQuery, decode_page_token
from ..protocol.typed import TYPED_KINDS, value_parts
from ..types import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    now_timestamp,
)
from . import _typed
from ._typed import TYPED
from .agent import Agent, Skill
from .bus import EventBus
from .catch_up import GapFilling
from .context import Caller, CallerSource, TaskContext, encode_caller, to_parts
from .stores.base import StoredTaskInfo, TaskStore

__all__ = ["Runner", "WorkPlacement"]

log = logging.getLogger("peerwire.runner")

# What the bus carries of a task's events (the user's messages are not published).
Published = TaskStatusUpdateEvent | TaskArtifactUpdateEvent


class _Live:
    """A handler that is running (or suspended in ``ask``) in this process."""

    __slots__ = (
        "answered_at",
        "cancel_reason",
        "created_at",
        "ctx",
        "deadline",
        "deferred",
        "ending",
        "flushing",
        "inbox",
        "result",
        "settled",
        "skill",
        "started",
        "task",
        "waiter",
        "working",
    )

    def __init__(self, ctx: TaskContext, skill: Skill, created_at: float | None) -> None:
        self.ctx = ctx
        self.skill = skill
        # When the task was created (``time.time()``), when this process knows it: its
        # duration is observed as it ends (the metrics).
        self.created_at = created_at
        self.task: asyncio.Task[None] | None = None
        self.deadline: asyncio.Timeout | None = None
        # Follow-ups (with who sent them) the handler has not taken yet, and its ``ask``.
        self.inbox: deque[tuple[Message, CallerSource | None]] = deque()
        self.waiter: asyncio.Future[tuple[Message, CallerSource | None]] | None = None
        self.cancel_reason: TaskState | None = None
        # Set once the handler has stopped and its outcome is being settled (its on_cancel
        # hook may be running): a stop now would cut that short, so it waits instead.
        self.ending = False
        self.working = False
        self.started = False
        # Set by ``launch_watched``: done once the task settles or the handler is gone.
        self.settled: asyncio.Future[None] | None = None
        # The artifact of a skill's returned value, stored with the completion (``_run``).
        self.result: TaskArtifactUpdateEvent | None = None
        # The WORKING the runner moves a skill function's task to, not stored yet: it goes
        # with the handler's first event, or alone once the handler first waits
        # (``_defer_start``); ``flushing`` writes it alone.
        self.deferred: TaskStatusUpdateEvent | None = None
        self.flushing: asyncio.Task[None] | None = None
        # The task's version once an answer to its question was recorded (0: none): while
        # the task is still there, the handler has not acted on it (``continue_task``).
        self.answered_at = 0

    def settle(self) -> None:
        settled = self.settled
        if settled is not None and not settled.done():  # its waiter may have been cancelled
            settled.set_result(None)

    def stop(self, reason: TaskState) -> None:
        """Stop the handler for ``reason``.

        A task cancelled before its first step never runs its coroutine at all (not even its
        ``finally``), so one that has not started is only marked: ``_run`` sees the mark and
        records the outcome without calling the handler. One whose handler has already
        stopped (``ending``) is left to settle.
        """
        if self.ending:
            return
        self.cancel_reason = reason
        if self.started and self.task is not None:
            self.task.cancel()


class WorkPlacement(Protocol):
    """Where handlers run when processes share work (``peerwire.cluster.placement``).

    The composition root (``create_app``, ``run_worker``) builds one and hands it to the
    ``Runner``, which attaches itself; the runner knows nothing of what carries the work.
    """

    def attach(self, runner: Runner) -> None: ...

    async def begin(self, group: asyncio.TaskGroup) -> None: ...

    async def stop_taking_work(self) -> None: ...

    async def end(self) -> None: ...

    async def sweep(self) -> None: ...

    async def start_elsewhere(
        self,
        task_id: str,
        tenant: str,
        owner: str,
        created: TaskRecord | None = None,
        caller: bytes = b"",
    ) -> None: ...

    async def continue_elsewhere(
        self,
        task_id: str,
        context_id: str,
        follow_up: Message,
        tenant: str,
        owner: str,
        *,
        expected_version: int | None = None,
    ) -> None: ...

    async def cancel_elsewhere(self, task_id: str, tenant: str) -> None: ...

    async def run_leased(self, live: _Live) -> None: ...


class Runner:
    """Hosts an agent's handlers. Use ``async with runner:`` around the server's lifetime."""

    def __init__(
        self,
        agent: Agent,
        store: TaskStore,
        bus: EventBus,
        *,
        max_working: int = 10_000,
        shutdown_grace: float = 10.0,
        placement: WorkPlacement | None = None,
        metrics: Metrics | None = None,
        delegations: DelegationHub | None = None,
    ) -> None:
        """``placement`` shares the work between processes (``peerwire.cluster``): new and
        continued tasks become jobs that any process consuming the queue runs. ``metrics``
        (``peerwire.ops.Metrics``) follows the working and waiting handlers and the tasks
        that end here; ``None``: no metrics work."""
        self.agent = agent
        self.metrics = metrics
        # The ledger of the tasks' delegations (``ctx.delegate``): canceled and compensated
        # as their tasks end (``_end_delegations``). In memory unless the app gives one.
        self.delegations = delegations or DelegationHub(MemoryLedgerStore())
        if metrics is not None:
            metrics.declare_skills(skill.id for skill in agent.skills)
            if self.delegations.observer.metrics is None:
                self.delegations.observer.metrics = metrics
        self._unwatch_store: Callable[[], None] | None = None
        self.store = store
        self.bus = bus
        # A bus whose subscriptions fill their gaps from the store (RedisBus): an event
        # stored but not published while it is away still reaches them (``_publish``).
        self._bus_fills_gaps = isinstance(bus, GapFilling)
        self.max_working = max_working
        self.shutdown_grace = shutdown_grace
        self._live: dict[str, _Live] = {}
        self._working = 0
        self._accepting = False
        self._group: asyncio.TaskGroup | None = None
        # The handlers' tasks (and their deferred writes), held until done and waited for at
        # exit. Not the task group's own: a handler's failure is its task's, never a reason to
        # cancel the others, and asyncio.TaskGroup.create_task costs about 0.45 µs more per
        # task than this (a blocking send's handler is one task per request).
        self._tasks: set[asyncio.Task[None]] = set()
        # Kept while running: asyncio.get_running_loop() makes a getpid() system call, which
        # cost ~5% of a blocking send here.
        self._loop: asyncio.AbstractEventLoop | None = None
        # A store whose appends never yield to the loop cannot be interrupted between saving an
        # event and publishing it; any other store gets that pair shielded from cancellation.
        self._atomic_appends = bool(getattr(store, "appends_never_suspend", False))
        # A bus that delivers only this process's events delivers only what this runner
        # publishes (see ``sees_every_event``).
        self._bus_is_local = bool(getattr(bus, "process_local", False))
        # The store's commit hook (``append``'s ``on_durable``) spares that shield (a Task per
        # event) when publishing cannot be interrupted either (the in-process bus never
        # suspends).
        self._hooked_store = store if self._bus_is_local else None
        # Publications of events whose storing caller was cancelled (kept referenced).
        self._late_publications: set[asyncio.Task[None]] = set()
        # Told as a drain begins (the dispatcher ends its streams there).
        self._drain_listeners: list[Callable[[], None]] = []
        self._unrecorded_listeners: list[Callable[[str], None]] = []
        self.placement = placement
        if placement is not None:
            placement.attach(self)

    # -- lifetime -------------------------------------------------------------------------

    async def __aenter__(self) -> Runner:
        self._loop = asyncio.get_running_loop()
        # First: a lifespan that fails to start leaves nothing of the runner's open.
        if self.agent.lifespan is not None:
            await self.agent.lifespan.enter(self.agent)
        try:
            await self._open()
        except BaseException:
            if self.agent.lifespan is not None:
                await self.agent.lifespan.exit()
            raise
        return self

    async def _open(self) -> None:
        if self.metrics is not None:
            # The tasks waiting for their client, counted by the store (every process's).
            self._unwatch_store = self.metrics.watch_store(self.store.count_waiting)
        await self.delegations.open()
        self._group = asyncio.TaskGroup()
        await self._group.__aenter__()
        self._accepting = True
        if self.placement is not None:
            await self.placement.begin(self._group)

    async def __aexit__(self, *exc: Any) -> None:
        group = self._group
        assert group is not None
        try:
            await self.drain()
        finally:
            self._group = None
            if self._unwatch_store is not None:
                self._unwatch_store()
                self._unwatch_store = None
            try:
                await self._wait_tasks()
                await group.__aexit__(None, None, None)
            finally:
                try:
                    await self.delegations.close()
                finally:
                    # Last: the handlers that used the state have stopped, whatever they raised.
                    if self.agent.lifespan is not None:
                        await self.agent.lifespan.exit()

    def app_state(self) -> Any:
        """``ctx.app_state``: what the agent's lifespan yielded."""
        return self.agent.app_state

    def _spawn(
        self, coro: Coroutine[Any, Any, None], context: contextvars.Context | None = None
    ) -> asyncio.Task[None]:
        """Run ``coro`` in a task of the runner's (``_tasks``)."""
        assert self._loop is not None
        task = self._loop.create_task(coro, context=context)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            # Not expected: a handler's own failures end in its task's outcome (``_run``).
            log.error("peerwire: a runner task failed", exc_info=exc)

    async def _wait_tasks(self) -> None:
        """Wait for every task of the runner's to end (as a task group's exit would); cancelled
        here, they are cancelled too."""
        try:
            while self._tasks:
                await asyncio.wait(set(self._tasks))
        except BaseException:
            for task in self._tasks:
                task.cancel()
            raise

    @property
    def accepting(self) -> bool:
        """Whether the runner takes new work: from its start until a drain begins
        (readiness reports a process that does not as starting or draining)."""
        return self._accepting

    def on_drain(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` as every drain begins, before any handler is waited for: the
        dispatcher ends its streams there (``Dispatcher.end_streams``), so no stream waits
        for the grace."""
        self._drain_listeners.append(listener)

    def on_unrecorded(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(task_id)`` when a handler ended but its task's final state could
        not be recorded (the store or the bus is away): nothing more will be published for
        it here, so the dispatcher ends the streams that follow it (``StreamEndedError``,
        cause ``outage``) rather than leave them waiting."""
        self._unrecorded_listeners.append(listener)

    async def drain(self) -> None:
        """Take no more work; let working handlers finish within the grace, then fail them.

        Open streams end at once with ``StreamEndedError`` (the listeners of ``on_drain``).
        Handlers parked in ``ask`` are let go and their tasks stay interrupted. A server calls
        this as its shutdown begins, before it waits for open connections, so callers blocked
        on a task still get its outcome; exiting the runner calls it again, with nothing left
        to do.
        """
        self._accepting = False
        for listener in self._drain_listeners:
            try:
                listener()
            except Exception:  # one failing listener must not keep the drain from happening
                log.exception("peerwire: a drain listener failed")
        if self.placement is not None:
            await self.placement.stop_taking_work()
        await self._drain()
        if self.placement is not None:
            await self.placement.end()

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        give_up = loop.time() + self.shutdown_grace
        # Polling, bounded by the grace period, once per shutdown: simpler than an event.
        while any(live.working for live in self._live.values()) and loop.time() < give_up:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
        for live in list(self._live.values()):
            # Working handlers fail; one parked in ``ask`` leaves its task as it stands
            # (interrupted), to be answered after a restart (the replay rule).
            live.stop(TaskState.FAILED if live.working else live.ctx.state)
        running = {live.task for live in self._live.values() if live.task is not None}
        if running:
            await asyncio.wait(running, timeout=max(self.shutdown_grace, 1.0))

    async def recover(self) -> None:
        """After a restart: fail (or re-run) tasks that were working when the process died.

        With a shared queue, other processes may be running those tasks: only tasks no worker
        holds are acted on, by the placement's sweeper.
        """
        if self.placement is not None:
            try:
                await self.placement.sweep()
            except Exception:
                # Redis or the store away as the process starts: the placement's sweeper
                # does the same every period, so the process starts all the same.
                log.warning("peerwire: the first sweep failed; the sweeper retries", exc_info=True)
            await self.delegations.recover(self._parent_state)
            return
        for info in await self.store.unfinished():
            if info.state not in ACTIVE:
                continue  # interrupted tasks simply keep waiting for their caller
            if info.task_id in self._live:
                continue
            if self.agent.on_restart == "resume":
                await self._resume(info)
            else:
                ended = await self._end_delegations(info.task_id, info.tenant, TaskState.FAILED)
                await self._emit_status(
                    info.task_id,
                    info.context_id,
                    ended,
                    "interrupted by restart",
                    reason=INTERRUPTED_REASON,
                )
        # Tasks that ended while a process held delegations it could not settle (it died).
        await self.delegations.recover(self._parent_state)

    async def _parent_state(self, tenant: str, task_id: str) -> TaskState | None:
        record = await self.store.load(task_id, tenant=tenant)
        return None if record is None else record.state

    async def recorded_callers(self, ctx: TaskContext) -> Mapping[str, bytes]:
        """``ctx.recall``: the callers recorded with the task's messages."""
        return await self.store.load_callers(ctx.task_id)

    async def context_tasks(self, ctx: TaskContext, cursor: str) -> tuple[list[Task], str]:
        """``ctx.history``: a page of the tasks of ``ctx``'s owner and tenant sharing its
        contextId, newest first, and the next page's cursor (``""``: none). The ListTasks
        query of the store, with its contextId index."""
        query = ListQuery(
            context_id=ctx.context_id,
            status=None,
            page_size=MAX_PAGE_SIZE,
            cursor=decode_page_token(cursor) if cursor else None,
            history_length=None,
            status_after=None,
            include_artifacts=True,
        )
        tasks, token, _total = await self.store.list_tasks(
            query, tenant=ctx.tenant, owner=ctx.owner
        )
        return tasks, token

    def delegations_for(self, ctx: TaskContext) -> Delegations:
        """``ctx.delegations``: the task's delegations in the ledger."""
        return self.delegations.for_task(ctx.task_id, ctx.tenant)

    async def emit_final(self, ctx: TaskContext, event: TaskStatusUpdateEvent) -> None:
        """``emit`` of the final state a handler records itself (``ctx.complete()``,
        ``fail()``, ``reject()``, a returned ``Message``) on a task that delegated: its
        delegations are settled first (``_end_delegations``, bounded by the hub's
        ``cancel_within``), as ``_run`` does for an outcome it records.

        Neither a CancelTask nor the time limit cuts the settling and the write short (a
        stop waits, as for a handler whose outcome is being settled; the time limit is
        suspended and given back): either would record another end than the one the
        delegations were settled for. A time limit that already struck is left to strike:
        ``_run`` then settles them for the failure it records."""
        live = self._live.get(ctx.task_id)
        deadline = None if live is None else live.deadline
        if deadline is not None and deadline.expired():
            await self.emit(ctx, event)
            return
        loop = asyncio.get_running_loop()
        when = None if deadline is None else deadline.when()
        remaining = None if when is None else when - loop.time()
        ending = live is not None and live.ending
        if live is not None:
            live.ending = True
        if deadline is not None:
            deadline.reschedule(None)
        try:
            settling = asyncio.ensure_future(
                self._end_delegations(ctx.task_id, ctx.tenant, event.status.state)
            )
            try:
                ended = await asyncio.shield(settling)
            except asyncio.CancelledError:  # the runner's teardown: still settle, then go
                await asyncio.wait({settling})
                raise
            if ended is not event.status.state:
                # A cancel recorded the task's end first: that end stands (it records it).
                log.debug("task %s ended %s before its handler's end", ctx.task_id, ended.name)
                return
            await self.emit(ctx, event)
        finally:
            if live is not None:
                live.ending = ending
            if deadline is not None and remaining is not None and not deadline.expired():
                deadline.reschedule(loop.time() + remaining)

    async def _end_delegations(self, task_id: str, tenant: str, state: TaskState) -> TaskState:
        """The task is about to be recorded ``state`` (terminal): cancel its open delegations
        at their agents (bounded) and settle its compensations, before the final state is
        stored, so a caller who sees the task ended finds its delegations canceled too. The
        end to record: ``state``, or the one another path recorded in the ledger first (a
        cancel racing the handler's return), which the caller records instead. A failure
        here is logged: it never keeps the task from ending."""
        try:
            return await self.delegations.task_ended(task_id, tenant, state)
        except Exception:
            log.exception("peerwire: task %s: its delegations were not settled", task_id)
            return state

    async def _resume(self, info: StoredTaskInfo) -> None:
        record = await self.store.load(info.task_id, tenant=info.tenant)
        if record is None:
            return
        user_messages = [m for m in record.history if m.role is Role.USER]
        if not user_messages:
            await self._emit_status(
                info.task_id,
                info.context_id,
                TaskState.FAILED,
                "interrupted by restart",
                reason=INTERRUPTED_REASON,
            )
            return
        skill = self.agent.route(user_messages[0])
        self._start(
            skill,
            task_id=info.task_id,
            context_id=info.context_id,
            message=user_messages[0],
            tenant=info.tenant,
            owner=info.owner,
            state=record.state,
            answers=user_messages[1:],
            created_at=record.submitted_at(),
        )

    # -- starting and continuing ----------------------------------------------------------

    def check_capacity(self) -> None:
        if not self._accepting:
            raise ServerBusyError("The server is shutting down and accepts no new work")
        if self._working >= self.max_working:
            raise ServerBusyError(
                f"The server is at its limit of {self.max_working} working tasks; retry later"
            )

    def start(
        self,
        skill: Skill,
        *,
        task_id: str,
        context_id: str,
        message: Message,
        tenant: str,
        owner: str,
        state: TaskState = TaskState.SUBMITTED,
        answers: list[Message] | None = None,
        latest: Message | None = None,
        caller: CallerSource | None = None,
        own_span: bool = True,
        created_at: float | None = None,
    ) -> None:
        """Run ``skill`` for a task that already exists in the store; ``caller`` sent its
        latest message (``TaskContext.caller``). ``own_span``: traced, the handler gets a
        span of its own (``False``: it runs in the request's, which waits for it).
        ``created_at``: when the task was created (``time.time()``), when known."""
        self.check_capacity()
        self._start(
            skill,
            task_id=task_id,
            context_id=context_id,
            message=message,
            tenant=tenant,
            owner=owner,
            state=state,
            answers=answers or [],
            latest=latest,
            caller=caller,
            own_span=own_span,
            created_at=created_at,
        )

    async def launch(
        self,
        skill: Skill,
        *,
        task_id: str,
        context_id: str,
        message: Message,
        tenant: str,
        owner: str,
        caller: CallerSource | None = None,
        created: TaskRecord | None = None,
    ) -> bool:
        """Get a new task's handler running: here, or through the queue on some worker
        (``created``, the task as stored, goes with its job: the worker need not read it).

        The task is stored already, so nothing here fails the call (its answer is the task):
        False when the handler could be neither started nor queued now (the shutdown began;
        the queue is away), and then the task stays SUBMITTED, for the sweeper to queue (or,
        with no queue, the restart to recover). The working limit was checked before the task
        was created (``check_capacity``), not again here.
        """
        if self.placement is None:
            if not self._accepting:
                return False
            self._start(
                skill,
                task_id=task_id,
                context_id=context_id,
                message=message,
                tenant=tenant,
                owner=owner,
                state=TaskState.SUBMITTED,
                answers=[],
                caller=caller,
                created_at=time.time(),  # the task was stored a moment ago
            )
            return True
        try:
            # The first message's caller goes with a job carrying its task: no store read.
            recorded = b"" if caller is None else encode_caller(caller) or b""
            await self.placement.start_elsewhere(task_id, tenant, owner, created, recorded)
        except Exception as exc:  # Redis away past the queue's retries: the sweeper queues it
            log.warning("peerwire: task %s is stored but not queued yet: %s", task_id, exc)
            return False
        return True

    @property
    def sees_every_event(self) -> bool:
        """Whether every event of the tasks this runner starts passes through it, as through
        the bus: their handlers run here (no work queue) and the bus is in-process."""
        return self.placement is None and self._bus_is_local

    def launch_watched(
        self,
        skill: Skill,
        *,
        task_id: str,
        context_id: str,
        message: Message,
        tenant: str,
        owner: str,
        caller: CallerSource | None = None,
    ) -> asyncio.Future[None]:
        """Start a new task's handler here (only when ``sees_every_event``); the future is
        done once the task is terminal or interrupted, or its handler is gone.

        What a blocking send waits for, known here without a bus subscription: the runner
        stores and publishes each of the task's events itself.
        """
        assert self.sees_every_event, "the task's events may come from elsewhere"
        self.start(
            skill,
            task_id=task_id,
            context_id=context_id,
            message=message,
            tenant=tenant,
            owner=owner,
            caller=caller,
            # Traced, the request's span lasts until the task settles: the handler runs in
            # it, one span per blocking send rather than two.
            own_span=False,
            created_at=time.time(),  # the task was stored a moment ago
        )
        live = self._live[task_id]
        # The handler has not run yet (its task is only scheduled): no event is missed.
        assert self._loop is not None
        live.settled = self._loop.create_future()
        return live.settled

    def _start(
        self,
        skill: Skill,
        *,
        task_id: str,
        context_id: str,
        message: Message,
        tenant: str,
        owner: str,
        state: TaskState,
        answers: list[Message],
        latest: Message | None = None,
        caller: CallerSource | None = None,
        own_span: bool = True,
        known_callers: dict[str, Caller] | None = None,
        created_at: float | None = None,
    ) -> _Live:
        """``known_callers``: the recorded callers of the task's messages where the caller
        has them already (a fresh job carries its first message's); None: read if needed."""
        assert self._group is not None, "the runner is not running"
        ctx = TaskContext(
            self,
            task_id=task_id,
            context_id=context_id,
            message=message,
            skill_id=skill.id,
            tenant=tenant,
            owner=owner,
            state=state,
            recorded_answers=answers,
            latest_message=latest,
            caller=caller,
            known_callers=known_callers,
            # A handler run again (a restart, the replay rule, another worker) may have
            # delegated in its earlier run: its end settles what the ledger holds for it.
            delegations=None
            if state is TaskState.SUBMITTED
            else self.delegations.for_task(task_id, tenant),
        )
        live = _Live(ctx, skill, created_at)
        self._live[task_id] = live
        self._set_working(live, True)
        placement = self.placement
        if tracing.STATE.tracer is None or not own_span:  # off: this attribute read is all
            run = self._run(live) if placement is None else placement.run_leased(live)
        else:
            # The handler's own span, under the request's (the span current here), which
            # may end first (a non-blocking send, a stream); the handler's coroutine is
            # made inside it, so a task cancelled before its first step leaves no
            # coroutine never awaited.
            def handler() -> Coroutine[Any, Any, None]:
                return self._run(live) if placement is None else placement.run_leased(live)

            run = tracing.handling(
                handler,
                agent=self.agent.name,
                skill=skill.id,
                task_id=task_id,
                context_id=context_id,
                state=lambda: ctx.state,
            )
        # The handler's task runs in a copy of this context, taken now: the request's trace
        # context goes with it, though the task is the runner's, not the request's.
        live.task = self._spawn(run, contextvars.copy_context())
        return live

    def is_live(self, task_id: str) -> bool:
        return task_id in self._live

    def is_waiting(self, task_id: str) -> bool:
        """Whether the task's handler is suspended in ``ctx.ask``."""
        live = self._live.get(task_id)
        return live is not None and live.waiter is not None

    def deliver(self, task_id: str, message: Message, caller: CallerSource | None = None) -> bool:
        """Hand a follow-up message (from ``caller``, when known here) to the task's live
        handler; False if there is none."""
        live = self._live.get(task_id)
        if live is None:
            return False
        live.ctx.latest_message = message
        waiter = live.waiter
        if waiter is not None and not waiter.done():
            self.check_capacity()
            self._set_working(live, True)
            waiter.set_result((message, caller))
        else:
            live.inbox.append((message, caller))
        return True

    def queued_message(self, ctx: TaskContext) -> tuple[Message, CallerSource | None] | None:
        """A follow-up that reached the handler while it was busy, if any (oldest first)."""
        live = self._live.get(ctx.task_id)
        if live is None or not live.inbox:
            return None
        return live.inbox.popleft()

    async def continue_task(
        self,
        skill: Skill,
        *,
        task_id: str,
        context_id: str,
        follow_up: Message,
        earlier: list[Message],
        tenant: str,
        owner: str,
        version: int,
        state: TaskState,
        caller: CallerSource | None = None,
    ) -> None:
        """A follow-up message on a non-terminal task: record it and get it to the handler.

        ``version`` and ``state`` are what the caller found the task at; ``earlier`` are the
        caller's previous messages on the task, oldest first. A busy handler finds the message
        in its inbox at its next ``ask``; a suspended one resumes with it; if no process holds
        the handler (a restart), it runs again with ``ask``'s replay rule.

        One answer per question: a task waiting for its caller (INPUT_REQUIRED, AUTH_REQUIRED)
        takes the follow-up as its answer by compare-and-swap on ``version``, so of answers
        sent at once one is recorded and the others are refused; so is a message that finds
        the task WORKING on an answer its handler has not acted on yet (no event since). The
        refusal is ``protocol.no_longer_waiting`` (``UnsupportedOperationError``).
        """
        if state not in INTERRUPTED and await self._answer_pending(task_id, version):
            await self._refuse(task_id, tenant, follow_up)
        if self.is_live(task_id) and not self.is_waiting(task_id):
            # A handler that is busy, or waits on something else than ``ask`` (an approval
            # out of band while AUTH_REQUIRED): the message waits in its inbox and the
            # state stays as it is. Found waiting, the task takes it only at that version.
            try:
                await self.store.append(
                    task_id, [follow_up], expected_version=version if state in INTERRUPTED else None
                )
            except (VersionConflictError, IllegalTransitionError):  # answered, or finished
                await self._refuse(task_id, tenant, follow_up)
            self.deliver(task_id, follow_up, caller)
            return
        self.check_capacity()
        answer = version if state in INTERRUPTED else None
        try:
            if self.placement is not None and not self.is_live(task_id):
                await self.placement.continue_elsewhere(
                    task_id, context_id, follow_up, tenant, owner, expected_version=answer
                )
                return
            working = TaskStatusUpdateEvent(
                task_id=task_id,
                context_id=context_id,
                status=TaskStatus(state=TaskState.WORKING, timestamp=now_timestamp()),
            )
            recorded = await self._append_and_publish(
                task_id, (follow_up, working), (working,), expected_version=answer
            )
        except (VersionConflictError, IllegalTransitionError):
            # Another answer came first, or the task finished meanwhile.
            await self._refuse(task_id, tenant, follow_up)
        if self.deliver(task_id, follow_up, caller):
            if answer is not None:
                self._live[task_id].answered_at = recorded
        else:
            first = earlier[0] if earlier else follow_up
            live = self._start(  # capacity checked above
                skill,
                task_id=task_id,
                context_id=context_id,
                message=first,
                tenant=tenant,
                owner=owner,
                state=TaskState.WORKING,
                answers=[*earlier[1:], follow_up] if earlier else [],
                latest=follow_up,
                caller=caller,
            )
            if answer is not None:
                live.answered_at = recorded

    async def _answer_pending(self, task_id: str, version: int) -> bool:
        """Whether the task, found at ``version``, is WORKING on an answer its handler has not
        acted on yet: its last event is the WORKING an answer recorded.

        The live handler knows when the answer went through this process. A store whose
        appends never suspend (the memory store) serves one process, and the answer's request
        marked its handler before any other request could look: nothing more to ask. Else the
        answer may have come through another request mid-way, or another process: the store's
        last two events tell (one read, for follow-ups to a working task only)."""
        live = self._live.get(task_id)
        if live is not None and live.answered_at == version:
            return True
        if self._atomic_appends or version < 3:
            return False
        found = await self.store.events_after(task_id, version - 2)
        if found is None or found.version != version or found.events is None:
            return False  # moved on meanwhile, or folded (no step by step): not provable
        events = [event for _, event in found.events]
        return (
            len(events) == 2
            and isinstance(events[0], Message)
            and events[0].role is Role.USER
            and isinstance(events[1], TaskStatusUpdateEvent)
            and events[1].status.state is TaskState.WORKING
            and events[1].status.message is None
        )

    async def _refuse(self, task_id: str, tenant: str, follow_up: Message) -> NoReturn:
        """Refuse a follow-up the task can no longer take (another answered its question, or
        it finished meanwhile), with the error for the state it is in now."""
        record = await self.store.load(task_id, tenant=tenant)
        if record is None:
            raise TaskNotFoundError(f"Task {task_id} was not found", metadata={"taskId": task_id})
        # A finished task refuses every message, as it did had it been found so.
        resolve_continuation(follow_up, (record.context_id, record.state))
        raise no_longer_waiting(task_id, record.state)

    async def wait_for_message(self, ctx: TaskContext) -> tuple[Message, CallerSource | None]:
        """``ctx.ask`` waits here: off the working count and off the clock."""
        live = self._live[ctx.task_id]
        if live.inbox:
            return live.inbox.popleft()
        loop = asyncio.get_running_loop()
        live.waiter = loop.create_future()
        self._set_working(live, False)
        deadline = live.deadline
        when = deadline.when() if deadline is not None else None
        remaining = None if when is None else when - loop.time()
        if deadline is not None:
            deadline.reschedule(None)
        metrics = self.metrics
        if metrics is not None:
            metrics.waiting.inc()
        try:
            return await live.waiter
        finally:
            if metrics is not None:
                metrics.waiting.dec()
            live.waiter = None
            if not live.working:
                self._set_working(live, True)
            if deadline is not None and remaining is not None:
                deadline.reschedule(loop.time() + remaining)

    def _set_working(self, live: _Live, working: bool) -> None:
        if live.working != working:
            live.working = working
            self._working += 1 if working else -1
            if self.metrics is not None:
                if working:
                    self.metrics.working.inc()
                else:
                    self.metrics.working.dec()

    # -- cancel -----------------------------------------------------------------------------

    async def cancel(
        self, task_id: str, context_id: str, state: TaskState, *, tenant: str = ""
    ) -> None:
        """Cancel the task (of ``tenant``): stop its handler if it runs here (or ask the
        process that runs it), then record CANCELED."""
        if state is TaskState.CANCELED:
            return
        if state in TERMINAL:
            raise TaskNotCancelableError(
                f"Task {task_id} is {state.value} and can no longer be canceled",
                metadata={"taskId": task_id},
            )
        live = self._live.get(task_id)
        if live is not None and live.task is not None:
            live.stop(TaskState.CANCELED)
            await asyncio.wait({live.task})
            return
        if self.placement is not None:
            await self.placement.cancel_elsewhere(task_id, tenant)
        else:
            # No handler holds the task here (it waits for its caller after a restart, never
            # started, or has just returned): its delegations are in the ledger all the same,
            # and an end its handler recorded there first refuses the cancel.
            ended = await self._end_delegations(task_id, tenant, TaskState.CANCELED)
            if ended is not TaskState.CANCELED:
                raise TaskNotCancelableError(
                    f"Task {task_id} is {ended.value} and can no longer be canceled",
                    metadata={"taskId": task_id},
                )
        try:
            await self._emit_status(task_id, context_id, TaskState.CANCELED, None)
        except IllegalTransitionError:
            log.debug("task %s finished before it could be canceled", task_id)

    # -- emitting ---------------------------------------------------------------------------

    async def emit(
        self, ctx: TaskContext, event: TaskStatusUpdateEvent | TaskArtifactUpdateEvent
    ) -> None:
        live = self._live.get(ctx.task_id)
        if live is not None and (live.deferred is not None or live.flushing is not None):
            await self._emit_after_start(live, event)
        elif self._atomic_appends:
            # ``_append_and_publish`` inlined: a handler's every event comes this way.
            version = await self.store.append(ctx.task_id, (event,))
            try:
                await self.bus.publish(ctx.task_id, version, event)
            except ServiceUnavailableError as exc:
                self._unpublished(ctx.task_id, version, exc)
        else:
            await self._append_and_publish(ctx.task_id, (event,), (event,))
        if isinstance(event, TaskStatusUpdateEvent) and ends_blocking_wait(event.status.state):
            live = self._live.get(ctx.task_id)
            if self.metrics is not None:
                self.metrics.task_finished(  # not terminal: ignored
                    event.status.state, ctx.skill_id, None if live is None else live.created_at
                )
            if live is not None:
                live.settle()

    async def _emit_after_start(self, live: _Live, event: Published) -> None:
        """``emit`` for a handler whose WORKING is deferred: one append of both."""
        deferred = await self._take_deferred(live)
        events = (event,) if deferred is None else (deferred, event)
        try:
            await self._append_and_publish(live.ctx.task_id, events, events)
        except BaseException:
            if deferred is not None and live.deferred is None:
                live.deferred = deferred  # not known to be stored: the next write carries it
            raise

    def _defer_start(self, live: _Live) -> None:
        """``ctx.start_work()`` before a skill function, written with the function's first
        event: a function that finishes without waiting on anything (the common quick skill)
        stores WORKING, its artifact and COMPLETED in one append, one commit and one publish.
        Once the function first waits, WORKING is written on its own (``_flush_start``, from
        ``_flushing_at_first_wait``), so a long-running handler's task shows WORKING at once."""
        ctx = live.ctx
        live.deferred = TaskStatusUpdateEvent(
            task_id=ctx.task_id,
            context_id=ctx.context_id,
            status=TaskStatus(state=TaskState.WORKING, timestamp=now_timestamp()),
        )
        ctx.state = TaskState.WORKING

    def _flush_start(self, live: _Live) -> None:
        if live.deferred is None or live.flushing is not None or self._group is None:
            return  # written already, being written, or the runner is torn down
        live.flushing = self._spawn(self._write_start(live))

    async def _write_start(self, live: _Live) -> None:
        event = live.deferred
        try:
            if event is not None:
                await self._append_and_publish(live.ctx.task_id, (event,), (event,))
                if live.deferred is event:
                    live.deferred = None
        except Exception as exc:
            # Kept in ``deferred``: the handler's next event (or its outcome) carries it.
            log.warning("task %s: WORKING not recorded yet: %s", live.ctx.task_id, exc)
        finally:
            live.flushing = None

    async def _take_deferred(self, live: _Live) -> TaskStatusUpdateEvent | None:
        """The deferred WORKING still to write (once a write of it on its own has ended)."""
        flushing = live.flushing
        if flushing is not None:
            await asyncio.wait({flushing})
        deferred, live.deferred = live.deferred, None
        return deferred

    async def _append_and_publish(
        self,
        task_id: str,
        events: Sequence[Event],
        published: Sequence[Published],
        *,
        expected_version: int | None = None,
    ) -> int:
        """Store ``events`` (a compare-and-swap with ``expected_version``) and publish
        ``published`` (the last of them), as one step a cancel cannot split; the new version."""
        if self._atomic_appends:
            version = await self.store.append(task_id, events, expected_version=expected_version)
            await self._publish(task_id, version, published)
            return version
        if self._hooked_store is not None:
            return await self._hooked_then_publish(
                self._hooked_store, task_id, events, published, expected_version
            )
        return await asyncio.shield(
            self._store_then_publish(task_id, events, published, expected_version)
        )

    async def _publish(self, task_id: str, version: int, published: Sequence[Published]) -> None:
        """Publish the last ``len(published)`` events of an append that reached ``version``."""
        first = version - len(published) + 1
        try:
            if len(published) > 1:
                # A bus that takes an append's events at once (RedisBus: one round trip).
                publish_many = getattr(self.bus, "publish_many", None)
                if publish_many is not None:
                    await publish_many(task_id, first, published)
                    return
            for offset, event in enumerate(published):
                await self.bus.publish(task_id, first + offset, event)
        except ServiceUnavailableError as exc:
            self._unpublished(task_id, version, exc)

    def _unpublished(self, task_id: str, version: int, exc: ServiceUnavailableError) -> None:
        """The bus was away past its retries after the events were stored. A bus whose
        subscriptions fill gaps from the store loses nothing (they read what they missed
        there), so the step succeeded and its caller must not be told to retry it (a retry
        would send its message twice); any other bus's outage is raised."""
        if not self._bus_fills_gaps:
            raise exc
        log.warning(
            "peerwire: task %s: version %d stored, not published (%s); its subscribers "
            "read it from the store",
            task_id,
            version,
            exc.message,
        )

    async def _store_then_publish(
        self,
        task_id: str,
        events: Sequence[Event],
        published: Sequence[Published],
        expected_version: int | None = None,
    ) -> int:
        version = await self.store.append(task_id, events, expected_version=expected_version)
        await self._publish(task_id, version, published)
        return version

    async def _hooked_then_publish(
        self,
        store: TaskStore,
        task_id: str,
        events: Sequence[Event],
        published: Sequence[Published],
        expected_version: int | None = None,
    ) -> int:
        """``_store_then_publish`` without a shield: the store's hook hears of the commit even
        if this caller is cancelled while the write goes on, and then the events are published
        by a Task of its own. Publishing (in-process) does not suspend, so nothing else can
        come between stored and published."""
        stored: int | None = None
        abandoned = False

        def durable(version: int) -> None:
            nonlocal stored
            stored = version
            if abandoned:
                self._publish_later(task_id, version, published)

        try:
            version = await store.append(
                task_id, events, expected_version=expected_version, on_durable=durable
            )
        except asyncio.CancelledError:
            abandoned = True
            if stored is not None:  # committed before the cancel reached this caller
                self._publish_later(task_id, stored, published)
            raise
        await self._publish(task_id, version, published)
        return version

    def _publish_later(self, task_id: str, version: int, published: Sequence[Published]) -> None:
        task = asyncio.get_running_loop().create_task(self._publish(task_id, version, published))
        self._late_publications.add(task)
        task.add_done_callback(self._late_publications.discard)

    async def _emit_status(
        self,
        task_id: str,
        context_id: str,
        state: TaskState,
        text: str | None,
        result: TaskArtifactUpdateEvent | None = None,
        *,
        leading: TaskStatusUpdateEvent | None = None,
        live: _Live | None = None,
        reason: str | None = None,
    ) -> None:
        """Record ``state`` (with ``text`` as the agent's message), after ``result``'s artifact
        when given, after ``leading`` (a deferred WORKING) when given: all in one append (one
        commit for a durable store), all published. ``live``: the handler whose outcome it
        is (its skill and creation time go to the metrics). ``reason``: a machine-readable
        reason in the message's metadata (``protocol.reasons``; needs ``text``)."""
        message = None
        if text is not None:
            message = Message(
                message_id=new_id(),
                context_id=context_id,
                task_id=task_id,
                role=Role.AGENT,
                parts=to_parts(text),
                metadata=None if reason is None else status_reason_metadata(reason),
            )
        event = TaskStatusUpdateEvent(
            task_id=task_id,
            context_id=context_id,
            status=TaskStatus(state=state, message=message, timestamp=now_timestamp()),
        )
        events = (event,) if result is None else (result, event)
        if leading is not None:
            events = (leading, *events)
        await self._append_and_publish(task_id, events, events)
        if self.metrics is not None:
            self.metrics.task_finished(  # not terminal: ignored
                state,
                UNKNOWN_SKILL if live is None else live.skill.id,
                None if live is None else live.created_at,
            )

    # -- running a handler ------------------------------------------------------------------

    async def _run(self, live: _Live) -> None:
        try:
            outcome = await self._handle(live)
            ctx = live.ctx
            if self.delegations.delegated(ctx.task_id):
                ending = ctx.state if outcome is None or ctx.state in TERMINAL else outcome[0]
                if ending in TERMINAL:
                    ended = await self._end_delegations(ctx.task_id, ctx.tenant, ending)
                    if ended is not ending and outcome is not None:
                        # A cancel recorded the end first: the handler's result is not kept.
                        outcome = (ended, None)
            leading = await self._take_deferred(live)
            settled = outcome is None or ctx.state in TERMINAL
            if settled and leading is None:
                return
            try:
                if outcome is None or settled:
                    # Not expected (the handler's own events carry a deferred WORKING), but
                    # never dropped.
                    assert leading is not None
                    await self._append_and_publish(ctx.task_id, (leading,), (leading,))
                    return
                # A returned value's artifact goes with the completion, and only with it (a
                # time limit that struck as the skill returned fails the task without it).
                result = live.result if outcome[0] is TaskState.COMPLETED else None
                await self._emit_status(
                    ctx.task_id, ctx.context_id, *outcome, result, leading=leading, live=live
                )
                ctx.state = outcome[0]  # what the task is now (``Placement.run_leased``)
            except (IllegalTransitionError, TaskNotFoundError):
                log.debug("task %s: final state not recorded, it changed meanwhile", ctx.task_id)
            except Exception:
                # The store or the bus failed (an outage): one task's outcome, never a reason
                # for the runner, and so the process, to end.
                log.exception("peerwire: task %s: final state not recorded", ctx.task_id)
                for listener in self._unrecorded_listeners:
                    try:
                        listener(ctx.task_id)
                    except Exception:  # one failing listener must not keep the rest away
                        log.exception("peerwire: an unrecorded-state listener failed")
        finally:
            live.settle()  # the handler is gone: a blocking send waits no longer

    async def _handle(self, live: _Live) -> tuple[TaskState, str | None] | None:
        """Run the handler to its end (or its time limit, or a cancel): the outcome to record
        for its task (None: nothing)."""
        live.started = True
        ctx = live.ctx
        timeout = self.agent.task_timeout
        try:
            try:
                if live.cancel_reason is not None:
                    # Stopped before it began (a cancel right after the task was created):
                    # the handler never runs, its task gets the outcome all the same.
                    return await self._after_cancel(live)
                if timeout is None:
                    return await self._call(live)  # no limit: no timer to arm
                async with asyncio.timeout(timeout) as deadline:
                    live.deadline = deadline
                    return await self._call(live)
            except TimeoutError:
                if live.deadline is None or not live.deadline.expired():
                    raise  # the handler's own TimeoutError: its failure, handled below
                # Stopped as a cancel stops it: the skill's on_cancel hook cleans up.
                live.ending = True
                await _run_cancel_hook(live)
                return (
                    TaskState.FAILED,
                    f"the task did not finish within its time limit of {timeout:g} s",
                )
            except asyncio.CancelledError:
                if live.cancel_reason is None:
                    raise  # not ours to handle: the whole runner is being torn down
                current = asyncio.current_task()
                if current is not None:
                    current.uncancel()
                return await self._after_cancel(live)
        except Exception as exc:  # the handler's failure is its task's failure, not ours
            if not isinstance(exc, IllegalTransitionError):
                # The traceback stays here, in the server's log: the caller gets the message.
                log.error(
                    "task %s: skill %r raised %s",
                    ctx.task_id,
                    live.skill.id,
                    type(exc).__name__,
                    exc_info=exc,
                    extra={
                        "task_id": ctx.task_id,
                        "context_id": ctx.context_id,
                        "skill": live.skill.id,
                        "tenant": ctx.tenant,
                    },
                )
            reason = _describe(exc)
            if tracing.STATE.tracer is not None:
                tracing.handler_failed(exc, reason)
            return (TaskState.FAILED, reason)
        finally:
            self._set_working(live, False)
            del self._live[ctx.task_id]

    async def _call(self, live: _Live) -> tuple[TaskState, str | None] | None:
        """Run the handler; what to record when it returns normally (None: nothing)."""
        ctx, skill = live.ctx, live.skill
        if ctx.needs_recorded_callers:
            # Run again (a restart, another worker) or from the work queue: the callers of
            # its messages are read back, so ``ctx.caller`` is who sent each, as the first time.
            await ctx.recall()
        if skill.executor is not None:
            await skill.executor.execute(ctx)
            return _leftover(ctx)
        assert skill.function is not None
        handler = skill.function(*[_argument(kind, ctx, skill) for kind in skill.arguments])
        if ctx.state is TaskState.WORKING:
            result = await handler
        else:
            self._defer_start(live)  # ``ctx.start_work()``, written with what comes next
            if isinstance(handler, types.CoroutineType):
                result = await _flushing_at_first_wait(handler, self._flush_start, live)
            else:  # another awaitable: written in the next turn of the loop unless carried
                assert self._loop is not None
                self._loop.call_soon(self._flush_start, live)
                result = await handler
        if result is None:
            return _leftover(ctx)
        if isinstance(result, Message):
            await ctx.complete(result)
            return None
        parts = (
            to_parts(result)
            if isinstance(result, str | dict | list | Part)
            else value_parts(result)
        )
        if parts is None:
            raise TypeError(
                f"skill {skill.id!r} returned a value of type {type(result).__name__}; a skill "
                f"returns str, dict, list, Part, Message, None or a typed value ({TYPED_KINDS})"
            )
        # Recorded by ``_run`` together with the completion.
        live.result = TaskArtifactUpdateEvent(
            task_id=ctx.task_id,
            context_id=ctx.context_id,
            artifact=Artifact(artifact_id=new_id(), name="result", parts=parts),
            last_chunk=True,
        )
        return (TaskState.COMPLETED, None)

    async def _after_cancel(self, live: _Live) -> tuple[TaskState, str | None] | None:
        live.ending = True
        if live.cancel_reason is TaskState.CANCELED:
            await _run_cancel_hook(live)
            return (TaskState.CANCELED, None)
        if live.cancel_reason is TaskState.FAILED:
            return (TaskState.FAILED, "the server shut down before the task finished")
        return None  # parked in ask at shutdown: the task keeps waiting for its caller


@types.coroutine
def _flushing_at_first_wait(
    handler: Coroutine[Any, Any, Any], flush: Callable[[_Live], None], live: _Live
) -> Generator[Any, Any, Any]:
    """``await handler``, calling ``flush(live)`` once, when the handler first waits (a
    handler that finishes without waiting, the usual quick skill, never does). The same task
    runs it all, as a plain ``await`` would: ``current_task()``, timeouts and cancellation
    are the handler's own; only the first step is taken here, the rest passed through."""
    try:
        waiting_on = handler.send(None)
    except StopIteration as done:
        return done.value
    flush(live)
    while True:
        try:
            sent = yield waiting_on
        except GeneratorExit:
            handler.close()
            raise
        except BaseException as exc:  # a cancel, or what the awaited future failed with
            try:
                waiting_on = handler.throw(exc)
            except StopIteration as done:
                return done.value
        else:
            try:
                waiting_on = handler.send(sent)
            except StopIteration as done:
                return done.value


async def _run_cancel_hook(live: _Live) -> None:
    """The skill's ``on_cancel`` hook, once its handler was stopped (CancelTask, the time
    limit), bounded: its failure is logged, never the task's outcome."""
    hook = live.skill.on_cancel
    if hook is None or live.ctx.state in TERMINAL:
        return  # a handler that finished its task before it stopped has nothing to undo
    try:
        async with asyncio.timeout(_CANCEL_HOOK_LIMIT_S):
            await hook(live.ctx)
    except Exception as exc:
        log.info("task %s: cancel hook raised %s", live.ctx.task_id, type(exc).__name__)


# How long an on_cancel hook may take before it is cut short.
_CANCEL_HOOK_LIMIT_S = 5.0


def _argument(kind: str, ctx: TaskContext, skill: Skill) -> Any:
    if kind == TYPED:
        assert skill.input_type is not None
        # Checked before the task was created (``Agent.check_typed_input``): decodes again.
        return _typed.decode_input(skill.input_type, skill.id, ctx.message)
    if kind == "text":
        return ctx.message.text
    if kind == "data":
        data = ctx.message.data
        return data if isinstance(data, dict) else {}
    if kind == "message":
        return ctx.message
    if kind == "state":
        return ctx.app_state
    return ctx


def _leftover(ctx: TaskContext) -> tuple[TaskState, str | None] | None:
    """A handler that returned without finishing: complete it, unless it is waiting."""
    if ctx.state in TERMINAL or ctx.state in INTERRUPTED:
        return None
    return (TaskState.COMPLETED, None)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__
