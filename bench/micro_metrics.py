"""The metrics work of one blocking SendMessage, in process: peerwire's lock-free instruments
against prometheus-client's own (docs/PERFORMANCE.md, "Observability overhead").

A blocking SendMessage makes seven metric updates: the request's counter and histogram, the
task created, the handler working up and down, the task finished and its duration. This
times them alone, best of ``--rounds``, on both kinds of instrument.

    .venv/bin/python -m bench.micro_metrics [--calls 200000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from peerwire.ops import Metrics
from peerwire.ops.metrics import REQUEST_BUCKETS
from peerwire.types import TaskState


def peerwire_request() -> Callable[[], None]:
    metrics = Metrics()
    meter = metrics.requests("jsonrpc")
    metrics.declare_skills(["echo"])
    created, working = metrics.task_created, metrics.working
    finished = metrics.task_finished
    born = time.time()

    def one() -> None:
        started = time.perf_counter()
        created("echo")
        working.inc()
        working.dec()
        finished(TaskState.COMPLETED, "echo", born)
        meter.ok("SendMessage", started)

    return one


def prometheus_client_request() -> Callable[[], None]:
    """The same seven updates on prometheus-client's instruments, children bound once."""
    registry = CollectorRegistry()
    labels = ("operation", "binding", "outcome")
    requests = Counter("x_requests_total", "", labels, registry=registry)
    duration = Histogram("x_seconds", "", labels, registry=registry, buckets=REQUEST_BUCKETS)
    count = requests.labels("SendMessage", "jsonrpc", "ok").inc
    observe = duration.labels("SendMessage", "jsonrpc", "ok").observe
    created = Counter("x_created_total", "", registry=registry)
    working = Gauge("x_working", "", registry=registry)
    finished = Counter("x_finished_total", "", ("state",), registry=registry).labels("completed")
    lasted = Histogram("x_task_seconds", "", registry=registry, buckets=REQUEST_BUCKETS).observe
    born = time.time()

    def one() -> None:
        started = time.perf_counter()
        created.inc()
        working.inc()
        working.dec()
        finished.inc()
        lasted(time.time() - born)
        count()
        observe(time.perf_counter() - started)

    return one


def best_of(work: Callable[[], None], calls: int, rounds: int) -> float:
    """Microseconds per call, the best round (the least disturbed)."""
    work()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            work()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    empty = best_of(lambda: None, args.calls, args.rounds)
    ours = best_of(peerwire_request(), args.calls, args.rounds) - empty
    theirs = best_of(prometheus_client_request(), args.calls, args.rounds) - empty
    print(f"metrics work of one blocking SendMessage (less an empty call, {empty:.2f} us):")
    print(f"  peerwire's lock-free instruments:  {ours:.2f} us")
    print(f"  prometheus-client's instruments:   {theirs:.2f} us ({theirs / ours:.1f}x)")


if __name__ == "__main__":
    main()
