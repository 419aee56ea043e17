"""What every HTTP-based transport shares: turning httpx failures into peerwire's error tree."""

from __future__ import annotations

import httpx

from ...errors import A2AConnectionError, A2ATimeoutError, ClientError, InvalidResponseError

__all__ = ["client_error", "stream_timeout"]


def client_error(exc: Exception, url: str, what: str = "the request") -> ClientError:
    """The peerwire error for an httpx failure while ``what`` was in flight to ``url``."""
    if isinstance(exc, httpx.TimeoutException):
        return A2ATimeoutError(f"{what} to {url} timed out ({type(exc).__name__})", url=url)
    if isinstance(exc, httpx.DecodingError | httpx.TooManyRedirects):
        return InvalidResponseError(f"{what} to {url} got an unreadable answer: {exc}", url=url)
    detail = str(exc) or type(exc).__name__
    return A2AConnectionError(f"{what} to {url} failed: {detail}", url=url)


def stream_timeout(timeout: float | None, idle: float | None) -> httpx.Timeout:
    """Timeouts of a streaming request: the stream may stay quiet for ``idle`` seconds.

    A read timeout equal to the unary timeout would kill streams whose task is simply slow;
    between events a server only sends keep-alive comments (every 15 s for peerwire).
    """
    return httpx.Timeout(timeout, read=idle)
