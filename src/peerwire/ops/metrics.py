"""Prometheus metrics of an agent (docs/OPERATIONS.md, "Metrics"): what it does, as it does it.

``Metrics`` owns the instruments (prometheus-client, the ``metrics`` extra) and the registry
``/metrics`` renders. The server's parts update them as things happen: a binding when it has
answered a request (``RequestMeter``), the runner as handlers start, wait in ``ask`` and end,
the dispatcher as streams open and close, the push deliverer and the cluster placement in
their own loops. A scrape only renders what is there: it never reads the task store, so it
costs the serving path nothing, however often it comes. The one exception is what only the
store knows across processes (the tasks waiting for their client): ``watch_store`` registers
a count the page refreshes at most once per ``STORE_SAMPLE_S`` (one indexed query, cached in
between), bounded in time, before it renders.

The hot path is a request: its binding calls ``RequestMeter.ok`` (or ``failed``) once, which
is one dict lookup for the labelled children bound at the first request of that kind, one
counter increment and one histogram observation. In one process the instruments are
lock-free ones of our own (``_fast_metrics``: prometheus-client's take a lock per update,
which measured several times dearer); all the metrics work of a blocking SendMessage
(request, task created and finished, working handler up and down) measured ~1 us. Off
(``create_app(metrics=False)``, or prometheus-client not installed) the server holds
``None`` instead and does no metrics work at all.

Labels are bounded by construction: operations are A2A's eleven, bindings three, outcomes
``ok`` or an error reason of the wire table (``errors``), task states the terminal four,
dependencies away the three of ``ServiceUnavailableError.DEPENDENCIES``, skills those the
card declares (``declare_skills``; any other is ``unknown``); no task id,
tenant or free text is ever a label value.

Several processes on one host (a pre-forking server, ``peerwire worker`` beside
``peerwire serve``) share values through prometheus-client's multiprocess mode: set
``PROMETHEUS_MULTIPROC_DIR`` to an empty directory before the processes start, and each
scrape of any of them adds every process's values up (gauges of live processes only).
"""

from __future__ import annotations

import asyncio
import logging
import os
import platform
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from importlib import metadata
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeVar

from ..errors import (
    A2AError,
    PeerwireError,
    ServiceUnavailableError,
    UnknownA2AError,
    wire_info,
)
from ..protocol.states import INTERRUPTED, TERMINAL
from ..protocol.subscription import TASK_FINISHED, is_finished_task_refusal
from ..types import TaskState

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = [
    "BINDINGS",
    "MULTIPROC_ENV",
    "OPERATIONS",
    "STORE_SAMPLE_S",
    "UNKNOWN_SKILL",
    "Level",
    "LevelSet",
    "Metrics",
    "MetricsUnavailableError",
    "RequestMeter",
    "StoreCount",
    "metrics_available",
    "outcome_of",
]

MULTIPROC_ENV: Final = "PROMETHEUS_MULTIPROC_DIR"
"""The environment variable that turns prometheus-client's multiprocess mode on."""

BINDINGS: Final = ("jsonrpc", "rest", "grpc")
"""The values of the ``binding`` label (as ``create_app(interface_order=...)`` names them)."""

OPERATIONS: Final = (
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "ListTasks",
    "CancelTask",
    "SubscribeToTask",
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
    "GetExtendedAgentCard",
)
"""The values of the ``operation`` label: A2A's operations, as JSON-RPC names its methods."""

log = logging.getLogger("peerwire.metrics")

OK: Final = "ok"
UNKNOWN_SKILL: Final = "unknown"
"""The ``skill`` label of a task whose skill the card does not declare (never free text)."""

STORE_SAMPLE_S: Final = 15.0
"""How long a count read from the store stands for (a common scrape interval): scrapes in
between render the cached value, so the store sees one query per interval per process."""
_STORE_SAMPLE_TIMEOUT_S: Final = 2.0
"""The most a scrape waits for the store's count; slower, it renders the last value."""
UNKNOWN_OPERATION: Final = "unknown"
"""The operation of a request refused before its operation could be told (a malformed body)."""

