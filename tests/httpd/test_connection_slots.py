"""A connection keeps its state in slots: the hot path's attribute reads depend on it."""

from __future__ import annotations

import asyncio

from peerwire.httpd._connection import ConnectionSet, H1Connection


async def _app(scope: object, receive: object, send: object) -> None:
    raise AssertionError("not called")


def test_a_connection_has_no_instance_dict() -> None:
    # 49 attributes in a dict would stop sharing its keys (CPython shares at most 30), and
    # every ``self._x`` would take the slower lookup: docs/PERFORMANCE.md counts what it cost.
    loop = asyncio.new_event_loop()
    try:
        connection = H1Connection(ConnectionSet(_app, scheme="http"), loop)
    finally:
        loop.close()
    assert not hasattr(connection, "__dict__")
    # Every slot is set by __init__ (an attribute it sets outside the slots raises above).
    assert all(hasattr(connection, name) for name in H1Connection.__slots__)
