"""The ``TaskStore`` interface: what the runner and dispatch need from persistence.

A store owns each task's aggregate. It is append-only in spirit: a task is created once, then
events are appended (validated by the state machine in ``protocol.fold``), each raising the
task's version by one. ``expected_version`` makes an append a compare-and-swap, for
deployments with more than one writer. Every read is scoped by tenant and, when given, by
owner: a task of another tenant or owner is indistinguishable from a missing one.

Push outbox: when a task has push configs, ``append`` also writes one outbox row per pushed
event (status and artifact updates; not the caller's own messages) and config, in the same
transaction as the events, so a notification is never lost between "stored" and "sent". The
deliverer (``server.push``) claims due rows, sends them and marks the outcome.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal, Protocol, runtime_checkable

from ...errors import InternalError, ServiceUnavailableError
from ...protocol import PROTOCOL_VERSION, Event, ListQuery, TaskRecord
from ...types import Encoded, Task, TaskPushNotificationConfig, TaskState

__all__ = [
    "EventsAfter",
    "OutboxRow",
    "OutboxState",
    "PushTarget",
    "SnapshotReader",
    "StoredTaskInfo",
    "TaskStore",
    "snapshot_reader",
    "store_failed",
    "store_unavailable",
]

log = logging.getLogger("peerwire.stores")

OutboxState = Literal["pending", "delivered", "failed"]

# What the default ``check_health`` loads: no task has this id (peerwire's ids are UUIDs),
# and a load only reads, whatever it finds.
_HEALTH_PROBE_ID = "peerwire-health-probe"
_HEALTH_PROBE_TENANT = "\x00peerwire-health"


def store_unavailable(exc: BaseException, what: str = "") -> ServiceUnavailableError:
    """The error a caller gets when the store's database is away (``exc``: the driver's
    failure): a temporary ``ServiceUnavailableError`` without the driver's text, which goes
    to the log instead; raise it ``from exc`` so the log of the request keeps the cause.
    ``what`` says in the log what the store was doing or waiting for."""
    log.warning(
        "peerwire: the task store is unavailable%s: %s: %s",
        f" ({what})" if what else "",
        type(exc).__name__,
        exc,
    )
    return ServiceUnavailableError(
        dependency=ServiceUnavailableError.TASK_STORE,
        retry_after=ServiceUnavailableError.DEFAULT_RETRY_AFTER,
    )


def store_failed(exc: BaseException) -> InternalError:
    """The error a caller gets when the store's database refused a statement for a reason
    of the store's own (a fault, not an outage); its text goes to the log, not the caller."""
    log.error("peerwire: the task store failed: %s: %s", type(exc).__name__, exc)
    return InternalError("The task store failed (the server's log says why)")


@dataclass(frozen=True, slots=True)
class StoredTaskInfo:
    """Who a stored task belongs to and where it stands, for recovery after a restart."""

    task_id: str
    context_id: str
    tenant: str
    owner: str
    state: TaskState


@dataclass(frozen=True, slots=True)
class EventsAfter:
    """What a store holds of a task's events after a version (``TaskStore.events_after``)."""

    version: int
    """The task's version now."""
    events: list[tuple[int, Event]] | None
    """Each event above the version asked for, with the version it gave the task, oldest
    first (the caller's own messages too); ``None`` when the store no longer keeps some of
    them one by one (it folded them into the task's snapshot), and then ``task`` is the task
    at ``version``."""
    task: Task | None = None


@dataclass(frozen=True, slots=True)
class OutboxRow:
    """One notification to send: a pushed event of a task, for one of its push configs."""

    id: str
    """Stable across attempts and restarts (``outbox_row_id``): receivers deduplicate by it."""
    task_id: str
    config_id: str
    seq: int
    """The version the event gave the task: notifications of a config go out in this order."""
    body: bytes
    """The ProtoJSON ``StreamResponse`` to POST (emptied once delivered: nothing re-sends it)."""
    attempts: int
    """Attempts started so far (a claim starts one)."""
    next_attempt_at: float
    """Seconds since the epoch before which the row is not due (a claim's lease, a backoff)."""
    state: OutboxState
    last_error: str
    """Why the latest attempt failed (``""``: none did)."""


@dataclass(frozen=True, slots=True)
class PushTarget:
    """A push config as the deliverer sends to it (``TaskStore.get_push_target``)."""

    config: TaskPushNotificationConfig
    protocol_version: str
    """The A2A version (Major.Minor) the config was registered over: ``"1.0"``, or ``"0.3"``
    for a 0.3 caller, whose receiver expects 0.3's notification form."""
    tenant: str
    """The tenant of the config's task (to read the task a 0.3 notification carries)."""


