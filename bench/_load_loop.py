"""The measuring loop both client load generators share (stdlib only).

peerwire_client_load.py (our venv) and sdk_client_load.py (the a2a-sdk venv) never share an
interpreter: both register the ``lf.a2a.v1`` protobuf package. What they do share is this
file, so the two clients are timed, counted and validated by exactly the same code; each
only supplies ``call(text)``, one blocking SendMessage that raises ``BadResponse`` unless the
reply is a completed task echoing ``text``.

The load runs in one asyncio loop in one process: ``concurrency`` workers send back to back
(closed loop). After ``warmup`` seconds a window of ``duration`` seconds is measured:
calls completed inside it, this process's CPU time (``getrusage(RUSAGE_SELF)``, so the
client library's cost per call), the server's CPU (``/proc/PID/stat``) and the CPU used by
everything else on the machine (the noise indicator). Calls still in flight when the window
closes are awaited but not counted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import json
import os
import resource
import sys
import time
import urllib.parse
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

Call = Callable[[str], Awaitable[None]]
# Builds a connected client for (url, concurrency) and yields its call; closes it on exit.
Connect = Callable[[str, int], contextlib.AbstractAsyncContextManager[Call]]

CLK = os.sysconf("SC_CLK_TCK")
DRAIN_TIMEOUT_S = 60.0  # in-flight calls after the window; each call is bounded by CALL_TIMEOUT_S
CALL_TIMEOUT_S = 30.0
TEXT = "hello bench"


class BadResponse(Exception):
    """The agent answered, but not with a completed task echoing the text sent."""


def loopback_only(url: str) -> str:
    host = urllib.parse.urlsplit(url).hostname or ""
    ok = host == "localhost"
    if not ok:
        with contextlib.suppress(ValueError):
            ok = ipaddress.ip_address(host).is_loopback
    if not ok:
        sys.exit(f"refusing non-loopback URL {url!r}")
    return url


def _proc_cpu_s(pid: int | None) -> float:
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as fh:
            parts = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(parts[11]) + int(parts[12])) / CLK  # utime + stime


def _machine_busy_s() -> float:
    with open("/proc/stat") as fh:
        ticks = [int(x) for x in fh.readline().split()[1:]]
    idle = ticks[3] + ticks[4]  # idle + iowait
    return (sum(ticks[:8]) - idle) / CLK


def _own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@dataclass
class _Snapshot:
    wall: float
    own_cpu: float
    server_cpu: float
    machine_busy: float
    ok: int
    bad: int

    @classmethod
    def take(cls, tally: _Tally, server_pid: int | None) -> _Snapshot:
        return cls(
            time.perf_counter(),
            _own_cpu_s(),
            _proc_cpu_s(server_pid),
            _machine_busy_s(),
            tally.ok,
            tally.bad,
        )


@dataclass
class _Tally:
    ok: int = 0
    bad: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    samples: list[str] = field(default_factory=list)

    def failed(self, exc: BaseException) -> None:
        self.bad += 1
        kind = type(exc).__name__
        self.errors[kind] += 1
        if len(self.samples) < 3:
            self.samples.append(f"{kind}: {str(exc)[:200]}")


async def measure(
    call: Call, *, concurrency: int, duration: float, warmup: float, server_pid: int | None
) -> dict[str, Any]:
    tally = _Tally()
    stopping = False

    async def worker(index: int) -> None:
        sent = 0
        while not stopping:
            sent += 1
            # A distinct text per call, so an echo of someone else's message is caught.
            text = f"{TEXT} {index}-{sent}"
            try:
                async with asyncio.timeout(CALL_TIMEOUT_S):
                    await call(text)
            except Exception as exc:
                tally.failed(exc)
                await asyncio.sleep(0)  # a call failing without awaiting must not starve the loop
            else:
                tally.ok += 1

    workers = [asyncio.create_task(worker(i)) for i in range(concurrency)]
    try:
        await asyncio.sleep(warmup)
        start = _Snapshot.take(tally, server_pid)
        await asyncio.sleep(duration)
        end = _Snapshot.take(tally, server_pid)
        stopping = True
        await asyncio.wait_for(asyncio.gather(*workers), DRAIN_TIMEOUT_S)
    finally:
        for task in workers:
            task.cancel()
    return _report(start, end, tally, concurrency)


def _report(start: _Snapshot, end: _Snapshot, tally: _Tally, concurrency: int) -> dict[str, Any]:
    wall = end.wall - start.wall
    ok = end.ok - start.ok
    bad = end.bad - start.bad
    client_cpu = end.own_cpu - start.own_cpu
    server_cpu = end.server_cpu - start.server_cpu
    machine = end.machine_busy - start.machine_busy
    calls = ok + bad
    return {
        "concurrency": concurrency,
        "window_s": wall,
        "calls": calls,
        "ok": ok,
        "bad": bad,
        "bad_total": tally.bad,  # warm-up and drain included: every bad reply counts
        "errors": dict(tally.errors),
        "error_samples": tally.samples,
        "calls_per_s": ok / wall,
        "client_cpu_s": client_cpu,
        "client_cpu_ms_per_call": client_cpu / max(ok, 1) * 1e3,
        "client_cpu_pct": client_cpu / wall * 100,
        "server_cpu_pct": server_cpu / wall * 100,
        "other_cpu_pct": max(0.0, machine - client_cpu - server_cpu) / wall * 100,
    }


def main(name: str, connect: Connect, *, version: str) -> None:
    """Parse the shared command line, run the load through ``connect``'s call, print JSON."""
    parser = argparse.ArgumentParser(
        description=f"Blocking SendMessage load from the {name} client; prints one JSON object."
    )
    parser.add_argument("url", help="the agent's base URL (its card is fetched from it)")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--duration", type=float, default=10.0, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds first")
    parser.add_argument("--server-pid", type=int, help="read this process's CPU over the window")
    args = parser.parse_args()
    if args.concurrency < 1 or args.duration <= 0 or args.warmup < 0:
        parser.error("need --concurrency >= 1, --duration > 0 and --warmup >= 0")
    loopback_only(args.url)

    async def run() -> dict[str, Any]:
        async with connect(args.url, args.concurrency) as call:
            return await measure(
                call,
                concurrency=args.concurrency,
                duration=args.duration,
                warmup=args.warmup,
                server_pid=args.server_pid,
            )

    report = {"client": name, "version": version, **asyncio.run(run())}
    print(json.dumps(report), flush=True)
    sys.exit(1 if report["bad_total"] else 0)


def pooled_limits(concurrency: int) -> dict[str, int]:
    """httpx pool sizes for ``concurrency`` callers (sdk_client_load.py's): every connection is
    kept alive, so the SDK client pays for no reconnects (httpx's default keeps only 20). The
    peerwire client's own pool keeps up to 100 connections per origin alive by default."""
    return {"max_connections": concurrency, "max_keepalive_connections": concurrency}


__all__ = [
    "CALL_TIMEOUT_S",
    "BadResponse",
    "Call",
    "Connect",
    "main",
    "measure",
    "pooled_limits",
]
