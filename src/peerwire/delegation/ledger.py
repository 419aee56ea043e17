"""``Ledger``: delegations from a batch job or a service that is not an A2A server.

The same ledger a server keeps for its tasks' delegations, in a store of its own: open
delegations persist in SQLite (a file, by default ``peerwire-delegations.db``) or PostgreSQL,
so after a restart the job lists what is still open (``open()``) and follows it on.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from ._observe import Observer
from .connector import Connect, Connector
from .delegations import Delegations
from .memory import MemoryLedgerStore
from .sqlite import SQLiteLedgerStore
from .store import LedgerStore

__all__ = ["DEFAULT_LEDGER", "Ledger", "open_ledger_store"]

DEFAULT_LEDGER = "sqlite:peerwire-delegations.db"


def open_ledger_store(spec: str) -> LedgerStore:
    """A ledger store from a spec: ``memory``, ``sqlite:PATH`` or
    ``postgresql://USER@HOST:PORT/DB[?schema=NAME]`` (the task stores' spec form: a
    server's ledger is in its task store's file or schema). Returned unopened."""
    if spec == "memory":
        return MemoryLedgerStore()
    kind, separator, location = spec.partition(":")
    if kind in ("postgresql", "postgres") and location.startswith("//"):
        from .postgres import PostgresLedgerStore  # the "postgres" extra (asyncpg)

        return PostgresLedgerStore.from_url(spec)
    if kind == "sqlite" and separator and location:
        return SQLiteLedgerStore(location)
    raise ValueError(
        f"unknown ledger {spec!r}: expected 'memory', 'sqlite:PATH' or 'postgresql://HOST/DB'"
    )


class Ledger(Delegations):
    """Delegations of one ``scope`` (a job's name) in a ledger of their own::

        async with Ledger("sqlite:./erp.db", scope="nightly") as ledger:
            for d in await ledger.open():          # left open by an earlier run
                print(d.key, await d.result())
            d = await ledger.delegate(URL, "book 42", key="order-42/book", deadline=60)
            outcome = await d.result()

    ``spec`` is a ledger store spec (``open_ledger_store``) or a ``LedgerStore``;
    ``connect`` makes the ``Client`` for an agent URL (credentials, headers); ``metrics``
    (a ``peerwire.ops.Metrics``) counts its events. The other options are ``Delegations``'.
    """

    def __init__(
        self,
        spec: str | LedgerStore = DEFAULT_LEDGER,
        *,
        scope: str = "default",
        tenant: str = "",
        connect: Connect | None = None,
        cancel_within: float = 5.0,
        unreachable_after: float = 60.0,
        compensation_attempts: int = 5,
        compensation_backoff: float = 0.5,
        compensation_timeout: float = 30.0,
        metrics: Any = None,
    ) -> None:
        store = open_ledger_store(spec) if isinstance(spec, str) else spec
        super().__init__(
            store,
            Connector(connect),
            scope=scope,
            tenant=tenant,
            cancel_within=cancel_within,
            unreachable_after=unreachable_after,
            compensation_attempts=compensation_attempts,
            compensation_backoff=compensation_backoff,
            compensation_timeout=compensation_timeout,
            observer=Observer(metrics),
        )

    def for_scope(self, scope: str) -> Delegations:
        """The delegations of another scope in the same ledger (same store, same clients)."""
        return Delegations(
            self.store,
            self.connector,
            scope=scope,
            tenant=self.tenant,
            cancel_within=self.cancel_within,
            unreachable_after=self.unreachable_after,
            compensation_attempts=self.compensation_attempts,
            compensation_backoff=self.compensation_backoff,
            compensation_timeout=self.compensation_timeout,
            observer=self.observer,
        )

    async def __aenter__(self) -> Ledger:
        await self.store.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self.connector.aclose()
        finally:
            await self.store.close()
