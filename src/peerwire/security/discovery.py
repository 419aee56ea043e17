"""Issuer metadata: OpenID Connect Discovery and OAuth 2.0 Authorization Server Metadata.

A card's ``openIdConnectUrl`` (OIDC Discovery 1.0) or ``oauth2MetadataUrl`` (RFC 8414) names a
document that says who issues tokens (``issuer``), where its keys are (``jwks_uri``) and where
to get tokens (``token_endpoint``). The issuer it names must be the one the URL was built from
(OIDC Discovery §4.3, RFC 8414 §3.3); otherwise a document could vouch for another issuer's
tokens (a mix-up attack), so it is refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx

from ._fetch import FetchError, check_fetch_url, fetch_json

__all__ = ["MetadataCache", "ProviderMetadata", "fetch_provider_metadata", "metadata_urls"]

_OIDC_SUFFIX = "/.well-known/openid-configuration"
_OAUTH_SUFFIX = "/.well-known/oauth-authorization-server"


@dataclass(frozen=True, slots=True)
class ProviderMetadata:
    """What peerwire uses of an issuer's metadata document."""

    url: str
    issuer: str
    jwks_uri: str
    token_endpoint: str | None = None


def metadata_urls(issuer: str) -> tuple[str, ...]:
    """Where the metadata of ``issuer`` may be published (OIDC and RFC 8414 forms)."""
    parts = urlsplit(issuer)
    origin = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    return (
        issuer.rstrip("/") + _OIDC_SUFFIX,
        origin + _OAUTH_SUFFIX + path,
        origin + _OIDC_SUFFIX + path,
    )


async def fetch_provider_metadata(
    url: str, *, http: httpx.AsyncClient | None = None, timeout: float = 10.0
) -> ProviderMetadata:
    """Fetch and check the metadata at ``url``; ``FetchError`` says what is wrong."""
    check_fetch_url(url, "issuer metadata URL")
    document = await fetch_json(url, "issuer metadata", http=http, timeout=timeout)
    return parse_provider_metadata(url, document)


def parse_provider_metadata(url: str, document: Mapping[str, Any]) -> ProviderMetadata:
    issuer = document.get("issuer")
    if not isinstance(issuer, str) or not issuer:
        raise FetchError(f"the issuer metadata at {url} names no issuer")
    if url not in metadata_urls(issuer):
        raise FetchError(
            f"the issuer metadata at {url} is for issuer {issuer!r}, which does not publish "
            "its metadata there"
        )
    jwks_uri = document.get("jwks_uri")
    if not isinstance(jwks_uri, str) or not jwks_uri:
        raise FetchError(f"the issuer metadata at {url} names no jwks_uri")
    token_endpoint = document.get("token_endpoint")
    return ProviderMetadata(
        url=url,
        issuer=issuer,
        jwks_uri=jwks_uri,
        token_endpoint=token_endpoint if isinstance(token_endpoint, str) else None,
    )


class MetadataCache:
    """Issuer metadata by URL, refetched after ``cache_seconds`` (failures are not cached)."""

    def __init__(
        self,
        *,
        http: httpx.AsyncClient | None = None,
        cache_seconds: float = 3600.0,
        timeout: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._http = http
        self._cache_seconds = cache_seconds
        self._timeout = timeout
        self._clock = clock
        self._entries: dict[str, tuple[float, ProviderMetadata]] = {}
        self._lock = anyio.Lock()

    async def get(self, url: str) -> ProviderMetadata:
        cached = self._fresh(url)
        if cached is not None:
            return cached
        async with self._lock:
            cached = self._fresh(url)
            if cached is not None:
                return cached
            metadata = await fetch_provider_metadata(url, http=self._http, timeout=self._timeout)
            self._entries[url] = (self._clock(), metadata)
            return metadata

    def _fresh(self, url: str) -> ProviderMetadata | None:
        entry = self._entries.get(url)
        if entry is None or self._clock() - entry[0] >= self._cache_seconds:
            return None
        return entry[1]
