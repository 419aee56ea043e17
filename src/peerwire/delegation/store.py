"""``LedgerStore``: where delegation entries live (memory, SQLite, PostgreSQL).

A ledger store keeps its own table (``delegations``) and its own schema version, next to a
task store's tables in the same SQLite file or PostgreSQL schema, or alone in a file of its
own (``Ledger`` outside a server). It is a small key-value store of ``LedgerEntry`` rows with
three rules that matter: ``insert`` is idempotent on (tenant, scope, key), every ``save`` is a
compare-and-set on the row's ``version`` (two writers racing: one wins, the other is told and
reads the winner's row), and every read returns what was committed.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable

from .entries import EntryStatus, LedgerEntry

__all__ = ["LedgerStore"]


class LedgerStore(abc.ABC):
    """Delegation entries, durable (SQLite, PostgreSQL) or not (memory)."""

    @abc.abstractmethod
    async def open(self) -> None:
        """Connect, and create or migrate the table. Called once before use."""

    @abc.abstractmethod
    async def close(self) -> None: ...

    @abc.abstractmethod
    async def insert(self, entry: LedgerEntry) -> LedgerEntry:
        """Store ``entry`` unless one with its (tenant, scope, key) exists; return the entry
        stored (``entry``, or the one found: a replay gets the recorded delegation back).
        ``entry.seq`` is replaced by the next number of its scope."""

    @abc.abstractmethod
    async def save(self, entry: LedgerEntry) -> LedgerEntry | None:
        """Replace the entry with ``entry.id`` if its stored ``version`` is still
        ``entry.version``; the entry stored (``version`` one more), or ``None`` when another
        write came first (or there is no such entry): nothing is written then."""

    @abc.abstractmethod
    async def get(self, entry_id: str) -> LedgerEntry | None: ...

    @abc.abstractmethod
    async def find(self, tenant: str, scope: str, key: str) -> LedgerEntry | None: ...

    @abc.abstractmethod
    async def entries(
        self,
        *,
        tenant: str | None = None,
        scope: str | None = None,
        statuses: Iterable[EntryStatus] | None = None,
        with_end: bool = False,
    ) -> list[LedgerEntry]:
        """Entries matching every filter given (``None``: any), by scope then ``seq``; a
        scope's ``end`` row (how its parent ended: a decision, not a delegation) only with
        ``with_end``."""
