"""The card as the inspector shows it: the document as served, its HTTP caching headers, the
status of each signature, and the problems a client would trip on.

The card is fetched with the backend's recording HTTP client (so it appears in the wire view
too), decoded with peerwire's own types (a document that does not decode says why, field by
field), and each signature checked with ``peerwire.security.verify_card_async``. The key a
signature is checked against is the one its ``jku`` names (the JWKS the agent publishes:
this says the card was signed by that key and not changed since, not that the key is one you
should trust) or a JWKS the user pasted into the page (pinned).
"""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from ..compat.v03.card import card_from_v03, is_v03_card
from ..errors import A2AError, CardSignatureError, PeerwireError
from ..protocol import PROTOCOL_VERSION
from ..types import AgentCard, Binding, decode
from ._bounded import FetchRefused, bounded_send
from .credentials import scheme_form

__all__ = ["CARD_PATH", "CardFetchError", "card_location", "inspect_card"]

CARD_PATH = "/.well-known/agent-card.json"
_KNOWN_BINDINGS = (Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC)
_CACHE_HEADERS = ("etag", "last-modified", "cache-control", "age", "expires", "content-type")


class CardFetchError(PeerwireError):
    """The card could not be fetched at all (the page shows the message)."""


def card_location(url: str) -> str:
    """The card's URL for an agent URL: the URL itself when it names a card file, else the
    well-known path below it (the rule ``Client.connect`` follows). Raises ``ValueError`` for
    what is not an http(s) URL."""
    text = url.strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{url!r} is not an http:// or https:// URL")
    if parts.path.endswith("agent-card.json"):
        return text
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + CARD_PATH, fragment=""))


async def inspect_card(
    http: httpx.AsyncClient,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    pinned_keys: Any = None,
    timeout: float = 10.0,
) -> dict[str, Any]:
    """Fetch the card of the agent at ``url`` and describe it for the page."""
    location = card_location(url)
    request = http.build_request(
        "GET",
        location,
        headers={**(headers or {}), "A2A-Version": PROTOCOL_VERSION},
        timeout=timeout,
    )
    try:
        response = await bounded_send(http, request, timeout=timeout)
    except FetchRefused as exc:
        raise CardFetchError(f"cannot fetch the agent card: {exc}") from None
    except httpx.HTTPError as exc:
        raise CardFetchError(
            f"cannot fetch the agent card at {location}: {exc or type(exc).__name__}"
        ) from None
    view: dict[str, Any] = {
        "url": url,
        "location": location,
        "http": {
            "status": response.status_code,
            "headers": {
                name: response.headers[name] for name in _CACHE_HEADERS if name in response.headers
            },
        },
        "document": None,
        "problems": [],
        "signatures": [],
        "signature": "unsigned",
        "schemes": [],
    }
    problems: list[str] = view["problems"]
    if response.status_code != 200:
        raise CardFetchError(
            f"GET {location} answered HTTP {response.status_code} instead of an agent card"
        )
    try:
        document = json.loads(response.content)
    except ValueError:
        raise CardFetchError(f"the agent card at {location} is not JSON") from None
    if not isinstance(document, dict):
        raise CardFetchError(f"the agent card at {location} is not a JSON object")
    view["document"] = document
    card = _decode(response.content, document, problems)
    _header_problems(response, problems)
    if card is not None:
        _card_problems(card, problems)
        view["schemes"] = [scheme_form(n, s) for n, s in card.security_schemes.items()]
    await _signatures(document, view, pinned_keys)
    return view


def _decode(content: bytes, document: dict[str, Any], problems: list[str]) -> AgentCard | None:
    try:
        if is_v03_card(document):
            problems.append(
                "an A2A 0.3 card (an endpoint url, no supportedInterfaces): 1.0 clients "
                "that do not translate 0.3 will refuse it"
            )
            return card_from_v03(document, "card")
        return decode(content, AgentCard, path="card")
    except A2AError as exc:
        problems.append(f"not a valid A2A 1.0 AgentCard: {exc.message}")
    except PeerwireError as exc:
        problems.append(f"not a valid agent card: {exc}")
    return None