class TaskStore(abc.ABC):
    """What a store implements: subclass this and implement every abstract method.

    A subclass that leaves one out cannot be instantiated (``TypeError`` naming what is
    missing), and ``create_app`` takes nothing that is not a ``TaskStore``. Every write of a
    task's events goes through ``append`` (the runner's, with ``on_durable``, as well as the
    dispatcher's): a subclass that wraps ``append`` sees them all. ``load_snapshot`` and
    ``load_encoded_snapshot`` have defaults over ``load`` that a store may override when it
    can read a task's snapshot more cheaply; ``appends_never_suspend`` is an optional claim.
    ``peerwire.testing.store_suite`` checks the rules below (docs/STORAGE.md).
    """

    appends_never_suspend: ClassVar[bool] = False
    """True only if ``append`` never yields to the event loop (the memory store): then no
    cancel can come between storing an event and publishing it, and the runner does not
    guard that pair."""

    @abc.abstractmethod
    async def open(self) -> None:
        """Connect, create or migrate the schema. Called once before use."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Flush and release resources."""

    async def check_health(self) -> None:
        """Return if the store can serve now; raise (any exception, saying why) if not.

        Readiness (``/readyz``, docs/OPERATIONS.md) calls it at most about once a second,
        bounded by a timeout of its own, never on a request's path. It should cost one
        cheap real round trip to what the store depends on: the SQLite store checks that
        its file is still the database it opened and reads it, the PostgreSQL store runs
        ``SELECT 1`` on a connection kept for it beside the pool (a probe must not wait
        for a connection requests need). The default loads a task id no task has, which
        any working store answers with ``None``.
        """
        await self.load(_HEALTH_PROBE_ID, tenant=_HEALTH_PROBE_TENANT)

    @abc.abstractmethod
    async def create(self, record: TaskRecord, *, tenant: str, owner: str) -> None:
        """Store a new task at ``record.version``. Raises ``VersionConflictError`` if it exists."""

    @abc.abstractmethod
    async def create_once(
        self,
        record: TaskRecord,
        *,
        tenant: str,
        owner: str,
        message_id: str,
        now: float,
        expires_at: float,
    ) -> str:
        """Store a new task for the first message ``message_id`` of ``(tenant, owner)``,
        unless a task already holds that message id; return the id of the task that holds it.

        That is ``record.id`` when this call created the task, or the id of the task an
        earlier call created: then nothing is written. A holder whose claim expired (its
        ``expires_at`` is at or before ``now``; times in seconds since the epoch) or whose
        task is gone (retention removed it) no longer counts: this call takes its place.
        Claiming the message id and creating the task are one atomic step, so of duplicates
        sent at once (to this process or to another sharing the database) exactly one
        creates a task and every other returns its id (server.idempotency, docs/STORAGE.md).
        Raises ``VersionConflictError`` as ``create`` does when ``record.id`` exists.
        """

    @abc.abstractmethod
    async def forget_message_ids(self, before: float, *, limit: int) -> int:
        """Remove at most ``limit`` message-id claims that expired at or before ``before``
        (seconds since the epoch), oldest first; return how many were removed. The tasks
        they point to stay (their own retention applies). Bounded, so that one call holds
        the store briefly: ``server.idempotency.MessageLedger.sweep`` calls it until fewer
        than ``limit`` come back."""

    @abc.abstractmethod
    async def load(
        self, task_id: str, *, tenant: str, owner: str | None = None
    ) -> TaskRecord | None:
        """The task as a record, or ``None`` if missing or not visible to ``tenant``/``owner``.

        ``owner=None`` skips the owner check (internal use). The caller must not mutate it.
        What ``load`` returns has been stored durably (by stores that are durable at all).
        A task another tenant or owner may not see must take the same work to refuse as an id
        that does not exist (docs/SECURITY.md): check visibility in the same read that looks
        the task up, not before it from a cache.
        """

    async def owner_of(self, task_id: str, *, tenant: str) -> str | None:
        """The owner of the task, or ``None`` if ``tenant`` has no such task (internal use:
        who an answer from another principal is given on behalf of, ``Agent.skill
        (answerable_by=...)``). The default looks among the unfinished tasks (the only ones
        it is asked about); the stores here read it directly."""
        for info in await self.unfinished():
            if info.task_id == task_id and info.tenant == tenant:
                return info.owner
        return None

    async def load_many(self, tasks: Sequence[tuple[str, str]]) -> list[TaskRecord | None]:
        """``load(task_id, tenant=tenant)`` (no owner check: internal use) of each
        ``(task_id, tenant)``, in order: what a worker taking several jobs at once reads.
        A store that can read them in one round trip overrides it (PostgreSQL does)."""
        return [await self.load(task_id, tenant=tenant) for task_id, tenant in tasks]

    def remember_created(self, record: TaskRecord, *, tenant: str, owner: str) -> None:
        """A hint: ``record`` is the task as it was created (stored by another process), as
        a worker starting it knows from its job rather than from a read. A store that keeps
        the records it last saw (PostgreSQL) keeps this one, unless it holds a newer one; its
        next append checks the version as always, so a task changed meanwhile is read then.
        Stores that read their own data cheaply ignore it."""
        return  # a hint: most stores have nothing to keep

    @abc.abstractmethod
    async def append(
        self,
        task_id: str,
        events: Sequence[Event],
        *,
        expected_version: int | None = None,
        on_durable: Callable[[int], None] | None = None,
    ) -> int:
        """Validate and apply ``events`` in order; return the task's new version.

        Raises ``IllegalTransitionError`` (nothing applied) for an event the state machine
        forbids, ``TaskNotFoundError`` for an unknown task and ``VersionConflictError`` when
        ``expected_version`` is given and is not the stored version.

        ``on_durable(version)`` runs on the event loop once the events have committed, before
        this returns, and even if the caller was cancelled while the write went on: the runner
        publishes from there what a cancelled caller stored, so a cancel never comes between
        stored and published. A caller cancelled before its events were handed to the
        database appends (and hears) nothing; with no events nothing is written and the hook
        is not called.
        """

    @abc.abstractmethod
    async def events_after(self, task_id: str, version: int) -> EventsAfter | None:
        """The task's events after ``version`` (``None``: no such task), for a subscriber
        that missed some: an event bus can lose what a process committed and then died before
        publishing, and the store, the source of truth, fills the gap.

        The events come one by one while the store still keeps them so; past that (it folded
        them into the task's snapshot), ``EventsAfter.task`` is the task instead. When nothing
        is newer than ``version`` this is one indexed read: subscribers that heard nothing for
        a while ask it whether they missed their task's last event. Not scoped by tenant or
        owner: its callers found the task visible first (a stream opened with a scoped load).
        """

    async def load_snapshot(
        self, task_id: str, *, tenant: str, owner: str | None, history_length: int | None
    ) -> Task | None:
        """``load(...).snapshot(history_length=...)``, or ``None`` where ``load`` finds none."""
        record = await self.load(task_id, tenant=tenant, owner=owner)
        return None if record is None else record.snapshot(history_length=history_length)

    async def load_encoded_snapshot(
        self, task_id: str, *, tenant: str, owner: str | None
    ) -> Task | Encoded[Task] | None:
        """The whole task (no history cut) as ``load_snapshot`` reads it, or already encoded
        where the store holds it so (what ``GetTask`` answers without decoding it)."""
        return await self.load_snapshot(task_id, tenant=tenant, owner=owner, history_length=None)

    @abc.abstractmethod
    async def list_tasks(
        self, query: ListQuery, *, tenant: str, owner: str | None
    ) -> tuple[list[Task], str, int]:
        """One page of the visible tasks matching ``query``: tasks, next token, total."""

    @abc.abstractmethod
    async def unfinished(self) -> list[StoredTaskInfo]:
        """Every task not in a terminal state (for restart recovery)."""

    @abc.abstractmethod
    async def delete_terminal_before(self, status_key: str) -> int:
        """Remove terminal tasks whose status sort key is older than ``status_key``.

        Their events, push configs, outbox rows and message-id claims go with them. Returns
        how many tasks were removed. ``retention_cutoff`` turns a maximum age into such a key.
        """

    # Who sent each of a task's messages (``server.context.encode_caller``): what a handler run
    # again sees as ``ctx.caller``. Kept with the task, and removed with it by retention.

    @abc.abstractmethod
    async def save_caller(self, task_id: str, message_id: str, caller: bytes) -> None:
        """Record ``caller`` (opaque bytes) as the sender of the task's message ``message_id``,
        replacing what was recorded for it. Raises ``TaskNotFoundError`` if the task does not
        exist. Not scoped: its callers found the task visible first."""

    @abc.abstractmethod
    async def load_callers(self, task_id: str) -> dict[str, bytes]:
        """What ``save_caller`` recorded for the task, by message id (empty: nothing, or no
        such task)."""

    # Push-notification configs live with their task (and go when retention removes it).
    # Callers check that the task is visible to the caller first; these do not scope.

    @abc.abstractmethod
    async def save_push_config(
        self, config: TaskPushNotificationConfig, *, protocol_version: str = PROTOCOL_VERSION
    ) -> None:
        """Store ``config`` under ``(config.task_id, config.id)``, replacing one with that id,
        with the A2A version (Major.Minor) it was registered over (``PushTarget``).

        Raises ``TaskNotFoundError`` if the task does not exist.
        """

    @abc.abstractmethod
    async def get_push_config(
        self, task_id: str, config_id: str
    ) -> TaskPushNotificationConfig | None:
        """The config, or ``None`` if the task has none with that id."""

    @abc.abstractmethod
    async def get_push_target(self, task_id: str, config_id: str) -> PushTarget | None:
        """The config with its version and its task's tenant, or ``None`` as
        ``get_push_config``."""

    @abc.abstractmethod
    async def list_push_configs(self, task_id: str) -> list[TaskPushNotificationConfig]:
        """The task's configs in the order they were first saved."""

    @abc.abstractmethod
    async def delete_push_config(self, task_id: str, config_id: str) -> None:
        """Remove the config if it exists (deleting a missing one is not an error), with its
        pending outbox rows: nothing is sent to a deleted config."""

    # The push outbox (see the module docstring). Times are seconds since the epoch: rows
    # outlive the process, so a monotonic clock would not do.

    @abc.abstractmethod
    def on_outbox(self, listener: Callable[[], None] | None) -> None:
        """Call ``listener`` (on the event loop) after an append that wrote outbox rows has
        committed, so the deliverer need not wait for its next poll. ``None`` stops that."""

    @abc.abstractmethod
    async def claim_due(self, now: float, *, limit: int, lease: float) -> list[OutboxRow]:
        """Claim up to ``limit`` pending rows due at ``now``, oldest first, for one attempt.

        Only the lowest-``seq`` pending row of each (task, config) is ever claimable, so a
        config gets its notifications in order and never two at once. A claimed row has its
        ``attempts`` raised by one and is not due again before ``now + lease``: if the process
        dies mid-attempt, the row is sent again once the lease has passed.
        """

    @abc.abstractmethod
    async def mark_delivered(self, row_id: str) -> None:
        """The row's receiver acknowledged it: never send it again (a missing row is ignored)."""

    @abc.abstractmethod
    async def mark_retry(self, row_id: str, next_attempt_at: float, error: str) -> None:
        """An attempt failed with ``error``; the row is due again at ``next_attempt_at``."""

    @abc.abstractmethod
    async def release_claim(self, row_id: str, next_attempt_at: float) -> None:
        """Give a claimed row back unattempted: the attempt its claim counted is taken back
        and it is due again at ``next_attempt_at`` (its ``last_error`` stays). The deliverer
        does this for a row whose webhook may not be tried now (docs/PUSH.md, fairness)."""

    @abc.abstractmethod
    async def mark_failed(self, row_id: str, error: str) -> None:
        """Give up on the row, recording why; the config's later rows become claimable."""

    @abc.abstractmethod
    async def outbox(self, task_id: str) -> list[OutboxRow]:
        """Every outbox row of the task (any state), by ``seq`` then config (for inspection)."""

    async def outbox_backlog(self) -> tuple[int, float | None] | None:
        """The pending outbox rows: how many, and when (seconds since the epoch) the oldest
        was written (``None``: there are none). The push deliverer samples it for the metrics
        now and then; a store that cannot tell cheaply returns ``None`` (the default)."""
        return None


