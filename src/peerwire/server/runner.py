"""The task runner: one owned background task per running A2A task.

Handlers run inside the runner's task group (entered for the server's lifetime), never as
loose ``create_task``s. The runner turns what a handler returns or raises into events, applies
the per-task time limit (which does not run while the handler waits in ``ctx.ask``), caps the
number of *working* handlers (those waiting for input do not count), delivers follow-up
messages to a suspended ``ask`` or re-runs the handler with the replay rule, reaches a running
handler on cancel, and on shutdown lets handlers finish within a grace period.

Every event goes through ``emit``: the store validates and appends it (state machine), then the
bus publishes it at its new version.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import deque
from typing import Any

import anyio
import anyio.abc

from ..errors import (
    IllegalTransitionError,
    ServerBusyError,
    TaskNotCancelableError,
    TaskNotFoundError,
)
from ..protocol import INTERRUPTED, TERMINAL
from ..types import (
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
from .context import TaskContext, to_parts
from .stores.base import StoredTaskInfo, TaskStore

__all__ = ["Runner"]

log = logging.getLogger("peerwire.runner")


class _Live:
    """A handler that is running (or suspended in ``ask``) in this process."""

    __slots__ = ("cancel_reason", "ctx", "done", "inbox", "scope", "skill", "waiter", "working")

    def __init__(self, ctx: TaskContext, skill: Skill) -> None:
        self.ctx = ctx
        self.skill = skill
        self.scope = anyio.CancelScope()
        self.done = anyio.Event()
        self.inbox: deque[Message] = deque()
        self.waiter: asyncio.Future[Message] | None = None
        self.cancel_reason: TaskState | None = None
        self.working = False


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
    ) -> None:
        self.agent = agent
        self.store = store
        self.bus = bus
        self.max_working = max_working
        self.shutdown_grace = shutdown_grace
        self._live: dict[str, _Live] = {}
        self._working = 0
        self._accepting = False
        self._group: anyio.abc.TaskGroup | None = None

    # -- lifetime -------------------------------------------------------------------------

    async def __aenter__(self) -> Runner:
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        self._accepting = True
        return self

    async def __aexit__(self, *exc: Any) -> None:
        group = self._group
        assert group is not None
        try:
            await self.drain()
        finally:
            self._group = None
            await group.__aexit__(None, None, None)

    async def drain(self) -> None:
        """Take no more work; let working handlers finish within the grace, then fail them.

        Handlers parked in ``ask`` are let go and their tasks stay interrupted. A server calls
        this as its shutdown begins, before it waits for open connections, so callers blocked
        on a task or following its stream still get its outcome; exiting the runner calls it
        again, with nothing left to do.
        """
        self._accepting = False
        await self._drain()

    async def _drain(self) -> None:
        with anyio.move_on_after(self.shutdown_grace):
            # Polling, bounded by the grace period, once per shutdown: simpler than an event.
            while any(live.working for live in self._live.values()):  # noqa: ASYNC110
                await anyio.sleep(0.02)
        for live in list(self._live.values()):
            # Working handlers fail; one parked in ``ask`` leaves its task as it stands
            # (interrupted), to be answered after a restart (the replay rule).
            live.cancel_reason = TaskState.FAILED if live.working else live.ctx.state
            live.scope.cancel()
        with anyio.move_on_after(max(self.shutdown_grace, 1.0)):
            while self._live:  # noqa: ASYNC110
                await anyio.sleep(0.01)

    async def recover(self) -> None:
        """After a restart: fail (or re-run) tasks that were working when the process died."""
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
    ) -> None:
        """Run ``skill`` for a task that already exists in the store."""
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
        )

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
    ) -> None:
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
        )
        live = _Live(ctx, skill)
        self._live[task_id] = live
        self._set_working(live, True)
        self._group.start_soon(self._run, live)

    def is_live(self, task_id: str) -> bool:
        return task_id in self._live

    def is_waiting(self, task_id: str) -> bool:
        """Whether the task's handler is suspended in ``ctx.ask``."""
        live = self._live.get(task_id)
        return live is not None and live.waiter is not None

    def deliver(self, task_id: str, message: Message) -> bool:
        """Hand a follow-up message to the task's live handler; False if there is none."""
        live = self._live.get(task_id)
        if live is None:
            return False
        live.ctx.latest_message = message
        waiter = live.waiter
        if waiter is not None and not waiter.done():
            self.check_capacity()
            self._set_working(live, True)
            waiter.set_result(message)
        else:
            live.inbox.append(message)
        return True

    def queued_message(self, ctx: TaskContext) -> Message | None:
        """A follow-up that reached the handler while it was busy, if any (oldest first)."""
        live = self._live.get(ctx.task_id)
        if live is None or not live.inbox:
            return None
        return live.inbox.popleft()

    async def wait_for_message(self, ctx: TaskContext) -> Message:
        """``ctx.ask`` waits here: off the working count and off the clock."""
        live = self._live[ctx.task_id]
        if live.inbox:
            return live.inbox.popleft()
        live.waiter = asyncio.get_running_loop().create_future()
        self._set_working(live, False)
        deadline = live.scope.deadline
        remaining = deadline - anyio.current_time()
        live.scope.deadline = math.inf
        try:
            return await live.waiter
        finally:
            live.waiter = None
            if not live.working:
                self._set_working(live, True)
            if deadline != math.inf:
                live.scope.deadline = anyio.current_time() + remaining

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
        if live is not None:
            live.cancel_reason = TaskState.CANCELED
            live.scope.cancel()
            await live.done.wait()
            return
        try:
            await self._emit_status(task_id, context_id, TaskState.CANCELED, None)
        except IllegalTransitionError:
            log.debug("task %s finished before it could be canceled", task_id)

    # -- emitting ---------------------------------------------------------------------------

    async def emit(
        self, ctx: TaskContext, event: TaskStatusUpdateEvent | TaskArtifactUpdateEvent
    ) -> None:
        version = await self.store.append(ctx.task_id, [event])
        await self.bus.publish(ctx.task_id, version, event)

    async def _emit_status(
        self, task_id: str, context_id: str, state: TaskState, text: str | None
    ) -> None:
        message = None
        if text is not None:
            message = Message(
                message_id=_new_id(),
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
        version = await self.store.append(task_id, [event])
        await self.bus.publish(task_id, version, event)

    # -- running a handler ------------------------------------------------------------------

    async def _run(self, live: _Live) -> None:
        ctx, skill = live.ctx, live.skill
        timeout = self.agent.task_timeout
        if timeout is not None:
            live.scope.deadline = anyio.current_time() + timeout
        outcome: tuple[TaskState, str | None] | None = None
        try:
            with live.scope:
                outcome = await self._call(ctx, skill)
            if live.scope.cancelled_caught:
                outcome = await self._after_cancel(live, timeout)
        except Exception as exc:  # the handler's failure is its task's failure, not ours
            outcome = (TaskState.FAILED, _describe(exc))
            if not isinstance(exc, IllegalTransitionError):
                log.info("task %s: handler raised %s", ctx.task_id, type(exc).__name__)
        finally:
            self._set_working(live, False)
            del self._live[ctx.task_id]
            try:
                if outcome is not None and ctx.state not in TERMINAL:
                    with anyio.CancelScope(shield=True):
                        await self._emit_status(ctx.task_id, ctx.context_id, *outcome)
            except (IllegalTransitionError, TaskNotFoundError):
                log.debug("task %s: final state not recorded, it changed meanwhile", ctx.task_id)
            finally:
                live.done.set()

    async def _call(self, ctx: TaskContext, skill: Skill) -> tuple[TaskState, str | None] | None:
        """Run the handler; what to record when it returns normally (None: nothing)."""
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
        await ctx.add_artifact(result, name="result", last_chunk=True)
        return (TaskState.COMPLETED, None)

    async def _after_cancel(
        self, live: _Live, timeout: float | None
    ) -> tuple[TaskState, str | None] | None:
        ctx = live.ctx
        if live.cancel_reason is TaskState.CANCELED:
            hook = live.skill.on_cancel
            if hook is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    await hook(ctx)
            return (TaskState.CANCELED, None)
        if live.cancel_reason is TaskState.FAILED:
            return (TaskState.FAILED, "the server shut down before the task finished")
        if live.cancel_reason in INTERRUPTED:
            return None  # parked in ask at shutdown: the task keeps waiting for its caller
        if live.cancel_reason is None and timeout is not None:
            return (
                TaskState.FAILED,
                f"the task did not finish within its time limit of {timeout:g} s",
            )
        return None


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


def _new_id() -> str:
    from .._ids import new_id

    return new_id()
