"""Fixtures of the binding matrix: the server tests' workbench agent, served once per module
with all three bindings, and ``peer``, parametrised over the bindings.

``http_server`` runs the whole matrix twice, on peerwire's HTTP server and on uvicorn
(``live_server(http=...)``): the same app must behave the same on both. A module's own
servers take it too (``serving(agent, http=http_server)``).

``peer`` is module-scoped, so pytest runs a module's tests binding by binding against one
server. The three runs share that server's store and its gates: a test keeps its tasks
apart by unique contexts and gate names (``peer.key``). Counting every task of the server is
safe only because a module's tests run one at a time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from .._agents import Controls, workbench
from ._peers import BINDINGS, Bench, Peer, connecting, serving

HTTP_SERVERS = ("peerwire", "uvicorn")


@pytest.fixture(scope="module", params=HTTP_SERVERS)
def http_server(request: pytest.FixtureRequest) -> str:
    """The HTTP server this run of the module's servers is on."""
    return str(request.param)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def bench(http_server: str) -> AsyncIterator[Bench]:
    agent, controls = workbench()
    async with serving(agent, http=http_server) as url:
        yield Bench(url, controls)


@pytest_asyncio.fixture(loop_scope="module", scope="module", params=BINDINGS)
async def peer(request: pytest.FixtureRequest, bench: Bench) -> AsyncIterator[Peer]:
    async with connecting(bench.url, request.param) as connected:
        yield connected


@pytest.fixture
def controls(bench: Bench) -> Controls:
    return bench.controls
