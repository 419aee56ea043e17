"""A module that sets ``BOTH_LOOPS = True`` runs each of its tests on asyncio's own event loop
and on uvloop's (what ``peerwire serve`` runs on): their transports differ in how they report
a half-close or a reset, and the server must end every connection on both. Other modules run
on asyncio's loop only."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import pytest

LoopFactory = Callable[[], asyncio.AbstractEventLoop]


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, LoopFactory]:
    factories: dict[str, LoopFactory] = {"asyncio": asyncio.new_event_loop}
    if getattr(getattr(item, "module", None), "BOTH_LOOPS", False):
        import uvloop

        factories["uvloop"] = uvloop.new_event_loop
    return factories
