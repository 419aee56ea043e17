"""Fetching and caching agent cards (A2A spec §8.1-§8.3, §8.6).

A card is kept as long as its server allows: ``Cache-Control: max-age`` (less ``Age``), else
``Expires``, else a default lifetime; ``no-store`` keeps nothing and ``no-cache`` revalidates on
every use. An expired card is revalidated with ``If-None-Match`` / ``If-Modified-Since``, and a
``304 Not Modified`` keeps it for another lifetime.

The document is kept as received, so a ``check`` (signature verification) sees the server's
exact JSON, on every fetch, the cached ones included.

A caller may shorten a card's life (``fetch(max_age=...)``: a client re-reads its card at
least that often, whatever the server allows) and ask for it afresh (``refresh=True``: after
a call failed, the card may have changed; the server still answers 304 if it did not).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpx
import msgspec

from ..compat.v03.card import card_from_v03, is_v03_card
from ..errors import A2AError, InvalidAgentCardError, InvalidResponseError
from ..types import AgentCard, decode
from .transports._exchange import HTTPExchange, Reply, as_exchange
from .transports._http import HTTP_ERRORS, client_error

__all__ = ["CARD_PATH", "CardCache", "card_url", "default_card_cache"]

CARD_PATH = "/.well-known/agent-card.json"
_MAX_REDIRECTS = 20  # as httpx
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


def card_url(url: str) -> str:
    """Where the card of the agent at ``url`` is: ``url`` itself if it names a card file,
    else below its path (an agent mounted at ``http://host/a2a`` has its card at
    ``http://host/a2a/.well-known/agent-card.json``), any query kept after it."""
    parts = urlsplit(url)
    if parts.path.endswith("agent-card.json"):
        return url
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + CARD_PATH, fragment=""))


CardCheck = Callable[[bytes], Awaitable[None]]
"""Inspects a card document as received before it is used; raises to refuse it."""


@dataclass(slots=True)
class _Entry:
    card: AgentCard
    content: bytes
    etag: str | None
    last_modified: str | None
    fresh_until: float
    checked_at: float
    """When the server last confirmed this card (a 200 or a 304)."""


