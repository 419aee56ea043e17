"""``MemoryLedgerStore``: delegation entries in this process only (tests, the memory task
store: what the process forgets on exit, it forgets of its delegations too)."""

from __future__ import annotations

from collections.abc import Iterable

from .entries import EntryStatus, LedgerEntry
from .store import LedgerStore

__all__ = ["MemoryLedgerStore"]


class MemoryLedgerStore(LedgerStore):
    def __init__(self) -> None:
        self._by_id: dict[str, LedgerEntry] = {}
        self._by_key: dict[tuple[str, str, str], str] = {}
        self._next_seq: dict[tuple[str, str], int] = {}

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def insert(self, entry: LedgerEntry) -> LedgerEntry:
        found = self._by_key.get((entry.tenant, entry.scope, entry.key))
        if found is not None:
            return self._by_id[found]
        scope = (entry.tenant, entry.scope)
        seq = self._next_seq.get(scope, 0) + 1
        self._next_seq[scope] = seq
        stored = entry.replace(seq=seq)
        self._by_id[stored.id] = stored
        self._by_key[(entry.tenant, entry.scope, entry.key)] = stored.id
        return stored

    async def save(self, entry: LedgerEntry) -> LedgerEntry | None:
        found = self._by_id.get(entry.id)
        if found is None or found.version != entry.version:
            return None
        stored = self._by_id[entry.id] = entry.replace(version=entry.version + 1)
        return stored

    async def get(self, entry_id: str) -> LedgerEntry | None:
        return self._by_id.get(entry_id)

    async def find(self, tenant: str, scope: str, key: str) -> LedgerEntry | None:
        found = self._by_key.get((tenant, scope, key))
        return None if found is None else self._by_id[found]

    async def entries(
        self,
        *,
        tenant: str | None = None,
        scope: str | None = None,
        statuses: Iterable[EntryStatus] | None = None,
        with_end: bool = False,
    ) -> list[LedgerEntry]:
        wanted = None if statuses is None else frozenset(statuses)
        found = [
            entry
            for entry in self._by_id.values()
            if (tenant is None or entry.tenant == tenant)
            and (scope is None or entry.scope == scope)
            and (wanted is None or entry.status in wanted)
            and (with_end or entry.kind != "end")
        ]
        return sorted(found, key=lambda e: (e.tenant, e.scope, e.seq))
