"""Client-side benchmark: the peerwire client against the a2a-sdk client, same server.

    .venv/bin/python bench/client_bench.py                 # 10 s per client, concurrency 32
    .venv/bin/python bench/client_bench.py --repeat 3 --json client.json
    bench/run.sh --client --repeat 3                       # the same, through the one entry point

For every (repeat, client) a fresh server is started (default: ``peerwire serve
bench.echo_agent:agent --store memory``) pinned to ``--server-cpus``; then the load generator
runs pinned to ``--client-cpus``, in one process, one asyncio loop, ``--concurrency`` blocking
SendMessage calls at a time over JSON-RPC: peerwire_client_load.py in this interpreter,
sdk_client_load.py in the a2a-sdk venv (tests/interop/sdk_env.py's, built on first use;
``--sdk-python`` overrides). Clients are interleaved (peerwire, sdk, peerwire, sdk, ...) and
the table shows medians.

The load generator runs on a core of its own, so when it is saturated (client CPU ~100%)
calls/s is the client's throughput and client CPU ms per call its cost; when the server is
saturated instead, calls/s measures the server and only CPU per call compares the clients.
Every reply is validated (a completed task echoing the text sent); any bad reply fails the
run (exit 1).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))  # run as a script: bench/ is on the path, the checkout is not

from bench.harness.loopback import is_loopback  # noqa: E402
from bench.harness.proc import pinned, wait_for_quiet  # noqa: E402
from bench.harness.targets import Target  # noqa: E402

SDK_ENV = ROOT / "tests" / "interop" / "sdk_env.py"
DEFAULT_SERVER = (
    f"env PYTHONPATH={shlex.quote(str(ROOT))} {shlex.quote(str(Path(sys.executable).parent))}"
    "/peerwire serve bench.echo_agent:agent --store memory --no-grpc --port {port}"
)
CLIENTS = ("peerwire", "sdk", "sdk-notrace")
START_TIMEOUT_S = 30.0

# key, label, True if higher is better (None: informational)
ROWS: list[tuple[str, str, bool | None]] = [
    ("calls_per_s", "blocking SendMessage c{c}: ok calls/s", True),
    ("client_cpu_ms_per_call", "    client CPU ms per call", False),
    ("calls_per_client_cpu_s", "    calls per client-CPU-second", True),
    ("client_cpu_pct", "    client CPU %", None),
    ("server_cpu_pct", "    server CPU %", None),
    ("other_cpu_pct", "    other processes CPU % (noise)", None),
    ("bad_total", "    bad replies (warm-up and drain too)", False),
]


# ---------------------------------------------------------------- the load generators


def sdk_python() -> str:
    """The a2a-sdk venv's interpreter, built by tests/interop/sdk_env.py if missing."""
    done = subprocess.run(
        [sys.executable, str(SDK_ENV)], capture_output=True, text=True, timeout=1200
    )
    if done.returncode != 0:
        sys.exit(f"client_bench: cannot get the a2a-sdk venv:\n{done.stderr[-3000:]}")
    return done.stdout.strip().splitlines()[-1]


def client_command(name: str, python: str) -> tuple[list[str], dict[str, str]]:
    env = dict(os.environ)
    if name == "peerwire":
        return [python, str(HERE / "peerwire_client_load.py")], env
    # The SDK's interpreter must not see our import paths.
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONHOME", None)
    env.pop("OTEL_INSTRUMENTATION_A2A_SDK_ENABLED", None)
    if name == "sdk-notrace":
        env["OTEL_INSTRUMENTATION_A2A_SDK_ENABLED"] = "false"
    return [python, str(HERE / "sdk_client_load.py")], env


def run_load(
    name: str, python: str, url: str, server_pid: int | None, a: argparse.Namespace
) -> dict[str, Any]:
    command, env = client_command(name, python)
    command += [url, "--concurrency", str(a.concurrency)]
    command += ["--duration", str(a.duration), "--warmup", str(a.warmup)]
    if server_pid is not None:
        command += ["--server-pid", str(server_pid)]
    timeout = a.warmup + a.duration + 120
    done = subprocess.run(
        pinned(a.client_cpus) + command, capture_output=True, text=True, timeout=timeout, env=env
    )
    lines = done.stdout.strip().splitlines()
    if not lines:
        raise RuntimeError(f"{name} load generator failed ({done.returncode}):\n{done.stderr}")
    report: dict[str, Any] = json.loads(lines[-1])
    report["calls_per_client_cpu_s"] = report["ok"] / max(report["client_cpu_s"], 1e-9)
    return report


# ---------------------------------------------------------------- the run and its table


@dataclass
class Results:
    runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def add(self, name: str, report: dict[str, Any]) -> None:
        self.runs.setdefault(name, []).append(report)

    def median(self, name: str, key: str) -> float:
        return float(statistics.median(r[key] for r in self.runs[name]))

    def as_json(self) -> dict[str, dict[str, list[Any]]]:
        return {
            name: {key: [r[key] for r in reports] for key in reports[0]}
            for name, reports in self.runs.items()
        }


