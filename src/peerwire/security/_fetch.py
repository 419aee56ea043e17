"""Fetching the small JSON documents security depends on (JWKS, discovery metadata).

Whoever can change these documents can mint credentials we accept, so they are fetched over
HTTPS only; plain HTTP is allowed to loopback addresses, where tests and sidecar issuers live.
Bodies are capped in size, redirects are not followed (a redirect could lead anywhere), and
every failure is a ``FetchError`` that says what was fetched and why it failed.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import httpx

from .._hosts import is_loopback_host
from ..errors import PeerwireError

__all__ = ["MAX_DOCUMENT_BYTES", "FetchError", "check_fetch_url", "fetch_json"]

MAX_DOCUMENT_BYTES = 1024 * 1024


class FetchError(PeerwireError):
    """A security document could not be fetched or is not a JSON object."""


def check_fetch_url(url: str, what: str) -> str:
    """``url`` if security documents may be fetched from it, else ``ValueError``."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and parts.hostname and is_loopback_host(parts.hostname):
        return url
    raise ValueError(
        f"{what} must be an https:// URL (plain http is accepted for loopback hosts only): {url!r}"
    )


async def fetch_json(
    url: str, what: str, *, http: httpx.AsyncClient | None = None, timeout: float = 10.0
) -> dict[str, Any]:
    """GET ``url`` and return its JSON object body."""
    check_fetch_url(url, what)
    try:
        if http is not None:
            body = await _get(http, url, timeout)
        else:
            async with httpx.AsyncClient(follow_redirects=False) as client:
                body = await _get(client, url, timeout)
    except httpx.HTTPError as exc:
        detail = str(exc) or type(exc).__name__
        raise FetchError(f"fetching the {what} from {url} failed: {detail}") from None
    try:
        document = json.loads(body)
    except ValueError:
        raise FetchError(f"the {what} at {url} is not JSON") from None
    if not isinstance(document, dict):
        raise FetchError(f"the {what} at {url} is not a JSON object")
    return document


async def _get(client: httpx.AsyncClient, url: str, timeout: float) -> bytes:
    async with client.stream(
        "GET", url, headers={"Accept": "application/json"}, timeout=timeout
    ) as response:
        if response.status_code != 200:
            raise httpx.HTTPStatusError(
                f"HTTP {response.status_code}", request=response.request, response=response
            )
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > MAX_DOCUMENT_BYTES:
                raise httpx.DecodingError(f"the body is larger than {MAX_DOCUMENT_BYTES} bytes")
            chunks.append(chunk)
        return b"".join(chunks)
