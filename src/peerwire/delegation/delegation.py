"""``Delegation``: one call to another agent, recorded in the ledger, followed to its end.

Lifecycle of an entry (``entries.EntryStatus``): INTENT (written before the message is sent)
-> OPEN (the remote task exists: its id, context and state are recorded as they are seen) ->
COMPLETED, FAILED, REJECTED, CANCELED or TIMED_OUT. Nothing runs in the background: the
remote task is followed while someone awaits ``result()`` (SubscribeToTask, falling back to
GetTask polling with backoff), and left to the ledger otherwise.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import msgspec

from ..errors import (
    A2AConnectionError,
    A2AError,
    A2ATimeoutError,
    ClientError,
    InvalidAgentCardError,
    InvalidResponseError,
    ServerBusyError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from ..protocol import INTERRUPTED, INTERRUPTED_REASON, is_terminal, status_reason
from ..types import (
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatusUpdateEvent,
    decode,
    encode,
)
from .entries import (
    CANCEL_UNCONFIRMED,
    RUN_ENDED_STATUSES,
    EntryStatus,
    LedgerEntry,
    drawn_context,
)
from .errors import DelegationError
from .outcomes import (
    Canceled,
    Completed,
    Failed,
    FailureCause,
    Outcome,
    Rejected,
    Stalled,
    TimedOut,
)

if TYPE_CHECKING:
    from ..client import Client
    from ._observe import Observer
    from .connector import Connector
    from .store import LedgerStore

__all__ = ["Delegation"]

_DROPS = (A2AConnectionError, A2ATimeoutError, ServerBusyError)
_GARBAGE = (InvalidResponseError, InvalidAgentCardError)
# Sending: tries while the agent cannot be reached (the same messageId every time).
_SEND_ATTEMPTS = 3
_FIRST_DELAY_S = 0.2
_MAX_DELAY_S = 2.0
# Answers get ids derived from the delegation's messageId, so a resent answer is the same one.
_ANSWER_IDS = uuid.UUID("6b1d2c8e-5f0a-4b7e-9a43-0d2f6c1e8a57")

_FINAL = {
    TaskState.COMPLETED: EntryStatus.COMPLETED,
    TaskState.FAILED: EntryStatus.FAILED,
    TaskState.REJECTED: EntryStatus.REJECTED,
    TaskState.CANCELED: EntryStatus.CANCELED,
}


class _GaveUp(Exception):
    """Following or sending could not go on: ``cause`` and why, the entry left as it is."""

    def __init__(self, cause: FailureCause, reason: str) -> None:
        super().__init__(reason)
        self.cause: FailureCause = cause
        self.reason = reason


class _Owner(Protocol):
    """What a delegation needs of the scope that made it (``Delegations``), named here so that
    this module does not import the one that imports it."""

    @property
    def store(self) -> LedgerStore: ...

    @property
    def connector(self) -> Connector: ...

    @property
    def observer(self) -> Observer: ...

    @property
    def unreachable_after(self) -> float: ...

    @property
    def cancel_within(self) -> float: ...

    async def register_compensation(
        self, step: LedgerEntry, agent: str, message: str | Message, *, key: str | None = None
    ) -> None: ...


class _LookupFailed(Exception):
    """The agent could not be asked whether an earlier send made a task (``_look_for_sent``)."""


class Delegation:
    """A handle on one ledger entry: follow it (``result``), answer it, cancel it, register
    its undo. Get one from ``ctx.delegate``, ``Delegations.delegate`` or ``Ledger.attach``."""

    def __init__(self, owner: _Owner, entry: LedgerEntry) -> None:
        self._owner = owner
        self._entry = entry
        # One follower at a time: two awaits of result() share the same following.
        self._lock = asyncio.Lock()
        # A compensation's run: what its failed end writes with it (the run counted, the
        # next one scheduled), so outcome and next state are one transition.
        self._run_ended: Callable[[LedgerEntry], dict[str, object]] | None = None

    def __repr__(self) -> str:
        entry = self._entry
        return (
            f"<Delegation {entry.key!r} to {entry.agent} {entry.status.value}"
            f"{' remote ' + entry.remote_task_id if entry.remote_task_id else ''}>"
        )

    @property
    def key(self) -> str:
        return self._entry.key

    @property
    def agent(self) -> str:
        return self._entry.agent

    @property
    def remote_task_id(self) -> str:
        """The remote task's id (``""`` until the agent answered the first message)."""
        return self._entry.remote_task_id

    @property
    def entry(self) -> LedgerEntry:
        """The ledger entry as this handle last wrote or read it."""
        return self._entry

    # -- sending and following ------------------------------------------------------------

    async def start(self) -> None:
        """Send the message if it has not been (``delegate`` does this): afterwards the
        remote task's id is recorded, or why the send did not get one (``result()`` tries
        again, with the same ``messageId``, and says what came of it)."""
        async with self._lock:
            if self._entry.status is not EntryStatus.INTENT:
                return
            deadline_at = self._entry.deadline_at
            remaining = None if deadline_at is None else deadline_at - time.time()
            if remaining is not None and remaining <= 0:
                return
            try:
                async with asyncio.timeout(remaining) as limit:
                    await self._send()
            except TimeoutError:
                if not limit.expired():
                    raise
            except _GaveUp as gave_up:
                await self._update(reason=gave_up.reason, cause=gave_up.cause)

    async def result(self) -> Outcome:
        """Follow the remote task until it ends or stalls; its outcome (never raises for what
        the agent did or failed to do: that is a ``Failed``, a ``TimedOut``...).

        A deadline runs only while the remote task is SUBMITTED or WORKING; at a stall this
        returns ``Stalled`` (or, with a ``stall_deadline``, waits that long for the task to be
        answered elsewhere)."""
        async with self._lock:
            return await self._result()

    async def _result(self) -> Outcome:
        settled = outcome_of(self._entry)
        if settled is not None and not self._entry.stalled:
            return settled
        while True:
            if self._entry.stalled:
                # Last seen waiting: it may have been answered elsewhere since, and then its
                # paused deadline runs again from now, before following it on.
                await self._refresh()
            await self._resume_deadline()
            entry = self._entry
            remaining = None if entry.deadline_at is None else entry.deadline_at - time.time()
            if remaining is not None and remaining <= 0:
                return await self._time_out()
            try:
                async with asyncio.timeout(remaining) as limit:
                    if self._entry.status is EntryStatus.INTENT:
                        await self._send()
                    task = None if self._settled() else await self._watch()
            except TimeoutError:
                if not limit.expired():
                    raise
                return await self._time_out()
            except _GaveUp as gave_up:
                await self._update(reason=gave_up.reason, cause=gave_up.cause)
                self._owner.observer.count("failed")
                return Failed(
                    self.key, self.agent, self.remote_task_id, gave_up.reason, gave_up.cause
                )
            if task is None or is_terminal(task.status.state):
                outcome = outcome_of(self._entry)
                assert outcome is not None
                self._owner.observer.count(type(outcome).__name__.lower())
                return outcome
            # Stalled: the deadline stops while the task waits for someone.
            await self._pause_deadline()
            stalled = outcome_of(self._entry)
            assert isinstance(stalled, Stalled)
            self._owner.observer.count("stalled")
            if self._entry.stall_deadline is None:
                return stalled
            try:
                async with asyncio.timeout(self._entry.stall_deadline) as stall_limit:
                    await self._wait_while_stalled()
            except TimeoutError:
                if not stall_limit.expired():
                    raise
                return await self._time_out(
                    f"the remote task stayed {task.status.state.name} longer than its "
                    f"stall deadline of {self._entry.stall_deadline:g} s"
                )

    def _settled(self) -> bool:
        return self._entry.status not in (EntryStatus.INTENT, EntryStatus.OPEN)

    async def _send(self) -> None:
        """Send the recorded message (or find the task an earlier send made)."""
        entry = self._entry
        if entry.attempts > 0:
            try:
                found = await self._look_for_sent()
            except _LookupFailed:
                found = None  # an agent that cannot list: the resend (same messageId) is all
            if found is not None:
                await self._note(found)
                return
        message = decode(entry.message, Message)
        delay = _FIRST_DELAY_S
        last: Exception | None = None
        for _ in range(_SEND_ATTEMPTS):
            # Counted before sending: once this is durable, a restart looks for the task.
            await self._update(attempts=self._entry.attempts + 1)
            try:
                client = await self._client()
                with self._owner.observer.span("delegation.send", key=entry.key, agent=entry.agent):
                    reply = await client.send(message, return_immediately=True)
            except _GARBAGE as exc:
                await self._settle(EntryStatus.FAILED, _text(exc), cause="invalid_response")
                return
            except _DROPS as exc:
                last = exc
                await self._owner.connector.forget(entry.agent)
                await asyncio.sleep(delay)
                delay = min(delay * 2, _MAX_DELAY_S)
                continue
            except A2AError as exc:
                await self._settle(EntryStatus.FAILED, _text(exc), cause="refused")
                return
            self._owner.observer.count("sent")
            if isinstance(reply, Message):
                await self._settle(
                    EntryStatus.COMPLETED,
                    "",
                    result=encode(reply),
                    result_kind="message",
                    context_id=reply.context_id or entry.context_id,
                )
                return
            await self._note(reply)
            return
        raise _GaveUp(
            "unreachable",
            f"{entry.agent} could not be reached ({_text(last)}); the message "
            f"{entry.message_id} may or may not have made a task there",
        )

    async def _look_for_sent(self) -> Task | None:
        """The task an earlier send of this entry's message made, if the agent lists it: by
        the context chosen for it, and the message id in its history. ``None``: the agent
        answered and has none; ``_LookupFailed``: the agent could not be asked (not the same:
        a task may be there)."""
        entry = self._entry
        try:
            client = await self._client()
            tasks = await client.list_tasks(context_id=entry.context_id, history_length=20)
        except (A2AError, ClientError, OSError) as exc:
            if isinstance(exc, _DROPS):
                await self._owner.connector.forget(entry.agent)
            raise _LookupFailed(_text(exc)) from exc
        for task in tasks:
            if any(m.message_id == entry.message_id for m in task.history):
                return task
        # An agent that keeps no history: the one task in a context this ledger drew (no one
        # else knows it) is ours; in a context given to it, anyone may have made that task.
        drawn = entry.context_id == drawn_context(entry.message_id)
        return tasks[0] if drawn and len(tasks) == 1 and not tasks[0].history else None

    async def _watch(self) -> Task:
        """Follow the remote task until it is terminal or interrupted; that task."""
        entry = self._entry
        stream = entry.follow == "subscribe"
        delay = _FIRST_DELAY_S
        failing_since: float | None = None
        while True:
            try:
                client = await self._client()
                if stream and client.card.capabilities.streaming:
                    try:
                        await self._follow_stream(client)
                    except UnsupportedOperationError:
                        pass  # terminal already: GetTask says how it ended
                    except (*_DROPS, *_GARBAGE):
                        stream = False  # polling from here on
                task = await client.get_task(entry.remote_task_id)
                await self._note(task)
                state = task.status.state
                if is_terminal(state) or state in INTERRUPTED:
                    return task
                failing_since = None
            except TaskNotFoundError as exc:
                await self._settle(
                    EntryStatus.FAILED,
                    f"{entry.agent} no longer knows task {entry.remote_task_id}: {_text(exc)}",
                    cause="not_found",
                )
                raise _GaveUp("not_found", self._entry.reason) from None
            except (*_DROPS, *_GARBAGE, A2AError) as exc:
                now = time.monotonic()
                failing_since = failing_since or now
                if isinstance(exc, _DROPS):
                    await self._owner.connector.forget(entry.agent)
                if now - failing_since > self._owner.unreachable_after:
                    cause: FailureCause = (
                        "invalid_response" if isinstance(exc, _GARBAGE) else "unreachable"
                    )
                    raise _GaveUp(
                        cause,
                        f"following task {entry.remote_task_id} at {entry.agent} failed for "
                        f"{self._owner.unreachable_after:g} s: {_text(exc)} (it stays open in "
                        "the ledger)",
                    ) from None
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, _MAX_DELAY_S)

    async def _follow_stream(self, client: Client) -> None:
        """SubscribeToTask until a terminal or interrupted state (recording each state)."""
        async for payload in client.subscribe(self._entry.remote_task_id):
            state: TaskState | None = None
            if isinstance(payload, Task | TaskStatusUpdateEvent):
                state = payload.status.state
            if state is None:
                continue
            if is_terminal(state) or state in INTERRUPTED:
                return
            if state.value != self._entry.remote_state:
                await self._update(remote_state=state.value, observed_at=time.time())

    async def _refresh(self) -> None:
        """Look at the remote task once (what the agent says cannot be known: left as is)."""
        try:
            task = await (await self._client()).get_task(self._entry.remote_task_id)
        except (*_DROPS, *_GARBAGE, A2AError):
            return
        await self._note(task)

    async def _wait_while_stalled(self) -> None:
        """Poll a stalled remote task until someone answers it (or it ends)."""
        delay = _FIRST_DELAY_S
        while True:
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, _MAX_DELAY_S)
            try:
                task = await (await self._client()).get_task(self._entry.remote_task_id)
            except (*_DROPS, *_GARBAGE, A2AError):
                continue
            await self._note(task)
            if task.status.state not in INTERRUPTED:
                return

    # -- answering and canceling ------------------------------------------------------------

    async def answer(self, message: str | Message) -> None:
        """Answer the stalled remote task (INPUT_REQUIRED, AUTH_REQUIRED) on that same task;
        ``result()`` then follows it on. Raises ``DelegationError`` when the task does not
        wait for an answer or the agent refuses it."""
        entry = self._entry
        if not entry.stalled:
            raise DelegationError(
                f"delegation {entry.key!r} is not waiting for an answer "
                f"({entry.status.value}, remote {entry.remote_state or 'unknown'})",
                key=entry.key,
                remote_task_id=entry.remote_task_id,
            )
        number = entry.answers + 1
        answer = _answer_message(entry, number, message)
        await self._update(answers=number)
        try:
            client = await self._client()
            reply = await client.send(answer, task_id=entry.remote_task_id, return_immediately=True)
        except (A2AError, ClientError) as exc:
            if isinstance(exc, _DROPS):
                await self._owner.connector.forget(entry.agent)
            raise DelegationError(
                f"delegation {entry.key!r}: the answer to task {entry.remote_task_id} at "
                f"{entry.agent} was not taken: {_text(exc)}",
                key=entry.key,
                remote_task_id=entry.remote_task_id,
            ) from exc
        await self._resume_deadline()
        if isinstance(reply, Task):
            await self._note(reply)
        else:  # an agent that answers a follow-up with a message: the task is working on
            await self._update(remote_state=TaskState.WORKING.value, observed_at=time.time())

    async def cancel(self, reason: str = "canceled by the caller") -> Outcome:
        """Cancel the remote task (CancelTask); the outcome recorded. A task that had already
        ended keeps its own outcome."""
        # Not behind ``result()``'s lock: a cancel must not wait for a follower (which then
        # sees the task CANCELED at its next look and returns that).
        return await self._cancel(reason)

    async def _cancel(self, reason: str) -> Outcome:
        """Cancel, bounded by ``cancel_within`` (the grace a deadline allows for its cancel):
        a cancel the agent does not confirm in that time leaves the entry open, flagged
        ``CANCEL_UNCONFIRMED`` (never canceled on a guess)."""
        settled = outcome_of(self._entry)
        if settled is not None and not self._entry.stalled:
            return settled
        within = self._owner.cancel_within
        try:
            async with asyncio.timeout(within) as limit:
                return await self._ask_cancel(reason)
        except TimeoutError:
            if not limit.expired():
                raise
            return await self._cancel_unconfirmed(reason, f"no answer within {within:g} s")
        except _LookupFailed as exc:
            return await self._cancel_unconfirmed(
                reason, f"whether the message made a task could not be asked ({exc})"
            )

    async def _ask_cancel(self, reason: str) -> Outcome:
        entry = self._entry
        if not entry.remote_task_id:
            found = await self._look_for_sent() if entry.attempts else None
            if found is None and entry.attempts and entry.cancel_unconfirmed:
                # The agent did not answer before: a send it had queued meanwhile may be
                # taken only now it answers again. One more look, a moment later.
                await asyncio.sleep(self._owner.cancel_within / 2)
                found = await self._look_for_sent()
            if found is None:
                return await self._settle_cancel(
                    reason,
                    EntryStatus.CANCELED,
                    f"{reason} (before the agent was known to have a task for it)",
                    cause="",
                )
            await self._note(found)
            if self._settled():
                return self._final_outcome()
        try:
            client = await self._client()
            with self._owner.observer.span("delegation.cancel", key=entry.key, agent=entry.agent):
                task = await client.cancel_task(self._entry.remote_task_id)
        except TaskNotCancelableError:
            try:
                task = await (await self._client()).get_task(self._entry.remote_task_id)
            except (A2AError, ClientError) as exc:
                return await self._cancel_unconfirmed(reason, _text(exc))
        except TaskNotFoundError as exc:
            return await self._settle_cancel(
                reason,
                EntryStatus.FAILED,
                f"{reason}: {entry.agent} no longer knows task {entry.remote_task_id} "
                f"({_text(exc)})",
                cause="not_found",
            )
        except (A2AError, ClientError) as exc:
            if isinstance(exc, _DROPS):
                await self._owner.connector.forget(entry.agent)
            return await self._cancel_unconfirmed(reason, _text(exc))
        await self._note(task, reason=reason)
        self._owner.observer.count("canceled")
        if not self._settled():
            # The agent accepted the cancel but the task is not canceled yet (it may be
            # winding down): recorded as asked for; following it shows how it ended.
            await self._update(
                reason=f"{reason}: cancel requested, remote still {task.status.state.name}",
                cause="",
            )
            return Canceled(self.key, self.agent, self.remote_task_id, self._entry.reason, task)
        return self._final_outcome()

    async def _settle_cancel(
        self, reason: str, status: EntryStatus, text: str, **changes: object
    ) -> Outcome:
        """Settle a cancel's end; when another write came first and left the entry open
        (the send recorded its remote task meanwhile), cancel what the entry is now: a
        handle that lost the race never settles on what it saw before."""
        if await self._settle(status, text, **changes) or self._settled():
            return self._final_outcome()
        return await self._cancel(reason)

    async def _cancel_unconfirmed(self, reason: str, why: str) -> Outcome:
        """The entry stays as it is (open), flagged: the hub keeps canceling it."""
        text = f"{reason}: the cancel did not reach {self.agent}: {why}"
        # Written only over the status it was read with: a follower that saw the task end
        # meanwhile recorded how it ended, and that stands.
        while not await self._update(
            status=self._entry.status, reason=text, cause=CANCEL_UNCONFIRMED
        ):
            settled = outcome_of(self._entry)
            if settled is not None and not self._entry.stalled:
                return settled
        return Failed(self.key, self.agent, self.remote_task_id, text, "unreachable")

    async def _time_out(self, why: str | None = None) -> Outcome:
        entry = self._entry
        state = TaskState(entry.remote_state) if entry.remote_state else TaskState.SUBMITTED
        why = why or (
            f"its deadline passed while the remote task was {state.name}"
            if entry.remote_task_id
            else "its deadline passed before the agent answered"
        )
        outcome = await self._cancel(f"timed out: {why}")
        if isinstance(outcome, Canceled):
            # Canceled by us for the deadline: recorded as timed out, with the agent's answer.
            await self._settle(EntryStatus.TIMED_OUT, f"{why}; canceled at the agent")
        elif isinstance(outcome, Failed) and outcome.cause == "unreachable":
            # The cancel's reason already starts with "timed out: <why>".
            await self._update(reason=outcome.reason)
        else:
            return outcome  # it ended on its own first: that outcome stands
        self._owner.observer.count("timed_out")
        return TimedOut(
            self.key,
            self.agent,
            self.remote_task_id,
            state,
            self._entry.reason,
            _task_of(self._entry),
        )

    # -- compensation -----------------------------------------------------------------------

    async def compensate_with(
        self, agent: str, message: str | Message, *, key: str | None = None
    ) -> None:
        """Register this step's undo: a delegation of ``message`` to ``agent``, run if the
        parent task does not complete (or on ``compensate()``), newest registration first.
        Registering again (a replay) is a no-op. The undo must be idempotent: it runs for
        every step that may have acted, at least once (``Undo``)."""
        await self._owner.register_compensation(self._entry, agent, message, key=key)

    # -- the entry --------------------------------------------------------------------------

    def _adopt(self, entry: LedgerEntry) -> None:
        """Hold ``entry``, read from the store, if it is newer than what this handle holds."""
        if entry.id == self._entry.id and entry.version > self._entry.version:
            self._entry = entry

    async def _client(self) -> Client:
        return await self._owner.connector.client(self._entry.agent)

    async def _update(self, **changes: object) -> bool:
        """Write ``changes`` over the row as this handle read it (a compare-and-set); whether
        they were written. When another writer came first, the row is read again: a change
        of status is dropped if the row has moved to another status since (the first
        transition recorded stands, and this handle now holds it); other changes (what was
        seen of the remote task) are written over the fresh row."""
        while True:
            base = self._entry
            more: dict[str, object] = {}
            if (
                self._run_ended is not None
                and changes.get("status") in RUN_ENDED_STATUSES
                and base.status not in RUN_ENDED_STATUSES
            ):
                more = self._run_ended(base)
            stored = await self._owner.store.save(
                base.replace(**changes, **more, updated_at=time.time())
            )
            if stored is not None:
                self._entry = stored
                return True
            fresh = await self._owner.store.get(base.id)
            if fresh is None:
                raise DelegationError(
                    f"delegation {base.key!r}: its ledger entry {base.id} is gone",
                    key=base.key,
                    remote_task_id=base.remote_task_id,
                )
            self._entry = fresh
            if "status" in changes and fresh.status is not base.status:
                return False

    async def _settle(self, status: EntryStatus, reason: str, **changes: object) -> bool:
        return await self._update(status=status, reason=reason, **changes)

    async def _note(self, task: Task, *, reason: str | None = None) -> None:
        """Record what was seen of the remote task (settling the entry if it is final)."""
        state = task.status.state
        changes: dict[str, object] = {
            "remote_task_id": task.id,
            "context_id": task.context_id or self._entry.context_id,
            "remote_state": state.value,
            "observed_at": time.time(),
        }
        if self._settled():
            # Settled already (canceled or timed out by us meanwhile): what it is seen as
            # now is noted, its outcome stays.
            await self._update(**changes)
            return
        final = _FINAL.get(state)
        if final is not None or state in INTERRUPTED:
            changes["result"] = encode(task)
            changes["result_kind"] = "task"
        if final is not None:
            changes["status"] = final
            changes["reason"] = (
                reason if reason and final is EntryStatus.CANCELED else _status_text(task, final)
            )
            changes["cause"] = _failure_cause(task) if final is EntryStatus.FAILED else ""
        elif self._entry.status is EntryStatus.INTENT:
            changes["status"] = EntryStatus.OPEN
        await self._update(**changes)

    async def _resume_deadline(self) -> None:
        entry = self._entry
        if entry.paused_left is not None and not entry.stalled:
            await self._update(deadline_at=time.time() + entry.paused_left, paused_left=None)

    async def _pause_deadline(self) -> None:
        entry = self._entry
        if entry.deadline_at is not None:
            await self._update(
                paused_left=max(entry.deadline_at - time.time(), 0.0), deadline_at=None
            )

    def _final_outcome(self) -> Outcome:
        outcome = outcome_of(self._entry)
        assert outcome is not None
        return outcome


