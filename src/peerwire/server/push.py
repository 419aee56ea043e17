"""Push delivery: the deliverer that drains the store's outbox to the webhooks.

Every status change and artifact update of a task with push configs is an outbox row, written
by the store in the same transaction as the event (``stores.base``). The ``PushDeliverer``
sends them off the request path: it claims due rows (woken by each append that queued some,
and polling every ``poll_interval`` for rows other processes or a restart left), POSTs each
as its ``StreamResponse`` body (headers: ``peerwire.push._wire``), and records the outcome.
A config registered over A2A 0.3 gets 0.3's form instead: the task, as it is when sent, as
a bare 0.3 Task (``application/json``, no ``A2A-Version``), what 0.3 receivers read.

Rules:

* Order: the store hands out only the earliest pending row of each (task, config), so a
  webhook sees a task's events in the order they happened, one at a time.
* Success is any 2xx. Redirects are not followed (a redirect could lead anywhere: SSRF).
* A failed attempt (no answer within ``attempt_timeout``, connection refused, a non-2xx
  status) is retried after an exponential backoff with jitter, until ``max_attempts``
  attempts have failed; then the row is failed with the reason and the config's next row
  goes. A URL the SSRF guard refuses at delivery (its name now resolves to an internal
  address) fails at once: waiting will not make it acceptable, and retrying would probe.
* Durability: a row is marked delivered only after the receiver's 2xx; if the process dies
  mid-attempt, the claim's lease (``lease``) runs out and the row goes again, so a receiver
  may see a notification twice (at-least-once) and deduplicates by its id.
* Fairness between webhooks (``push_circuits``): at most ``max_per_endpoint`` attempts per
  endpoint (a URL's origin) at once, one while it is not known to answer, and a circuit
  breaker: an endpoint found unavailable (no answer, no connection, 429, 503) is left alone
  for a backoff, its due rows given back to the store for then without spending an attempt
  (``TaskStore.release_claim``). A dead receiver thus holds no slot while it backs off, and
  endpoints that do not answer share at most ``max_concurrent - max_per_endpoint`` slots, so
  a healthy webhook's notifications never queue behind dead ones.
* At most ``max_concurrent`` attempts are in flight. The deliverer owns its tasks: it runs
  between the store's open and close (``async with``), and on exit lets attempts in flight
  finish (each is bounded by ``attempt_timeout``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol

import httpx

from .._version import __version__
from ..compat.v03.translate import task_to_v03
from ..compat.v03.version import PROTOCOL_VERSION as V03
from ..ops.metrics import Metrics
from ..protocol import PROTOCOL_VERSION
from ..push._wire import (
    CONTENT_TYPE,
    JWT_HEADER,
    NOTIFICATION_ID_HEADER,
    TOKEN_HEADER,
    V03_CONTENT_TYPE,
)
from ..types import encode
from .push_circuits import UNAVAILABLE_STATUSES, Circuits, Outcome, endpoint_of
from .ssrf import Resolver, Target, UnresolvableHost, WebhookGuard, WebhookRefused
from .stores.base import OutboxRow, PushTarget, TaskStore

__all__ = ["PushDeliverer", "PushSettings", "Signer"]

log = logging.getLogger("peerwire.push")

_MAX_ERROR_CHARS = 500
# How often the claim loop samples the outbox's backlog (rows, oldest age) for the metrics.
_SAMPLE_EVERY_S = 5.0


@dataclass(frozen=True, kw_only=True)
class PushSettings:
    """Push notifications: what the server accepts and how it delivers.

    ``allow``: hosts and networks (CIDRs or addresses) webhooks may use although they are
    internal (the SSRF guard refuses loopback, private, link-local, multicast and metadata
    addresses otherwise). ``max_attempts`` attempts per notification, each given
    ``attempt_timeout`` seconds; the n-th retry waits about ``retry_delay * 2**(n-1)``
    seconds (with jitter, at most ``max_retry_delay``). ``max_concurrent`` attempts at once,
    at most ``max_per_endpoint`` of them to one endpoint (a webhook URL's origin); an endpoint
    found unavailable backs off as a whole (a circuit breaker, the same backoff), and those
    not known to answer share at most ``max_concurrent - max_per_endpoint`` slots.
    ``poll_interval``: how often the outbox is checked for rows nobody announced (other
    processes, a restart). ``lease``: how long a claimed row is not handed out again
    (default ``attempt_timeout + 30``). ``max_configs_per_task`` caps registrations.
    ``signing_key`` signs every notification (``X-A2A-Notification-JWT``) and publishes
    the public key at ``/.well-known/jwks.json``; ``jwt_lifetime`` is each JWT's validity.
    ``resolver`` replaces the system DNS resolver (the guard's ``Resolver``).
    """

    allow: tuple[str, ...] = ()
    max_attempts: int = 5
    attempt_timeout: float = 10.0
    retry_delay: float = 1.0
    max_retry_delay: float = 300.0
    max_concurrent: int = 64
    max_per_endpoint: int = 4
    poll_interval: float = 1.0
    lease: float | None = None
    max_configs_per_task: int = 10
    signing_key: Any = None
    signing_kid: str | None = None
    jwt_lifetime: float = 300.0
    resolver: Resolver | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.allow, str):
            raise TypeError("allow is a sequence of hosts/networks, not one string")
        object.__setattr__(self, "allow", tuple(self.allow))
        if self.max_attempts < 1 or self.max_concurrent < 1 or self.max_configs_per_task < 1:
            raise ValueError("max_attempts, max_concurrent and max_configs_per_task must be >= 1")
        if not 1 <= self.max_per_endpoint <= self.max_concurrent:
            raise ValueError("max_per_endpoint must be between 1 and max_concurrent")
        for name in ("attempt_timeout", "retry_delay", "max_retry_delay", "poll_interval"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        if self.lease is not None and self.lease <= self.attempt_timeout:
            raise ValueError("lease must be longer than attempt_timeout")

    @property
    def claim_lease(self) -> float:
        return self.lease if self.lease is not None else self.attempt_timeout + 30.0

    def backoff(self, failed_attempts: int) -> float:
        """Seconds before the next attempt after ``failed_attempts`` failures: exponential,
        with "equal jitter" (half fixed, half random) so receivers that recover together are
        not hit by every sender at the same instant."""
        doubled = self.retry_delay * 2.0 ** min(max(failed_attempts - 1, 0), 62)
        ceiling = min(self.max_retry_delay, doubled)
        return ceiling / 2 + random.uniform(0, ceiling / 2)


class Signer(Protocol):
    """What the deliverer needs of a ``peerwire.push.NotificationSigner``."""

    def sign(self, *, notification_id: str, task_id: str, audience: str, body: bytes) -> str: ...


class PushDeliverer:
    """Drains the outbox of ``store`` to the webhooks. Use ``async with deliverer:``."""

    def __init__(
        self,
        store: TaskStore,
        settings: PushSettings,
        *,
        guard: WebhookGuard,
        signer: Signer | None = None,
        http: httpx.AsyncClient | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        """``metrics`` (``peerwire.ops.Metrics``) counts attempts and give-ups, and gets
        the outbox's backlog sampled by the claim loop (at most every ``_SAMPLE_EVERY_S``)."""
        self.store = store
        self.metrics = metrics
        self._sampled_at = 0.0
        self.settings = settings
        self.guard = guard
        self.signer = signer
        self._given_http = http
        self._http: httpx.AsyncClient | None = None
        self._wake = asyncio.Event()
        self._stopping = False
        self._in_flight: set[asyncio.Task[None]] = set()
        self._next_retry: float | None = None
        self._group: asyncio.TaskGroup | None = None
        self._loop_task: asyncio.Task[None] | None = None
        self._circuits = Circuits(
            max_concurrent=settings.max_concurrent,
            max_per_endpoint=settings.max_per_endpoint,
            # A notification waiting for a probe comes back well before the probe can time out.
            probe_pace=min(settings.retry_delay, settings.attempt_timeout) / 2,
            backoff=settings.backoff,
        )
        self._user_agent = f"peerwire/{__version__}"

    # -- lifetime -------------------------------------------------------------------------

    async def __aenter__(self) -> PushDeliverer:
        self._stopping = False
        self._http = self._given_http or httpx.AsyncClient(
            follow_redirects=False,
            trust_env=False,  # an environment proxy would connect by name, around the guard
            timeout=self.settings.attempt_timeout,
            # No connection reuse: connections go to addresses, and two webhook hosts on one
            # address (with different TLS names) must not share one.
            limits=httpx.Limits(
                max_connections=self.settings.max_concurrent, max_keepalive_connections=0
            ),
        )
        self._group = asyncio.TaskGroup()
        await self._group.__aenter__()
        self._loop_task = self._group.create_task(self._run(), name="peerwire push deliverer")
        self.store.on_outbox(self.wake)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.store.on_outbox(None)
        self._stopping = True
        self._wake.set()
        group = self._group
        assert group is not None, "the deliverer is not running"
        try:
            # The loop stops claiming at once; attempts in flight are each bounded by
            # attempt_timeout and get to record their outcome (a margin, then they are cut).
            running = [t for t in (self._loop_task, *self._in_flight) if t is not None]
            if running:
                _, late = await asyncio.wait(running, timeout=self.settings.attempt_timeout + 5)
                for task in late:
                    task.cancel()
        finally:
            self._group = self._loop_task = None
            try:
                await group.__aexit__(exc_type, exc, traceback)
            finally:
                if self._http is not None and self._given_http is None:
                    await self._http.aclose()
                self._http = None

    def wake(self) -> None:
        """New rows are due (an append queued them): claim now rather than at the next poll."""
        self._wake.set()

    # -- the claim loop -------------------------------------------------------------------

    async def _run(self) -> None:
        settings, group = self.settings, self._group
        assert group is not None
        while not self._stopping:
            self._wake.clear()
            if self.metrics is not None:
                await self._sample_backlog()
            free = settings.max_concurrent - len(self._in_flight)
            claimed: list[OutboxRow] = []
            if free > 0:
                try:
                    claimed = await self.store.claim_due(
                        time.time(), limit=free, lease=settings.claim_lease
                    )
                except Exception:
                    log.exception("peerwire: claiming push notifications failed; will retry")
            for row in claimed:
                task = group.create_task(self._deliver(row), name=f"peerwire push {row.id}")
                self._in_flight.add(task)
                task.add_done_callback(self._done)
            if claimed and len(claimed) == free:
                continue  # maybe more are due: claim again once slots free up (woken below)
            await self._sleep()

    async def _sample_backlog(self) -> None:
        """Sample the outbox's backlog for the metrics: here, in the loop that reads the
        outbox anyway, at most every ``_SAMPLE_EVERY_S``, never on a scrape."""
        assert self.metrics is not None
        now = time.monotonic()
        if now - self._sampled_at < _SAMPLE_EVERY_S:
            return
        self._sampled_at = now
        try:
            backlog = await self.store.outbox_backlog()
        except Exception as exc:  # the claim below meets the same outage and says so
            log.debug("peerwire: sampling the push outbox failed: %s", exc)
            return
        if backlog is not None:
            rows, oldest = backlog
            self.metrics.outbox_sampled(rows, 0.0 if oldest is None else time.time() - oldest)

    async def _sleep(self) -> None:
        timeout = self.settings.poll_interval
        if self._next_retry is not None:
            until_retry = self._next_retry - time.time()
            if until_retry <= 0:
                self._next_retry = None
            timeout = max(0.0, min(timeout, until_retry))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._in_flight.discard(task)
        # A slot is free, and the config's next row may be due now.
        self._wake.set()

    # -- one attempt ----------------------------------------------------------------------

    async def _deliver(self, row: OutboxRow) -> None:
        error: str | None
        try:
            target = await self.store.get_push_target(row.task_id, row.config_id)
            body = None if target is None else await self._body(row, target)
            if target is None:
                error, retry = "the push config was deleted", False
            elif body is None:
                error, retry = "the task was removed", False
            else:
                config = target.config
                endpoint = endpoint_of(config.url)
                not_before = self._circuits.admit(endpoint, time.time())
                if not_before is not None:
                    await self._give_back(row, not_before)
                    return
                outcome: Outcome = "not_sent"
                started = time.monotonic()
                try:
                    error, retry, outcome = await self._attempt(row, target, body)
                finally:
                    self._circuits.finished(
                        endpoint, outcome, time.monotonic() - started, time.time()
                    )
                    if self.metrics is not None:
                        self.metrics.push_attempted(outcome)
        except Exception as exc:  # a bug here must not strand the row: it is retried
            log.exception("peerwire: push notification %s failed unexpectedly", row.id)
            error, retry = f"unexpected failure: {type(exc).__name__}: {exc}", True
        try:
            await self._record(row, _clip(error) if error is not None else None, retry)
        except Exception:
            # The lease runs out and the row goes again: at-least-once, as documented.
            log.exception("peerwire: recording the outcome of push notification %s failed", row.id)

    async def _give_back(self, row: OutboxRow, not_before: float) -> None:
        """The row's endpoint may not be tried now (its circuit is open, or it is busy): back
        to the outbox, due at ``not_before``, its claim's attempt not counted."""
        try:
            await self.store.release_claim(row.id, not_before)
        except Exception:
            # Its lease runs out instead, and it comes back then (with the attempt counted).
            log.exception("peerwire: giving back push notification %s failed", row.id)
            return
        if self._next_retry is None or not_before < self._next_retry:
            self._next_retry = not_before

    async def _body(self, row: OutboxRow, target: PushTarget) -> bytes | None:
        """What to POST: the row's 1.0 ``StreamResponse``; for a config a 0.3 caller
        registered, the task as a bare 0.3 Task (what 0.3 receivers read), as it is now
        (``None``: the task is gone)."""
        if target.protocol_version != V03:
            return row.body
        task = await self.store.load_snapshot(
            row.task_id, tenant=target.tenant, owner=None, history_length=None
        )
        return None if task is None else encode(task_to_v03(task))

    async def _attempt(
        self, row: OutboxRow, push: PushTarget, body: bytes
    ) -> tuple[str | None, bool, Outcome]:
        """``(error, retry, outcome for the endpoint)``: ``error`` is ``None`` once delivered."""
        try:
            async with asyncio.timeout(self.settings.attempt_timeout):
                target = await self.guard.resolve(push.config.url)
                status = await self._post(row, push, body, target)
        except WebhookRefused as exc:
            return f"refused: {exc}", False, "not_sent"
        except UnresolvableHost as exc:
            return str(exc), True, "unavailable"
        except TimeoutError:
            return f"no answer within {self.settings.attempt_timeout:g} s", True, "unavailable"
        except httpx.HTTPError as exc:
            return f"{type(exc).__name__}: {exc or 'the request failed'}", True, "unavailable"
        if 200 <= status < 300:
            return None, False, "delivered"
        outcome: Outcome = "unavailable" if status in UNAVAILABLE_STATUSES else "answered"
        if 300 <= status < 400:
            return f"HTTP {status} (redirects are not followed)", True, outcome
        return f"HTTP {status}", True, outcome

    async def _post(self, row: OutboxRow, push: PushTarget, body: bytes, target: Target) -> int:
        assert self._http is not None
        config = push.config
        headers = {**target.headers, "User-Agent": self._user_agent}
        if push.protocol_version == V03:
            headers["Content-Type"] = V03_CONTENT_TYPE  # and no A2A-Version: 0.3 had none
        else:
            headers["Content-Type"] = CONTENT_TYPE
            headers["A2A-Version"] = PROTOCOL_VERSION
        headers[NOTIFICATION_ID_HEADER] = row.id
        if config.token:
            headers[TOKEN_HEADER] = config.token
        if config.authentication is not None:
            auth = config.authentication
            headers["Authorization"] = f"{auth.scheme} {auth.credentials}".rstrip()
        if self.signer is not None:
            headers[JWT_HEADER] = self.signer.sign(
                notification_id=row.id, task_id=row.task_id, audience=config.url, body=body
            )
        request = self._http.build_request(
            "POST",
            target.connect_url,
            content=body,
            headers=headers,
            extensions=dict(target.extensions),
        )
        # Streamed and not read: the answer's status is all that counts, and a receiver's
        # body, however large, costs nothing.
        response = await self._http.send(request, stream=True)
        await response.aclose()
        return response.status_code

    async def _record(self, row: OutboxRow, error: str | None, retry: bool) -> None:
        if error is None:
            await self.store.mark_delivered(row.id)
            log.debug("peerwire: delivered push notification %s", row.id)
            return
        if not retry or row.attempts >= self.settings.max_attempts:
            attempts = f"{row.attempts} attempt{'s' if row.attempts != 1 else ''}"
            reason = error if not retry else f"gave up after {attempts}: {error}"
            await self.store.mark_failed(row.id, reason)
            if self.metrics is not None:
                self.metrics.push_given_up()
            log.warning("peerwire: push notification %s failed: %s", row.id, reason)
            return
        next_at = time.time() + self.settings.backoff(row.attempts)
        await self.store.mark_retry(row.id, next_at, error)
        if self._next_retry is None or next_at < self._next_retry:
            self._next_retry = next_at
        log.info("peerwire: push notification %s attempt %d: %s", row.id, row.attempts, error)


def _clip(error: str) -> str:
    return error if len(error) <= _MAX_ERROR_CHARS else error[: _MAX_ERROR_CHARS - 1] + "…"