# Requests: loopback answers take well under a millisecond, a blocking send lasts as long as
# its handler (an LLM call: seconds to minutes). 16 buckets span both.
REQUEST_BUCKETS: Final = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)

# Tasks: from a blocking send's milliseconds to a human's answer a day later.
TASK_BUCKETS: Final = (
    0.01,
    0.05,
    0.1,
    0.5,
    1.0,
    5.0,
    10.0,
    30.0,
    60.0,
    300.0,
    900.0,
    3600.0,
    4 * 3600.0,
    24 * 3600.0,
)
# Queue wait: a job is normally taken within milliseconds; a backlog makes it seconds or more.
QUEUE_BUCKETS: Final = (
    0.001,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    300.0,
)

_TERMINAL_LABELS: Final = {
    TaskState.COMPLETED: "completed",
    TaskState.FAILED: "failed",
    TaskState.CANCELED: "canceled",
    TaskState.REJECTED: "rejected",
}
assert set(_TERMINAL_LABELS) == TERMINAL
_WAITING_LABELS: Final = {
    TaskState.INPUT_REQUIRED: "input_required",
    TaskState.AUTH_REQUIRED: "auth_required",
}
assert set(_WAITING_LABELS) == INTERRUPTED

StoreCount = Callable[[], Awaitable[Mapping[TaskState, int] | None]]
"""A store's count of its tasks per state (``TaskStore.count_waiting``); ``None``: it cannot
tell cheaply."""


_T = TypeVar("_T")


class MetricsUnavailableError(PeerwireError, ImportError):
    """prometheus-client is not installed (``pip install 'peerwire[metrics]'``)."""


class Level(Protocol):
    """A gauge that goes up and down (a labelled prometheus-client ``Gauge`` child)."""

    def inc(self, amount: float = 1) -> None: ...

    def dec(self, amount: float = 1) -> None: ...


class LevelSet(set[_T]):
    """A set whose size a gauge follows: up on each new member, down on each one removed
    (``add`` and ``discard``, the two a set of open things is kept with)."""

    __slots__ = ("_level",)

    def __init__(self, level: Level) -> None:
        super().__init__()
        self._level = level

    def add(self, item: _T) -> None:
        if item not in self:
            super().add(item)
            self._level.inc()

    def discard(self, item: object) -> None:
        if item in self:
            super().discard(item)
            self._level.dec()


def metrics_available() -> bool:
    """Whether prometheus-client can be imported: metrics are on by default when it can."""
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        return False
    return True


# Outcome labels by error class: the wire table's reasons, a bounded set.
_REASONS: dict[type[BaseException], str] = {}


def outcome_of(error: BaseException) -> str:
    """The ``outcome`` label of a request that failed with ``error``: its ErrorInfo reason
    from the wire table (``TASK_NOT_FOUND``, ``UNAUTHENTICATED``, ...); ``INTERNAL_ERROR``
    for anything that is not an ``A2AError`` (the agent's bug, answered as InternalError)."""
    cls = type(error)
    reason = _REASONS.get(cls)
    if reason is None:
        if isinstance(error, UnknownA2AError):
            reason = "UNKNOWN_ERROR"  # its reason came from a peer: free text, never a label
        elif isinstance(error, A2AError):
            reason = wire_info(error).reason or "INTERNAL_ERROR"
        else:
            reason = "INTERNAL_ERROR"
        _REASONS[cls] = reason
    return reason


