"""The testing how-to's store example (docs/examples/test_my_store.py) passes the public
store conformance suite: its test class runs here as written."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_PATH = Path(__file__).resolve().parents[2] / "docs" / "examples" / "test_my_store.py"
_SPEC = importlib.util.spec_from_file_location("peerwire_docs_example_test_my_store", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
_EXAMPLE = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_EXAMPLE)

TestCountingStore = _EXAMPLE.TestCountingStore


async def test_the_example_store_counts_what_it_stores() -> None:
    from peerwire.testing.store_suite import new_record, status_event
    from peerwire.types import TaskState

    store = _EXAMPLE.CountingStore()
    await store.open()
    try:
        record = new_record()
        await store.create(record, tenant="", owner="")
        await store.append(record.id, [status_event(record, TaskState.WORKING)])
        assert store.events_stored == 1
    finally:
        await store.close()
