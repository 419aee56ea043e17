"""Where a server keeps the ledger of its tasks' delegations: beside the tasks.

The composition roots (``create_app``, ``peerwire.cluster.run_worker``) make the runner's
``DelegationHub`` here, so every process of a deployment sharing a store shares the ledger.
"""

from __future__ import annotations

from ..delegation import DelegationHub, MemoryLedgerStore, SQLiteLedgerStore
from .stores import SQLiteTaskStore, TaskStore

__all__ = ["delegation_hub_beside"]


def delegation_hub_beside(store: TaskStore) -> DelegationHub:
    """The ledger of the tasks' delegations (docs/DELEGATION.md) in the SQLite file or the
    PostgreSQL schema of ``store``; in memory for the memory store (and for a store of
    another kind: pass ``create_app(delegations=...)`` to keep it durable)."""
    if isinstance(store, SQLiteTaskStore):
        return DelegationHub(SQLiteLedgerStore(store.path))
    if type(store).__name__ == "PostgresTaskStore":  # the "postgres" extra: imported lazily
        from ..delegation.postgres import PostgresLedgerStore
        from .stores.postgres import PostgresTaskStore

        if isinstance(store, PostgresTaskStore):
            return DelegationHub(PostgresLedgerStore(store.dsn, schema=store.schema))
    return DelegationHub(MemoryLedgerStore())
