"""The inspector's view of a task's delegations: what the agent's delegation ledger holds for
it (docs/DELEGATION.md), read from the ledger's store (``peerwire inspect --ledger STORE``, the
store spec ``peerwire serve`` and ``peerwire delegations list`` take).

The ledger is the agent's side of its tasks' calls to other agents; A2A carries none of it,
so the inspector reads it where the agent keeps it, read-only. A task's entries are grouped
by the agent they called: each remote task with its state as last seen, each step with the
compensation registered for it (its undo, which may call another agent, where it is listed
too), and how the parent task ended as the ledger recorded it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..delegation import (
    LedgerEntry,
    LedgerStore,
    MemoryLedgerStore,
    describe_entry,
    open_ledger_store,
)
from ..delegation.entries import unsettled
from .page_io import InspectorError

__all__ = ["LedgerView", "describe_delegations"]


class LedgerView:
    """The agent's ledger, opened by the inspector's lifespan (``spec``: a store spec)."""

    def __init__(self, spec: str) -> None:
        kind, _, location = spec.partition(":")
        if kind == "sqlite" and location and not Path(location).is_file():
            # Opening it would make an empty ledger: the agent's is elsewhere.
            raise InspectorError(f"no ledger at {location}: give the agent's store file")
        try:
            self.store: LedgerStore = open_ledger_store(spec)
        except ValueError as exc:
            raise InspectorError(str(exc)) from None
        if isinstance(self.store, MemoryLedgerStore):
            raise InspectorError("a memory ledger lives in its agent's process only")
        self.spec = spec
        self._open = False

    async def open(self) -> None:
        await self.store.open()
        self._open = True

    async def close(self) -> None:
        if self._open:
            self._open = False
            await self.store.close()

    async def of_task(self, task_id: str) -> dict[str, Any]:
        """What the ledger holds for ``task_id`` (its scope), grouped per agent."""
        if not task_id.strip():
            raise InspectorError("a task id is needed")
        entries = await self.store.entries(scope=task_id, with_end=True)
        return describe_delegations(task_id, entries)


def describe_delegations(task_id: str, entries: Sequence[LedgerEntry]) -> dict[str, Any]:
    """The page's view of one task's ledger entries (by ``seq``, as the ledger lists them)."""
    end = next((e for e in entries if e.kind == "end"), None)
    calls = [e for e in entries if e.kind != "end"]
    undo_of: dict[str, list[LedgerEntry]] = {}
    for entry in calls:
        if entry.kind == "compensation" and entry.compensates:
            undo_of.setdefault(entry.compensates, []).append(entry)
    agents: dict[str, list[dict[str, Any]]] = {}
    for entry in calls:
        row = _entry(entry)
        if entry.kind == "step":
            row["compensations"] = [
                {"id": u.id, "key": u.key, "agent": u.agent, "status": u.status.value}
                for u in undo_of.get(entry.key, ())
            ]
        agents.setdefault(entry.agent, []).append(row)
    return {
        "taskId": task_id,
        "ended": None
        if end is None
        else {"state": _state(end.remote_state) or end.status.value, "reason": end.reason},
        "agents": [{"agent": agent, "entries": rows} for agent, rows in agents.items()],
        "count": len(calls),
        "open": sum(1 for e in calls if unsettled(e)),
    }


def _entry(entry: LedgerEntry) -> dict[str, Any]:
    return {
        "id": entry.id,
        "key": entry.key,
        "kind": entry.kind,
        "status": entry.status.value,
        "remoteTaskId": entry.remote_task_id,
        "remoteState": _state(entry.remote_state),
        "observedAt": _stamp(entry.observed_at),
        "reason": entry.reason,
        "compensates": entry.compensates,
        "attempts": entry.attempts,
        "runs": entry.runs,
        "summary": describe_entry(entry),
    }


def _state(value: str) -> str:
    """A ``TaskState`` value as the page names states (``COMPLETED``); ``""`` for none."""
    return value.removeprefix("TASK_STATE_")


def _stamp(seconds: float) -> str:
    if not seconds:
        return ""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