class CardCache:
    """Agent cards by URL. One shared instance serves every client unless given another.

    ``default_max_age`` is the lifetime of a card served without caching headers; ``clock``
    (seconds, monotonic) is injectable so expiry can be tested without waiting.
    """

    def __init__(
        self,
        *,
        default_max_age: float = 300.0,
        max_entries: int = 256,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.default_max_age = default_max_age
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    async def fetch(
        self,
        http: httpx.AsyncClient | HTTPExchange,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = 30.0,
        check: CardCheck | None = None,
        max_age: float | None = None,
        refresh: bool = False,
    ) -> AgentCard:
        """The card at ``url`` (a card URL), from the cache while fresh, else from the server.

        ``check`` sees the document as received before it is decoded (and before a cached
        one is handed out); what it raises propagates and nothing is cached. Raises
        ``A2AConnectionError`` / ``A2ATimeoutError`` when the server cannot be reached and
        ``InvalidAgentCardError`` when it answers something that is not a card.

        ``max_age``: a cached card the server confirmed longer ago than that is revalidated
        even if the server would allow more; ``refresh``: revalidate whatever its age.
        """
        entry = self._entries.get(url)
        now = self._clock()
        if (
            entry is not None
            and not refresh
            and now < entry.fresh_until
            and (max_age is None or now < entry.checked_at + max_age)
        ):
            if check is not None:
                await check(entry.content)
            self._entries.move_to_end(url)
            return entry.card
        request_headers = {"Accept": "application/json", **(headers or {})}
        if entry is not None:
            if entry.etag:
                request_headers["If-None-Match"] = entry.etag
            if entry.last_modified:
                request_headers["If-Modified-Since"] = entry.last_modified
        response = await _get(as_exchange(http), url, request_headers, timeout)
        if response.status == 304 and entry is not None:
            if check is not None:
                await check(entry.content)
            lifetime = self._lifetime(response.headers)
            entry.etag = response.headers.get("etag", entry.etag)
            entry.checked_at = self._clock()
            entry.fresh_until = entry.checked_at + (lifetime or 0.0)
            self._entries.move_to_end(url)
            return entry.card
        if response.status != 200:
            raise InvalidAgentCardError(_status_problem(url, response.status), url=url)
        if check is not None:
            await check(response.body)
        card = parse_card(response.body, url)
        self._store(url, card, response.body, response.headers)
        return card

    def _store(self, url: str, card: AgentCard, content: bytes, headers: Mapping[str, str]) -> None:
        lifetime = self._lifetime(headers)
        if lifetime is None:
            self._entries.pop(url, None)
            return
        self._entries[url] = _Entry(
            card=card,
            content=content,
            etag=headers.get("etag"),
            last_modified=headers.get("last-modified"),
            fresh_until=self._clock() + lifetime,
            checked_at=self._clock(),
        )
        self._entries.move_to_end(url)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def _lifetime(self, headers: Mapping[str, str]) -> float | None:
        """Seconds the response stays fresh; ``None`` if it must not be stored at all."""
        directives = _cache_control(headers.get("cache-control", ""))
        if "no-store" in directives:
            return None
        if "no-cache" in directives:
            return 0.0
        max_age = _seconds(directives.get("max-age"))
        if max_age is not None:
            return max(0.0, max_age - (_seconds(headers.get("age")) or 0.0))
        expires = _expires_in(headers)
        if expires is not None:
            return expires
        return self.default_max_age


default_card_cache = CardCache()


async def _get(
    http: HTTPExchange, url: str, headers: dict[str, str], timeout: float | None
) -> Reply:
    """GET ``url``, following redirects (credentials stay with the origin they were given
    for, as httpx does: ``Authorization`` goes along only to the same origin, or from http
    to https on the same host)."""
    location = url
    for _ in range(_MAX_REDIRECTS + 1):
        try:
            response = await http.request("GET", location, headers=headers, timeout=timeout)
        except HTTP_ERRORS as exc:
            error = client_error(exc, url, "fetching the agent card")
            if isinstance(error, InvalidResponseError):
                raise InvalidAgentCardError(error.message, url=url) from exc
            raise error from exc
        target = response.headers.get("location")
        if response.status not in _REDIRECTS or not target:
            return response
        previous, location = location, urljoin(location, target)
        if not _keeps_credentials(previous, location):
            headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
    raise InvalidAgentCardError(
        f"fetching the agent card at {url} was redirected more than {_MAX_REDIRECTS} times",
        url=url,
    )


def _keeps_credentials(source: str, destination: str) -> bool:
    before, after = urlsplit(source), urlsplit(destination)
    if (before.scheme, before.hostname, before.port) == (
        after.scheme,
        after.hostname,
        after.port,
    ):
        return True
    return (
        before.scheme == "http"
        and after.scheme == "https"
        and before.hostname == after.hostname
        and before.port in (None, 80)
        and after.port in (None, 443)
    )


def parse_card(content: bytes, url: str) -> AgentCard:
    """Decode a card, or say precisely why it is not a valid A2A card.

    A 0.3 card (an endpoint ``url``, no ``supportedInterfaces``) is translated
    (``peerwire.compat.v03.card.card_from_v03``): its interfaces carry protocol version 0.3,
    and the client speaks 0.3 to them. A card with both (a 1.0 agent that also serves 0.3)
    is read as 1.0."""
    try:
        document = msgspec.json.decode(content)
    except msgspec.DecodeError:
        document = None  # the 1.0 decoder says what is wrong with it
    if is_v03_card(document):
        try:
            return card_from_v03(document, "card")
        except A2AError as exc:
            reason = exc.message.removeprefix("Invalid parameters: ")
            raise InvalidAgentCardError(
                f"The agent card at {url} is not a valid A2A 0.3 AgentCard: {reason}", url=url
            ) from None
    try:
        return decode(content, AgentCard, path="card")
    except A2AError as exc:
        reason = exc.message.removeprefix("Invalid parameters: ")
        raise InvalidAgentCardError(
            f"The agent card at {url} is not a valid A2A 1.0 AgentCard: {reason}",
            url=url,
        ) from None


def _status_problem(url: str, status: int) -> str:
    message = f"GET {url} answered HTTP {status} instead of an agent card"
    if status in (401, 403):
        message += " (the card endpoint is access-controlled: pass credentials in headers=)"
    elif status == 404:
        message += " (is this the agent's base URL? the card is expected at " + CARD_PATH + ")"
    return message


def _cache_control(value: str) -> dict[str, str | None]:
    directives: dict[str, str | None] = {}
    for item in value.split(","):
        name, sep, argument = item.strip().partition("=")
        if name:
            directives[name.strip().lower()] = argument.strip().strip('"') if sep else None
    return directives


def _seconds(value: str | None) -> float | None:
    if value is None or not value.strip().isdigit():
        return None
    return float(value.strip())


def _expires_in(headers: Mapping[str, str]) -> float | None:
    expires = headers.get("expires")
    if expires is None:
        return None
    try:
        at = parsedate_to_datetime(expires)
    except (TypeError, ValueError):
        return 0.0  # an invalid Expires means "already expired" (RFC 9111 §5.3)
    date = headers.get("date")
    try:
        now = parsedate_to_datetime(date) if date else None
    except (TypeError, ValueError):
        now = None
    reference = time.time() if now is None else now.timestamp()
    return max(0.0, at.timestamp() - reference)
