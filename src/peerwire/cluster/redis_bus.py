"""The Redis ``EventBus``: replicas and workers that share a store see each other's events.

Each task has a Redis stream, ``{prefix}:task:{task_id}``. The event that moved the task to
version ``v`` is the entry with id ``v-0`` whose field ``e`` holds the ProtoJSON
``StreamResponse`` (what a client receives). Entry ids being versions makes the bus replay from
a version natively: a subscriber whose snapshot is at version ``v`` reads from ``v-0`` on, so it
gets every later event, in order, once, however late it starts reading.

Where a subscription starts: ``subscribe`` only registers it; its first ``next(after_version)``
(see ``bus.Subscription``) fixes the version it reads after. Callers pass the version of the
snapshot they hold, so starting later than ``subscribe`` loses nothing.

Gaps: once it knows the store (``fill_gaps_from``, which the dispatcher calls), the bus hands
out ``catch_up.CatchingUpSubscription``s. An event Redis never got (its publisher died after
the commit, Redis restarted empty or trimmed the stream) is then read from the store: at the
next event, whose version skips ahead, or, for a lost last event, when a subscription has
heard nothing for ``idle_check`` seconds (then twice as long, up to ``idle_check_max``).

Reading: one reader task per bus (started by ``open``, stopped by ``close``) runs a blocking
``XREAD`` over the streams of every started subscription, on a connection of its own, and
hands each entry to the local subscriptions whose position is before it. A subscription
starting (or starting further back) wakes the reader through a wake-up stream of this bus
instance, so it is read at once rather than after the current ``block_seconds``; a busy
reader (events keep coming) is given ``_WAKE_DELAY_S`` to come back by itself first, which
under load spares the wake-up's round trip. After an XREAD that brought entries the
reader lets the next ones gather for ``_GATHER_S`` before it reads again, so one read serves
several tasks' events under load.

Publishing: one Lua script per append (``publish_many``: its events in one round trip) adds
``v-0`` per event with ``MAXLEN ~ max_stream_length`` and sets the stream's time to live:
``stream_ttl`` while the task runs, ``terminal_ttl`` after a terminal event. While Redis is
away (a restart), a publish is retried with backoff for up to ``publish_retry_for`` seconds
(the handler waits meanwhile), then fails with ``ServiceUnavailableError`` (another
failure of Redis's: ``InternalError``; neither carries Redis's text, which is logged);
``healthy`` says whether Redis answered the last command (readiness). Redis here keeps
nothing on disk; the task store is the source of truth and the streams only carry what
happens next. Two processes writing one task at once can commit versions 5 and 6 but
publish 6 first: 5 is then appended after 6 (``6-1``, its version in field ``v``), late but
not lost, and a retried publish is recognised and not added twice.

Needs Redis 7 or later.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Sequence
from typing import Any, cast
from urllib.parse import urlsplit

from redis.asyncio import Redis
from redis.exceptions import NoScriptError, RedisError
from redis.typing import KeyT, StreamIdT

from .._coalesce import Coalescer
from ..errors import InternalError, ServiceUnavailableError
from ..protocol import TERMINAL
from ..server._url_options import pop_url_option
from ..server.bus import BusEvent, Subscription
from ..server.catch_up import CatchingUpSubscription, EventSource
from ..types import (
    StreamResponse,
    TaskArtifactUpdateEvent,
    TaskStatusUpdateEvent,
    decode,
    encode,
)
from ._redis import RedisHealth, connect

__all__ = ["RedisBus"]

log = logging.getLogger("peerwire.bus.redis")

EntryId = tuple[int, int]
"""A stream entry id, ``(milliseconds part, sequence part)``: for our entries, ``(version, n)``."""
_Entries = list[tuple[bytes, dict[bytes, bytes]]]
_XReadReply = list[tuple[bytes, _Entries]] | None

# KEYS[1]: the task's stream. ARGV: MAXLEN, time to live in ms, then the version and body of
# each event, in order: the events of one append go in one round trip. Returns how many were
# appended (a retried publish appends nothing twice).
_PUBLISH = """
local function add(version, body)
  local id = version .. '-0'
  local added = redis.pcall('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], id, 'e', body)
  if type(added) ~= 'table' or not added.err then return 1 end
  -- The stream is past this version: a retry of this very publish, or a late event (another
  -- process committed it before the stream's last one but published it after).
  if #redis.call('XRANGE', KEYS[1], id, id) > 0 then return 0 end
  local recent = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 64)
  for _, entry in ipairs(recent) do
    local fields = entry[2]
    for i = 1, #fields, 2 do
      if fields[i] == 'v' and fields[i + 1] == version then return 0 end
    end
  end
  local info = redis.call('XINFO', 'STREAM', KEYS[1])
  local last = '0-0'
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' then last = info[i + 1] end
  end
  local ms = string.match(last, '^(%d+)-')
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], ms .. '-*', 'e', body, 'v', version)
  return 1