def _header_problems(response: httpx.Response, problems: list[str]) -> None:
    content_type = response.headers.get("content-type", "")
    if not content_type.startswith("application/json") and "+json" not in content_type:
        problems.append(f"served as {content_type or 'no content type'}, not application/json")
    if "cache-control" not in response.headers:
        problems.append("no Cache-Control header: clients cannot tell how long to keep the card")
    if "etag" not in response.headers and "last-modified" not in response.headers:
        problems.append("neither ETag nor Last-Modified: clients must fetch the whole card again")


def _card_problems(card: AgentCard, problems: list[str]) -> None:
    if not card.supported_interfaces:
        problems.append("supportedInterfaces is empty: no client can reach the agent")
    for number, interface in enumerate(card.supported_interfaces, start=1):
        where = f"interface {number} ({interface.protocol_binding} at {interface.url})"
        if interface.protocol_binding not in _KNOWN_BINDINGS:
            problems.append(
                f"{where}: binding {interface.protocol_binding!r} is not a standard one"
            )
        if not interface.protocol_version:
            problems.append(f"{where}: no protocolVersion")
        if interface.protocol_binding != Binding.GRPC:
            parts = urlsplit(interface.url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                problems.append(f"{where}: the URL is not an absolute http(s) URL")
    if not card.skills:
        problems.append("no skills: clients cannot tell what the agent does")
    ids = [skill.id for skill in card.skills]
    for duplicate in sorted({i for i in ids if ids.count(i) > 1}):
        problems.append(f"skill id {duplicate!r} appears more than once")
    declared = set(card.security_schemes)
    requirements = list(card.security_requirements)
    for skill in card.skills:
        requirements += skill.security_requirements
    for requirement in requirements:
        for name in requirement.schemes:
            if name not in declared:
                problems.append(
                    f"a security requirement names scheme {name!r}, which the card does not declare"
                )


def _protected_header(signature: Any) -> dict[str, Any]:
    protected = signature.get("protected") if isinstance(signature, dict) else None
    if not isinstance(protected, str):
        return {}
    try:
        raw = base64.urlsafe_b64decode(protected + "=" * (-len(protected) % 4))
        header = json.loads(raw)
    except ValueError:
        return {}
    return header if isinstance(header, dict) else {}


async def _signatures(document: dict[str, Any], view: dict[str, Any], pinned_keys: Any) -> None:
    """Each signature's key id and algorithm, and whether the card verifies: ``valid``
    (some signature verifies), ``invalid`` (none does, with why), ``unverified`` (signed, but
    there is no key to check it against), ``unsigned``."""
    signatures = document.get("signatures") or []
    if not isinstance(signatures, list) or not signatures:
        return
    jkus: list[str] = []
    for signature in signatures:
        header = _protected_header(signature)
        view["signatures"].append(
            {
                "kid": header.get("kid") or "",
                "alg": header.get("alg") or "",
                "jku": header.get("jku") or "",
            }
        )
        jku = header.get("jku")
        if isinstance(jku, str) and jku:
            jkus.append(jku)
    try:
        from ..security.signing import Trust, verify_card_async
    except ImportError:
        view["signature"] = "unverified"
        view["signatureReason"] = "the security extra (joserfc) is not installed"
        return
    try:
        trust = Trust(pinned_keys, jku_allowlist=jkus) if (pinned_keys or jkus) else None
    except ValueError as exc:
        view["signature"] = "unverified"
        view["signatureReason"] = str(exc)
        return
    if trust is None:
        view["signature"] = "unverified"
        view["signatureReason"] = (
            "no jku in the signature and no key pasted: nothing to check it with"
        )
        return
    try:
        await verify_card_async(document, trust)
    except CardSignatureError as exc:
        view["signature"] = "invalid"
        view["signatureReason"] = exc.message
        return
    view["signature"] = "valid"
    view["signatureReason"] = "verified with " + (
        "the pasted key" if pinned_keys else "the key at " + ", ".join(jkus)
    )
