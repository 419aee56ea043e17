"""How the HTTP transports (and the card fetch) send requests: one small interface, two ways.

``HTTPExchange`` is all they use: "send this request, give me status, headers and body"
(``request``) and "... give me the body as it arrives" (``open_stream``). Headers come back by
lower-case name. Failures on the way raise what ``_http.HTTP_ERRORS`` lists, which
``_http.client_error`` turns into peerwire's errors.

* ``PooledExchange``: the client's own, when the caller brings no ``httpx.AsyncClient``: the
  native HTTP/1.1 pool of ``_h1``. URLs that the environment's ``HTTP(S)_PROXY``/``ALL_PROXY``
  (less ``NO_PROXY``) sends through a proxy go through httpx instead, which speaks to proxies.
* ``HttpxExchange``: an ``httpx.AsyncClient`` (the caller's, or the in-process ASGI one),
  used as given, except for what ``ClientLimits`` bound: the connect timeout, and the size
  of a body read whole (counted here as it arrives; httpx has no such limit).

Both carry the ``ClientLimits`` on every streamed reply (``limits``), for the SSE reader.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Mapping
from typing import Protocol

import httpx

from ._h1 import H1Pool, LimitExceeded, default_ssl_context
from ._limits import DEFAULT_LIMITS, ClientLimits
from ._proxy import EnvironmentProxies

__all__ = [
    "HTTPExchange",
    "HttpxExchange",
    "PooledExchange",
    "Reply",
    "StreamedReply",
    "as_exchange",
]


class Reply(Protocol):
    """A response read to its end."""

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]:
        """By lower-case name."""
        ...

    @property
    def body(self) -> bytes: ...


class StreamedReply(Protocol):
    """A response whose body is read as it arrives; ``aclose`` it in every case."""

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]:
        """By lower-case name."""
        ...

    @property
    def limits(self) -> ClientLimits:
        """What the reader of this body accepts (``read`` keeps to ``max_body_size``)."""
        ...

    async def read(self) -> bytes:
        """The rest of the body, within ``limits.max_body_size``."""
        ...

    def chunks(self) -> AsyncIterator[bytes]: ...

    async def aclose(self) -> None: ...


class HTTPExchange(Protocol):
    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None = None,
        timeout: float | None,
    ) -> Reply:
        """One request, its response read whole; ``timeout`` bounds it all (``None``: no
        limit)."""
        ...

    async def open_stream(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None = None,
        timeout: float | None,
        idle_timeout: float | None,
    ) -> StreamedReply:
        """One request whose response body is read as it comes: ``timeout`` bounds getting
        there, ``idle_timeout`` each wait for more of the body."""
        ...

    async def aclose(self) -> None:
        """Release what this exchange owns (a caller's httpx client is left open)."""
        ...


# -- httpx ------------------------------------------------------------------------------------


class _HttpxReply:
    __slots__ = ("body", "headers", "status")

    def __init__(self, response: httpx.Response, body: bytes) -> None:
        self.status = response.status_code
        self.headers: Mapping[str, str] = response.headers
        self.body = body


def _too_large(limit: int) -> LimitExceeded:
    return LimitExceeded(
        f"the response body is larger than ClientLimits.max_body_size ({limit} bytes)"
    )


async def _read_within(response: httpx.Response, limit: int) -> bytes:
    """The body of a streamed httpx response, refused as soon as it passes ``limit`` bytes
    (as decoded: a compressed body counts by what it expands to)."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit and "content-encoding" not in response.headers:
        raise _too_large(limit)
    parts = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        parts.append(chunk)
    return b"".join(parts)


class _HttpxStreamedReply:
    def __init__(self, response: httpx.Response, limits: ClientLimits) -> None:
        self._response = response
        self.status = response.status_code
        self.headers: Mapping[str, str] = response.headers
        self.limits = limits

    async def read(self) -> bytes:
        return await _read_within(self._response, self.limits.max_body_size)

    def chunks(self) -> AsyncIterator[bytes]:
        return self._response.aiter_bytes()

    async def aclose(self) -> None:
        await self._response.aclose()


class HttpxExchange:
    """Requests through an ``httpx.AsyncClient``; closed by ``aclose`` only if ``owned``."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        owned: bool = False,
        limits: ClientLimits = DEFAULT_LIMITS,
    ) -> None:
        self.client = client
        self.limits = limits
        self._owned = owned

    def _timeout(self, timeout: float | None, read: float | None) -> httpx.Timeout:
        connect = self.limits.connect_timeout
        if connect is None or (timeout is not None and timeout < connect):
            connect = timeout
        return httpx.Timeout(timeout, connect=connect, read=read)

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None = None,
        timeout: float | None,
    ) -> Reply:
        request = self.client.build_request(
            method, url, content=body, headers=headers, timeout=self._timeout(timeout, timeout)
        )
        response = await self.client.send(request, stream=True)
        try:
            content = await _read_within(response, self.limits.max_body_size)
        finally:
            await response.aclose()
        return _HttpxReply(response, content)

    async def open_stream(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None = None,
        timeout: float | None,
        idle_timeout: float | None,
    ) -> StreamedReply:
        # The read timeout is the idle one: it would otherwise end streams whose task is
        # simply slow (between events a server only sends keep-alive comments).
        request = self.client.build_request(
            method,
            url,
            content=body,
            headers=headers,
            timeout=self._timeout(timeout, idle_timeout),
        )
        return _HttpxStreamedReply(await self.client.send(request, stream=True), self.limits)

    async def aclose(self) -> None:
        if self._owned:
            await self.client.aclose()