def outcome_of(entry: LedgerEntry) -> Outcome | None:
    """The outcome an entry records (``None`` while it is open and not stalled)."""
    task = _task_of(entry)
    key, agent, remote = entry.key, entry.agent, entry.remote_task_id
    status = entry.status
    if status is EntryStatus.COMPLETED:
        if entry.result_kind == "message":
            return Completed(key, agent, remote, message=decode(entry.result, Message))
        return Completed(
            key, agent, remote, task=task, artifacts=tuple(task.artifacts) if task else ()
        )
    if status is EntryStatus.FAILED:
        cause: FailureCause = entry.cause or "task_failed"  # type: ignore[assignment]
        return Failed(key, agent, remote, entry.reason, cause, task)
    if status is EntryStatus.REJECTED:
        return Rejected(key, agent, remote, entry.reason, task)
    if status is EntryStatus.CANCELED:
        return Canceled(key, agent, remote, entry.reason, task)
    if status is EntryStatus.TIMED_OUT:
        state = TaskState(entry.remote_state) if entry.remote_state else TaskState.SUBMITTED
        return TimedOut(key, agent, remote, state, entry.reason, task)
    if entry.stalled:
        state = TaskState(entry.remote_state)
        question = task.status.message if task is not None else None
        return Stalled(key, agent, remote, state, question, task)
    return None


