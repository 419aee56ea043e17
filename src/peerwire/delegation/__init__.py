"""Delegation: calling other A2A agents on behalf of a task, or of a job (docs/DELEGATION.md).

Inside a skill, ``ctx.delegate(url, message, key=...)`` records the call in the ledger before
sending it, follows the remote task to its end, cancels it when the parent task ends, and runs
the compensations steps registered when the parent does not complete. Outside a server,
``Ledger`` does the same for a batch job, in SQLite or PostgreSQL.
"""

from .connector import Connect, Connector
from .delegation import Delegation, outcome_of
from .delegations import Call, Delegations, OnFailure, Undo, describe_entry
from .entries import CANCEL_UNCONFIRMED, OPEN_STATUSES, EntryKind, EntryStatus, Follow, LedgerEntry
from .errors import DelegationConflictError, DelegationError, DelegationNotFoundError
from .hub import DelegationHub
from .ledger import DEFAULT_LEDGER, Ledger, open_ledger_store
from .memory import MemoryLedgerStore
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
from .sqlite import SQLiteLedgerStore
from .store import LedgerStore

__all__ = [
    "CANCEL_UNCONFIRMED",
    "DEFAULT_LEDGER",
    "OPEN_STATUSES",
    "Call",
    "Canceled",
    "Completed",
    "Connect",
    "Connector",
    "Delegation",
    "DelegationConflictError",
    "DelegationError",
    "DelegationHub",
    "DelegationNotFoundError",
    "Delegations",
    "EntryKind",
    "EntryStatus",
    "Failed",
    "FailureCause",
    "Follow",
    "Ledger",
    "LedgerEntry",
    "LedgerStore",
    "MemoryLedgerStore",
    "OnFailure",
    "Outcome",
    "Rejected",
    "SQLiteLedgerStore",
    "Stalled",
    "TimedOut",
    "Undo",
    "describe_entry",
    "open_ledger_store",
    "outcome_of",
]
