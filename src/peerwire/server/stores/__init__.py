"""Task stores: where tasks, their events and push configs live."""

from __future__ import annotations

from datetime import timedelta

from .base import StoredTaskInfo, TaskStore
from .memory import MemoryTaskStore
from .retention import retention_cutoff
from .sqlite import SQLiteTaskStore

__all__ = [
    "MemoryTaskStore",
    "SQLiteTaskStore",
    "StoredTaskInfo",
    "TaskStore",
    "open_store",
    "retention_cutoff",
]


def open_store(spec: str, *, retain_finished: timedelta | None = None) -> TaskStore:
    """A store from its command-line spec: ``memory``, ``sqlite:PATH`` or
    ``postgresql://USER@HOST:PORT/DB[?schema=NAME]`` (also ``postgres://``).

    ``retain_finished`` deletes terminal tasks older than that (SQLite, PostgreSQL; the memory
    store forgets everything on exit anyway). The store is returned unopened: its owner calls
    ``open()`` (the app does, at startup).
    """
    if spec == "memory":
        if retain_finished is not None:
            raise ValueError("retention applies to sqlite stores; 'memory' keeps nothing on exit")
        return MemoryTaskStore()
    kind, separator, location = spec.partition(":")
    if kind in ("postgresql", "postgres") and location.startswith("//"):
        from .postgres import PostgresTaskStore  # the "postgres" extra (asyncpg)

        return PostgresTaskStore.from_url(spec, retain_finished=retain_finished)
    if kind == "sqlite" and separator:
        if not location:
            raise ValueError("sqlite: needs a file path, as in sqlite:./peerwire.db")
        return SQLiteTaskStore(location, retain_finished=retain_finished)
    raise ValueError(
        f"unknown store {spec!r}: expected 'memory', 'sqlite:PATH' or 'postgresql://HOST/DB'"
    )
