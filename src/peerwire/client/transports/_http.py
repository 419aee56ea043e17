"""What every HTTP-based transport shares: turning httpx failures into peerwire's error tree,
and credentials that travel in the query string."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Mapping
from typing import TypeVar

import httpx

from ...bindings.sse import SSEParser
from ...errors import (
    A2AConnectionError,
    A2AError,
    A2ATimeoutError,
    ClientError,
    InvalidResponseError,
)
from ...types import decode

T = TypeVar("T")

__all__ = [
    "HTTP_ERRORS",
    "client_error",
    "decode_answer",
    "excerpt",
    "invalid_answer",
    "is_event_stream",
    "sse_payloads",
    "stream_timeout",
    "with_query",
]


def client_error(exc: Exception, url: str, what: str = "the request") -> ClientError:
    """The peerwire error for an httpx failure while ``what`` was in flight to ``url``."""
    if isinstance(exc, httpx.TimeoutException):
        return A2ATimeoutError(f"{what} to {url} timed out ({type(exc).__name__})", url=url)
    if isinstance(exc, httpx.DecodingError | httpx.TooManyRedirects):
        return InvalidResponseError(f"{what} to {url} got an unreadable answer: {exc}", url=url)
    detail = str(exc) or type(exc).__name__
    return A2AConnectionError(f"{what} to {url} failed: {_tls_hint(exc, url) or detail}", url=url)


def _tls_hint(exc: BaseException, url: str) -> str | None:
    """What to say about a failure of a TLS connection, which is rarely what httpx says."""
    seen: BaseException | None = exc
    for _ in range(8):  # the cause chain, bounded
        if seen is None:
            return None
        if isinstance(seen, ssl.SSLError):
            return (
                f"the TLS handshake failed ({seen}): a server certificate this client does not "
                "trust, or a client certificate the server does not accept"
            )
        if url.startswith("https:") and isinstance(
            seen, ConnectionResetError | httpx.RemoteProtocolError
        ):
            # TLS 1.3 servers check the client certificate after the client's side of the
            # handshake is done, and refuse one by closing or resetting the connection.
            return (
                f"the server closed the connection without answering ({seen or 'reset'}); if "
                "it requires client certificates, the TLS handshake failed: it does not accept "
                "this client's, or wanted one"
            )
        seen = seen.__cause__ or seen.__context__
    return None


def with_query(url: str, query: Mapping[str, str]) -> str | httpx.URL:
    """``url`` with ``query`` added to its own parameters (httpx's ``params=`` would replace
    them, and REST targets carry some)."""
    if not query:
        return url
    return httpx.URL(url).copy_merge_params(dict(query))


def stream_timeout(timeout: float | None, idle: float | None) -> httpx.Timeout:
    """Timeouts of a streaming request: the stream may stay quiet for ``idle`` seconds.

    A read timeout equal to the unary timeout would kill streams whose task is simply slow;
    between events a server only sends keep-alive comments (every 15 s for peerwire).
    """
    return httpx.Timeout(timeout, read=idle)


def is_event_stream(content_type: str) -> bool:
    """Whether a response is an SSE stream (the binding answers errors as plain JSON instead)."""
    return content_type.split(";", 1)[0].strip().lower() == "text/event-stream"


def excerpt(content: bytes, limit: int = 200) -> str:
    """A short, single-line rendering of a body, for error messages."""
    text = " ".join(content.decode("utf-8", errors="replace").split())
    if not text:
        return "(empty body)"
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def invalid_answer(url: str, operation: str, why: str) -> InvalidResponseError:
    """The error for a server answer that does not fit the protocol."""
    return InvalidResponseError(f"{operation} to {url} got an invalid answer: {why}", url=url)


def decode_answer(raw: bytes, type_: type[T], *, url: str, operation: str, what: str) -> T:
    """``raw`` as ``type_``; a mismatch is the server's fault, not the caller's invalid params.

    ``what`` names the part of the answer (``result``, ``body``) in the message and JSON path.
    """
    try:
        return decode(raw, type_, path=what)
    except A2AError as exc:
        why = f"its {what} is not a valid {type_.__name__}: {exc}"
        raise invalid_answer(url, operation, why) from None


HTTP_ERRORS = (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError)
"""What httpx raises for a request that did not get through (mapped by ``client_error``)."""


async def sse_payloads(response: httpx.Response, url: str, operation: str) -> AsyncIterator[bytes]:
    """The ``data`` of each SSE event of ``response``; a broken connection is a typed error."""
    parser = SSEParser()
    chunks = response.aiter_bytes()
    while True:
        try:
            chunk = await chunks.__anext__()
        except StopAsyncIteration:
            return
        except HTTP_ERRORS as exc:
            raise client_error(exc, url, f"the {operation} stream") from exc
        for data in parser.feed(chunk):
            yield data