class RequestMeter:
    """The request metrics of one binding: ``ok`` or ``failed`` once per answered request,
    with the ``time.perf_counter()`` taken as the binding began reading it."""

    __slots__ = (
        "_binding",
        "_duration",
        "_failed",
        "_ok",
        "_outages",
        "_requests",
        "streams",
    )

    def __init__(self, instruments: _Instruments, binding: str) -> None:
        self._binding = binding
        self._requests = instruments.requests
        self._duration = instruments.request_duration
        self._outages = instruments.outages
        # The (counter's inc, histogram's observe) of each label set, bound on first use:
        # the hot path does no ``.labels()`` call (a lock and a tuple each) and no attribute
        # lookup on the children. Successes by operation; failures by (operation, outcome).
        self._ok: dict[str, _Record] = {}
        self._failed: dict[tuple[str, str], _Record] = {}
        self.streams: Level = instruments.active_streams.labels(binding)
        """This binding's ``peerwire_active_streams``: up as a stream's response starts,
        down once it has ended (finished, ended by the server, or left by its client)."""

    def ok(self, operation: str, started: float) -> None:
        """``operation`` was answered (for a stream: its response began)."""
        record = self._ok.get(operation)
        if record is None:
            record = self._ok[operation] = self._bind(operation, OK)
        count, observe = record
        count()
        observe(time.perf_counter() - started)

    def failed(self, operation: str, error: BaseException, started: float) -> None:
        """``operation`` was refused or failed with ``error`` (its reason is the outcome;
        ``task_finished`` for a SubscribeToTask refused because its task had finished).
        An ``operation`` that is none of A2A's (a caller's method name) counts as
        ``unknown``: never a caller's text as a label."""
        if operation not in _KNOWN_OPERATIONS:
            operation = UNKNOWN_OPERATION
        # A subscription refused because its task had finished is an expected answer.
        outcome = TASK_FINISHED if is_finished_task_refusal(operation, error) else None
        key = (operation, outcome or outcome_of(error))
        record = self._failed.get(key)
        if record is None:
            record = self._failed[key] = self._bind(*key)
        count, observe = record
        count()
        observe(time.perf_counter() - started)
        if isinstance(error, ServiceUnavailableError):
            self._outages.labels(_dependency_label(error)).inc()

    def _bind(self, operation: str, outcome: str) -> _Record:
        if operation not in _KNOWN_OPERATIONS:
            operation = UNKNOWN_OPERATION  # never a caller's text as a label
        labels = (operation, self._binding, outcome)
        return self._requests.labels(*labels).inc, self._duration.labels(*labels).observe


def _dependency_label(error: ServiceUnavailableError) -> str:
    # A peer's word (a proxied error) is free text: only the known names become labels.
    dependency = error.dependency
    return dependency if dependency in ServiceUnavailableError.DEPENDENCIES else "unknown"


# A label set's (counter increment, histogram observation), bound once.
_Record = tuple[Callable[[], None], Callable[[float], None]]


_KNOWN_OPERATIONS: Final = frozenset((*OPERATIONS, UNKNOWN_OPERATION))


_GaugeMode = Literal["livesum", "livemax", "livemostrecent"]


