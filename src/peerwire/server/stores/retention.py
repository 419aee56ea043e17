"""Retention: how long finished tasks are kept, as the status key stores compare against."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ...protocol import sort_key

__all__ = ["retention_cutoff"]


def retention_cutoff(max_age: timedelta, *, now: datetime | None = None) -> str:
    """The status key before which a terminal task is older than ``max_age``.

    Pass it to ``TaskStore.delete_terminal_before``. ``now`` defaults to the current time.
    """
    if max_age < timedelta(0):
        raise ValueError(f"a retention age cannot be negative, got {max_age}")
    moment = (now if now is not None else datetime.now(UTC)) - max_age
    return sort_key(moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
