"""What the ledger records of one delegation: ``LedgerEntry`` and its statuses.

One entry per (tenant, scope, key). ``scope`` is the parent task's id inside a server, or the
job's name for a ``Ledger`` outside one; ``key`` is the step's name the caller chose, unique
within the scope: what makes a replayed step find its entry instead of sending again.

An entry is written as an *intent* before its message is sent, with the ``message_id`` and
``context_id`` fixed then, so a crash between sending and recording the answer leaves enough to
find the remote task again (or to resend the very same message, which a peer that deduplicates
by ``messageId`` answers with the task it already made).
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

__all__ = [
    "CANCEL_UNCONFIRMED",
    "END_KEY",
    "OPEN_STATUSES",
    "PENDING_UNDO_STATUSES",
    "RUN_ENDED_STATUSES",
    "SETTLED_UNDO_STATUSES",
    "EntryKind",
    "EntryStatus",
    "Follow",
    "LedgerEntry",
    "drawn_context",
    "unsettled",
]

Follow = Literal["subscribe", "poll"]
EntryKind = Literal["step", "compensation", "end"]
"""A step, a step's undo, or the parent's end: the one row (key ``END_KEY``) that records how
the parent ended, written once, by whichever of complete / fail / cancel comes first."""

END_KEY = ""
"""The key of a scope's ``end`` row (no step can have it: a step's key is never empty)."""

CANCEL_UNCONFIRMED = "cancel_unconfirmed"
"""The ``cause`` of a step left open (``intent`` or ``open``) by a cancel the agent did not
confirm within ``cancel_within`` (no answer, an error, or its task could not be looked for):
nobody knows whether the step acted, so it is never recorded canceled on a guess. The hub
keeps canceling it in the background; its undo waits (``registered``) until the agent says
how the step ended."""


class EntryStatus(StrEnum):
    """Where a ledger entry stands."""

    INTENT = "intent"
    """Recorded, the message about to be sent (or sent, its answer not recorded yet)."""
    OPEN = "open"
    """The remote task exists and was not terminal when last seen (``remote_state`` says
    whether it was working or stalled)."""
    COMPLETED = "completed"
    FAILED = "failed"
    REJECTED = "rejected"
    CANCELED = "canceled"
    TIMED_OUT = "timed_out"
    # A compensation's own life before it runs, and after it failed for good.
    REGISTERED = "registered"
    """A compensation waiting: it runs only if its step has to be undone."""
    DUE = "due"
    """A compensation to run (at ``next_attempt_at``)."""
    DISCARDED = "discarded"
    """A compensation that was not needed (the parent completed, or its step did nothing)."""
    DEAD = "dead"
    """A compensation that failed every attempt: the dead-letter list."""


OPEN_STATUSES = frozenset({EntryStatus.INTENT, EntryStatus.OPEN})
"""Entries with a remote task that may still be running (or about to be)."""

RUN_ENDED_STATUSES = frozenset(
    {EntryStatus.FAILED, EntryStatus.REJECTED, EntryStatus.CANCELED, EntryStatus.TIMED_OUT}
)
"""A compensation's statuses after a run that did not complete it: written with the run
counted (``runs``) and the next one scheduled (``next_attempt_at``) in the same write, so the
row says what comes next (another run, or the dead-letter list once ``runs`` reaches the
attempts) whenever the process stops."""

PENDING_UNDO_STATUSES = (
    frozenset({EntryStatus.DUE, EntryStatus.INTENT, EntryStatus.OPEN}) | RUN_ENDED_STATUSES
)
"""A compensation's statuses while it is still to run, running, or between runs."""

SETTLED_UNDO_STATUSES = frozenset({EntryStatus.COMPLETED, EntryStatus.DISCARDED, EntryStatus.DEAD})
"""A compensation's final statuses (a dead one waits for a person: ``--dead``)."""


_CONTEXT_IDS = uuid.UUID("3f0c9a4e-2d71-4b5e-8f16-a9c0d2e7b431")


def drawn_context(message_id: str) -> str:
    """The context a delegation's message goes in when the developer names none: derived
    from its drawn ``messageId``, so recovery can tell a context it drew (nobody else knows
    it) from one it was given."""
    return str(uuid.uuid5(_CONTEXT_IDS, message_id))


def unsettled(entry: LedgerEntry) -> bool:
    """Whether an entry still has something to happen: a step still open, a compensation
    registered or pending (the parent's ``end`` row is settled once written)."""
    if entry.kind == "step":
        return entry.status in OPEN_STATUSES
    if entry.kind == "compensation":
        return entry.status not in SETTLED_UNDO_STATUSES
    return False


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One delegation as the ledger holds it. Times are seconds since the epoch."""

    id: str
    tenant: str
    scope: str
    key: str
    kind: EntryKind
    agent: str
    """The remote agent's URL."""
    message: bytes
    """The message to send, as ProtoJSON (its ``messageId`` is ``message_id``)."""
    message_id: str
    context_id: str
    """The context the message was sent in (chosen here, so the task can be looked for)."""
    status: EntryStatus
    seq: int
    """Order of creation within the scope: compensations run in reverse of it."""
    created_at: float
    updated_at: float
    remote_task_id: str = ""
    remote_state: str = ""
    """The remote task's state when last observed (a ``TaskState`` value; ``""``: none yet)."""
    observed_at: float = 0.0
    follow: Follow = "subscribe"
    deadline_at: float | None = None
    """When a SUBMITTED/WORKING remote task times out (``None``: never)."""
    paused_left: float | None = None
    """While stalled: the deadline's seconds left, resumed when the task is answered."""
    stall_deadline: float | None = None
    reason: str = ""
    """Why the entry stands as it does (an outcome's explanation, an attempt's error)."""
    cause: str = ""
    """A failure's ``FailureCause`` (``""``: none)."""
    compensates: str = ""
    """A compensation's step (its key)."""
    attempts: int = 0
    """Sends made (a compensation's attempts)."""
    next_attempt_at: float = 0.0
    answers: int = 0
    """Answers sent to the remote task while it was stalled."""
    runs: int = 0
    """A compensation's runs that did not complete it (retries, then the dead-letter list)."""
    result: bytes = b""
    """The final remote ``Task`` (or the agent's ``Message``) as ProtoJSON, once settled."""
    result_kind: Literal["", "task", "message"] = ""
    version: int = 0
    """Bumped by every write: a write succeeds only on the version it read (``save``)."""

    def replace(self, **changes: object) -> LedgerEntry:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_STATUSES

    @property
    def cancel_unconfirmed(self) -> bool:
        """Whether a cancel was asked and not confirmed (``CANCEL_UNCONFIRMED``)."""
        return self.is_open and self.cause == CANCEL_UNCONFIRMED

    @property
    def stalled(self) -> bool:
        return self.status is EntryStatus.OPEN and self.remote_state in _STALLED


_STALLED = ("TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED")
