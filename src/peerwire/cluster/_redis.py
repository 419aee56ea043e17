"""Redis connections that outlive a Redis restart, and the health every cluster piece reports.

Redis is a dependency that may restart (and, without persistence, come back empty). Two
layers keep that from failing peerwire's calls:

- **The connection**: ``connect`` builds redis-py clients that retry a command on a
  connection or timeout error, reconnecting first (``Retry`` with exponential backoff,
  ``retry_on_error``). A pooled connection from before a restart then costs one reconnect,
  not a failed call.
- **The operation**: ``RedisHealth.call`` retries an operation with backoff for up to a
  bound of seconds while Redis is away, then raises ``RedisUnavailableError`` (a temporary
  ``ServiceUnavailableError`` for callers, without Redis's text, which is logged). It records
  whether Redis answers (``healthy``), which readiness reports, and logs only the changes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ..errors import ServiceUnavailableError

__all__ = ["REDIS_DOWN", "RedisHealth", "RedisUnavailableError", "connect", "is_outage"]

log = logging.getLogger("peerwire.cluster.redis")

T = TypeVar("T")

REDIS_DOWN: tuple[type[BaseException], ...] = (RedisConnectionError, RedisTimeoutError, OSError)
"""What a Redis that is away (stopped, restarting, unreachable) raises (see ``is_outage``)."""


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` says Redis is away rather than that a command was wrong.

    Besides ``REDIS_DOWN``: under uvloop, a command written to a connection the server has
    just closed raises ``RuntimeError`` ("unable to perform operation on <TCPTransport
    closed=True ...>; the handler is closed"), which redis-py passes on after dropping the
    connection, so a retry reconnects.
    """
    if isinstance(exc, REDIS_DOWN):
        return True
    return isinstance(exc, RuntimeError) and "closed" in str(exc)


# Within one command: reconnect and resend at once, then a little later (a restart in
# progress). Longer outages are the operation layer's (``RedisHealth.call``).
_COMMAND_RETRIES = 2
_COMMAND_BACKOFF = ExponentialBackoff(cap=0.2, base=0.02)
_FIRST_WAIT_S = 0.05
_MAX_WAIT_S = 1.0


class RedisUnavailableError(ServiceUnavailableError, ConnectionError):
    """Redis did not answer within the operation's retry bound: an outage of the event bus
    or the work queue (``dependency``). A caller that meets it is answered a temporary
    ``ServiceUnavailableError``; it is also a ``ConnectionError`` for the cluster's own
    code, which retries or leaves the work to the sweeper."""


def connect(
    url: str,
    *,
    socket_timeout: float,
    connect_timeout: float | None = None,
    single_connection: bool = False,
    max_connections: int | None = None,
) -> Redis:
    """A client for ``url`` whose commands survive a stale connection (see the docstring).

    ``single_connection`` gives a client of one connection of its own (a blocking read holds
    it); ``max_connections`` a pool that waits up to ``socket_timeout`` for a free
    connection rather than failing at its limit.
    """
    options: dict[str, Any] = {
        "socket_timeout": socket_timeout,
        "socket_connect_timeout": connect_timeout or socket_timeout,
        "retry": Retry(_COMMAND_BACKOFF, _COMMAND_RETRIES),
        "retry_on_error": [RedisConnectionError, RedisTimeoutError],
    }
    if max_connections is not None:
        pool = BlockingConnectionPool.from_url(
            url, max_connections=max_connections, timeout=socket_timeout, **options
        )
        return Redis.from_pool(pool)  # the client owns the pool: aclose() closes both
    return Redis.from_url(url, single_connection_client=single_connection, **options)


class RedisHealth:
    """Whether Redis answers, as the last operations found, and bounded retries.

    ``healthy`` is False from the first failed operation until one succeeds again;
    ``since`` is when it last changed (``time.monotonic()``). Listeners added with
    ``on_change`` hear every change (``healthy`` as argument).
    """

    def __init__(self, what: str, dependency: str) -> None:
        self.what = what
        self.dependency = dependency
        """What ``RedisUnavailableError`` says is away (``ServiceUnavailableError.EVENT_BUS``
        or ``.WORK_QUEUE``)."""
        self.healthy = True
        self.since = time.monotonic()
        self.last_error = ""
        self._listeners: list[Callable[[bool], None]] = []

    def on_change(self, listener: Callable[[bool], None]) -> None:
        self._listeners.append(listener)

    def ok(self) -> None:
        if not self.healthy:
            self._change(True)
            log.warning("peerwire: %s: Redis answers again", self.what)

    def failed(self, exc: BaseException) -> None:
        self.last_error = str(exc) or type(exc).__name__
        if self.healthy:
            self._change(False)
            log.warning("peerwire: %s: Redis is away, retrying: %s", self.what, self.last_error)

    async def ping(self, client: Redis | None) -> None:
        """PING Redis through ``client`` (readiness, ``/readyz``): raises while it does not
        answer; the outcome is recorded here as every other command's is."""
        if client is None:
            raise RuntimeError(f"{self.what} is not open")
        try:
            await client.ping()
        except Exception as exc:
            if is_outage(exc):
                self.failed(exc)
            raise
        self.ok()

    def _change(self, healthy: bool) -> None:
        self.healthy = healthy
        self.since = time.monotonic()
        for listener in self._listeners:
            try:
                listener(healthy)
            except Exception:  # one listener must not keep the others from hearing it
                log.exception("peerwire: a Redis health listener failed")

    async def call(self, operation: Callable[[], Awaitable[T]], *, within: float) -> T:
        """``await operation()``, retried with backoff while Redis is away, for up to
        ``within`` seconds; then ``RedisUnavailableError``. Other errors pass at once."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + within
        wait = _FIRST_WAIT_S
        while True:
            try:
                result = await operation()
            except Exception as exc:
                if not is_outage(exc):
                    if isinstance(exc, RedisError):
                        self.ok()  # it answered, with an error of the command's own
                    raise
                self.failed(exc)
                remaining = give_up - loop.time()
                if remaining <= 0:
                    log.warning(
                        "peerwire: %s: Redis did not answer within %g s: %s",
                        self.what,
                        within,
                        self.last_error,
                    )
                    raise RedisUnavailableError(
                        dependency=self.dependency,
                        retry_after=ServiceUnavailableError.DEFAULT_RETRY_AFTER,
                    ) from exc
                await asyncio.sleep(min(wait, remaining))
                wait = min(wait * 2, _MAX_WAIT_S)
            else:
                self.ok()
                return result