def fmt(value: float) -> str:
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def table(results: Results, names: list[str], baseline: str, concurrency: int) -> str:
    others = [n for n in names if n != baseline]
    header = ["client bench / metric", *names, *(f"{n}/{baseline}" for n in others)]
    rows = [header]
    for key, label, _ in ROWS:
        values = {n: results.median(n, key) for n in names}
        shown = [f"{values[n]:.0f}" if key == "bad_total" else fmt(values[n]) for n in names]
        row = [label.format(c=concurrency), *shown]
        for n in others:
            base = values[baseline]
            row.append(f"{values[n] / base:.3f}" if base and key != "bad_total" else "-")
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]

    def line(r: list[str]) -> str:
        return "  ".join(
            c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)
        )

    out = [line(rows[0]), "  ".join("-" * w for w in widths), *(line(r) for r in rows[1:])]
    return "\n".join(out)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--clients", default="peerwire,sdk", help=f"comma list of {CLIENTS}")
    ap.add_argument("--baseline", default="sdk", help="client the ratios are taken against")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--duration", type=float, default=10.0, help="measured seconds per run")
    ap.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds first")
    ap.add_argument("--repeat", type=int, default=1, help="interleave the clients N times")
    ap.add_argument("--server", default=DEFAULT_SERVER, help="server command, {port} is replaced")
    ap.add_argument("--url", help="use this running server (loopback) instead of --server")
    ap.add_argument("--server-cpus", default="0", help='taskset list for the server ("": none)')
    ap.add_argument("--client-cpus", default="1", help="taskset list for the load generators")
    ap.add_argument("--peerwire-python", default=sys.executable)
    ap.add_argument("--sdk-python", help="python with a2a-sdk (default: tests/interop/sdk_env)")
    ap.add_argument("--quiet-wait", type=float, default=30.0, help="max s to wait for idle")
    ap.add_argument("--quiet-threshold", type=float, default=15.0, help="busy %% seen as idle")
    ap.add_argument("--json", help="write the raw results here")
    a = ap.parse_args(argv)
    if a.url and not is_loopback(a.url):
        ap.error(f"refusing non-loopback --url {a.url!r}")
    a.client_names = [n.strip() for n in a.clients.split(",") if n.strip()]
    unknown = [n for n in a.client_names if n not in CLIENTS]
    if unknown or not a.client_names:
        ap.error(f"unknown client(s) {unknown}; choose from {', '.join(CLIENTS)}")
    if a.baseline not in a.client_names:
        a.baseline = a.client_names[0]
    if a.repeat < 1 or a.concurrency < 1 or a.duration <= 0 or a.warmup < 0:
        ap.error("need --repeat >= 1, --concurrency >= 1, --duration > 0, --warmup >= 0")
    return a


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    pythons = {"peerwire": a.peerwire_python}
    if any(n.startswith("sdk") for n in a.client_names):
        python = a.sdk_python or sdk_python()
        pythons.update({"sdk": python, "sdk-notrace": python})
    results = Results()
    started = time.monotonic()
    for rep in range(a.repeat):
        for name in a.client_names:
            print(
                f"# [{time.monotonic() - started:5.0f}s] client {name} rep {rep + 1}",
                file=sys.stderr,
                flush=True,
            )
            if a.url:
                url, pid, server = a.url, None, None
            else:
                server = Target("server", a.server)
                server.start(a.server_cpus, START_TIMEOUT_S)
                url, pid = server.base, server.pid
            try:
                wait_for_quiet(a.quiet_wait, a.quiet_threshold)
                results.add(name, run_load(name, pythons[name], url, pid, a))
            finally:
                if server is not None:
                    server.stop()
    print()
    print(table(results, a.client_names, a.baseline, a.concurrency))
    versions = {n: results.runs[n][0]["version"] for n in a.client_names}
    print(
        f"\nclients {versions}; concurrency {a.concurrency}, {a.duration:g} s measured after "
        f"{a.warmup:g} s warm-up, medians of {a.repeat}; server cpus={a.server_cpus!r} "
        f"client cpus={a.client_cpus!r}; total {time.monotonic() - started:.0f}s"
    )
    bad = {n: sum(r["bad_total"] for r in results.runs[n]) for n in a.client_names}
    for name, reports in results.runs.items():
        for report in reports:
            for sample in report["error_samples"]:
                print(f"{name}: {sample}")
    if a.json:
        payload = {
            "kind": "client_bench",
            "baseline": a.baseline,
            "results": results.as_json(),
            "versions": versions,
            "args": {k: v for k, v in vars(a).items() if k != "client_names"},
        }
        Path(a.json).write_text(json.dumps(payload, indent=1))
    return 1 if any(bad.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
