"""Every request the inspector sends an agent it does not trust, bounded: the answer's body
by the client's own ``ClientLimits.max_body_size`` (one limit, as ``peerwire card`` keeps),
the whole exchange (redirects and every read together) by one deadline, and redirects
followed only within the origin asked (a card must not send the backend to another host or
an internal port for whoever can reach it)."""

from __future__ import annotations

import asyncio

import httpx

# The client's own reader and limit: a body the client would refuse, the inspector refuses.
from ..client.transports._exchange import _read_within as read_within
from ..client.transports._h1 import LimitExceeded
from ..client.transports._limits import DEFAULT_LIMITS
from ..errors import PeerwireError

__all__ = ["MAX_BODY_BYTES", "MAX_REDIRECTS", "FetchRefused", "bounded_send", "read_whole"]

MAX_BODY_BYTES = DEFAULT_LIMITS.max_body_size
MAX_REDIRECTS = 5


class FetchRefused(PeerwireError):
    """The agent's answer was refused: too large, too slow, or redirected elsewhere."""


async def bounded_send(
    http: httpx.AsyncClient,
    request: httpx.Request,
    *,
    timeout: float,
    limit: int = MAX_BODY_BYTES,
) -> httpx.Response:
    """Send ``request`` and read its answer whole, within ``limit`` bytes and ``timeout``
    seconds in all; a redirect is followed when it stays at the same origin. Raises
    ``FetchRefused`` (or httpx's own errors, for a connection that fails)."""
    deadline = asyncio.timeout(timeout)
    try:
        async with deadline:
            return await _send(http, request, limit)
    except (TimeoutError, httpx.HTTPError):
        # Cancelled at the deadline, httpx may say so as an error of its own.
        if not deadline.expired():
            raise
        raise FetchRefused(
            f"{request.method} {request.url} did not complete within {timeout:g} s"
        ) from None


async def _send(http: httpx.AsyncClient, request: httpx.Request, limit: int) -> httpx.Response:
    origin = _origin(request.url)
    for _ in range(MAX_REDIRECTS + 1):
        response = await http.send(request, stream=True, follow_redirects=False)
        try:
            following = response.next_request
            if following is None:
                return await read_whole(response, limit)
        finally:
            await response.aclose()
        if _origin(following.url) != origin:
            raise FetchRefused(
                f"{request.url} redirects to {following.url}, another origin: not followed"
            )
        request = following
    raise FetchRefused(f"{request.url}: more than {MAX_REDIRECTS} redirects")


async def read_whole(response: httpx.Response, limit: int = MAX_BODY_BYTES) -> httpx.Response:
    """The streamed ``response`` read whole, within ``limit`` bytes (``FetchRefused``
    past it, as soon as it is passed), as a response holding its content."""
    request = response.request
    try:
        content = await read_within(response, limit)
    except LimitExceeded as exc:
        raise FetchRefused(f"{request.method} {request.url}: {exc}; not read further") from None
    return httpx.Response(
        response.status_code,
        headers=response.headers,
        content=content,
        request=request,
        extensions={"http_version": response.http_version.encode()},
    )


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    default = {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host.lower(), url.port if url.port is not None else default
