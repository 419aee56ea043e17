"""What every HTTP-based transport shares: turning failures of the HTTP layer (the native
pool's or httpx's) into peerwire's error tree, credentials that travel in the query string,
and reading answers and SSE streams."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Mapping
from typing import TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx

from ...bindings.sse import SSEEventTooLarge, SSEParser
from ...errors import (
    A2AConnectionError,
    A2AError,
    A2ATimeoutError,
    ClientError,
    InvalidResponseError,
)
from ...types import decode
from ._exchange import StreamedReply
from ._h1 import Disconnected, H1Error, H1Timeout, LimitExceeded, MalformedResponse

T = TypeVar("T")

__all__ = [
    "HTTP_ERRORS",
    "client_error",
    "decode_answer",
    "excerpt",
    "invalid_answer",
    "is_event_stream",
    "read_rest",
    "sse_payloads",
    "with_query",
]


def client_error(exc: Exception, url: str, what: str = "the request") -> ClientError:
    """The peerwire error for a failure of the HTTP layer while ``what`` was in flight to
    ``url``."""
    if isinstance(exc, httpx.TimeoutException | H1Timeout):
        why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return A2ATimeoutError(f"{what} to {url} timed out ({why})", url=url)
    if isinstance(exc, LimitExceeded):
        return InvalidResponseError(f"{what} to {url} got an answer past a limit: {exc}", url=url)
    if isinstance(exc, httpx.DecodingError | httpx.TooManyRedirects | MalformedResponse):
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
            seen, ConnectionResetError | httpx.RemoteProtocolError | Disconnected
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


def with_query(url: str, query: Mapping[str, str]) -> str:
    """``url`` with ``query`` added to its own parameters (a name in both takes the value of
    ``query``; REST targets carry parameters of their own)."""
    if not query:
        return url
    parts = urlsplit(url)
    kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in query]
    return urlunsplit(parts._replace(query=urlencode([*kept, *query.items()])))


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


HTTP_ERRORS = (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError, H1Error)
"""What the HTTP layer raises for a request that did not get through (see ``client_error``)."""


async def sse_payloads(reply: StreamedReply, url: str, operation: str) -> AsyncIterator[bytes]:
    """The ``data`` of each SSE event of ``reply``; a broken connection is a typed error, and
    so is an event past ``ClientLimits.max_sse_event_size`` (the caller closes ``reply``,
    which then cuts its connection)."""
    parser = SSEParser(reply.limits.max_sse_event_size)
    chunks = reply.chunks()
    while True:
        try:
            chunk = await anext(chunks)
        except StopAsyncIteration:
            return
        except HTTP_ERRORS as exc:
            raise client_error(exc, url, f"the {operation} stream") from exc
        try:
            events = parser.feed(chunk)
        except SSEEventTooLarge as exc:
            for data in exc.events:
                yield data
            raise InvalidResponseError(
                f"the {operation} stream from {url} was refused: {exc} "
                "(ClientLimits.max_sse_event_size)",
                url=url,
            ) from None
        for data in events:
            yield data


async def read_rest(reply: StreamedReply, url: str, operation: str) -> bytes:
    """The rest of a streamed reply's body; a broken connection is a typed error."""
    try:
        return await reply.read()
    except HTTP_ERRORS as exc:
        raise client_error(exc, url, operation) from exc
