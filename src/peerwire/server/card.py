"""Serving the agent card: encoded once, with ``ETag`` and ``Cache-Control`` (facts §9.2)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ..types import AgentCard, encode

__all__ = ["CARD_PATH", "EncodedCard"]

CARD_PATH = "/.well-known/agent-card.json"


@dataclass(frozen=True, slots=True)
class EncodedCard:
    """A card ready to serve: its bytes, a strong ETag over them, and the cache lifetime."""

    card: AgentCard
    body: bytes
    etag: bytes
    max_age: int

    @classmethod
    def of(cls, card: AgentCard, max_age: int = 300) -> EncodedCard:
        body = encode(card)
        digest = hashlib.sha256(body).hexdigest()[:32]
        return cls(card=card, body=body, etag=f'"{digest}"'.encode(), max_age=max_age)

    def matches(self, if_none_match: bytes | None) -> bool:
        """Whether an ``If-None-Match`` header names this version of the card."""
        if not if_none_match:
            return False
        tags = {t.strip().removeprefix(b"W/") for t in if_none_match.split(b",")}
        return b"*" in tags or self.etag in tags

    def headers(self) -> list[tuple[bytes, bytes]]:
        return [
            (b"content-type", b"application/json"),
            (b"etag", self.etag),
            (b"cache-control", b"public, max-age=%d" % self.max_age),
        ]