class _Instruments:
    """Every instrument. In one process (``registry`` given): lock-free ones of our own
    (``_fast_metrics``), rendered by a collector in ``registry``; in multiprocess mode
    (``registry`` is ``None``): prometheus-client's, registered nowhere, since their values
    live in files which the scrape's own collector reads."""

    def __init__(self, registry: CollectorRegistry | None) -> None:
        from prometheus_client import Counter, Gauge, Histogram

        from ._fast_metrics import FastInstruments

        fast = None if registry is None else FastInstruments()

        def counter(name: str, text: str, labels: tuple[str, ...] = ()) -> Any:
            if fast is not None:
                family = fast.family("counter", name, text, labels)
                return family if labels else family.labels()
            return Counter(name, text, labels, registry=None)

        def gauge(
            name: str, text: str, labels: tuple[str, ...] = (), mode: _GaugeMode = "livesum"
        ) -> Any:
            if fast is not None:
                family = fast.family("gauge", name, text, labels)
                return family if labels else family.labels()
            # Across processes: levels add up over the live ones; a value sampled from
            # shared state (the store's outbox, the queue) is the same in each: the largest.
            return Gauge(name, text, labels, registry=None, multiprocess_mode=mode)

        def histogram(
            name: str,
            text: str,
            labels: tuple[str, ...] = (),
            buckets: tuple[float, ...] = REQUEST_BUCKETS,
        ) -> Any:
            if fast is not None:
                family = fast.family("histogram", name, text, labels, buckets)
                return family if labels else family.labels()
            return Histogram(name, text, labels, registry=None, buckets=buckets)

        request_labels = ("operation", "binding", "outcome")
        self.requests = counter(
            "peerwire_requests_total",
            "A2A requests answered, by operation, binding and outcome (ok or the error reason)",
            request_labels,
        )
        self.request_duration = histogram(
            "peerwire_request_duration_seconds",
            "Time from reading an A2A request to its answer (a stream: to its first byte)",
            request_labels,
        )
        self.outages = counter(
            "peerwire_dependency_unavailable_total",
            "A2A requests refused because a dependency was away (ServiceUnavailableError), "
            "by dependency: task_store, event_bus, work_queue",
            ("dependency",),
        )
        self.build_info = gauge(
            "peerwire_build_info",
            "Always 1: the peerwire version and the Python version of the process",
            ("version", "python"),
            mode="livemax",
        )
        self.tasks_created = counter(
            "peerwire_tasks_created_total", "Tasks created, by skill", ("skill",)
        )
        self.tasks_finished = counter(
            "peerwire_tasks_finished_total",
            "Tasks that reached a terminal state here, by state and skill",
            ("state", "skill"),
        )
        self.task_duration = histogram(
            "peerwire_task_duration_seconds",
            "Time from a task's creation to its terminal state, by state and skill (tasks "
            "whose handler ran from their start to their end in one process)",
            ("state", "skill"),
            TASK_BUCKETS,
        )
        self.tasks_waiting = gauge(
            "peerwire_tasks_waiting",
            "Tasks waiting for their client (input_required, auth_required), counted in the "
            "store: every process's, not this one's",
            ("state",),
            # Each process counts the same store now and then: the latest count is the one.
            mode="livemostrecent",
        )
        self.working = gauge(
            "peerwire_handlers_working", "Handlers running in this process (not in ask)"
        )
        self.waiting = gauge(
            "peerwire_handlers_waiting", "Handlers suspended in ctx.ask, waiting for input"
        )
        self.active_streams = gauge(
            "peerwire_active_streams",
            "Streams open on the wire (SSE responses, gRPC server streams), by binding",
            ("binding",),
        )
        self.subscribers = gauge(
            "peerwire_task_subscribers",
            "Streams following a task's events in the dispatcher, whatever their binding",
        )
        self.push_attempts = counter(
            "peerwire_push_delivery_attempts_total",
            "Push notification attempts, by outcome (delivered, answered: a non-2xx status, "
            "unavailable: no answer or 429/503, not_sent: refused before sending)",
            ("outcome",),
        )
        self.push_failures = counter(
            "peerwire_push_notifications_failed_total",
            "Push notifications given up (attempts exhausted, or refused for good)",
        )
        self.outbox_rows = gauge(
            "peerwire_push_outbox_rows",
            "Push notifications not delivered yet (the store's outbox, sampled)",
            mode="livemax",
        )
        self.outbox_age = gauge(
            "peerwire_push_outbox_oldest_age_seconds",
            "Age of the oldest push notification not delivered yet (0: none; sampled)",
            mode="livemax",
        )
        self.queue_jobs = gauge(
            "peerwire_work_queue_jobs",
            "Jobs waiting in the cluster's work queue (sampled by the sweeper)",
            mode="livemax",
        )
        self.queue_oldest_age = gauge(
            "peerwire_work_queue_oldest_age_seconds",
            "Age of the oldest job no worker has taken yet (0: none; sampled by the sweeper)",
            mode="livemax",
        )
        self.queue_wait = histogram(
            "peerwire_work_queue_wait_seconds",
            "Time from queueing a job to a worker taking its task (the queue's clock)",
            buckets=QUEUE_BUCKETS,
        )
        self.lease_renewals = counter(
            "peerwire_lease_renewals_total", "Task leases renewed by this process's holders"
        )
        self.reclaimed = counter(
            "peerwire_jobs_reclaimed_total",
            "Jobs taken over from a process whose lease ran out (it died or stalled)",
        )
        self.sweeper_actions = counter(
            "peerwire_sweeper_actions_total",
            "What the cluster sweeper did, by action",
            ("action",),
        )
        self.delegation_events = counter(
            "peerwire_delegation_events_total",
            "Delegations to other agents (docs/DELEGATION.md), by event: sent, stalled, "
            "timed_out, canceled, completed, failed, compensation_run, compensation_failed, "
            "dead_letter",
            ("event",),
        )
        # Keep this last: the registry checks every family's name as it is registered.
        if fast is not None and registry is not None:
            registry.register(fast)


