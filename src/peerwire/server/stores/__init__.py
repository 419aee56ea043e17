"""Task stores: where tasks, their events and push configs live."""

from __future__ import annotations

from .base import StoredTaskInfo, TaskStore
from .memory import MemoryTaskStore

__all__ = ["MemoryTaskStore", "StoredTaskInfo", "TaskStore", "open_store"]


def open_store(spec: str) -> TaskStore:
    """A store from its command-line spec: ``memory``."""
    if spec == "memory":
        return MemoryTaskStore()
    raise ValueError(f"unknown store {spec!r}: expected 'memory'")
