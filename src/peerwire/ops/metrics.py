"""Prometheus metrics of an agent (docs/OPERATIONS.md, "Metrics"): what it does, as it does it.

``Metrics`` owns the instruments (prometheus-client, the ``metrics`` extra) and the registry
``/metrics`` renders. The server's parts update them as things happen: a binding when it has
answered a request (``RequestMeter``), the runner as handlers start, wait in ``ask`` and end,
the dispatcher as streams open and close, the push deliverer and the cluster placement in
their own loops. A scrape only renders what is there: it never reads the task store, so it
costs the serving path nothing, however often it comes.

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
dependencies away the three of ``ServiceUnavailableError.DEPENDENCIES``; no task id,
tenant or free text is ever a label value.

Several processes on one host (a pre-forking server, ``peerwire worker`` beside
``peerwire serve``) share values through prometheus-client's multiprocess mode: set
``PROMETHEUS_MULTIPROC_DIR`` to an empty directory before the processes start, and each
scrape of any of them adds every process's values up (gauges of live processes only).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeVar

from ..errors import (
    A2AError,
    PeerwireError,
    ServiceUnavailableError,
    UnknownA2AError,
    wire_info,
)
from ..protocol.states import TERMINAL
from ..protocol.subscription import TASK_FINISHED, is_finished_task_refusal
from ..types import TaskState

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = [
    "BINDINGS",
    "MULTIPROC_ENV",
    "OPERATIONS",
    "Level",
    "LevelSet",
    "Metrics",
    "MetricsUnavailableError",
    "RequestMeter",
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

OK: Final = "ok"
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

_TERMINAL_LABELS: Final = {
    TaskState.COMPLETED: "completed",
    TaskState.FAILED: "failed",
    TaskState.CANCELED: "canceled",
    TaskState.REJECTED: "rejected",
}
assert set(_TERMINAL_LABELS) == TERMINAL


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


_GaugeMode = Literal["livesum", "livemax"]


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

        def histogram(name: str, text: str, labels: tuple[str, ...]) -> Any:
            if fast is not None:
                return fast.family("histogram", name, text, labels, REQUEST_BUCKETS)
            return Histogram(name, text, labels, registry=None, buckets=REQUEST_BUCKETS)

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
        self.tasks_created = counter("peerwire_tasks_created_total", "Tasks created")
        self.tasks_finished = counter(
            "peerwire_tasks_finished_total",
            "Tasks that reached a terminal state here, by state",
            ("state",),
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

    Raises ``MetricsUnavailableError`` when prometheus-client is not installed.
    """

    def __init__(self, *, registry: CollectorRegistry | None = None) -> None:
        try:
            import prometheus_client
        except ImportError:
            raise MetricsUnavailableError(
                "metrics need prometheus-client: pip install 'peerwire[metrics]'"
            ) from None
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
        self.tasks_created: Any = instruments.tasks_created
        self.working: Level = instruments.working
        self.waiting: Level = instruments.waiting
        self.subscribers: Level = instruments.subscribers
        self.lease_renewals: Any = instruments.lease_renewals
        self.reclaimed: Any = instruments.reclaimed
        self._finished = {
            state: instruments.tasks_finished.labels(label)
            for state, label in _TERMINAL_LABELS.items()
        }
        self._meters: dict[str, RequestMeter] = {}

    def requests(self, binding: str) -> RequestMeter:
        """The request meter of ``binding`` (one of ``BINDINGS``)."""
        if binding not in BINDINGS:
            raise ValueError(f"unknown binding {binding!r} (known: {', '.join(BINDINGS)})")
        meter = self._meters.get(binding)
        if meter is None:
            meter = self._meters[binding] = RequestMeter(self._instruments, binding)
        return meter

    # -- tasks ------------------------------------------------------------------------------

    def task_finished(self, state: TaskState) -> None:
        """A task reached ``state``; states that are not terminal are ignored."""
        child = self._finished.get(state)
        if child is not None:
            child.inc()

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

    def queue_sampled(self, jobs: int) -> None:
        self._instruments.queue_jobs.set(jobs)

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


_PROCESS_INSTRUMENTS: list[_Instruments] = []


def _process_instruments() -> _Instruments:
    """The one set of instruments of this process in multiprocess mode: two sets would each
    keep their own copy of a value and overwrite each other's in the shared file."""
    if not _PROCESS_INSTRUMENTS:
        _PROCESS_INSTRUMENTS.append(_Instruments(None))
    return _PROCESS_INSTRUMENTS[0]
