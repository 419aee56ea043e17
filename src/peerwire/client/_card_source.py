"""Where a client's card comes from, and when it reads it again.

A client keeps its agent's card for ``ttl`` seconds (default 5 minutes: cards change seldom,
but an agent that moved should not stay lost for long), then reads it again through the card
cache (a conditional GET: a 304 costs a round trip and no parsing). After a call failed in a
way that says the interface may have moved (the connection failed, or the URL has no A2A
route any more) the card is read again at once, bypassing the cache's freshness.

When the card cannot be fetched at all (the agent's host is down, it answers something that
is not a card), a configured ``fallback`` is used: a card object (pinned in configuration)
or another URL to fetch one from (a registry's copy). A card whose signature does not verify
is never replaced by the fallback: that is an attack or a misconfiguration, not an outage.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..errors import A2AConnectionError, A2ATimeoutError, InvalidAgentCardError
from ..types import AgentCard
from ._card import CardCache, CardCheck, card_url
from .transports._exchange import HTTPExchange

__all__ = ["DEFAULT_CARD_TTL", "CardSource"]

log = logging.getLogger("peerwire.client")

DEFAULT_CARD_TTL = 300.0

# What makes the fallback stand in: the card could not be had, not that it was refused.
_UNAVAILABLE = (A2AConnectionError, A2ATimeoutError, InvalidAgentCardError)


@dataclass(slots=True)
class CardSource:
    """The agent's card: its URL, the cache it goes through, and the fallback."""

    cache: CardCache
    http: HTTPExchange
    location: str
    headers: Mapping[str, str]
    timeout: float | None
    check: Callable[[str], CardCheck] | None = None
    """The check of a card fetched from a URL (its signature), by URL."""
    ttl: float | None = DEFAULT_CARD_TTL
    fallback: AgentCard | str | None = None
    clock: Callable[[], float] = time.monotonic
    due: float = field(default=0.0)
    """When the card is to be read again (``clock`` time)."""

    async def read(self, *, refresh: bool = False) -> tuple[AgentCard, str]:
        """The card and the URL it came from (``"fallback"`` for a fallback card object);
        ``refresh`` revalidates a cached one whatever its age. Raises the error of the
        agent's own card when the fallback fails too (or there is none)."""
        self.due = self.clock() + self.ttl if self.ttl is not None else float("inf")
        try:
            return await self._fetch(self.location, refresh), self.location
        except _UNAVAILABLE as exc:
            if self.fallback is None:
                raise
            if isinstance(self.fallback, AgentCard):
                log.warning("peerwire: %s; using the configured fallback card", exc.message)
                return self.fallback, "fallback"
            location = card_url(self.fallback)
            log.warning("peerwire: %s; fetching the fallback card at %s", exc.message, location)
            try:
                return await self._fetch(location, refresh), location
            except _UNAVAILABLE:
                raise exc from None

    def stale(self) -> bool:
        """Whether the card's time to live is over (read it again before the next call)."""
        return self.clock() >= self.due

    async def _fetch(self, location: str, refresh: bool) -> AgentCard:
        return await self.cache.fetch(
            self.http,
            location,
            headers=self.headers,
            timeout=self.timeout,
            check=self.check(location) if self.check is not None else None,
            max_age=self.ttl,
            refresh=refresh,
        )
