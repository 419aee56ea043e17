"""Fixtures for the security tests: keys generated once per session, a local token issuer."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from ._support import Issuer, Keys, generate_keys, serve_asgi


@pytest.fixture(scope="session")
def keys() -> Keys:
    return generate_keys()


@pytest_asyncio.fixture
async def issuer(keys: Keys) -> AsyncIterator[Issuer]:
    """A local OpenID provider on loopback (discovery, JWKS, token endpoint)."""
    provider = Issuer(keys, clients={"client-a": ("secret-a", "alice")})
    async with serve_asgi(provider) as url:
        provider.url = url
        yield provider
