"""The task runner: one owned background task per running A2A task.

Handlers run inside the runner's task group (entered for the server's lifetime), never as
loose ``create_task``s. The runner turns what a handler returns or raises into events, applies
the per-task time limit (which does not run while the handler waits in ``ctx.ask``), caps the
number of *working* handlers (those waiting for input do not count), delivers follow-up
messages to a suspended ``ask`` or re-runs the handler with the replay rule, reaches a running
handler on cancel, and on shutdown lets handlers finish within a grace period.

Every event goes through ``emit``: the store validates and appends it (state machine), then the
bus publishes it at its new version.

The runner uses asyncio's own task group, timeouts and cancellation rather than anyio's: per
A2A task that is one task, one timer, no cancel scopes, which measured as a large share of a
SendMessage on the in-memory store. Handlers may still use anyio freely (it runs on asyncio).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._ids import new_id
from ..errors import (
    IllegalTransitionError,
    ServerBusyError,
    TaskNotCancelableError,
    TaskNotFoundError,
)
from ..protocol import TERMINAL, Event, ends_blocking_wait
from ..types import (
    Artifact,
    Message,
    Part,
    Role,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    now_timestamp,
)
from .agent import Agent, Skill
from .bus import EventBus
from .context import CallerSource, TaskContext, to_parts
from .stores.base import StoredTaskInfo, TaskStore

if TYPE_CHECKING:
    from ..cluster.placement import Placement
    from ..cluster.work_queue import RedisWorkQueue

__all__ = ["Runner"]

log = logging.getLogger("peerwire.runner")

# What the bus carries of a task's events (the user's messages are not published).
Published = TaskStatusUpdateEvent | TaskArtifactUpdateEvent


class _Live:
    """A handler that is running (or suspended in ``ask``) in this process."""

    __slots__ = (
        "cancel_reason",
        "ctx",
        "deadline",
        "inbox",
        "result",
        "settled",
        "skill",
        "started",
        "task",
        "waiter",
        "working",
    )

    def __init__(self, ctx: TaskContext, skill: Skill) -> None:
        self.ctx = ctx
        self.skill = skill
        self.task: asyncio.Task[None] | None = None
        self.deadline: asyncio.Timeout | None = None
        # Follow-ups (with who sent them) the handler has not taken yet, and its ``ask``.
        self.inbox: deque[tuple[Message, CallerSource | None]] = deque()
        self.waiter: asyncio.Future[tuple[Message, CallerSource | None]] | None = None
        self.cancel_reason: TaskState | None = None
        self.working = False
        self.started = False
        # Set by ``launch_watched``: done once the task settles or the handler is gone.
        self.settled: asyncio.Future[None] | None = None
        # The artifact of a skill's returned value, stored with the completion (``_run``).
        self.result: TaskArtifactUpdateEvent | None = None

    def settle(self) -> None:
        settled = self.settled
        if settled is not None and not settled.done():  # its waiter may have been cancelled
            settled.set_result(None)

    def stop(self, reason: TaskState) -> None:
        """Stop the handler for ``reason``.

        A task cancelled before its first step never runs its coroutine at all (not even its
        ``finally``), so one that has not started is only marked: ``_run`` sees the mark and
        records the outcome without calling the handler.
        """
        self.cancel_reason = reason
        if self.started and self.task is not None:
            self.task.cancel()


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
        queue: RedisWorkQueue | None = None,
        consume: bool = True,
    ) -> None:
        """``queue`` shares the work between processes (``placement``): new and continued
        tasks become jobs that any process consuming the queue runs; ``consume=False`` only
        accepts work (a replica that runs no handlers itself)."""
        self.agent = agent
        self.store = store
        self.bus = bus
        self.max_working = max_working
        self.shutdown_grace = shutdown_grace
        self._live: dict[str, _Live] = {}
        self._working = 0
        self._accepting = False
        self._group: asyncio.TaskGroup | None = None
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
        self.placement: Placement | None = None
        if queue is not None:
            from ..cluster.placement import Placement

            self.placement = Placement(self, queue, consume=consume)

    # -- lifetime -------------------------------------------------------------------------

    async def __aenter__(self) -> Runner:
        self._loop = asyncio.get_running_loop()
        self._group = asyncio.TaskGroup()
        await self._group.__aenter__()
        self._accepting = True
        if self.placement is not None:
            await self.placement.begin(self._group)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        group = self._group
        assert group is not None
        try:
            await self.drain()
        finally:
            self._group = None
            await group.__aexit__(None, None, None)

    def on_drain(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` as every drain begins, before any handler is waited for: the
        dispatcher ends its streams there (``Dispatcher.end_streams``), so no stream waits
        for the grace."""
        self._drain_listeners.append(listener)

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
            await self.placement.sweep()
            return
        for info in await self.store.unfinished():
            if info.state not in (TaskState.SUBMITTED, TaskState.WORKING):
                continue  # interrupted tasks simply keep waiting for their caller
            if info.task_id in self._live:
                continue
            if self.agent.on_restart == "resume":
                await self._resume(info)
            else:
                await self._emit_status(
                    info.task_id, info.context_id, TaskState.FAILED, "interrupted by restart"
                )

    async def _resume(self, info: StoredTaskInfo) -> None:
        record = await self.store.load(info.task_id, tenant=info.tenant)
        if record is None:
            return
        user_messages = [m for m in record.history if m.role is Role.USER]
        if not user_messages:
            await self._emit_status(
                info.task_id, info.context_id, TaskState.FAILED, "interrupted by restart"
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
    ) -> None:
        """Run ``skill`` for a task that already exists in the store; ``caller`` sent its
        latest message (``TaskContext.caller``)."""
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
    ) -> None:
        """Get a new task's handler running: here, or through the queue on some worker."""
        if self.placement is None:
            self.start(
                skill,
                task_id=task_id,
                context_id=context_id,
                message=message,
                tenant=tenant,
                owner=owner,
                caller=caller,
            )
        else:
            self.check_capacity()
            await self.placement.enqueue(task_id, tenant, "start", owner)

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
    ) -> _Live:
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
        )
        live = _Live(ctx, skill)
        self._live[task_id] = live
        self._set_working(live, True)
        run = self._run(live) if self.placement is None else self.placement.run_leased(live)
        live.task = self._group.create_task(run)
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
        caller: CallerSource | None = None,
    ) -> None:
        """A follow-up message on a non-terminal task: record it and get it to the handler.

        ``earlier`` are the caller's previous messages on the task, oldest first. A busy handler
        finds the message in its inbox at its next ``ask``; a suspended one resumes with it; if
        no process holds the handler (a restart), it runs again with ``ask``'s replay rule.
        """
        if self.is_live(task_id) and not self.is_waiting(task_id):
            await self.store.append(task_id, [follow_up])
            self.deliver(task_id, follow_up, caller)
            return
        self.check_capacity()
        if self.placement is not None and not self.is_live(task_id):
            await self.placement.continue_elsewhere(task_id, context_id, follow_up, tenant, owner)
            return
        working = TaskStatusUpdateEvent(
            task_id=task_id,
            context_id=context_id,
            status=TaskStatus(state=TaskState.WORKING, timestamp=now_timestamp()),
        )
        await self._append_and_publish(task_id, (follow_up, working), (working,))
        if not self.deliver(task_id, follow_up, caller):
            first = earlier[0] if earlier else follow_up
            self.start(
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
        try:
            return await live.waiter
        finally:
            live.waiter = None
            if not live.working:
                self._set_working(live, True)
            if deadline is not None and remaining is not None:
                deadline.reschedule(loop.time() + remaining)

    def _set_working(self, live: _Live, working: bool) -> None:
        if live.working != working:
            live.working = working
            self._working += 1 if working else -1

    # -- cancel -----------------------------------------------------------------------------

    async def cancel(self, task_id: str, context_id: str, state: TaskState) -> None:
        """Cancel the task: stop its handler if it runs here, then record CANCELED."""
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
            await self.placement.cancel_elsewhere(task_id)
        try:
            await self._emit_status(task_id, context_id, TaskState.CANCELED, None)
        except IllegalTransitionError:
            log.debug("task %s finished before it could be canceled", task_id)

    # -- emitting ---------------------------------------------------------------------------

    async def emit(
        self, ctx: TaskContext, event: TaskStatusUpdateEvent | TaskArtifactUpdateEvent
    ) -> None:
        if self._atomic_appends:
            # ``_append_and_publish`` inlined: a handler's every event comes this way.
            version = await self.store.append(ctx.task_id, (event,))
            await self.bus.publish(ctx.task_id, version, event)
        else:
            await self._append_and_publish(ctx.task_id, (event,), (event,))
        if isinstance(event, TaskStatusUpdateEvent) and ends_blocking_wait(event.status.state):
            live = self._live.get(ctx.task_id)
            if live is not None:
                live.settle()

    async def _append_and_publish(
        self, task_id: str, events: Sequence[Event], published: Sequence[Published]
    ) -> None:
        """Store ``events`` and publish ``published`` (the last of them), as one step a cancel
        cannot split."""
        if self._atomic_appends:
            version = await self.store.append(task_id, events)
            await self._publish(task_id, version, published)
        elif self._hooked_store is not None:
            await self._hooked_then_publish(self._hooked_store, task_id, events, published)
        else:
            await asyncio.shield(self._store_then_publish(task_id, events, published))

    async def _publish(self, task_id: str, version: int, published: Sequence[Published]) -> None:
        """Publish the last ``len(published)`` events of an append that reached ``version``."""
        first = version - len(published) + 1
        for offset, event in enumerate(published):
            await self.bus.publish(task_id, first + offset, event)

    async def _store_then_publish(
        self, task_id: str, events: Sequence[Event], published: Sequence[Published]
    ) -> None:
        version = await self.store.append(task_id, events)
        await self._publish(task_id, version, published)

    async def _hooked_then_publish(
        self,
        store: TaskStore,
        task_id: str,
        events: Sequence[Event],
        published: Sequence[Published],
    ) -> None:
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
            version = await store.append(task_id, events, on_durable=durable)
        except asyncio.CancelledError:
            abandoned = True
            if stored is not None:  # committed before the cancel reached this caller
                self._publish_later(task_id, stored, published)
            raise
        await self._publish(task_id, version, published)

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
    ) -> None:
        """Record ``state`` (with ``text`` as the agent's message), after ``result``'s artifact
        when given: both in one append (one commit for a durable store), both published."""
        message = None
        if text is not None:
            message = Message(
                message_id=new_id(),
                context_id=context_id,
                task_id=task_id,
                role=Role.AGENT,
                parts=to_parts(text),
            )
        event = TaskStatusUpdateEvent(
            task_id=task_id,
            context_id=context_id,
            status=TaskStatus(state=state, message=message, timestamp=now_timestamp()),
        )
        events = (event,) if result is None else (result, event)
        await self._append_and_publish(task_id, events, events)

    # -- running a handler ------------------------------------------------------------------

    async def _run(self, live: _Live) -> None:
        try:
            outcome = await self._handle(live)
            ctx = live.ctx
            if outcome is None or ctx.state in TERMINAL:
                return
            # A returned value's artifact goes with the completion, and only with it (a time
            # limit that struck as the skill returned fails the task without it).
            result = live.result if outcome[0] is TaskState.COMPLETED else None
            try:
                await self._emit_status(ctx.task_id, ctx.context_id, *outcome, result)
            except (IllegalTransitionError, TaskNotFoundError):
                log.debug("task %s: final state not recorded, it changed meanwhile", ctx.task_id)
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
                log.info("task %s: handler raised %s", ctx.task_id, type(exc).__name__)
            return (TaskState.FAILED, _describe(exc))
        finally:
            self._set_working(live, False)
            del self._live[ctx.task_id]

    async def _call(self, live: _Live) -> tuple[TaskState, str | None] | None:
        """Run the handler; what to record when it returns normally (None: nothing)."""
        ctx, skill = live.ctx, live.skill
        if skill.executor is not None:
            await skill.executor.execute(ctx)
            return _leftover(ctx)
        assert skill.function is not None
        await ctx.start_work()
        result = await skill.function(*[_argument(kind, ctx) for kind in skill.arguments])
        if result is None:
            return _leftover(ctx)
        if isinstance(result, Message):
            await ctx.complete(result)
            return None
        if not isinstance(result, str | dict | list | Part):
            raise TypeError(
                f"skill {skill.id!r} returned a value of type {type(result).__name__}; a skill "
                "returns str, dict, list, Part, Message or None"
            )
        # Recorded by ``_run`` together with the completion.
        live.result = TaskArtifactUpdateEvent(
            task_id=ctx.task_id,
            context_id=ctx.context_id,
            artifact=Artifact(artifact_id=new_id(), name="result", parts=to_parts(result)),
            last_chunk=True,
        )
        return (TaskState.COMPLETED, None)

    async def _after_cancel(self, live: _Live) -> tuple[TaskState, str | None] | None:
        if live.cancel_reason is TaskState.CANCELED:
            hook = live.skill.on_cancel
            if hook is not None:
                try:
                    async with asyncio.timeout(5):
                        await hook(live.ctx)
                except Exception as exc:
                    log.info("task %s: cancel hook raised %s", live.ctx.task_id, type(exc).__name__)
            return (TaskState.CANCELED, None)
        if live.cancel_reason is TaskState.FAILED:
            return (TaskState.FAILED, "the server shut down before the task finished")
        return None  # parked in ask at shutdown: the task keeps waiting for its caller


def _argument(kind: str, ctx: TaskContext) -> Any:
    if kind == "text":
        return ctx.message.text
    if kind == "data":
        data = ctx.message.data
        return data if isinstance(data, dict) else {}
    if kind == "message":
        return ctx.message
    return ctx


def _leftover(ctx: TaskContext) -> tuple[TaskState, str | None] | None:
    """A handler that returned without finishing: complete it, unless it is waiting."""
    if ctx.state in TERMINAL or ctx.state in (TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED):
        return None
    return (TaskState.COMPLETED, None)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__
