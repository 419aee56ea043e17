"""Per-webhook fairness for push delivery: concurrency per endpoint and a circuit breaker.

Sans-I/O: the deliverer (``server.push``) asks ``Circuits.admit`` before each attempt and
reports its outcome to ``Circuits.finished``; times are the caller's (seconds since the epoch,
as the outbox's). An endpoint is a webhook URL's origin (scheme, host, port): what a dead or
slow receiver has in common across its configs and tasks.

Each endpoint's circuit:

* **closed**: it answered its latest attempt (any HTTP status but 429 and 503). Up to
  ``max_per_endpoint`` attempts at once.
* **open**: its latest attempt found it unavailable (no answer within the attempt's timeout,
  no connection, 429 or 503). Nothing is sent to it until ``open_until`` (the same backoff a
  notification gets, from the endpoint's consecutive failures), and its due notifications are
  given back to the outbox for then, without spending an attempt: a dead receiver holds no
  delivery slot while it backs off.
* **half-open**: not known to answer (new, or its open period has passed). One attempt at a
  time, the probe, decides: answered closes the circuit, unavailable opens it again, longer.

Attempts to endpoints that are not closed take at most ``max_concurrent - max_per_endpoint``
of the slots together, so however many receivers are dead, the ones that answer always find
room. A notification that may not go now is given back with the time it may: the end of the
open period, or (its endpoint busy) a time paced by the endpoint's own attempt durations, so
a busy receiver's backlog comes back about when it can be taken rather than all at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal
from urllib.parse import urlsplit

__all__ = ["Circuits", "Outcome", "endpoint_of"]

Outcome = Literal["delivered", "answered", "unavailable", "not_sent"]
"""An attempt's outcome for its endpoint: a 2xx, another status it answered with, no answer
(or 429/503), or nothing reached it (the SSRF guard refused the URL): no verdict on it."""

# Statuses that say "not now" about the whole receiver rather than about one notification.
UNAVAILABLE_STATUSES = frozenset({429, 503})
# The shortest pacing step for a busy endpoint's given-back notifications: below it, giving
# back and claiming again would cost more than the wait saves.
_MIN_PACE_S = 0.02
# How many endpoints are remembered; beyond it, idle closed ones are forgotten first.
_MAX_ENDPOINTS = 4096
_EWMA = 0.2


def endpoint_of(url: str) -> str:
    """The origin of a webhook URL: ``scheme://host:port`` (default ports made explicit)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or (443 if scheme == "https" else 80)
    return f"{scheme}://{(parts.hostname or '').lower()}:{port}"


class _Endpoint:
    __slots__ = ("booked", "closed", "duration", "failures", "in_flight", "open_until")

    def __init__(self) -> None:
        self.in_flight = 0
        self.closed = False  # answered its latest attempt: its full concurrency applies
        self.failures = 0  # consecutive attempts that found it unavailable
        self.open_until = 0.0
        self.duration = 0.0  # its attempts' typical duration (moving average), 0: unknown
        self.booked = 0.0  # the latest time a busy-endpoint notification was given back for


class Circuits:
    """Every endpoint's circuit and concurrency (see the module docstring)."""

    def __init__(
        self,
        *,
        max_concurrent: int,
        max_per_endpoint: int,
        probe_pace: float,
        backoff: Callable[[int], float],
    ) -> None:
        """``probe_pace``: how soon a notification waiting for a half-open endpoint's probe
        comes back; ``backoff(failures)``: how long a circuit opens after that many
        consecutive failures."""
        self.max_per_endpoint = max_per_endpoint
        self.max_unproven = max(1, max_concurrent - max_per_endpoint)
        self.probe_pace = probe_pace
        self.backoff = backoff
        self._endpoints: dict[str, _Endpoint] = {}
        self._unproven = 0  # attempts in flight to endpoints whose circuit is not closed

    def state(self, endpoint: str, now: float) -> Literal["closed", "open", "half-open"]:
        found = self._endpoints.get(endpoint)
        if found is None or not found.closed:
            return "open" if found is not None and now < found.open_until else "half-open"
        return "closed"

    def admit(self, endpoint: str, now: float) -> float | None:
        """``None``: attempt now (``finished`` must follow). Otherwise the time before which
        the notification should not be tried (give it back to the outbox until then)."""
        found = self._endpoints.get(endpoint)
        if found is None:
            found = self._endpoints[endpoint] = _Endpoint()
            if len(self._endpoints) > _MAX_ENDPOINTS:
                self._forget_idle(now)
        if now < found.open_until:
            return found.open_until
        if found.closed:
            if found.in_flight < self.max_per_endpoint:
                found.in_flight += 1
                return None
            pace = max(found.duration / self.max_per_endpoint, _MIN_PACE_S)
        else:
            if found.in_flight == 0 and self._unproven < self.max_unproven:
                found.in_flight += 1
                self._unproven += 1
                return None
            pace = self.probe_pace
        # Spread the given-back notifications out: each comes back one pace after the last.
        found.booked = max(found.booked + pace, now + pace)
        return found.booked

    def finished(self, endpoint: str, outcome: Outcome, duration: float, now: float) -> None:
        """An admitted attempt ended with ``outcome`` after ``duration`` seconds."""
        found = self._endpoints.get(endpoint)
        if found is None:  # forgotten meanwhile (it was idle): nothing to account
            return
        found.in_flight -= 1
        if not found.closed:
            self._unproven -= 1
        if outcome == "not_sent":
            return
        if outcome == "unavailable":
            found.failures += 1
            if found.closed:
                found.closed = False
                # Its attempts still in flight now count against the not-closed share.
                self._unproven += found.in_flight
            found.open_until = max(found.open_until, now + self.backoff(found.failures))
            return
        found.failures = 0
        found.open_until = 0.0
        if not found.closed:
            found.closed = True
            self._unproven -= found.in_flight
        found.duration = (
            duration
            if found.duration == 0
            else found.duration + _EWMA * (duration - found.duration)
        )

    def _forget_idle(self, now: float) -> None:
        """Drop endpoints with nothing in flight whose circuit is not open (memory stays
        bounded however many receivers come and go; a forgotten one starts half-open)."""
        for endpoint, found in list(self._endpoints.items()):
            if found.in_flight == 0 and found.open_until <= now:
                del self._endpoints[endpoint]
