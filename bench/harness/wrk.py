"""wrk, the load generator of the throughput scenarios, and what it prints.

wrk runs one thread (``--wrk-threads``) on the client CPUs with a2a.lua beside this file,
which checks every reply and prints HARNESS_* totals; ``parse`` reads them. Why wrk and not
an httpx loop: on one core an httpx client tops out near 280 streams/s where wrk reaches
~2,900, and wrk never used more than 40% of its core at the floor's SendMessage rate.
"""

from __future__ import annotations

import re
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

LUA = Path(__file__).resolve().parent / "a2a.lua"
REQUEST_TIMEOUT = "10s"

_COUNTS = re.compile(r"HARNESS_COUNTS responses=(\d+) ok=(\d+) bad=(\d+) events=(\d+)")
_SUMMARY = re.compile(
    r"HARNESS_SUMMARY duration_us=(\d+) requests=\d+ bytes=\d+ connect=(\d+) read=(\d+) "
    r"write=(\d+) status=(\d+) timeout=(\d+)"
)
_LATENCY = re.compile(
    r"HARNESS_LATENCY_US mean=([\d.]+) p50=(\d+) p90=(\d+) p99=(\d+) p999=(\d+) max=(\d+)"
)


class WrkError(RuntimeError):
    """wrk did not run to the end (no totals in its output)."""


@dataclass(frozen=True)
class WrkRun:
    responses: int
    ok: int
    bad: int  # replies that were not a completed task (HTTP status, error member)
    events: int  # SSE data lines, streams only
    duration_s: float
    socket_errors: int  # connect, read, write errors and timeouts
    mean_ms: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    p999_ms: float
    max_ms: float
    bad_samples: tuple[str, ...] = ()

    @property
    def ok_per_s(self) -> float:
        return self.ok / self.duration_s if self.duration_s else 0.0

    @property
    def events_per_s(self) -> float:
        return self.events / self.duration_s if self.duration_s else 0.0

    @property
    def failures(self) -> int:
        return self.bad + self.socket_errors


def parse(output: str) -> WrkRun:
    counts, summary, latency = (
        _COUNTS.search(output),
        _SUMMARY.search(output),
        _LATENCY.search(output),
    )
    if counts is None or summary is None or latency is None:
        raise WrkError(f"wrk printed no totals:\n{output[-3000:]}")
    responses, ok, bad, events = (int(x) for x in counts.groups())
    duration_us, connect, read, write, _status, timeout = (int(x) for x in summary.groups())
    mean, p50, p90, p99, p999, high = (float(x) / 1000 for x in latency.groups())
    return WrkRun(
        responses=responses,
        ok=ok,
        bad=bad,
        events=events,
        duration_s=duration_us / 1e6,
        # Non-2xx replies are already in ``bad`` (a2a.lua sees their status).
        socket_errors=connect + read + write + timeout,
        mean_ms=mean,
        p50_ms=p50,
        p90_ms=p90,
        p99_ms=p99,
        p999_ms=p999,
        max_ms=high,
        bad_samples=tuple(re.findall(r"HARNESS_BAD .*", output)[:3]),
    )


@dataclass(frozen=True)
class Load:
    """What one wrk run sends: ``method`` over ``connections`` for ``seconds``."""

    url: str
    method: str  # SendMessage, GetTask or SendStreamingMessage
    connections: int
    seconds: float
    task_id: str = ""  # GetTask's
    chunks: int = 0  # message.metadata.chunks of the send methods


def command(wrk: str, load: Load, threads: int = 1) -> list[str]:
    # wrk takes whole seconds; a fresh tag keeps messageIds unique across runs.
    duration = f"{max(1, round(load.seconds))}s"
    return [
        wrk,
        *("-t", str(threads), "-c", str(load.connections), "-d", duration),
        *("--timeout", REQUEST_TIMEOUT, "-s", str(LUA), load.url),
        *("--", load.method, load.task_id or "-", str(load.chunks), secrets.token_hex(3)),
    ]


def run(wrk: str, load: Load, *, threads: int = 1, prefix: list[str] | None = None) -> WrkRun:
    """Run wrk (after ``prefix``, the CPU pinning) and parse its totals."""
    argv = [*(prefix or []), *command(wrk, load, threads)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=load.seconds + 60)
    try:
        return parse(done.stdout + done.stderr)
    except WrkError as exc:
        raise WrkError(f"wrk exited {done.returncode}: {exc}") from None