class Metrics:
    """The metrics of one agent: its instruments and the registry ``/metrics`` renders.

    ``create_app`` makes one unless told not to (``metrics=False``); pass your own to add
    metrics of your own to the same page (``Metrics(registry=...)``: a
    ``prometheus_client.CollectorRegistry``, into which peerwire's instruments are
    registered; by default a new one, with the process, platform and GC collectors).

    With ``PROMETHEUS_MULTIPROC_DIR`` set (multiprocess mode) the instruments are the
    process's (every ``Metrics`` of one process shares them) and a scrape renders the values
    of every process writing to that directory; ``registry`` is then only what is rendered
    beside them.

    ``store_every``: how long the store's count of waiting tasks stands for (seconds,
    ``STORE_SAMPLE_S`` by default): a scrape after that queries the store again, one before
    renders the count it has.

    Raises ``MetricsUnavailableError`` when prometheus-client is not installed.
    """

    def __init__(
        self, *, registry: CollectorRegistry | None = None, store_every: float = STORE_SAMPLE_S
    ) -> None:
        try:
            import prometheus_client
        except ImportError:
            raise MetricsUnavailableError(
                "metrics need prometheus-client: pip install 'peerwire[metrics]'"
            ) from None
        if not store_every > 0:
            raise ValueError(
                f"store_every must be a positive number of seconds, not {store_every!r}"
            )
        self.store_every = store_every
        self.multiprocess = bool(os.environ.get(MULTIPROC_ENV))
        if self.multiprocess:
            from prometheus_client import multiprocess, values

            if values.ValueClass.__name__ == "MutexValue":
                raise RuntimeError(
                    f"{MULTIPROC_ENV} was set after prometheus_client was imported: its values "
                    "would stay in memory; set it before the process starts"
                )

            self._instruments = _process_instruments()
            self.registry = registry or prometheus_client.CollectorRegistry()
            # Collected at every scrape: the values every process wrote to the directory.
            multiprocess.MultiProcessCollector(self.registry)  # type: ignore[no-untyped-call]
        else:
            if registry is None:
                registry = prometheus_client.CollectorRegistry()
                prometheus_client.ProcessCollector(registry=registry)
                prometheus_client.PlatformCollector(registry=registry)
                prometheus_client.GCCollector(registry=registry)
            self.registry = registry
            self._instruments = _Instruments(registry)
        instruments = self._instruments
        instruments.build_info.labels(_peerwire_version(), platform.python_version()).set(1)
        self.working: Level = instruments.working
        self.waiting: Level = instruments.waiting
        self.subscribers: Level = instruments.subscribers
        self.lease_renewals: Any = instruments.lease_renewals
        self.reclaimed: Any = instruments.reclaimed
        self._skills: set[str] = set()
        # Bound children by label values, as RequestMeter binds them: no .labels() per task.
        self._created: dict[str, Callable[[], None]] = {}
        self._finished: dict[str, dict[TaskState, _Record]] = {}
        self._meters: dict[str, RequestMeter] = {}
        self._watches: list[_StoreWatch] = []

    def requests(self, binding: str) -> RequestMeter:
        """The request meter of ``binding`` (one of ``BINDINGS``)."""
        if binding not in BINDINGS:
            raise ValueError(f"unknown binding {binding!r} (known: {', '.join(BINDINGS)})")
        meter = self._meters.get(binding)
        if meter is None:
            meter = self._meters[binding] = RequestMeter(self._instruments, binding)
        return meter

    # -- tasks ------------------------------------------------------------------------------

    def declare_skills(self, skill_ids: Iterable[str]) -> None:
        """The skills the card declares: the values the ``skill`` label may take (added to
        those declared before: one ``Metrics`` may serve several agents)."""
        self._skills.update(skill_ids)

    def _skill(self, skill_id: str) -> str:
        return skill_id if skill_id in self._skills else UNKNOWN_SKILL

    def task_created(self, skill_id: str) -> None:
        """A task was created for the skill ``skill_id``."""
        count = self._created.get(skill_id)
        if count is None:
            label = self._skill(skill_id)
            count = self._created.get(label)
            if count is None:
                count = self._created[label] = self._instruments.tasks_created.labels(label).inc
        count()

    def task_finished(
        self, state: TaskState, skill_id: str = "", created_at: float | None = None
    ) -> None:
        """A task of ``skill_id`` reached ``state``, ``created_at`` (``time.time()``) when this
        process knows it: then its duration is observed too. States that are not terminal
        are ignored."""
        # By skill, then state: one str and one enum lookup on the hot path.
        by_state = self._finished.get(skill_id)
        if by_state is None:
            by_state = self._finished_of(self._skill(skill_id))
        record = by_state.get(state)
        if record is None:
            return
        count, observe = record
        count()
        if created_at is not None:
            elapsed = time.time() - created_at
            observe(elapsed if elapsed > 0 else 0.0)  # a clock that stepped back: 0

    def _finished_of(self, label: str) -> dict[TaskState, _Record]:
        """The bound (count, observe) of each terminal state for a ``skill`` label (only
        declared skills and ``unknown`` are keys: the dict stays bounded)."""
        by_state = self._finished.get(label)
        if by_state is None:
            instruments = self._instruments
            by_state = self._finished[label] = {
                state: (
                    instruments.tasks_finished.labels(name, label).inc,
                    instruments.task_duration.labels(name, label).observe,
                )
                for state, name in _TERMINAL_LABELS.items()
            }
        return by_state

    # -- the store --------------------------------------------------------------------------

    def watch_store(self, count: StoreCount) -> Callable[[], None]:
        """Count the tasks waiting for their client with ``count`` (the store's), refreshed
        by the page at most every ``store_every`` seconds; call in the event loop the store
        runs in. Returns the call that stops it (the store is closing)."""
        watch = _StoreWatch(count, asyncio.get_running_loop(), self.store_every)
        self._watches.append(watch)

        def stop() -> None:
            if watch in self._watches:
                self._watches.remove(watch)

        return stop

    async def refresh(self) -> None:
        """Bring what is sampled at scrape time up to date (the store's counts, when their
        interval has passed); a store that fails or is slow leaves the last value (logged)."""
        for watch in list(self._watches):
            await watch.refresh(self._instruments)

    def refresh_from_thread(self) -> None:
        """``refresh`` from a thread that is not the store's event loop (``MetricsPort``)."""
        for watch in list(self._watches):
            if not watch.due():
                continue
            try:
                future = asyncio.run_coroutine_threadsafe(
                    watch.refresh(self._instruments), watch.loop
                )
            except RuntimeError:  # the loop is closed: nothing to count with
                continue
            try:
                future.result(_STORE_SAMPLE_TIMEOUT_S + 1.0)
            except Exception as exc:  # a scrape renders what it has
                future.cancel()
                log.debug("peerwire: the store's task count was not refreshed: %r", exc)

    # -- push -------------------------------------------------------------------------------

    def push_attempted(self, outcome: str) -> None:
        """One push attempt ended: ``delivered``, ``answered``, ``unavailable``, ``not_sent``."""
        self._instruments.push_attempts.labels(outcome).inc()

    def push_given_up(self) -> None:
        self._instruments.push_failures.inc()

    def outbox_sampled(self, rows: int, oldest_age: float) -> None:
        """The outbox holds ``rows`` undelivered notifications, the oldest ``oldest_age``
        seconds old (``0`` when there are none)."""
        self._instruments.outbox_rows.set(rows)
        self._instruments.outbox_age.set(max(0.0, oldest_age))

    # -- cluster ----------------------------------------------------------------------------

    def queue_sampled(self, jobs: int, oldest_age: float = 0.0) -> None:
        """The work queue holds ``jobs`` not run yet, the oldest not taken ``oldest_age``
        seconds old (``0``: none)."""
        self._instruments.queue_jobs.set(jobs)
        self._instruments.queue_oldest_age.set(max(0.0, oldest_age))

    def queue_waited(self, seconds: float) -> None:
        """A worker took a job ``seconds`` after it was queued."""
        self._instruments.queue_wait.observe(max(0.0, seconds))

    def swept(self, action: str, count: int = 1) -> None:
        """The sweeper did ``action`` (a fixed word: ``failed_orphan``, ``requeued``, ...)."""
        if count:
            self._instruments.sweeper_actions.labels(action).inc(count)

    # -- delegation -------------------------------------------------------------------------

    def delegation_event(self, event: str) -> None:
        """A delegation event (a fixed word: ``sent``, ``stalled``, ``timed_out``, ...)."""
        self._instruments.delegation_events.labels(event).inc()

    # -- the page ---------------------------------------------------------------------------

    def render(self, accept: str | None = None) -> tuple[bytes, str]:
        """The page and its content type: Prometheus text, or OpenMetrics when ``accept``
        (the scraper's ``Accept`` header) asks for it."""
        from prometheus_client.exposition import choose_encoder

        encode, content_type = choose_encoder(accept or "")
        return encode(self.registry), content_type