end
local appended = 0
for i = 3, #ARGV, 2 do appended = appended + add(ARGV[i], ARGV[i + 1]) end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return appended
"""

_RETRY_FIRST_S = 0.05
_RETRY_MAX_S = 2.0
_WAKE_TTL_MS = 3_600_000
# How long a new subscription waits for a busy reader to come back by itself before waking
# it; busy: its current XREAD began less than _RECENT_READ_S ago.
_WAKE_DELAY_S = 0.004
_RECENT_READ_S = 0.02
# How long the reader waits, after an XREAD that brought entries, before the next one.
_GATHER_S = 0.002
_STOP_ATTEMPTS = 200
_STOP_WAIT_S = 0.05


class _Followed:
    """A task stream this process reads: where each started subscription is in it."""

    __slots__ = ("cursors", "key", "unstarted")

    def __init__(self, key: str) -> None:
        self.key = key
        self.cursors: dict[Subscription, EntryId] = {}
        self.unstarted: set[Subscription] = set()

    def position(self) -> EntryId:
        """Where the next read starts: the least advanced subscription's position."""
        return min(self.cursors.values())


class RedisBus:
    """Task events through Redis streams, shared by every process using the same ``prefix``.

    ``block_seconds`` is the longest one ``XREAD`` waits (a new subscription wakes it sooner);
    ``read_count`` the most entries read per stream and round trip. Streams keep at most about
    ``max_stream_length`` entries, which bounds how far behind a subscriber may start; they
    expire ``stream_ttl`` seconds after their last event, or ``terminal_ttl`` seconds after the
    task's terminal one. ``socket_timeout`` bounds every other Redis command, and the wait
    for one of the ``max_connections`` pooled connections publishing uses;
    ``publish_retry_for`` how long a publish waits for a Redis that is away.
    ``idle_check`` and ``idle_check_max``: how long a subscription hears nothing before it
    asks the store whether its task moved on without it, at first and at most (see above).
    """

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379",
        *,
        prefix: str = "peerwire",
        block_seconds: float = 5.0,
        read_count: int = 512,
        max_stream_length: int = 10_000,
        stream_ttl: float = 86_400.0,
        terminal_ttl: float = 300.0,
        socket_timeout: float = 10.0,
        max_connections: int = 32,
        publish_retry_for: float = 30.0,
        idle_check: float = 5.0,
        idle_check_max: float = 60.0,
    ) -> None:
        if not prefix or any(c.isspace() for c in prefix):
            raise ValueError(f"prefix must be a non-empty name without spaces, got {prefix!r}")
        if block_seconds <= 0 or socket_timeout <= 0:
            raise ValueError("block_seconds and socket_timeout must be positive")
        if read_count < 1 or max_stream_length < 1 or max_connections < 1:
            raise ValueError("read_count, max_stream_length and max_connections must be >= 1")
        if stream_ttl <= 0 or terminal_ttl <= 0 or publish_retry_for <= 0:
            raise ValueError("stream_ttl, terminal_ttl and publish_retry_for must be positive")
        if not 0 < idle_check <= idle_check_max:
            raise ValueError("need 0 < idle_check <= idle_check_max")
        self.url = url
        self.prefix = prefix
        self.block_seconds = block_seconds
        self.read_count = read_count
        self.max_stream_length = max_stream_length
        self.stream_ttl = stream_ttl
        self.terminal_ttl = terminal_ttl
        self.socket_timeout = socket_timeout
        self.max_connections = max_connections
        self.publish_retry_for = publish_retry_for
        self.idle_check = idle_check
        self.idle_check_max = idle_check_max
        # Where subscriptions fill what Redis lost (``fill_gaps_from``): the task store.
        self._source: EventSource | None = None
        self.health = RedisHealth(
            f"the event bus at {_where(url)}", ServiceUnavailableError.EVENT_BUS
        )
        self._client: Redis | None = None
        self._reader: Redis | None = None
        self._publish: Any = None  # redis-py's AsyncScript, typed loosely by redis-py
        # The publishes of one turn of the loop (several tasks' appends) in one round trip.
        self._publishes: Coalescer[tuple[str, list[int | bytes]], None] = Coalescer(
            self._publish_batch
        )
        self._tasks: list[asyncio.Task[None]] = []
        self._followed: dict[str, _Followed] = {}
        self._wake_key = ""
        self._wake_seen = "0-0"
        self._wake_pending = False
        self._wake_needed = asyncio.Event()
        self._read_found = False  # the reader's last XREAD brought entries
        self._reading_since = 0.0  # when the reader's current XREAD began (loop time)
        self._closed = False

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisBus:
        """A bus from ``redis://HOST:PORT[/DB][?prefix=NAME]`` (``prefix`` is peerwire's)."""
        url, prefix = pop_url_option(url, "prefix")
        if prefix is not None:
            options["prefix"] = prefix
        return cls(url, **options)

    def stream_key(self, task_id: str) -> str:
        """The Redis key of ``task_id``'s event stream."""
        return f"{self.prefix}:task:{task_id}"

    # -- lifetime -------------------------------------------------------------------------

    async def open(self) -> None:
        """Connect and start the reader. Fails (``OSError``) if Redis cannot be reached."""
        if self._client is not None:
            return
        if self._closed:
            raise RuntimeError("this RedisBus was closed; create a new one")
        # Blocking: under a burst of publishes, wait (up to socket_timeout) for a connection
        # rather than fail at the pool's limit.
        client = connect(
            self.url, socket_timeout=self.socket_timeout, max_connections=self.max_connections
        )
        # Its own connection: a blocking XREAD would hold a pooled one for block_seconds.
        reader = connect(
            self.url,
            socket_timeout=self.block_seconds + self.socket_timeout,
            connect_timeout=self.socket_timeout,
            single_connection=True,
        )
        try:
            await client.ping()
            await reader.ping()
        except (RedisError, OSError) as exc:
            await client.aclose()
            await reader.aclose()
            raise OSError(f"cannot reach the Redis event bus at {_where(self.url)}: {exc}") from exc
        self._client, self._reader = client, reader
        self._publish = client.register_script(_PUBLISH)
        self._wake_key = f"{self.prefix}:wake:{secrets.token_hex(8)}"
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._read_forever(reader), name="peerwire redis bus reader"),
            loop.create_task(self._wake_forever(client), name="peerwire redis bus waker"),
        ]

    async def close(self) -> None:
        """Stop the reader, close every subscription and the connections."""
        self._closed = True
        tasks, self._tasks = self._tasks, []
        await _stop(tasks)
        for followed in list(self._followed.values()):
            for subscription in [*followed.unstarted, *followed.cursors]:
                subscription.close()
        self._followed.clear()
        client, reader = self._client, self._reader
        self._client = self._reader = self._publish = None
        if client is not None:
            with contextlib.suppress(RedisError, OSError):
                await client.delete(self._wake_key)
            await client.aclose()
        if reader is not None:
            await reader.aclose()

    async def __aenter__(self) -> RedisBus:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def healthy(self) -> bool:
        """Whether Redis answered this bus's last command (False during an outage)."""
        return self.health.healthy

    async def check_health(self) -> None:
        """PING Redis (readiness, ``/readyz``): raises while it does not answer. The outcome
        is recorded in ``health`` as every other command's is."""
        await self.health.ping(self._client)

    @property
    def followed_tasks(self) -> int:
        """How many task streams this bus reads for its subscriptions."""
        return len(self._followed)

    # -- EventBus ---------------------------------------------------------------------------

    def fill_gaps_from(self, source: EventSource) -> None:
        """Fill what Redis lost from ``source`` (the task store) in every subscription opened
        from now on (``catch_up.GapFilling``)."""
        self._source = source

    def subscribe(self, task_id: str) -> Subscription:
        if self._client is None:
            raise RuntimeError("the RedisBus is not open (call open() first)")
        key = self.stream_key(task_id)
        source = self._source
        subscription = (
            Subscription(task_id, self._remove, self._start)
            if source is None
            else CatchingUpSubscription(
                task_id,
                source,
                self._remove,
                self._start,
                idle_check=self.idle_check,
                idle_check_max=self.idle_check_max,
            )
        )
        followed = self._followed.get(key)
        if followed is None:
            followed = self._followed[key] = _Followed(key)
        followed.unstarted.add(subscription)
        return subscription

    async def publish(self, task_id: str, version: int, event: BusEvent) -> None:
        await self.publish_many(task_id, version, (event,))

    async def publish_many(
        self, task_id: str, first_version: int, events: Sequence[BusEvent]
    ) -> None:
        """``publish`` of consecutive events (``first_version`` on), in one round trip: what
        the runner uses for the events of one append."""
        if self._publish is None:
            raise RuntimeError("the RedisBus is not open (call open() first)")
        if first_version < 1:
            raise ValueError(f"an event's version is at least 1, got {first_version}")
        if not events:
            return
        last = events[-1]
        terminal = isinstance(last, TaskStatusUpdateEvent) and last.status.state in TERMINAL
        ttl = self.terminal_ttl if terminal else self.stream_ttl
        args: list[int | bytes] = [self.max_stream_length, round(ttl * 1000)]
        for version, event in enumerate(events, first_version):
            args += (version, encode(_wrap(event)))
        version = first_version + len(events) - 1
        try:
            await self._publishes.submit((self.stream_key(task_id), args))
        except ServiceUnavailableError:
            raise  # Redis away past the retries (``RedisHealth.call`` logged it)
        except (RedisError, OSError) as exc:
            log.error(
                "peerwire: the event bus could not publish version %d of task %s: %s",
                version,
                task_id,
                exc,
            )
            raise InternalError(
                f"The event bus could not publish version {version} of task {task_id}"
            ) from exc

    async def _publish_batch(self, batch: list[tuple[str, list[int | bytes]]]) -> list[None]:
        """The publishes of one turn of the loop (``_publishes``), in one round trip: a
        pipeline of the script's calls. Retrying is safe: the script recognises a version it
        already appended."""
        client, script = self._client, self._publish
        if client is None or script is None:
            raise RuntimeError("the RedisBus is not open (call open() first)")
        if len(batch) == 1:
            ((key, args),) = batch
            await self.health.call(
                lambda: script(keys=[key], args=args), within=self.publish_retry_for
            )
            return [None]

        async def send() -> list[Any]:
            # EVALSHA itself: redis-py's pipelined script calls ask SCRIPT EXISTS first, a
            # round trip more.
            async with client.pipeline(transaction=False) as pipe:
                for key, args in batch:
                    pipe.evalsha(script.sha, 1, key, *args)
                return await pipe.execute(raise_on_error=False)

        async def run() -> None:
            replies = await send()
            if any(isinstance(reply, NoScriptError) for reply in replies):
                # Redis restarted and lost its scripts: load it, then publish them again.
                await client.script_load(_PUBLISH)
                replies = await send()
            failed = [reply for reply in replies if isinstance(reply, Exception)]
            if failed:
                raise failed[0]

        await self.health.call(run, within=self.publish_retry_for)
        return [None] * len(batch)

    # -- subscriptions ----------------------------------------------------------------------

    def _start(self, subscription: Subscription, after_version: int) -> None:
        followed = self._followed.get(self.stream_key(subscription.task_id))
        if self._closed or followed is None or subscription not in followed.unstarted:
            subscription.close()
            return
        followed.unstarted.discard(subscription)
        # Entry ids above ``after_version-0``: the events the caller's snapshot lacks.
        followed.cursors[subscription] = (max(after_version, 0), 0)
        if not self._wake_pending:
            self._wake_pending = True
            self._wake_needed.set()

    def _remove(self, subscription: Subscription) -> None:
        key = self.stream_key(subscription.task_id)
        followed = self._followed.get(key)
        if followed is None:
            return
        followed.unstarted.discard(subscription)
        followed.cursors.pop(subscription, None)
        if not followed.unstarted and not followed.cursors:
            del self._followed[key]

    # -- background tasks -------------------------------------------------------------------

    async def _read_forever(self, reader: Redis) -> None:
        delay = _RETRY_FIRST_S
        failing = False
        while True:
            try:
                await self._read_once(reader)
            except (RedisError, OSError) as exc:
                self.health.failed(exc)  # readiness: the bus is away
                if not failing:
                    log.warning("peerwire: reading the Redis event bus failed, retrying: %s", exc)
            except Exception:  # a bug must not silently end every subscription's events
                log.exception("peerwire: the Redis event bus reader failed, retrying")
            else:
                if failing:
                    self.health.ok()
                    log.warning("peerwire: reading the Redis event bus works again")
                failing, delay = False, _RETRY_FIRST_S
                if self._read_found:
                    # Events are coming: let the next ones gather for a moment, so one XREAD
                    # brings several tasks' (an idle reader, blocked in XREAD, still hands
                    # an event on at once).
                    await asyncio.sleep(_GATHER_S)
                continue
            failing = True
            await asyncio.sleep(delay)
            delay = min(delay * 2, _RETRY_MAX_S)

    async def _read_once(self, reader: Redis) -> None:
        """One blocking XREAD over every started subscription's stream, and its delivery."""
        # Reset before the positions are taken: a subscription starting from here on wakes
        # the XREAD below, even one whose wake-up reaches Redis before the XREAD does.
        self._wake_pending = False
        positions = {
            key: followed.position() for key, followed in self._followed.items() if followed.cursors
        }
        streams: dict[KeyT, StreamIdT] = {self._wake_key: self._wake_seen}
        streams.update((key, f"{ms}-{seq}") for key, (ms, seq) in positions.items())
        self._reading_since = asyncio.get_running_loop().time()
        # RESP2-shaped (redis-py converts): [[key, [(id, {field: value})]]], or None.
        reply = cast(
            _XReadReply,
            await reader.xread(
                streams, count=self.read_count, block=max(1, round(self.block_seconds * 1000))
            ),
        )
        self._read_found = bool(reply)
        for raw_key, entries in reply or ():
            key = raw_key.decode()
            if key == self._wake_key:
                self._wake_seen = entries[-1][0].decode()
                continue
            followed = self._followed.get(key)
            if followed is not None:
                _deliver(followed, positions[key], entries)

    async def _wake_forever(self, client: Redis) -> None:
        while True:
            await self._wake_needed.wait()
            loop = asyncio.get_running_loop()
            if loop.time() - self._reading_since < _RECENT_READ_S:
                # A reader that began its XREAD just now is busy (events keep arriving): it
                # comes back by itself within milliseconds and then reads the new
                # subscriptions too, so a wake-up is sent only if it has not come back after
                # this short wait (a round trip spared per task). An idle one is woken now.
                await asyncio.sleep(_WAKE_DELAY_S)
            self._wake_needed.clear()
            if not self._wake_pending:
                continue  # the reader took every started subscription's position since
            try:
                async with client.pipeline(transaction=False) as pipe:
                    pipe.xadd(self._wake_key, {"w": b""}, maxlen=1, approximate=False)
                    pipe.pexpire(self._wake_key, _WAKE_TTL_MS)
                    await pipe.execute()
            except Exception as exc:  # RuntimeError too: a connection Redis closed (uvloop)
                # Not lost: the reader includes the subscription after its current block.
                log.debug("peerwire: waking the Redis bus reader failed: %s", exc)


