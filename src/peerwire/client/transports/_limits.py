"""``ClientLimits``: how much a client accepts from a server it does not control.

An A2A client calls agents on other people's machines. A server that sends header lines
without end, a body without end, or one SSE event that never finishes must cost the client a
bounded amount of memory and end in a typed error, not take the process down. Every limit is
checked as bytes arrive; exceeding one fails the call with ``InvalidResponseError`` naming it,
and the connection is closed, never reused.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_LIMITS", "ClientLimits"]

_KIB = 1024
_MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ClientLimits:
    """What a client accepts from a server, and how long it waits to connect.

    ``Client.connect(url, limits=ClientLimits(max_body_size=64 * 1024 * 1024))`` raises one
    of them; the others keep their defaults. How long a call may take, and how long a
    stream may stay silent, are ``Client.connect``'s ``timeout`` and ``stream_idle_timeout``.

    Over httpx (your own ``http_client``, the in-process ``app=``, or a URL the environment
    sends through a proxy) the body and SSE limits apply as here; the response head is
    bounded by httpx's own limit (100 KiB) instead of ``max_head_size``/``max_header_count``.
    """

    max_head_size: int = 64 * _KIB
    """Bytes of a response's head: the status line, the headers, and any ``1xx`` responses
    before it."""

    max_header_count: int = 128
    """Header lines of one response head."""

    max_status_line: int = 8 * _KIB
    """Bytes of a response's status line (``HTTP/1.1 200 OK``)."""

    max_body_size: int = 16 * _MIB
    """Bytes of a response body read whole: every unary answer (a ``Task`` with its
    artifacts, a list of tasks), the agent card, and an error answered instead of a stream.
    Not a stream's total: that is bounded per event by ``max_sse_event_size``."""

    max_sse_event_size: int = 16 * _MIB
    """Bytes of one SSE event of a stream: its ``data`` lines together, and any one line of
    it (a comment or field line too), however it is split across reads."""

    connect_timeout: float | None = 10.0
    """Seconds to make a connection (TCP, then the TLS handshake); a call's own ``timeout``
    bounds it too. ``None``: only the call's timeout."""

    max_connections: int = 100
    """Connections kept to one origin (scheme, host, port); callers beyond wait in line."""

    def __post_init__(self) -> None:
        for name in (
            "max_head_size",
            "max_header_count",
            "max_status_line",
            "max_body_size",
            "max_sse_event_size",
            "max_connections",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"ClientLimits.{name} must be a positive int, not {value!r}")
        if self.connect_timeout is not None and not self.connect_timeout > 0:
            raise ValueError(
                f"ClientLimits.connect_timeout must be positive or None, not "
                f"{self.connect_timeout!r}"
            )


DEFAULT_LIMITS = ClientLimits()
