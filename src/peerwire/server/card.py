"""Serving the agent card: encoded once, with ``ETag``, ``Last-Modified`` and ``Cache-Control``
(A2A spec §8.6), and the conditional GETs a client revalidates with (RFC 9110 §13).

The card has two forms when some interface serves A2A 0.3 too (``CardForms``): a request whose
``A2A-Version`` (header, or query parameter) names 1.x gets the 1.0 AgentCard, valid against
the 1.0 schema; any other, which the spec reads as a 0.3 caller (no version at all is 0.3),
gets the dual document, the 1.0 card plus the 0.3 members 0.3 SDKs need (valid against the
0.3 schema, and read by the 1.x SDKs too). docs/COMPATIBILITY.md, "The card".
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import UTC
from email.utils import formatdate, parsedate_to_datetime
from typing import Any

import msgspec

from ..compat.v03.card import dual_card_document
from ..compat.v03.version import names_v1
from ..types import AgentCard, AgentCardSignature, Binding, encode

__all__ = [
    "CARD_PATH",
    "CardForms",
    "DocumentSigner",
    "EncodedCard",
    "served_document",
    "v03_bindings_of",
]

CARD_PATH = "/.well-known/agent-card.json"

DocumentSigner = Callable[[Mapping[str, Any]], AgentCardSignature]
"""Signs a card document as served (``CardSigner.signature``)."""


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


def served_document(
    card: AgentCard, v03_bindings: Collection[str] = (), sign: DocumentSigner | None = None
) -> dict[str, Any] | None:
    """The card's dual document (for callers that do not name 1.x), or ``None`` when none of
    its interfaces serves 0.3 (``v03_bindings``): then every caller gets the 1.0 card.
    ``sign``: adds a signature over the document as served to the card's own (over the 1.0
    members alone, which verifiers that rebuild the AgentCard message check)."""
    if not v03_bindings:
        return None
    document = dual_card_document(card, v03_bindings)
    if "url" not in document:
        return None  # no interface has a 0.3 binding: the plain 1.0 card
    if sign is not None:
        document["signatures"] = [*document.get("signatures", ()), _builtins(sign(document))]
    return document


def _builtins(signature: AgentCardSignature) -> dict[str, Any]:
    result: dict[str, Any] = msgspec.json.decode(encode(signature))
    return result


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
        document: Mapping[str, Any] | None = None,
    ) -> EncodedCard:
        """``card`` encoded (its ``document`` instead, when given: the dual form)."""
        body = encode(card if document is None else document)
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


@dataclass(frozen=True, slots=True)
class CardForms:
    """The card in each form served (see the module docstring): ``v1``, the 1.0 card;
    ``v03``, the dual document, or ``None`` when no interface serves 0.3."""

    card: AgentCard
    v1: EncodedCard
    v03: EncodedCard | None

    @classmethod
    def of(
        cls,
        card: AgentCard,
        max_age: int = 300,
        built_at: float | None = None,
        *,
        v03_bindings: Collection[str] = (),
        sign: DocumentSigner | None = None,
    ) -> CardForms:
        at = time.time() if built_at is None else built_at
        document = served_document(card, v03_bindings, sign)
        v03 = None if document is None else EncodedCard.of(card, max_age, at, document=document)
        return cls(card, EncodedCard.of(card, max_age, at), v03)

    def for_version(self, version: str | None) -> EncodedCard:
        """The form for a request whose ``A2A-Version`` is ``version`` (``None``: none)."""
        if self.v03 is None or names_v1(version):
            return self.v1
        return self.v03

    def headers_of(self, form: EncodedCard) -> list[tuple[bytes, bytes]]:
        """``form``'s headers; ``Vary: A2A-Version`` when the forms differ, so a cache keeps
        each caller's."""
        if self.v03 is None:
            return form.headers()
        return [*form.headers(), (b"vary", b"A2A-Version")]