async def _stop(tasks: list[asyncio.Task[None]]) -> None:
    """Cancel ``tasks`` and wait for them to end.

    Cancelled again until they do: on Python 3.11, ``asyncio.wait_for`` (which redis-py wraps
    around sending a command) drops a cancellation that arrives as the send completes
    (CPython gh-86296), and the task then goes on to block in its read.
    """
    pending = {task for task in tasks if not task.done()}
    for _ in range(_STOP_ATTEMPTS):
        if not pending:
            break
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=_STOP_WAIT_S)
    for task in tasks:
        if task.done() and not task.cancelled() and task.exception() is not None:
            log.error("peerwire: a Redis bus task failed", exc_info=task.exception())


def _deliver(followed: _Followed, read_from: EntryId, entries: _Entries) -> None:
    """Hand ``entries`` (read after ``read_from``) to the subscriptions they continue.

    A subscription that started further back while the read was under way is left for the
    next read, which starts at its position: given these, it would skip what lies between.
    """
    covered = [s for s, cursor in followed.cursors.items() if cursor >= read_from]
    for raw_id, fields in entries:
        entry_id = _entry_id(raw_id)
        item = _event(entry_id, fields)
        for subscription in covered:
            if entry_id > followed.cursors[subscription]:
                followed.cursors[subscription] = entry_id
                if item is not None:
                    subscription.put(*item)


def _entry_id(raw: bytes) -> EntryId:
    ms, _, seq = raw.partition(b"-")
    return int(ms), int(seq)


def _event(entry_id: EntryId, fields: dict[bytes, bytes]) -> tuple[int, BusEvent] | None:
    """The entry's ``(version, event)``; ``None`` (logged) for one no peerwire wrote."""
    try:
        event = decode(fields[b"e"], StreamResponse).payload
        version = int(fields.get(b"v", entry_id[0]))
    except Exception as exc:  # a foreign or corrupt entry must not stop the reader
        log.warning("peerwire: skipped an unreadable event bus entry %s: %s", entry_id, exc)
        return None
    if not isinstance(event, TaskStatusUpdateEvent | TaskArtifactUpdateEvent):
        log.warning("peerwire: skipped an event bus entry %s holding no task event", entry_id)
        return None
    return version, event


def _wrap(event: BusEvent) -> StreamResponse:
    if isinstance(event, TaskArtifactUpdateEvent):
        return StreamResponse(artifact_update=event)
    return StreamResponse(status_update=event)


def _where(url: str) -> str:
    """The URL's host and port, without any password it holds."""
    parts = urlsplit(url)
    return f"{parts.hostname or 'localhost'}:{parts.port or 6379}"