# -- the native pool --------------------------------------------------------------------------


class PooledExchange:
    """The native HTTP/1.1 pool, with httpx for URLs the environment sends through a proxy
    (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY`` less ``NO_PROXY``, read when this is made,
    as httpx does): the native pool does not speak to proxies.

    ``ssl_context`` verifies https servers and may present a client certificate (default:
    the system's trust store); ``limits`` bound connections per origin, connecting, and what
    a server may send (over httpx too, as far as it allows: ``ClientLimits``).
    """

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext | None = None,
        limits: ClientLimits = DEFAULT_LIMITS,
        proxies: EnvironmentProxies | None = None,
    ) -> None:
        self._pool = H1Pool(ssl_context=ssl_context, limits=limits)
        self._ssl_context = ssl_context
        self.limits = limits
        self._proxies = proxies if proxies is not None else EnvironmentProxies()
        self._proxied: dict[str, bool] = {}  # by URL
        self._httpx: HttpxExchange | None = None

    @property
    def is_closed(self) -> bool:
        return self._pool.closed

    def _route(self, url: str) -> H1Pool | HttpxExchange:
        if not self._proxies.any:
            return self._pool  # the usual case: no proxy configured, nothing to look up
        proxied = self._proxied.get(url)
        if proxied is None:
            proxied = self._proxies.applies_to(url)
            if len(self._proxied) >= 256:
                self._proxied.clear()
            self._proxied[url] = proxied
        if not proxied:
            return self._pool
        if self._httpx is None:
            client = httpx.AsyncClient(
                verify=self._ssl_context or default_ssl_context(),
                limits=httpx.Limits(max_connections=self.limits.max_connections),
                trust_env=True,
            )
            self._httpx = HttpxExchange(client, owned=True, limits=self.limits)
        return self._httpx

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None = None,
        timeout: float | None,
    ) -> Reply:
        return await self._route(url).request(
            method, url, headers=headers, body=body, timeout=timeout
        )

    async def open_stream(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes | None = None,
        timeout: float | None,
        idle_timeout: float | None,
    ) -> StreamedReply:
        return await self._route(url).open_stream(
            method, url, headers=headers, body=body, timeout=timeout, idle_timeout=idle_timeout
        )

    async def aclose(self) -> None:
        try:
            await self._pool.aclose()
        finally:
            if self._httpx is not None:
                await self._httpx.aclose()


def as_exchange(
    http: httpx.AsyncClient | HTTPExchange, limits: ClientLimits = DEFAULT_LIMITS
) -> HTTPExchange:
    """``http`` as an exchange: an ``httpx.AsyncClient`` is wrapped (and left open)."""
    if isinstance(http, httpx.AsyncClient):
        return HttpxExchange(http, limits=limits)
    return http