@runtime_checkable
class SnapshotReader(Protocol):
    """Reading a task as the API hands it out: what ``GetTask`` and a blocking send answer.

    Every ``TaskStore`` is one (with defaults over ``load``, which a store overrides when it
    can do better than building the task's record first: the memory store keeps a finished
    task encoded and decodes it straight into a ``Task``, or hands its bytes over).
    ``snapshot_reader`` gives one for any object with a ``load``.
    """

    async def load_snapshot(
        self, task_id: str, *, tenant: str, owner: str | None, history_length: int | None
    ) -> Task | None:
        """``load(...).snapshot(history_length=...)``, or ``None`` where ``load`` finds none."""

    async def load_encoded_snapshot(
        self, task_id: str, *, tenant: str, owner: str | None
    ) -> Task | Encoded[Task] | None:
        """The whole task (no history cut) as ``load_snapshot`` reads it, or already encoded
        where the store holds it so (what ``GetTask`` answers without decoding it)."""


class _SnapshotsFromRecords:
    """The default ``SnapshotReader``: a snapshot of the record ``load`` returns."""

    __slots__ = ("_store",)

    def __init__(self, store: TaskStore) -> None:
        self._store = store

    async def load_snapshot(
        self, task_id: str, *, tenant: str, owner: str | None, history_length: int | None
    ) -> Task | None:
        record = await self._store.load(task_id, tenant=tenant, owner=owner)
        return None if record is None else record.snapshot(history_length=history_length)

    async def load_encoded_snapshot(
        self, task_id: str, *, tenant: str, owner: str | None
    ) -> Task | Encoded[Task] | None:
        return await self.load_snapshot(task_id, tenant=tenant, owner=owner, history_length=None)


def snapshot_reader(store: TaskStore) -> SnapshotReader:
    """``store`` itself if it reads snapshots (every ``TaskStore`` does), else the default
    over its ``load``."""
    if isinstance(store, SnapshotReader):
        return store
    return _SnapshotsFromRecords(store)
