"""The Redis work queue: replicas accept tasks, any worker process runs them.

Three Redis structures under the bus's ``prefix``:

- ``{prefix}:jobs``, a stream read by the consumer group ``group``. A job names a task and
  how it came to be queued (``start``, ``continue`` or ``recover``); the task itself is in the
  store, which is the source of truth. A worker acknowledges a job as it takes the task's
  lease (or drops the job), all the jobs of one read in one script (``take_jobs``), so a job
  left pending means its reader died before taking the task: a live worker claims it after
  ``reclaim_idle`` seconds.
- ``{prefix}:lease:{task_id}``, the id of the worker whose handler holds the task (also while
  it waits in ``ask``), with a time to live of ``lease_ttl`` seconds that the holder renews
  every ``lease_ttl / 3``. A lease that expires means its worker is gone.
- ``{prefix}:control``, a pub/sub channel: ``cancel`` and ``deliver`` (a follow-up message)
  for the handler of a task, acted on by whichever process holds its lease. Pub/sub is the
  fast path only (at most once): a cancel also leaves ``{prefix}:cancel:{task_id}``, which
  the holder checks at every renewal and a new holder before it starts the handler, and
  the placement re-checks its handlers against the store (see placement.py).

Redis keeps nothing on disk here. What a Redis restart loses (queued jobs, leases, cancel
marks) the store still knows: the runner's sweeper, every ``sweep_every`` seconds, re-queues
(or fails, per the agent's ``on_restart``) active tasks that nobody holds, and live workers
re-take their leases as soon as Redis answers again.

Every operation is retried with backoff while Redis is away, for up to ``retry_for`` seconds,
then raises ``RedisUnavailableError`` (an ``OSError``, and for a caller a temporary
``ServiceUnavailableError``); ``healthy`` says whether Redis
answered the last one (readiness).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import secrets
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, cast

from redis.asyncio import Redis
from redis.exceptions import RedisError, ResponseError

from .._coalesce import Coalescer
from ..errors import ServiceUnavailableError
from ..server._url_options import pop_url_option
from ._redis import RedisHealth, RedisUnavailableError, connect, is_outage

__all__ = ["ControlMessage", "Job", "JobKind", "RedisUnavailableError", "RedisWorkQueue"]

log = logging.getLogger("peerwire.queue.redis")

JobKind = Literal["start", "continue", "recover"]
_KINDS: frozenset[str] = frozenset({"start", "continue", "recover"})


@dataclass(frozen=True, slots=True)
class Job:
    """A task for some worker to run: its handler starts (or resumes) from the store."""

    task_id: str
    tenant: str
    owner: str
    kind: JobKind
    entry_id: str = ""
    """The stream entry (set on jobs read from the queue; ``ack`` takes it)."""
    reclaimed: bool = False
    """Read before by a consumer that stopped without acknowledging it."""
    task: bytes = b""
    """A ``start`` job's task as created (its ProtoJSON ``Task``), queued with it: a worker
    that is first to take the task, soon enough and before anything else changed it, starts
    it from this instead of reading the store (``take_jobs``: ``FRESH``)."""
    caller: bytes = b""
    """With ``task``: its first message's recorded caller (``server.context.encode_caller``;
    ``b""``: none was needed), so that a fresh start reads no caller from the store either."""


@dataclass(frozen=True, slots=True)
class ControlMessage:
    """``cancel`` or ``deliver`` for the handler of ``task_id``; ``body`` is a message's JSON."""

    action: Literal["cancel", "deliver"]
    task_id: str
    body: bytes = b""


