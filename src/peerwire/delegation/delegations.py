"""``Delegations``: every delegation of one scope (a parent task, or a ``Ledger``'s job).

What a handler reaches as ``ctx.delegations`` (and ``ctx.delegate``): start delegations one
at a time or as a fan-out, find them again by key (a replay gets the recorded entry back,
nothing is sent again), cancel what is open, and run the compensations steps registered,
newest first, each retried with backoff and parked in the dead-letter list when it keeps
failing.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import msgspec

from .._ids import new_id
from ..types import Message, Part, Role, TaskState, decode, encode
from ._observe import Observer
from .connector import Connector
from .delegation import Delegation, outcome_of
from .entries import (
    CANCEL_UNCONFIRMED,
    END_KEY,
    OPEN_STATUSES,
    PENDING_UNDO_STATUSES,
    RUN_ENDED_STATUSES,
    EntryKind,
    EntryStatus,
    Follow,
    LedgerEntry,
    drawn_context,
)
from .errors import DelegationConflictError, DelegationNotFoundError
from .outcomes import Canceled, Completed, Failed, Outcome, Rejected, TimedOut
from .store import LedgerStore

__all__ = ["Call", "Delegations", "OnFailure", "Undo", "describe_entry"]

OnFailure = Literal["cancel_rest", "let_finish"]

# What counts as a failure of a fan-out's call (a stall does not).
_FAILURES = (Failed, Rejected, TimedOut, Canceled)
# How a parent's end is recorded in its ``end`` row.
_ENDS = {
    TaskState.COMPLETED: EntryStatus.COMPLETED,
    TaskState.FAILED: EntryStatus.FAILED,
    TaskState.CANCELED: EntryStatus.CANCELED,
    TaskState.REJECTED: EntryStatus.REJECTED,
}


# A compensation's next run's messageId, from its previous run's (``_fresh_attempt``).
_RUN_IDS = uuid.UUID("0d6f3b2a-9c41-4e8d-b7a5-2f1e6c9d8a30")


@dataclass(frozen=True, slots=True)
class Undo:
    """How to undo a step: a delegation of ``message`` to ``agent`` (its URL), run when the
    parent does not complete (``delegate(..., compensate=Undo(...))``,
    ``Call(..., compensate=...)``; the same as ``Delegation.compensate_with``). ``key``
    names it in the ledger (default ``"<step key>/undo"``).

    An undo must be idempotent and tolerate finding nothing to undo: it runs for every step
    that may have acted (a remote task FAILED, interrupted, or of unknown fate counts), and
    at least once. Its ``messageId`` is drawn by the ledger and resent unchanged by a retry
    that may not have reached the agent, so a peerwire agent (idempotent sends) does it once
    (docs/DELEGATION.md, "Undos are at least once")."""

    agent: str
    message: str | Message
    key: str | None = None


@dataclass(frozen=True, slots=True)
class Call:
    """One call of a fan-out (``delegate_all``): the arguments of ``delegate``.

    ``compensate`` registers the call's undo before anything of the fan-out is sent, so a
    cancel, a failure or a crash during the fan-out finds it registered."""

    agent: str
    message: str | Message
    key: str
    deadline: float | None = None
    stall_deadline: float | None = None
    follow: Follow = "subscribe"
    context_id: str | None = None
    compensate: Undo | None = None


class Delegations:
    """The delegations of one scope, over a ledger store and a connector.

    ``cancel_within`` bounds every cancel (each of a ``cancel_open``'s, all at once; the one
    a deadline makes: its grace, so ``result()`` returns within deadline + ``cancel_within``;
    a cancel not confirmed in that time leaves the step open, ``CANCEL_UNCONFIRMED``);
    ``unreachable_after`` is how long
    following a task may keep failing before ``result()`` gives up (``Failed``, the entry left
    open); a compensation runs at most ``compensation_attempts`` times, ``compensation_backoff``
    seconds apart at first (doubling), each run within ``compensation_timeout``.
    """

    def __init__(
        self,
        store: LedgerStore,
        connector: Connector,
        *,
        scope: str,
        tenant: str = "",
        cancel_within: float = 5.0,
        unreachable_after: float = 60.0,
        compensation_attempts: int = 5,
        compensation_backoff: float = 0.5,
        compensation_timeout: float = 30.0,
        observer: Observer | None = None,
    ) -> None:
        if compensation_attempts < 1:
            raise ValueError("compensation_attempts must be at least 1")
        self.store = store
        self.connector = connector
        self.scope = scope
        self.tenant = tenant
        self.cancel_within = cancel_within
        self.unreachable_after = unreachable_after
        self.compensation_attempts = compensation_attempts
        self.compensation_backoff = compensation_backoff
        self.compensation_timeout = compensation_timeout
        self.observer = observer or Observer()
        self._handles: dict[str, Delegation] = {}

    # -- starting -------------------------------------------------------------------------

    async def delegate(
        self,
        agent: str,
        message: str | Message,
        *,
        key: str,
        deadline: float | None = None,
        stall_deadline: float | None = None,
        follow: Follow = "subscribe",
        context_id: str | None = None,
        compensate: Undo | None = None,
        start: bool = True,
    ) -> Delegation:
        """Record the delegation (an intent, before anything is sent), send it, record the
        remote task, and return its handle; ``await handle.result()`` follows it to its
        outcome. A ``key`` already recorded in this scope returns the recorded delegation
        instead: nothing is sent again (an intent whose send never got an answer is looked
        for at the agent, then sent again with the same ``messageId``). Whatever the agent
        does, this does not raise: ``result()`` says what came of it. ``compensate``
        registers the step's undo after the intent is recorded and before it is sent
        (``Delegation.compensate_with``; a replay registers nothing twice). ``start=False``
        only records the intent (the send then happens in ``result()``)."""
        _check_key(key)
        if compensate is not None and not isinstance(compensate, Undo):
            raise TypeError(
                f"compensate must be an Undo(agent, message), not {type(compensate).__name__}"
            )
        if follow not in ("subscribe", "poll"):
            raise ValueError(f"follow must be 'subscribe' or 'poll', got {follow!r}")
        for name, value in (("deadline", deadline), ("stall_deadline", stall_deadline)):
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive seconds, got {value!r}")
        entry = await self._record(
            "step",
            agent,
            message,
            key=key,
            context_id=context_id,
            follow=follow,
            deadline_at=None if deadline is None else time.time() + deadline,
            stall_deadline=stall_deadline,
            status=EntryStatus.INTENT,
        )
        handle = self._handle(entry)
        if compensate is not None:
            await handle.compensate_with(compensate.agent, compensate.message, key=compensate.key)
        if start:
            await handle.start()
        return handle

    async def delegate_all(
        self,
        calls: Sequence[Call],
        *,
        deadline: float | None = None,
        on_failure: OnFailure = "cancel_rest",
    ) -> list[Outcome]:
        """Start every call at once; their outcomes in the order given.

        ``deadline`` bounds the group (a call's own deadline applies when shorter). With
        ``on_failure="cancel_rest"`` the first call that fails, is rejected, is canceled or
        times out cancels the calls still running (each ``Canceled``, naming it); with
        ``"let_finish"`` the others run to their own end. A stall is not a failure."""
        if on_failure not in ("cancel_rest", "let_finish"):
            raise ValueError(
                f"on_failure must be 'cancel_rest' or 'let_finish', not {on_failure!r}"
            )
        keys = [call.key for call in calls]
        if len(set(keys)) != len(keys):
            raise ValueError(f"the calls of a fan-out need distinct keys, got {keys}")
        handles = []
        for call in calls:
            limits = [d for d in (call.deadline, deadline) if d is not None]
            handles.append(
                await self.delegate(
                    call.agent,
                    call.message,
                    key=call.key,
                    deadline=min(limits) if limits else None,
                    stall_deadline=call.stall_deadline,
                    follow=call.follow,
                    context_id=call.context_id,
                    compensate=call.compensate,
                    start=False,
                )
            )
        # Sent at once (each intent, and each undo, recorded first, above), each followed as
        # soon as its own send returns: a call that fails early cancels the rest even while
        # another's send hangs.
        with self.observer.span("delegation.fan_out", scope=self.scope, calls=str(len(calls))):
            return await _fan_out(handles, on_failure)

    # -- finding ----------------------------------------------------------------------------

    async def attach(self, key: str) -> Delegation:
        """The recorded delegation ``key`` (to follow it on after a restart)."""
        entry = await self.store.find(self.tenant, self.scope, key)
        if entry is None:
            raise DelegationNotFoundError(f"no delegation {key!r} in scope {self.scope!r}", key=key)
        return self._handle(entry)

    async def entries(
        self, *, open_only: bool = False, kind: EntryKind | None = None
    ) -> list[LedgerEntry]:
        """What the ledger holds for this scope, oldest first (``open_only``: still open;
        the parent's ``end`` row only with ``kind="end"``)."""
        found = await self.store.entries(
            tenant=self.tenant,
            scope=self.scope,
            statuses=OPEN_STATUSES if open_only else None,
            with_end=kind == "end",
        )
        return [e for e in found if kind is None or e.kind == kind]

    async def open(self) -> list[Delegation]:
        """Handles on every step still open, to follow on (``result()``) after a restart."""
        return [self._handle(entry) for entry in await self.entries(open_only=True, kind="step")]

    def _handle(self, entry: LedgerEntry) -> Delegation:
        handle = self._handles.get(entry.key)
        if handle is None or handle.entry.id != entry.id:
            handle = self._handles[entry.key] = Delegation(self, entry)
        elif entry.version > handle.entry.version:
            # Read fresher than the handle holds (another writer): act on what is stored.
            handle._adopt(entry)
        return handle

    # -- canceling --------------------------------------------------------------------------

    async def cancel_open(self, reason: str = "canceled by the caller") -> list[Outcome]:
        """Cancel every open step at its agent, all at once, each within ``cancel_within``;
        the outcomes (a cancel not confirmed in time leaves its entry open, flagged
        ``CANCEL_UNCONFIRMED``)."""
        handles = await self.open()
        if not handles:
            return []
        with self.observer.span("delegation.cancel_open", scope=self.scope):
            # Each cancel bounds itself (``Delegation.cancel``): none is cut off mid-write.
            cancels = [asyncio.ensure_future(h.cancel(reason)) for h in handles]
            await asyncio.wait(cancels)
        outcomes: list[Outcome] = []
        for handle, cancel in zip(handles, cancels, strict=True):
            failure = cancel.exception()
            if failure is None:
                outcomes.append(cancel.result())
                continue
            why = f"{reason}: the cancel failed: {type(failure).__name__}: {failure}"
            try:
                # Over the status it was read with: an end recorded meanwhile stands.
                await handle._update(
                    status=handle.entry.status, reason=why, cause=CANCEL_UNCONFIRMED
                )
            finally:
                outcomes.append(
                    Failed(handle.key, handle.agent, handle.remote_task_id, why, "unreachable")
                )
        return outcomes

    # -- compensation -----------------------------------------------------------------------

    async def register_compensation(
        self, step: LedgerEntry, agent: str, message: str | Message, *, key: str | None = None
    ) -> None:
        """Record ``message`` to ``agent`` as the undo of ``step`` (see
        ``Delegation.compensate_with``)."""
        key = key if key is not None else f"{step.key}/undo"
        _check_key(key)
        entry = await self._record(
            "compensation",
            agent,
            message,
            key=key,
            context_id=None,
            follow="subscribe",
            deadline_at=None,
            stall_deadline=None,
            status=EntryStatus.REGISTERED,
            compensates=step.key,
        )
        if entry.compensates != step.key:
            raise DelegationConflictError(
                f"key {key!r} already undoes {entry.compensates!r}, not {step.key!r}", key=key
            )

    async def record_end(self, state: TaskState) -> tuple[TaskState, bool]:
        """Record how the parent ended, once for all: the state recorded (``state``, or the
        one an earlier call recorded first) and whether this call recorded it. Whoever
        records first (the handler completing, failing, a cancel) decides whether the
        compensations run; the others take that end as theirs."""
        status = _ENDS.get(state)
        if status is None:
            raise ValueError(f"a parent ends in a terminal state, not {state.name}")
        now = time.time()
        mine = LedgerEntry(
            id=new_id(),
            tenant=self.tenant,
            scope=self.scope,
            key=END_KEY,
            kind="end",
            agent="",
            message=b"",
            message_id="",
            context_id="",
            status=status,
            seq=0,
            created_at=now,
            updated_at=now,
            remote_state=state.value,
            reason=f"the parent ended {state.name.lower()}",
        )
        stored = await self.store.insert(mine)
        return TaskState(stored.remote_state), stored.id == mine.id

    async def discard_compensations(self, reason: str) -> None:
        """The parent completed: the registered compensations will never be needed."""
        for entry in await self.entries(kind="compensation"):
            if entry.status is EntryStatus.REGISTERED:
                # Lost to another write: that one moved it on, and it stands.
                await self.store.save(
                    entry.replace(
                        status=EntryStatus.DISCARDED, reason=reason, updated_at=time.time()
                    )
                )

    async def mark_compensations_due(self, reason: str) -> bool:
        """Make due the compensations whose steps may have done something (the others are
        discarded); True if any is to run now."""
        entries = await self.entries()
        steps = {e.key: e for e in entries if e.kind == "step"}
        pending = False
        for entry in entries:
            if entry.kind != "compensation":
                continue
            if entry.status is EntryStatus.REGISTERED:
                step = steps.get(entry.compensates)
                if step is not None and step.cancel_unconfirmed:
                    # Whether it acted is not known yet, and an undo run now could overtake
                    # it (the agent resuming, the booking landing after the undo): it is
                    # decided once the hub's cancel is confirmed.
                    continue
                if step is not None and _may_have_acted(step):
                    wanted = entry.replace(
                        status=EntryStatus.DUE, reason=reason, updated_at=time.time()
                    )
                else:
                    state = step.status.value if step is not None else "not found"
                    wanted = entry.replace(
                        status=EntryStatus.DISCARDED,
                        reason=f"step {entry.compensates!r} has nothing to undo ({state})",
                        updated_at=time.time(),
                    )
                # Lost to another write: the row as that one left it.
                entry = await self.store.save(wanted) or await self.store.get(entry.id) or wanted
            pending = pending or entry.status in PENDING_UNDO_STATUSES
        return pending

    async def compensate(self, reason: str = "compensating") -> list[Outcome]:
        """Run the compensations due (and those registered whose steps may have done
        something), newest first; each outcome (a compensation that kept failing is ``DEAD``
        in the ledger: ``peerwire delegations list --dead``)."""
        await self.mark_compensations_due(reason)
        due = [
            e for e in await self.entries(kind="compensation") if e.status in PENDING_UNDO_STATUSES
        ]
        outcomes = []
        with self.observer.span("delegation.compensate", scope=self.scope):
            for entry in sorted(due, key=lambda e: e.seq, reverse=True):
                outcomes.append(await self._run_compensation(entry, self.compensation_attempts))
        return outcomes

    async def retry_compensation(self, entry_id: str) -> Outcome:
        """Run one dead (or failed) compensation of this scope once more; its outcome."""
        entry = await self.store.get(entry_id)
        if entry is None or entry.kind != "compensation":
            raise DelegationNotFoundError(f"no compensation with id {entry_id!r}", key="")
        if entry.status is EntryStatus.COMPLETED:
            outcome = outcome_of(entry)
            assert outcome is not None
            return outcome
        wanted = entry.replace(
            status=EntryStatus.DUE, runs=0, next_attempt_at=0.0, updated_at=time.time()
        )
        stored = await self.store.save(wanted)
        if stored is None:
            raise DelegationConflictError(
                f"compensation {entry.key!r} changed while being retried (another process "
                "runs it): list it again",
                key=entry.key,
            )
        return await self._run_compensation(stored, 1)

    async def _run_compensation(self, entry: LedgerEntry, attempts: int) -> Outcome:
        while True:
            if entry.status in RUN_ENDED_STATUSES and entry.runs >= attempts:
                # Its last run failed (recorded with its count): the dead-letter list.
                return await self._bury(entry, attempts)
            if entry.status is EntryStatus.DUE or entry.status in RUN_ENDED_STATUSES:
                wait = entry.next_attempt_at - time.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                claimed = await self.store.save(
                    _fresh_attempt(entry, time.time() + self.compensation_timeout)
                )
                if claimed is None:
                    # Another runner claimed this run (a recovery elsewhere): it is theirs.
                    return await self._outcome_elsewhere(entry)
                entry = claimed
            # A handle of its own for each run: an earlier run's handle holds its outcome.
            handle = self._handles[entry.key] = Delegation(self, entry)
            handle._run_ended = self._count_run
            self.observer.count("compensation_run")
            outcome = await handle.result()
            entry = handle.entry
            if isinstance(outcome, Completed):
                return outcome
            if entry.is_open:  # stalled, or could not be followed: stop it before retrying
                await handle.cancel(f"compensation run failed: {outcome.describe()}")
                entry = handle.entry
            self.observer.count("compensation_failed")
            if entry.status in RUN_ENDED_STATUSES:
                continue  # counted and scheduled with its outcome, in one write
            # Still open (its cancel not confirmed): counted, and made due again or dead,
            # in one write.
            counted = self._count_run(entry)
            last = entry.runs + 1 >= attempts
            again = await self.store.save(
                entry.replace(
                    status=EntryStatus.DEAD if last else EntryStatus.DUE,
                    reason=(
                        f"gave up after {entry.runs + 1} run(s): {outcome.describe()}"
                        if last
                        else f"run {entry.runs + 1} failed: {outcome.describe()}"
                    ),
                    updated_at=time.time(),
                    **counted,
                )
            )
            if again is None:
                return await self._outcome_elsewhere(entry)
            if last:
                self.observer.count("dead_letter")
                return outcome
            entry = again

    def _count_run(self, entry: LedgerEntry) -> dict[str, object]:
        """What a failed run writes with its outcome: the run counted, the next scheduled."""
        runs = entry.runs + 1
        return {
            "runs": runs,
            "next_attempt_at": time.time() + self.compensation_backoff * 2 ** (runs - 1),
        }

    async def _bury(self, entry: LedgerEntry, attempts: int) -> Outcome:
        """A compensation whose runs all failed: DEAD (``--dead``), its last outcome."""
        outcome = outcome_of(entry) or await self._outcome_elsewhere(entry)
        dead = await self.store.save(
            entry.replace(
                status=EntryStatus.DEAD,
                updated_at=time.time(),
                reason=f"gave up after {entry.runs} run(s): {outcome.describe()}",
            )
        )
        if dead is not None:
            self.observer.count("dead_letter")
        return outcome

    async def _outcome_elsewhere(self, entry: LedgerEntry) -> Outcome:
        """A compensation another runner took over: its outcome as recorded so far."""
        fresh = await self.store.get(entry.id) or entry
        recorded = outcome_of(fresh)
        if recorded is not None:
            return recorded
        return Failed(
            entry.key,
            entry.agent,
            fresh.remote_task_id,
            f"run by another process ({fresh.status.value})",
            "unreachable",
        )

    # -- recording --------------------------------------------------------------------------

    async def _record(
        self,
        kind: EntryKind,
        agent: str,
        message: str | Message,
        *,
        key: str,
        context_id: str | None,
        follow: Follow,
        deadline_at: float | None,
        stall_deadline: float | None,
        status: EntryStatus,
        compensates: str = "",
    ) -> LedgerEntry:
        if not agent:
            raise ValueError("agent must be the agent's URL")
        built = _message(message, context_id)
        now = time.time()
        entry = LedgerEntry(
            id=new_id(),
            tenant=self.tenant,
            scope=self.scope,
            key=key,
            kind=kind,
            agent=agent,
            message=encode(built),
            message_id=built.message_id,
            context_id=built.context_id,
            status=status,
            seq=0,
            created_at=now,
            updated_at=now,
            follow=follow,
            deadline_at=deadline_at,
            stall_deadline=stall_deadline,
            compensates=compensates,
        )
        stored = await self.store.insert(entry)
        if stored.id != entry.id and (stored.agent != agent or stored.kind != kind):
            raise DelegationConflictError(
                f"key {key!r} is already recorded in scope {self.scope!r} as a {stored.kind} "
                f"to {stored.agent}; a step needs a key of its own",
                key=key,
                remote_task_id=stored.remote_task_id,
            )
        return stored


async def _fan_out(handles: list[Delegation], on_failure: OnFailure) -> list[Outcome]:
    runs = [asyncio.ensure_future(handle.result()) for handle in handles]
    failure: Outcome | None = None
    try:
        pending = set(runs)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            if on_failure != "cancel_rest" or failure is not None:
                continue
            for run in done:
                if run.exception() is None and isinstance(run.result(), _FAILURES):
                    failure = run.result()
                    break
            if failure is not None and pending:
                for run in pending:
                    run.cancel()
                await asyncio.wait(pending)
                pending = set()
    finally:
        for run in runs:
            run.cancel()
        await asyncio.wait(runs)
    # The calls cut short canceled all at once (each cancel bounded by ``cancel_within``).
    cancels: dict[str, asyncio.Future[Outcome]] = {}
    cut = [handle for handle, run in zip(handles, runs, strict=True) if run.cancelled()]
    if cut:
        assert failure is not None
        why = f"canceled because {failure.describe()}"
        cancels = {handle.key: asyncio.ensure_future(handle.cancel(why)) for handle in cut}
        await asyncio.wait(cancels.values())
    return [
        cancels[handle.key].result() if run.cancelled() else run.result()
        for handle, run in zip(handles, runs, strict=True)
    ]


def _may_have_acted(step: LedgerEntry) -> bool:
    """Whether a step may have done something at its agent, so its undo must run.

    Only what is known to have done nothing is spared: a message the agent refused (an A2A
    error: no task), a task it rejected, a step never sent. Everything of unknown effect
    counts as acted: a remote task FAILED (interrupted by its agent's restart, or failing
    after it may have begun: the agent's word that it failed is not that it did nothing), a
    cancel not confirmed (the step still open), a send whose fate is unknown (sent, no task
    recorded), an answer that was not A2A, a task the agent lost. An undo must tolerate
    finding nothing to undo (docs/DELEGATION.md)."""
    if step.status in (EntryStatus.COMPLETED, EntryStatus.TIMED_OUT, EntryStatus.OPEN):
        return True
    if step.status is EntryStatus.FAILED:
        return step.cause != "refused" and (bool(step.remote_task_id) or step.attempts > 0)
    if step.status in (EntryStatus.INTENT, EntryStatus.CANCELED):
        return bool(step.remote_task_id) or step.attempts > 0
    return False  # rejected at the agent: it decided not to do it


def _fresh_attempt(entry: LedgerEntry, deadline_at: float) -> LedgerEntry:
    """A compensation made ready to run: the same message again if no earlier run reached
    the agent (a deduplicating agent sees one message), else a new message (a new task)."""
    changes: dict[str, object] = {
        "status": EntryStatus.INTENT,
        "deadline_at": deadline_at,
        "paused_left": None,
        "updated_at": time.time(),
    }
    if entry.remote_task_id:
        message = decode(entry.message, Message)
        # Derived from the run before's id: the next run's idempotency key is fixed by the
        # row, whoever claims it (and a crash after the claim resends this very id).
        message_id = str(uuid.uuid5(_RUN_IDS, entry.message_id))
        again = Message(
            message_id=message_id,
            role=Role.USER,
            parts=message.parts,
            context_id=drawn_context(message_id),
            metadata=message.metadata,
        )
        changes.update(
            message=encode(again),
            message_id=again.message_id,
            context_id=again.context_id,
            remote_task_id="",
            remote_state="",
            result=b"",
            result_kind="",
            attempts=0,
            answers=0,
            cause="",
        )
    return entry.replace(**changes)


def _message(content: str | Message, context_id: str | None) -> Message:
    """The message a delegation sends, its ids fixed now (they are recorded with the intent).

    The ``messageId`` is drawn here, never taken from the message given: that is often the
    caller's own message forwarded, and its ids are the caller's choice. Every principal's
    delegation goes out under this agent's one identity, where a remote that deduplicates by
    ``messageId`` would hand one caller's task to another who reused the id, and a caller
    could plant a task under an id before this agent sends. The context is drawn too (derived
    from the drawn ``messageId``), unless the developer names one (``context_id=``)."""
    message_id = new_id()
    context_id = context_id or drawn_context(message_id)
    if isinstance(content, str):
        return Message(
            message_id=message_id,
            role=Role.USER,
            parts=[Part(text=content)],
            context_id=context_id,
        )
    if not isinstance(content, Message):
        raise TypeError(
            f"a delegation's message is text or a Message, not {type(content).__name__}"
        )
    if content.task_id:
        raise ValueError(
            "a delegation starts a task of its own: its message has no task_id "
            "(answer a stalled delegation with Delegation.answer)"
        )
    return msgspec.structs.replace(
        content,
        message_id=message_id,
        role=Role.USER,
        context_id=context_id,
    )


def _check_key(key: str) -> None:
    if not isinstance(key, str) or not key.strip():
        raise ValueError("key must be a non-empty name of the step, unique within its task")
    if len(key) > 512:
        raise ValueError("key must be at most 512 characters")


def describe_entry(entry: LedgerEntry) -> str:
    """One line on where an entry stands (the CLI's listing)."""
    remote = entry.remote_task_id or "-"
    state = entry.remote_state.removeprefix("TASK_STATE_").lower() or "-"
    return f"{entry.status.value} remote={remote} state={state} {entry.reason}".rstrip()