class _StoreWatch:
    """One store's count of waiting tasks, cached for ``every`` seconds."""

    def __init__(self, count: StoreCount, loop: asyncio.AbstractEventLoop, every: float) -> None:
        self.count = count
        self.loop = loop
        self.every = every
        self._next = 0.0  # time.monotonic() when a scrape may query again
        self._lock = threading.Lock()  # one query at a time, whichever thread scrapes

    def due(self) -> bool:
        return time.monotonic() >= self._next

    async def refresh(self, instruments: _Instruments) -> None:
        if not self.due() or not self._lock.acquire(blocking=False):
            return  # fresh enough, or another scrape is counting now
        try:
            # Whatever comes of it, the next query waits an interval: a store that is away
            # is not asked at every scrape.
            self._next = time.monotonic() + self.every
            try:
                counts = await asyncio.wait_for(self.count(), _STORE_SAMPLE_TIMEOUT_S)
            except Exception as exc:  # the page renders the last value
                log.debug("peerwire: counting the waiting tasks in the store failed: %r", exc)
                return
            if counts is None:
                return
            for state, label in _WAITING_LABELS.items():
                instruments.tasks_waiting.labels(label).set(counts.get(state, 0))
        finally:
            self._lock.release()


def _peerwire_version() -> str:
    try:
        return metadata.version("peerwire")
    except metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown"


_PROCESS_INSTRUMENTS: list[_Instruments] = []


def _process_instruments() -> _Instruments:
    """The one set of instruments of this process in multiprocess mode: two sets would each
    keep their own copy of a value and overwrite each other's in the shared file."""
    if not _PROCESS_INSTRUMENTS:
        _PROCESS_INSTRUMENTS.append(_Instruments(None))
    return _PROCESS_INSTRUMENTS[0]