# KEYS[1]: the lease. ARGV: worker id, ttl ms. Take it if free or ours; 1 when we hold it.
_TAKE = """
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""

# The jobs of one read, taken together. KEYS[1]: the jobs stream, then per task to take its
# lease, cancel mark, changed mark and started mark. ARGV: worker id, lease ttl ms, the consumer
# group, the most a fresh job's age may be (ms), the marks' ttl (ms), then per task the time
# (ms, Redis's clock) its job was queued if it carries the task as created, else 0; then the
# entry ids to acknowledge (every job read). Per task: 0 another worker holds it, 1 ours now,
# 2 ours and marked to be canceled, 3 ours and fresh: no worker ever took it (the started
# mark, set here by every first taker, was not there), nothing marked it as changed and its
# job is young, so the task is as its job carries it. The lease is taken before the marks are
# looked at, in one step: a cancel (or a follow-up) marks before it looks for a holder, so
# either it finds us or we find its mark.
_TAKE_JOBS = """
local tasks = (#KEYS - 1) / 4
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local taken = {}
for n = 1, tasks do
  local k = 2 + (n - 1) * 4
  local holder = redis.call('GET', KEYS[k])
  local status = 0
  if holder == false or holder == ARGV[1] then
    redis.call('SET', KEYS[k], ARGV[1], 'PX', ARGV[2])
    if redis.call('EXISTS', KEYS[k + 1]) == 1 then
      status = 2
    else
      status = 1
      local first = false
      if holder == false then
        first = redis.call('SET', KEYS[k + 3], 1, 'NX', 'PX', ARGV[5])
      end
      local queued = tonumber(ARGV[5 + n])
      if first and queued > 0 and now - queued <= tonumber(ARGV[4])
          and redis.call('EXISTS', KEYS[k + 2]) == 0 then
        status = 3
      end
    end
  end
  taken[#taken + 1] = status
end
if #ARGV > 5 + tasks then redis.call('XACK', KEYS[1], ARGV[3], unpack(ARGV, 6 + tasks)) end
return taken
"""

OURS, CANCELED, FRESH = 1, 2, 3
"""What ``take_jobs`` says of a task whose lease is ours now (see ``_TAKE_JOBS``)."""

# KEYS[1]: the lease. ARGV: worker id. Only the holder lets go.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

_RETRY_S = 0.5
_RETRY_MAX_S = 2.0


@dataclass(frozen=True, slots=True)
class RedisLife:
    """Which Redis server answers (its ``run_id`` changes when it restarts) and since when."""

    run_id: str
    uptime: float


class RedisWorkQueue:
    """Jobs, leases and the control channel, shared by every process on ``prefix``.

    ``consumer`` names this process in the consumer group (unique by default). Timing knobs:
    ``lease_ttl`` (how soon a dead worker's tasks are noticed), ``reclaim_idle`` (how long a
    job read by a dead consumer waits before another takes it), ``sweep_every`` (how often
    the store is compared with the leases; a task is acted on when two sweeps in a row find it
    active and unheld), ``block_seconds`` (longest wait of one read), ``retry_for`` (how
    long an operation waits for a Redis that is away before it fails).
    """

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379",
        *,
        prefix: str = "peerwire",
        group: str = "workers",
        consumer: str | None = None,
        lease_ttl: float = 15.0,
        reclaim_idle: float = 30.0,
        sweep_every: float = 30.0,
        block_seconds: float = 2.0,
        socket_timeout: float = 10.0,
        retry_for: float = 5.0,
    ) -> None:
        if not prefix or any(c.isspace() for c in prefix):
            raise ValueError(f"prefix must be a non-empty name without spaces, got {prefix!r}")
        for name, value in (
            ("lease_ttl", lease_ttl),
            ("reclaim_idle", reclaim_idle),
            ("sweep_every", sweep_every),
            ("block_seconds", block_seconds),
            ("socket_timeout", socket_timeout),
            ("retry_for", retry_for),
        ):
            if value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")
        self.url = url
        self.prefix = prefix
        self.group = group
        self.consumer = consumer or f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"
        self.lease_ttl = lease_ttl
        self.reclaim_idle = reclaim_idle
        self.sweep_every = sweep_every
        self.block_seconds = block_seconds
        self.socket_timeout = socket_timeout
        self.retry_for = retry_for
        # A cancel mark outlives the cancel's wait for the holder and a resume elsewhere.
        self.cancel_mark_ttl = max(60.0, 4 * lease_ttl)
        # How young a job must be for a worker to start its task from what the job carries
        # (``FRESH``): far less than the sweeper needs to act on a task (two sweeps) and than
        # the marks live, so neither a sweep nor an expired mark can come between.
        self.fresh_for = min(lease_ttl, sweep_every) / 3
        self.health = RedisHealth(
            f"the work queue on {prefix!r}", ServiceUnavailableError.WORK_QUEUE
        )
        self.jobs_key = f"{prefix}:jobs"
        self.control_channel = f"{prefix}:control"
        self._client: Redis | None = None
        self._reader: Redis | None = None
        self._take: Any = None
        self._take_jobs: Any = None
        self._release: Any = None
        self._enqueues: Coalescer[Job, None] = Coalescer(self._enqueue_batch)
        self._group_ready = False
        self._next_reclaim = 0.0  # when ``read`` next looks for jobs a dead consumer left

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisWorkQueue:
        """A queue from ``redis://HOST:PORT[/DB][?prefix=NAME]`` (the bus's URL fits)."""
        url, prefix = pop_url_option(url, "prefix")
        if prefix is not None:
            options["prefix"] = prefix
        return cls(url, **options)

    def lease_key(self, task_id: str) -> str:
        return f"{self.prefix}:lease:{task_id}"

    def cancel_key(self, task_id: str) -> str:
        return f"{self.prefix}:cancel:{task_id}"

    def changed_key(self, task_id: str) -> str:
        """Set when a follow-up is recorded: the task is no longer as its job carries it."""
        return f"{self.prefix}:changed:{task_id}"

    def started_key(self, task_id: str) -> str:
        """Set by the first worker to take the task (``_TAKE_JOBS``)."""
        return f"{self.prefix}:started:{task_id}"

    @property
    def healthy(self) -> bool:
        """Whether Redis answered the queue's last command (False during an outage)."""
        return self.health.healthy

    async def check_health(self) -> None:
        """PING Redis (readiness, ``/readyz``): raises while it does not answer. The outcome
        is recorded in ``health`` as every other command's is."""
        await self.health.ping(self._client)

    # -- lifetime -------------------------------------------------------------------------

    async def open(self) -> None:
        """Connect. Fails (``OSError``) if Redis cannot be reached."""
        if self._client is not None:
            return
        client = connect(self.url, socket_timeout=self.socket_timeout)
        # Its own connection: a blocking XREADGROUP would hold a pooled one.
        reader = connect(
            self.url,
            socket_timeout=self.block_seconds + self.socket_timeout,
            connect_timeout=self.socket_timeout,
            single_connection=True,
        )
        try:
            await client.ping()
        except (RedisError, OSError) as exc:
            await client.aclose()
            await reader.aclose()
            raise OSError(f"cannot reach the Redis work queue at {self.url}: {exc}") from exc
        self._client, self._reader = client, reader
        self._take = client.register_script(_TAKE)
        self._take_jobs = client.register_script(_TAKE_JOBS)
        self._release = client.register_script(_RELEASE)

    async def close(self) -> None:
        client, reader = self._client, self._reader
        self._client = self._reader = None
        if client is not None:
            await client.aclose()
        if reader is not None:
            await reader.aclose()

    def _redis(self) -> Redis:
        if self._client is None:
            raise RuntimeError("the RedisWorkQueue is not open (call open() first)")
        return self._client

    async def _call(self, operation: Callable[[], Awaitable[Any]]) -> Any:
        return await self.health.call(operation, within=self.retry_for)

    async def life(self) -> RedisLife:
        """Which Redis answers, and how long it has been up (a restart changes both)."""
        info = await self._call(lambda: self._redis().info("server"))
        return RedisLife(str(info.get("run_id", "")), float(info.get("uptime_in_seconds", 0)))

    # -- jobs -----------------------------------------------------------------------------

    async def enqueue(
        self,
        task_id: str,
        tenant: str,
        owner: str,
        kind: JobKind,
        *,
        task: bytes = b"",
        caller: bytes = b"",
    ) -> None:
        """Queue a job (retried while Redis is away; a duplicate job is harmless); ``task``:
        a new task as created (see ``Job.task``), ``caller`` its first message's. The jobs
        queued in one turn of the loop go in one round trip (``_enqueue_batch``)."""
        self._redis()  # not open: fail here, not in the batch
        await self._enqueues.submit(Job(task_id, tenant, owner, kind, task=task, caller=caller))

    async def _enqueue_batch(self, jobs: list[Job]) -> list[None]:
        await self._add_jobs(jobs)
        return [None] * len(jobs)

    async def read(self, count: int) -> list[Job]:
        """Up to ``count`` jobs: first those a dead consumer left pending, then new ones
        (waiting up to ``block_seconds`` for one). Raises what Redis raises (not retried:
        the caller's loop is the retry)."""
        try:
            jobs = await self._read(count)
        except Exception as exc:
            if is_outage(exc):
                self.health.failed(exc)
            raise
        self.health.ok()
        return jobs

    async def _read(self, count: int) -> list[Job]:
        client, reader = self._redis(), self._reader
        assert reader is not None
        await self._ensure_group(client)
        try:
            # Jobs a dead consumer left become claimable only after reclaim_idle: looking for
            # them a few times per reclaim_idle is enough (not a round trip per read).
            now = time.monotonic()
            if now >= self._next_reclaim:
                reclaimed = await client.xautoclaim(
                    self.jobs_key,
                    self.group,
                    self.consumer,
                    min_idle_time=round(self.reclaim_idle * 1000),
                    count=count,
                )
                entries = cast(list[tuple[bytes, dict[bytes, bytes]]], reclaimed[1])
                if entries:  # maybe more of them: look again at the next read
                    return await self._jobs(entries, reclaimed=True)
                self._next_reclaim = now + self.reclaim_idle / 4
            reply = await reader.xreadgroup(
                self.group,
                self.consumer,
                {self.jobs_key: ">"},
                count=count,
                block=max(1, round(self.block_seconds * 1000)),
            )
        except ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            self._group_ready = False  # the stream was lost (a Redis restart): recreate it
            return []
        found = []
        for _key, stream_entries in cast(list[Any], reply or []):
            found.extend(await self._jobs(stream_entries, reclaimed=False))
        return found

    async def _jobs(
        self, entries: list[tuple[bytes, dict[bytes, bytes]]], *, reclaimed: bool
    ) -> list[Job]:
        jobs = []
        for entry_id, fields in entries:
            job = _job(entry_id, fields or {}, reclaimed)
            if job is None:  # not ours to run: never hand it out again
                await self._redis().xack(self.jobs_key, self.group, entry_id)
            else:
                jobs.append(job)
        return jobs

    async def backlog(self) -> int:
        """Jobs not run yet: those no consumer has read (the group's lag) and those read but
        not acknowledged. One ``XINFO GROUPS``; the sweeper samples it for the metrics."""
        client = self._redis()
        try:
            groups = await self._call(lambda: client.xinfo_groups(self.jobs_key))
        except ResponseError:  # no stream yet (nothing was ever queued, or Redis restarted)
            return 0
        for group in groups or ():
            name = group.get("name")
            if name in (self.group, self.group.encode()):
                return int(group.get("lag") or 0) + int(group.get("pending") or 0)
        return 0

    async def trim_acknowledged(self) -> int:
        """Drop the jobs the group has acknowledged from the stream; how many went.

        An entry no consumer holds (none pending) that the group was given already is done
        with, and a stream that kept them would grow with every job ever queued (each carrying
        its task as created). Kept: every entry from the oldest one pending (a consumer may
        still lose it, and another reclaim it) and every one not given out yet. Another
        process trimming at the same time keeps the same ones."""
        client = self._redis()
        try:
            groups = await self._call(lambda: client.xinfo_groups(self.jobs_key))
        except ResponseError:  # no stream yet, or Redis restarted without it: nothing kept
            return 0
        delivered = next(
            (
                group.get("last-delivered-id")
                for group in groups or ()
                if group.get("name") in (self.group, self.group.encode())
            ),
            None,
        )
        if delivered is None:
            return 0
        pending = await self._call(lambda: client.xpending(self.jobs_key, self.group))
        # XTRIM MINID keeps the entries at or after it: the oldest pending one, else the one
        # after the last given out.
        keep_from = pending["min"] if pending.get("pending") else _next_entry_id(delivered)
        if keep_from is None:
            return 0
        trimmed = await self._call(
            lambda: client.xtrim(self.jobs_key, minid=keep_from, approximate=False)
        )
        return int(trimmed or 0)

    async def ack(self, job: Job) -> None:
        if job.entry_id:
            client = self._redis()
            await self._call(lambda: client.xack(self.jobs_key, self.group, job.entry_id))

    async def take_jobs(self, jobs: list[Job], take: list[Job]) -> dict[str, int]:
        """Acknowledge every one of ``jobs`` (one read's) and take the lease of the task of
        each of ``take`` (one job per task), in one round trip: for each task whose lease is
        ours now, ``OURS``, ``CANCELED`` (marked to be canceled) or ``FRESH`` (its job's
        ``task`` is the task as it is: see ``_TAKE_JOBS``); tasks another worker holds are
        left out.

        A job is acknowledged as its task's lease is taken (or the job dropped): one left
        pending means its reader died before that, and another worker claims it."""
        if not jobs and not take:
            return {}
        keys = [self.jobs_key]
        queued: list[int] = []
        for job in take:
            task_id = job.task_id
            keys += (
                self.lease_key(task_id),
                self.cancel_key(task_id),
                self.changed_key(task_id),
                self.started_key(task_id),
            )
            fresh = job.kind == "start" and bool(job.task) and not job.reclaimed
            queued.append(_queued_ms(job.entry_id) if fresh else 0)
        args: list[str | int] = [
            self.consumer,
            round(self.lease_ttl * 1000),
            self.group,
            round(self.fresh_for * 1000),
            round(self.cancel_mark_ttl * 1000),
            *queued,
        ]
        args += [job.entry_id for job in jobs if job.entry_id]
        script = self._take_jobs
        taken = await self._call(lambda: script(keys=keys, args=args))
        return {
            job.task_id: int(status)
            for job, status in zip(take, cast(list[int], taken), strict=True)
            if status
        }

    async def release_leases(self, task_ids: list[str]) -> None:
        """``release_lease`` for each of ``task_ids``, in one round trip."""
        if not task_ids:
            return
        release = self._release

        async def run() -> list[Any]:
            async with self._redis().pipeline(transaction=False) as pipe:
                for task_id in task_ids:
                    await release(keys=[self.lease_key(task_id)], args=[self.consumer], client=pipe)
                return await pipe.execute()

        await self._call(run)

    async def requeue(self, jobs: list[Job]) -> None:
        """Queue ``jobs`` again (their tasks were not taken after all), in one round trip;
        without the tasks they carried (a worker took them: the store says what they are)."""
        await self._add_jobs([dataclasses.replace(job, task=b"", caller=b"") for job in jobs])

    async def _add_jobs(self, jobs: list[Job]) -> None:
        """XADD each of ``jobs``, in one round trip; retried whole while Redis is away (a job
        queued twice runs once: its lease)."""
        if not jobs:
            return
        client, key = self._redis(), self.jobs_key
        rows: list[dict[str, str | bytes]] = [
            {"task": job.task_id, "tenant": job.tenant, "owner": job.owner, "kind": job.kind}
            for job in jobs
        ]
        for fields, job in zip(rows, jobs, strict=True):
            if job.task:
                fields["created"] = job.task
            if job.caller:
                fields["caller"] = job.caller
        if len(rows) == 1:
            await self._call(lambda: client.xadd(key, rows[0]))  # type: ignore[arg-type]
            return

        async def run() -> list[Any]:
            async with client.pipeline(transaction=False) as pipe:
                for fields in rows:
                    pipe.xadd(key, fields)  # type: ignore[arg-type]
                return await pipe.execute()

        await self._call(run)

    async def _ensure_group(self, client: Redis) -> None:
        if self._group_ready:
            return
        try:
            await client.xgroup_create(self.jobs_key, self.group, id="0", mkstream=True)
        except ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        # Listed in the group from now on, whether or not a job has come yet (a worker is
        # visible in XINFO CONSUMERS as soon as it waits for work).
        await client.xgroup_createconsumer(self.jobs_key, self.group, self.consumer)
        self._group_ready = True

    # -- leases ---------------------------------------------------------------------------

    async def take_lease(self, task_id: str) -> bool:
        """Hold ``task_id`` for this worker (or keep holding it); False if another does."""
        take, keys = self._take, [self.lease_key(task_id)]
        args = [self.consumer, round(self.lease_ttl * 1000)]
        return bool(await self._call(lambda: take(keys=keys, args=args)))

    async def take_leases(self, task_ids: list[str]) -> set[str]:
        """``take_lease`` for each of ``task_ids`` in one round trip: those another holds."""
        if not task_ids:
            return set()
        take, ttl = self._take, round(self.lease_ttl * 1000)

        async def run() -> list[Any]:
            async with self._redis().pipeline(transaction=False) as pipe:
                for task_id in task_ids:
                    keys = [self.lease_key(task_id)]
                    await take(keys=keys, args=[self.consumer, ttl], client=pipe)
                return await pipe.execute()

        held = await self._call(run)
        return {task_id for task_id, ok in zip(task_ids, held, strict=True) if not ok}

    async def release_lease(self, task_id: str) -> None:
        release, keys = self._release, [self.lease_key(task_id)]
        await self._call(lambda: release(keys=keys, args=[self.consumer]))

    async def lease_holder(self, task_id: str) -> str | None:
        client = self._redis()
        holder = await self._call(lambda: client.get(self.lease_key(task_id)))
        return None if holder is None else cast(bytes, holder).decode()

    async def changed_then_holder(self, task_id: str) -> str | None:
        """Mark ``task_id`` as changed since it was queued (a follow-up was recorded: no
        worker may start it from its job's copy any more), then ``lease_holder``; in one
        round trip."""
        client, ttl = self._redis(), round(self.cancel_mark_ttl * 1000)

        async def run() -> list[Any]:
            async with client.pipeline(transaction=False) as pipe:
                pipe.set(self.changed_key(task_id), 1, px=ttl)
                pipe.get(self.lease_key(task_id))
                return await pipe.execute()

        holder = (await self._call(run))[1]
        return None if holder is None else cast(bytes, holder).decode()

    async def unheld(self, task_ids: list[str]) -> set[str]:
        """Which of ``task_ids`` no worker holds."""
        if not task_ids:
            return set()
        client = self._redis()
        holders = await self._call(lambda: client.mget([self.lease_key(t) for t in task_ids]))
        return {task_id for task_id, holder in zip(task_ids, holders, strict=True) if not holder}

    # -- control ----------------------------------------------------------------------------

    async def send_control(self, message: ControlMessage) -> None:
        payload = f"{message.action} {message.task_id} ".encode() + message.body
        client = self._redis()
        await self._call(lambda: client.publish(self.control_channel, payload))

    async def request_cancel(self, task_id: str) -> None:
        """Mark ``task_id`` to be canceled (for whoever holds it now or later), then tell the
        holder at once over the control channel."""
        client = self._redis()
        ttl = round(self.cancel_mark_ttl * 1000)
        await self._call(lambda: client.set(self.cancel_key(task_id), 1, px=ttl))
        await self.send_control(ControlMessage("cancel", task_id))

    async def claim_requeue(self, task_id: str) -> bool:
        """Whether this process is the one to queue ``task_id`` again now (every process's
        sweeper finds the same unheld tasks: one job each is enough)."""
        client = self._redis()
        key, ttl = f"{self.prefix}:requeued:{task_id}", round(self.sweep_every * 1000)
        return bool(await self._call(lambda: client.set(key, self.consumer, px=ttl, nx=True)))

    async def cancel_requested(self, task_ids: list[str]) -> set[str]:
        """Which of ``task_ids`` are marked to be canceled."""
        if not task_ids:
            return set()
        client = self._redis()
        marks = await self._call(lambda: client.mget([self.cancel_key(t) for t in task_ids]))
        return {task_id for task_id, mark in zip(task_ids, marks, strict=True) if mark}

    async def listen_control(
        self, handle: Callable[[ControlMessage], Awaitable[None]], ready: asyncio.Event
    ) -> None:
        """Hand every control message to ``handle`` until cancelled; ``ready`` is set once
        subscribed (and again after a reconnection). Messages published while it was not
        subscribed are lost: the placement's re-checks cover them."""
        wait = _RETRY_S
        while True:
            pubsub = self._redis().pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self.control_channel)
                ready.set()
                wait = _RETRY_S
                while True:
                    raw = await pubsub.get_message(timeout=self.block_seconds)
                    if raw is None:
                        continue
                    message = _control(raw.get("data"))
                    if message is not None:
                        await handle(message)
            except Exception as exc:  # never end the loop: it runs in the runner's task group
                if is_outage(exc):
                    self.health.failed(exc)
                else:
                    log.warning("peerwire: the control channel failed, reconnecting: %s", exc)
            finally:
                with contextlib.suppress(RedisError, OSError):
                    await pubsub.aclose()  # type: ignore[no-untyped-call, unused-ignore]
            await asyncio.sleep(wait)
            wait = min(wait * 2, _RETRY_MAX_S)


def _job(entry_id: bytes, fields: dict[bytes, bytes], reclaimed: bool) -> Job | None:
    kind = fields.get(b"kind", b"").decode()
    task_id = fields.get(b"task", b"").decode()
    if kind not in _KINDS or not task_id:
        log.warning("peerwire: skipping a malformed job %r", entry_id)
        return None
    return Job(
        task_id,
        fields.get(b"tenant", b"").decode(),
        fields.get(b"owner", b"").decode(),
        cast(JobKind, kind),
        entry_id.decode(),
        reclaimed,
        fields.get(b"created", b""),
        fields.get(b"caller", b""),
    )


def _next_entry_id(entry_id: bytes | str) -> str | None:
    """The stream entry id right after ``entry_id`` ("ms-seq"); None for "0-0" (nothing
    given out yet) or an id that is not one."""
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    ms, _, seq = text.partition("-")
    if not (ms.isdigit() and seq.isdigit()) or text == "0-0":
        return None
    return f"{ms}-{int(seq) + 1}"


def _queued_ms(entry_id: str) -> int:
    """When a job was queued, by Redis's clock: its stream entry id's milliseconds."""
    return int(entry_id.partition("-")[0])


def _control(data: object) -> ControlMessage | None:
    if not isinstance(data, bytes):
        return None
    action, _, rest = data.partition(b" ")
    task_id, _, body = rest.partition(b" ")
    if action not in (b"cancel", b"deliver") or not task_id:
        return None
    return ControlMessage(
        cast(Literal["cancel", "deliver"], action.decode()), task_id.decode(), body
    )
