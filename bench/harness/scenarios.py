"""The scenarios. Each takes a started target and returns its figures by key.

  a  blocking SendMessage, ``concurrency`` connections, ``duration`` s     wrk
  e  the latency percentiles of (a)'s own run (closed loop: p50 ~ c / throughput)
  l  SendMessage over one connection, ``lat_duration`` s: unloaded latency wrk
  b  GetTask of one task made by SendMessage                              wrk
  c  SendStreamingMessage with ``chunks`` chunks: streams/s and events/s  wrk
     then ``stream_check_count`` streams validated one by one             httpx client
  d  RSS after ``mem_warmup`` tasks, then after ``mem_tasks`` more         httpx client
  p  (opt-in) a py-spy profile of the server under (a)'s load             py-spy

Every measured window follows an unmeasured warm-up of the same load and a wait for the
machine to be quiet; keys starting with ``_`` (and the profile's ``p.``) are notes, not
figures. ``X.bad`` counts every reply that broke the contract, in the warm-ups too: any of
them fails the run.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import profile, wrk
from .proc import CpuMeter, pinned, rss_mib, wait_for_quiet
from .targets import Target, TargetError, rpc

ROOT = Path(__file__).resolve().parents[2]
CLIENT_TIMEOUT_S = 900

Figures = dict[str, Any]


@dataclass(frozen=True)
class Settings:
    concurrency: int = 32
    duration: float = 15.0
    lat_duration: float = 5.0
    warmup: float = 2.0
    chunks: int = 20
    mem_tasks: int = 10_000
    mem_warmup: int = 300
    mem_settle: float = 1.0
    stream_check_count: int = 200
    stream_check_concurrency: int = 8
    server_cpus: str = "0"
    client_cpus: str = "1"
    wrk: str = "wrk"
    wrk_threads: int = 1
    client_python: str = "python3"
    quiet_wait: float = 60.0
    quiet_threshold: float = 15.0
    py_spy: str | None = None
    profile_duration: float = 10.0
    profile_top: int = 10

    def load(
        self, url: str, method: str, connections: int, seconds: float, **kw: Any
    ) -> wrk.WrkRun:
        spec = wrk.Load(url, method, connections, seconds, **kw)
        return wrk.run(self.wrk, spec, threads=self.wrk_threads, prefix=pinned(self.client_cpus))

    def quiet(self) -> None:
        wait_for_quiet(self.quiet_wait, self.quiet_threshold)

    def client(self, mode: str, url: str, *args: str) -> dict[str, Any]:
        """Run the httpx client (client.py) pinned to the client CPUs; its JSON report."""
        command = [self.client_python, "-m", "bench.harness.client", mode, url, *args]
        pythonpath = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        done = subprocess.run(
            [*pinned(self.client_cpus), *command],
            capture_output=True,
            text=True,
            timeout=CLIENT_TIMEOUT_S,
            env={**os.environ, "PYTHONPATH": pythonpath},
        )
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            raise RuntimeError(
                f"the httpx client failed ({done.returncode}):\n{done.stderr[-2000:]}"
            )
        report: dict[str, Any] = json.loads(lines[-1])
        return report


def send_message(s: Settings, t: Target) -> Figures:
    warm = s.load(t.rpc_url, "SendMessage", s.concurrency, s.warmup)
    s.quiet()
    with CpuMeter(t.server_pids()) as cpu:
        r = s.load(t.rpc_url, "SendMessage", s.concurrency, s.duration)
    return {
        "a.ok_rps": r.ok_per_s,
        "a.server_cpu": cpu.server * 100,
        "a.rps_per_cpu": r.ok_per_s / max(cpu.server, 1e-9),
        "a.client_cpu": cpu.client * 100,
        "a.other_cpu": cpu.other * 100,
        "a.bad": warm.failures + r.failures,
        "e.p50_ms": r.p50_ms,
        "e.p90_ms": r.p90_ms,
        "e.p99_ms": r.p99_ms,
        "e.max_ms": r.max_ms,
        "_bad_samples": [*warm.bad_samples, *r.bad_samples],
    }


def unloaded_latency(s: Settings, t: Target) -> Figures:
    warm = s.load(t.rpc_url, "SendMessage", 1, s.warmup)
    s.quiet()
    r = s.load(t.rpc_url, "SendMessage", 1, s.lat_duration)
    return {
        "l.ok_rps": r.ok_per_s,
        "l.p50_ms": r.p50_ms,
        "l.p99_ms": r.p99_ms,
        "l.bad": warm.failures + r.failures,
        "_bad_samples": [*warm.bad_samples, *r.bad_samples],
    }


def seed_task(t: Target) -> str:
    """A completed task made by SendMessage, checked to be readable by GetTask."""
    message = {
        "messageId": "bench-get-seed",
        "role": "ROLE_USER",
        "parts": [{"text": "hello bench"}],
    }
    made = rpc(t.rpc_url, "SendMessage", {"message": message})
    try:
        task_id = str(made["result"]["task"]["id"])
    except (KeyError, TypeError):
        raise TargetError(f"{t.name}: SendMessage did not return a task: {made}") from None
    got = rpc(t.rpc_url, "GetTask", {"id": task_id})
    if "result" not in got:
        raise TargetError(f"{t.name}: GetTask of {task_id} failed: {got}")
    return task_id


def get_task(s: Settings, t: Target) -> Figures:
    task_id = seed_task(t)
    warm = s.load(t.rpc_url, "GetTask", s.concurrency, s.warmup, task_id=task_id)
    s.quiet()
    with CpuMeter(t.server_pids()) as cpu:
        r = s.load(t.rpc_url, "GetTask", s.concurrency, s.duration, task_id=task_id)
    return {
        "b.ok_rps": r.ok_per_s,
        "b.server_cpu": cpu.server * 100,
        "b.other_cpu": cpu.other * 100,
        "b.p50_ms": r.p50_ms,
        "b.p99_ms": r.p99_ms,
        "b.bad": warm.failures + r.failures,
        "_bad_samples": [*warm.bad_samples, *r.bad_samples],
    }


def stream(s: Settings, t: Target) -> Figures:
    warm = s.load(t.rpc_url, "SendStreamingMessage", s.concurrency, s.warmup, chunks=s.chunks)
    s.quiet()
    with CpuMeter(t.server_pids()) as cpu:
        r = s.load(t.rpc_url, "SendStreamingMessage", s.concurrency, s.duration, chunks=s.chunks)
    check = s.client(
        "stream",
        t.rpc_url,
        *("--count", str(s.stream_check_count), "--chunks", str(s.chunks)),
        *("--concurrency", str(s.stream_check_concurrency)),
    )
    return {
        "c.streams_per_s": r.ok_per_s,
        "c.events_per_s": r.events_per_s,
        "c.events_per_stream": r.events / max(1, r.responses),
        "c.server_cpu": cpu.server * 100,
        "c.other_cpu": cpu.other * 100,
        "c.stream_p50_ms": r.p50_ms,
        "c.stream_p99_ms": r.p99_ms,
        "c.bad": warm.failures + r.failures + check["bad"],
        "c.check_ok": f"{check['ok']}/{check['streams']}",
        "c.check_ttfe_p50_ms": check["ttfe_p50_ms"],
        "c.check_ttfe_p99_ms": check["ttfe_p99_ms"],
        "c.check_errors": check["errors"],
        "_bad_samples": [*warm.bad_samples, *r.bad_samples],
    }


def memory(s: Settings, t: Target) -> Figures:
    if t.pid is None:
        raise TargetError(f"{t.name}: no process found listening on its port (RSS unknown)")
    concurrency = ("--concurrency", str(s.concurrency))
    warm: dict[str, Any] = {"bad": 0, "errors": {}}
    if s.mem_warmup > 0:
        warm = s.client("send", t.rpc_url, "--count", str(s.mem_warmup), *concurrency)
    time.sleep(s.mem_settle / 2)  # the last replies' garbage goes before the first reading
    before = rss_mib(t.pid)
    filled = s.client("send", t.rpc_url, "--count", str(s.mem_tasks), *concurrency)
    time.sleep(s.mem_settle)
    after = rss_mib(t.pid)
    return {
        "d.rss_start_mib": before,
        "d.rss_after_mib": after,
        "d.bytes_per_task": (after - before) * 1024 * 1024 / max(1, filled["ok"]),
        "d.ok": f"{filled['ok']}/{filled['sent']}",
        "d.bad": warm["bad"] + filled["bad"],
        "d.fill_rps": filled["rps"],
        "d.errors": dict(Counter(warm["errors"]) + Counter(filled["errors"])),
    }


def profiled(s: Settings, t: Target) -> Figures:
    if not s.py_spy:
        return {"p.note": "py-spy not found (--py-spy PATH, or pip install py-spy)"}
    if t.pid is None:
        return {"p.note": "no server process to profile"}
    fd, out = tempfile.mkstemp(prefix=f"peerwire-bench-profile-{t.name}-", suffix=".txt")
    os.close(fd)
    s.load(t.rpc_url, "SendMessage", s.concurrency, s.warmup)
    s.quiet()
    spy = subprocess.Popen(
        [*pinned(s.client_cpus), *profile.record_command(s.py_spy, t.pid, s.profile_duration, out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    time.sleep(0.5)  # py-spy attaches before the load starts
    s.load(t.rpc_url, "SendMessage", s.concurrency, s.profile_duration)
    _, err = spy.communicate(timeout=60)
    raw = Path(out).read_text(errors="replace") if os.path.getsize(out) else ""
    if not raw:
        return {"p.note": f"py-spy recorded nothing: {err.decode(errors='replace')[-300:]}"}
    folded = profile.fold(raw, s.profile_top)
    return {
        "p.file": out,
        "p.samples": folded.samples,
        "p.pkg": folded.by_package,
        "p.self": folded.top_self,
        "p.incl": folded.top_inclusive,
    }


SCENARIOS: dict[str, Callable[[Settings, Target], Figures]] = {
    "a": send_message,
    "l": unloaded_latency,
    "b": get_task,
    "c": stream,
    "d": memory,
    "p": profiled,
}
WRK_SCENARIOS = frozenset("albcp")
