"""The errors of delegation: misuse of the API (what a remote agent does is an ``Outcome``)."""

from __future__ import annotations

from ..errors import PeerwireError

__all__ = ["DelegationConflictError", "DelegationError", "DelegationNotFoundError"]


class DelegationError(PeerwireError):
    """An operation on a delegation that cannot be done (answering a task that does not wait,
    an answer the agent refused); ``key`` and ``remote_task_id`` say which call."""

    def __init__(self, message: str, *, key: str, remote_task_id: str = "") -> None:
        super().__init__(message)
        self.key = key
        self.remote_task_id = remote_task_id


class DelegationConflictError(DelegationError):
    """A key already recorded in this scope for another agent (or as another kind of entry):
    two different steps under one name would make replays ambiguous."""


class DelegationNotFoundError(DelegationError, LookupError):
    """No entry with that key (or id) in the ledger."""
