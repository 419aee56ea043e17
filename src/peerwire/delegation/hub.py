"""``DelegationHub``: the delegations of a server's tasks, as the runner sees them.

One ``Delegations`` per parent task (its scope is the task's id), made when the handler first
delegates. When a task ends, the runner calls ``task_ended`` before recording the final
state: the task's open delegations are canceled at their agents (all at once, each bounded by
``cancel_within``; one its agent does not confirm stays open, flagged ``CANCEL_UNCONFIRMED``,
and is canceled again in the background until the agent answers), and unless it completed,
the compensations its steps registered become due and run in the background, newest first,
retried with backoff; those that keep failing land in the dead-letter list. After a restart,
``recover`` finishes what a dead process left: open delegations of tasks that ended,
compensations due or half run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from ..protocol import TERMINAL
from ..types import TaskState
from ._observe import Observer
from .connector import Connect, Connector
from .delegations import Delegations
from .entries import OPEN_STATUSES, PENDING_UNDO_STATUSES, EntryStatus, unsettled
from .store import LedgerStore

__all__ = ["DelegationHub", "ParentState"]

log = logging.getLogger("peerwire.delegation")

ParentState = Callable[[str, str], Awaitable[TaskState | None]]
"""The state of a parent task, from ``(tenant, task_id)`` (``None``: no such task)."""

# The longest wait between two cancels of a step its agent did not confirm.
_CONFIRM_MAX_S = 30.0

# The statuses an unsettled entry can have (``unsettled`` tells steps and undos apart).
_UNFINISHED = OPEN_STATUSES | PENDING_UNDO_STATUSES | {EntryStatus.REGISTERED}


class DelegationHub:
    """Delegations of a server's tasks over ``store`` (``create_app`` makes one beside the
    task store: the same SQLite file or PostgreSQL schema)."""

    def __init__(
        self,
        store: LedgerStore,
        *,
        connect: Connect | None = None,
        cancel_within: float = 5.0,
        unreachable_after: float = 60.0,
        compensation_attempts: int = 5,
        compensation_backoff: float = 0.5,
        compensation_timeout: float = 30.0,
        metrics: Any = None,
    ) -> None:
        """``metrics`` (a ``peerwire.ops.Metrics``) counts delegation events; the runner
        gives its own when this has none."""
        self.store = store
        self.observer = Observer(metrics)
        self.connector = Connector(connect)
        self._options: dict[str, Any] = {
            "cancel_within": cancel_within,
            "unreachable_after": unreachable_after,
            "compensation_attempts": compensation_attempts,
            "compensation_backoff": compensation_backoff,
            "compensation_timeout": compensation_timeout,
        }
        self._active: dict[str, Delegations] = {}
        self._background: set[asyncio.Task[None]] = set()

    async def open(self) -> None:
        await self.store.open()

    async def close(self) -> None:
        """Stop the compensations running in the background (their entries stay due, for the
        next start's ``recover``), close the clients and the store."""
        background, self._background = set(self._background), set()
        for task in background:
            task.cancel()
        if background:
            await asyncio.wait(background)
        try:
            await self.connector.aclose()
        finally:
            await self.store.close()

    def for_task(self, task_id: str, tenant: str) -> Delegations:
        """The delegations of a running task (made on first use)."""
        scope = self._active.get(task_id)
        if scope is None or scope.tenant != tenant:
            scope = self._active[task_id] = self._scope(task_id, tenant)
        return scope

    def delegated(self, task_id: str) -> bool:
        """Whether the task's handler used delegation in this process (a dict lookup: the
        runner asks at every task's end)."""
        return task_id in self._active

    def _scope(self, task_id: str, tenant: str) -> Delegations:
        return Delegations(
            self.store,
            self.connector,
            scope=task_id,
            tenant=tenant,
            observer=self.observer,
            **self._options,
        )

    async def task_ended(self, task_id: str, tenant: str, state: TaskState) -> TaskState:
        """The task is ending in ``state`` (terminal): record that end once, cancel its open
        delegations, then settle its compensations (discarded when it completed, else run in
        the background). The end is one decision: when another path recorded the task's end
        first (a cancel racing the handler's return), that end is returned and nothing is
        done here; the caller records that end instead of its own. A task that did not
        delegate here (a replayed handler that has not delegated again, a cancel with no
        handler) is looked up in the ledger first: one query, and nothing more when it holds
        nothing."""
        scope = self._active.pop(task_id, None)
        if scope is None or not scope._handles:
            if not await self.store.entries(tenant=tenant, scope=task_id, with_end=True):
                return state
            scope = scope or self._scope(task_id, tenant)
        decided, first = await scope.record_end(state)
        if first:
            await self._settle(scope, decided)
        return decided

    async def _settle(self, scope: Delegations, state: TaskState) -> None:
        name = state.name.lower()
        await scope.cancel_open(f"the parent task {scope.scope} ended {name}")
        unconfirmed = await _unconfirmed(scope)
        if state is TaskState.COMPLETED:
            await scope.discard_compensations("the parent task completed")
            if unconfirmed:
                self._spawn(self._confirm_cancels(scope, state), scope.scope)
            return
        if await scope.mark_compensations_due(f"the parent task ended {name}") or unconfirmed:
            self._spawn(self._confirm_cancels(scope, state), scope.scope)

    async def _confirm_cancels(self, scope: Delegations, state: TaskState) -> None:
        """After the parent ended: run the undos due, then keep canceling the steps whose
        cancel the agent did not confirm (backoff up to ``_CONFIRM_MAX_S``) until it answers,
        running each such step's undo once its end is known and it may have acted. Stops
        with ``close``; the next start's ``recover`` goes on."""
        name = state.name.lower()
        compensating = state is not TaskState.COMPLETED
        if compensating:
            await scope.compensate(f"the parent task ended {name}")
        delay = scope.cancel_within
        while await _unconfirmed(scope):
            await asyncio.sleep(delay)
            delay = min(delay * 2, _CONFIRM_MAX_S)
            await scope.cancel_open(f"the parent task {scope.scope} ended {name}")
            if compensating:
                await scope.compensate(f"the parent task ended {name}")

    def _spawn(self, work: Coroutine[Any, Any, object], scope: str) -> None:
        async def run() -> None:
            try:
                await work
            except asyncio.CancelledError:
                raise
            except Exception:  # a store outage: the entries stay due for the next start
                log.exception("peerwire: compensations of task %s stopped", scope)

        task = asyncio.get_running_loop().create_task(run(), name=f"compensate {scope}")
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def recover(self, parent_state: ParentState) -> None:
        """After a restart: for every task that has unfinished entries and has ended, cancel
        what is still open and run what is still to undo. Tasks still running are left to
        their handlers (``on_restart="resume"`` replays them)."""
        entries = await self.store.entries(statuses=_UNFINISHED)
        scopes = sorted({(entry.tenant, entry.scope) for entry in entries if unsettled(entry)})
        for tenant, task_id in scopes:
            if task_id in self._active:
                continue
            try:
                state = await parent_state(tenant, task_id)
            except Exception:
                log.exception("peerwire: delegations of task %s not recovered", task_id)
                continue
            # A scope that is no task here (a ``Ledger``'s job sharing the database, a task
            # retention removed) is not this server's to settle.
            if state is None or state not in TERMINAL:
                continue
            try:
                scope = self._scope(task_id, tenant)
                # The end recorded first stands (a process that died after recording it).
                decided, _ = await scope.record_end(state)
                await self._settle(scope, decided)
            except Exception:
                log.exception("peerwire: delegations of task %s not recovered", task_id)


async def _unconfirmed(scope: Delegations) -> bool:
    return any(handle.entry.cancel_unconfirmed for handle in await scope.open())
