"""Fixtures for the inspector's tests: real agents on loopback, and the inspector served in
the test's event loop (``peerwire.inspect.serve_inspector``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest_asyncio

from peerwire.inspect import serve_inspector
from peerwire.samples.glossary import agent as glossary_agent
from peerwire.server import PushSettings
from peerwire.testing import live_server

from .agents import parts_agent, vault_agent, vault_auth
from .pages import api_client

SHUTDOWN_GRACE_S = 1.0


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def glossary_url() -> AsyncIterator[str]:
    """The Glossary Agent on all three bindings, offering push notifications (webhooks on
    loopback allowed, for the push config tests)."""
    async with live_server(
        glossary_agent,
        grpc_port=0,
        push=PushSettings(allow=("127.0.0.1",)),
        shutdown_grace=SHUTDOWN_GRACE_S,
    ) as url:
        yield url


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def parts_url() -> AsyncIterator[str]:
    """An agent that accepts every media type (the glossary declares text/plain only)."""
    async with live_server(parts_agent(), shutdown_grace=SHUTDOWN_GRACE_S) as url:
        yield url


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def vault_url() -> AsyncIterator[str]:
    async with live_server(
        vault_agent(), grpc_port=0, auth=vault_auth(), shutdown_grace=SHUTDOWN_GRACE_S
    ) as url:
        yield url


@pytest_asyncio.fixture(loop_scope="module")
async def inspector() -> AsyncIterator[httpx.AsyncClient]:
    """A fresh inspector, and an HTTP client pointed at it (as the page would call it)."""
    async with (
        serve_inspector(timeout=10.0) as page,
        api_client(page) as http,
    ):
        yield http
