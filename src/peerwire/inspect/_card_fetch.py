"""``card.fetch`` and ``card.caching``: getting the card, and how it is served."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from ._bounded import FetchRefused, bounded_send
from ._findings import Finding, failed, passed
from ._probes import excerpt

__all__ = ["CardFetch", "fetch_card"]

_CARD_TYPES = ("application/json", "application/a2a+json")


@dataclass(frozen=True, slots=True)
class CardFetch:
    """The card as fetched: the parsed document (None when there is none to check)."""

    findings: list[Finding]
    document: dict[str, Any] | None
    raw: bytes = b""


async def fetch_card(
    http: httpx.AsyncClient,
    location: str,
    headers: Mapping[str, str],
    query: Mapping[str, str],
    timeout: float,
) -> CardFetch:
    """``card.fetch`` and ``card.caching``: GET the card and judge the answer."""
    rule = "A2A spec §8 (discovery): the card is served at /.well-known/agent-card.json"
    request = http.build_request(
        "GET",
        location,
        headers={"Accept": "application/json", "A2A-Version": "1.0", **headers},
        params=dict(query) or None,
        timeout=timeout,
    )
    try:
        response = await bounded_send(http, request, timeout=timeout)
    except FetchRefused as exc:
        return CardFetch(
            [
                failed(
                    "card.fetch",
                    "error",
                    "The agent card was refused",
                    f"{exc}.",
                    rule=rule,
                )
            ],
            None,
        )
    except httpx.TimeoutException:
        return CardFetch(
            [
                failed(
                    "card.fetch",
                    "error",
                    "The agent card did not arrive in time",
                    f"GET {location} got no answer within {timeout:g} s.",
                    rule=rule,
                )
            ],
            None,
        )
    except httpx.HTTPError as exc:
        why = excerpt(str(exc) or type(exc).__name__)
        return CardFetch(
            [
                failed(
                    "card.fetch",
                    "error",
                    "The agent card could not be fetched",
                    f"GET {location} failed: {why}. Is the agent running at this address?",
                    rule=rule,
                )
            ],
            None,
        )
    status, kind = response.status_code, _content_type(response)
    if status != 200:
        hint = (
            " The card endpoint wants credentials: give them (the public card usually needs none)."
            if status in (401, 403)
            else ""
        )
        return CardFetch(
            [
                failed(
                    "card.fetch",
                    "error",
                    f"The agent card answered HTTP {status}",
                    f"GET {location} answered HTTP {status} {kind}: "
                    f"{excerpt(response.text)}.{hint}",
                    rule=rule,
                )
            ],
            None,
        )
    try:
        document = json.loads(response.content)
    except ValueError:
        return CardFetch(
            [
                failed(
                    "card.fetch",
                    "error",
                    "The agent card is not JSON",
                    f"GET {location} answered 200 {kind} that no JSON parser reads: "
                    f"{excerpt(response.content)}",
                    rule=rule,
                )
            ],
            None,
            response.content,
        )
    if not isinstance(document, dict):
        return CardFetch(
            [
                failed(
                    "card.fetch",
                    "error",
                    "The agent card is not a JSON object",
                    f"GET {location} answered {excerpt(document)}",
                    rule=rule,
                )
            ],
            None,
            response.content,
        )
    findings: list[Finding] = []
    if kind in _CARD_TYPES:
        findings.append(
            passed(
                "card.fetch",
                "The agent card answers 200 with JSON",
                f"GET {location}: HTTP 200 {kind}, {len(response.content)} bytes.",
                rule=rule,
            )
        )
    else:
        findings.append(
            failed(
                "card.fetch",
                "warning",
                f"The agent card is served as {kind or 'no type'}",
                "It parses as JSON, but clients that check the content type expect "
                "application/json.",
                rule=rule,
            )
        )
    findings.append(_caching(response))
    return CardFetch(findings, document, response.content)


def _caching(response: httpx.Response) -> Finding:
    rule = "A2A spec §8.6: Cache-Control with max-age and an ETag SHOULD be sent"
    cache_control = response.headers.get("cache-control", "")
    etag = response.headers.get("etag")
    missing = []
    if "max-age" not in cache_control.lower():
        missing.append("Cache-Control max-age")
    if not etag:
        missing.append("ETag")
    if missing:
        return failed(
            "card.caching",
            "warning",
            f"The card is served without {' and '.join(missing)}",
            "Clients cannot tell how long to keep the card, nor revalidate it cheaply, so "
            "they fetch it again and again (or keep it forever).",
            rule=rule,
        )
    return passed(
        "card.caching",
        "The card is served with cache headers",
        f"Cache-Control: {cache_control}; ETag: {etag}"
        + (
            f"; Last-Modified: {response.headers['last-modified']}"
            if "last-modified" in response.headers
            else ""
        ),
        rule=rule,
    )


def _content_type(response: httpx.Response) -> str:
    value: str = response.headers.get("content-type", "")
    return value.split(";")[0].strip().lower()
