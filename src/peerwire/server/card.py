"""Serving the agent card: encoded once, with ``ETag``, ``Last-Modified`` and ``Cache-Control``
(A2A spec §8.6), and the conditional GETs a client revalidates with (RFC 9110 §13)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC
from email.utils import formatdate, parsedate_to_datetime
from typing import Any

from ..compat.v03.card import dual_card_document
from ..types import AgentCard, Binding, encode

__all__ = ["CARD_PATH", "EncodedCard", "served_document", "v03_bindings_of"]

CARD_PATH = "/.well-known/agent-card.json"


def v03_bindings_of(*, serve_v03: bool, rest: bool, grpc: bool = False) -> frozenset[str]:
    """The bindings an app serves A2A 0.3 on: JSON-RPC, and REST and gRPC when it serves
    them as 0.3 too; none when 0.3 is off."""
    if not serve_v03:
        return frozenset()
    bindings = {Binding.JSONRPC}
    if rest:
        bindings.add(Binding.HTTP_JSON)
    if grpc:
        bindings.add(Binding.GRPC)
    return frozenset(bindings)


def served_document(card: AgentCard, v03_bindings: Collection[str] = ()) -> dict[str, Any]:
    """The card's JSON document as served: the dual card when some of its interfaces serve
    0.3 too (``v03_bindings``), else the 1.0 card."""
    return dual_card_document(card, v03_bindings)


@dataclass(frozen=True, slots=True)
class EncodedCard:
    """A card ready to serve: its bytes, a strong ETag over them, when it was built (the
    ``Last-Modified`` of this version, whole seconds, as HTTP dates have), the cache lifetime."""

    card: AgentCard
    body: bytes
    etag: bytes
    max_age: int
    built_at: int = 0
    last_modified: bytes = b""

    @classmethod
    def of(
        cls,
        card: AgentCard,
        max_age: int = 300,
        built_at: float | None = None,
        *,
        v03_bindings: Collection[str] = (),
    ) -> EncodedCard:
        body = encode(served_document(card, v03_bindings) if v03_bindings else card)
        digest = hashlib.sha256(body).hexdigest()[:32]
        seconds = int(time.time() if built_at is None else built_at)
        return cls(
            card=card,
            body=body,
            etag=f'"{digest}"'.encode(),
            max_age=max_age,
            built_at=seconds,
            last_modified=formatdate(seconds, usegmt=True).encode(),
        )

    def matches(self, if_none_match: bytes | None) -> bool:
        """Whether an ``If-None-Match`` header names this version of the card."""
        if not if_none_match:
            return False
        tags = {t.strip().removeprefix(b"W/") for t in if_none_match.split(b",")}
        return b"*" in tags or self.etag in tags

    def not_modified(self, if_none_match: bytes | None, if_modified_since: bytes | None) -> bool:
        """Whether a GET or HEAD with these headers gets 304 Not Modified. ``If-None-Match``
        decides when it is present; ``If-Modified-Since`` only without it, and only when it is
        a valid HTTP date (RFC 9110 §13.2.2, §13.1.3)."""
        if if_none_match is not None:
            return self.matches(if_none_match)
        if not if_modified_since or if_modified_since.count(b",") > 1:
            return False  # absent, or a list of dates (ignored too): an HTTP date has one comma
        try:
            since = parsedate_to_datetime(if_modified_since.decode("latin-1"))
        except (TypeError, ValueError, IndexError, OverflowError):
            return False  # not an HTTP date: ignored
        if since.tzinfo is None:
            since = since.replace(tzinfo=UTC)  # asctime's form has no zone: HTTP dates are GMT
        return self.built_at <= since.timestamp()

    def headers(self) -> list[tuple[bytes, bytes]]:
        return [
            (b"content-type", b"application/json"),
            (b"etag", self.etag),
            (b"last-modified", self.last_modified),
            (b"cache-control", b"public, max-age=%d" % self.max_age),
        ]