def _task_of(entry: LedgerEntry) -> Task | None:
    if entry.result_kind != "task" or not entry.result:
        return None
    return decode(entry.result, Task)


def _failure_cause(task: Task) -> FailureCause:
    """A FAILED remote task's cause: ``interrupted`` when its agent says its process stopped
    while it worked (``protocol.reasons``), else ``task_failed``."""
    if status_reason(task.status.message) == INTERRUPTED_REASON:
        return "interrupted"
    return "task_failed"


def _status_text(task: Task, status: EntryStatus) -> str:
    message = task.status.message
    text = message.text if message is not None else ""
    return text or f"the remote task is {status.value}"


def _answer_message(entry: LedgerEntry, number: int, content: str | Message) -> Message:
    message_id = str(uuid.uuid5(_ANSWER_IDS, f"{entry.message_id}/{number}"))
    if isinstance(content, Message):
        return msgspec.structs.replace(
            content,
            message_id=message_id,
            role=Role.USER,
            task_id=entry.remote_task_id,
            context_id=entry.context_id,
        )
    return Message(
        message_id=message_id,
        role=Role.USER,
        parts=[Part(text=content)],
        task_id=entry.remote_task_id,
        context_id=entry.context_id,
    )


def _text(exc: BaseException | None) -> str:
    if exc is None:
        return "no answer"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
