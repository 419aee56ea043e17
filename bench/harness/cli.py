"""The harness's command line: which targets, which scenarios, how long; then the run.

Targets (several of each; started fresh for every scenario, in the order given):
  --server NAME              a named target (catalog.py): peerwire, peerwire-sqlite,
                             peerwire-uvicorn, peerwire@REV, peerwire-sqlite@REV, sdk,
                             sdk-notrace, floor, floor-asgi
  --server NAME=COMMAND      any server: {port} becomes a free loopback port, {tmp} a fresh
                             directory; it must follow the bench contract (bench/README.md)
  --url NAME=URL             a server already running (loopback only)
  --compare-rev REV          peerwire at git revision REV (built once into .bench-cache/)
                             beside the working tree's peerwire; the baseline is REV, so the
                             ratios read "after / before"
Without any of these: peerwire, peerwire-sqlite, sdk and floor, the baseline floor.

Scenarios (--scenarios, default a,l,b,c,d; p is opt-in), see scenarios.py:
  a  SendMessage (blocking), --concurrency connections, --duration s         [wrk]
  e  p50/p90/p99 latency of (a)'s run (comes with a)
  l  SendMessage over one connection, --lat-duration s                       [wrk]
  b  GetTask of one task                                                     [wrk]
  c  SendStreamingMessage with --chunks chunks; then --stream-check-count streams
     validated through httpx                                                 [wrk + httpx]
  d  RSS after --mem-warmup tasks, then after --mem-tasks more               [httpx]
  p  py-spy profile of the server under (a)'s load                           [py-spy]

Every target is a fresh server pinned to --server-cpus, loaded from --client-cpus; before
each measured window the harness waits up to --quiet-wait s for the machine to be idle.
--repeat N interleaves the targets N times and reports medians. Any reply that breaks the
contract fails the run (exit 1) after the table is printed. Loopback only: every URL, also
those in agent cards, must be 127.0.0.0/8, ::1 or localhost.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from . import catalog, report
from .loopback import NotLoopback, loopback_only
from .scenarios import SCENARIOS, WRK_SCENARIOS, Settings
from .targets import Target, TargetError
from .venvs import reference_venv
from .wrk import WrkError

_VERSIONS = (
    "import importlib.metadata as m, sys\n"
    "names = ['peerwire', 'a2a-sdk', 'uvicorn', 'starlette', 'sse-starlette', 'protobuf',\n"
    "         'msgspec', 'httptools', 'uvloop', 'httpx']\n"
    "found = []\n"
    "for n in names:\n"
    "    try:\n"
    "        found.append(f'{n} {m.version(n)}')\n"
    "    except m.PackageNotFoundError:\n"
    "        pass\n"
    "print(' '.join(found) + f' python {sys.version.split()[0]}')\n"
)


def default_peerwire_bin() -> Path:
    if os.environ.get("PEERWIRE_BIN"):
        return Path(os.environ["PEERWIRE_BIN"])
    beside = Path(sys.executable).parent / "peerwire"
    return beside if beside.exists() else catalog.ROOT / ".venv" / "bin" / "peerwire"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m bench.harness",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = ap.add_argument
    add("--server", action="append", default=[], help="NAME or NAME=COMMAND (see above)")
    add("--url", action="append", default=[], help="NAME=BASE_URL of a running server")
    add("--compare-rev", action="append", default=[], metavar="REV", help="see above")
    add("--baseline", help="the target ratios are taken against (default: REV, floor or first)")
    add("--scenarios", default="a,l,b,c,d", help="comma list of a,e,l,b,c,d,p")
    add("--duration", type=float, default=15, help="measured s of a, b, c")
    add("--lat-duration", type=float, default=5, help="measured s of l")
    add("--warmup", type=float, default=2, help="unmeasured s before each measured window")
    add("--concurrency", type=int, default=32)
    add("--chunks", type=int, default=20, help="artifact chunks per stream in c")
    add("--mem-tasks", type=int, default=10_000)
    add("--mem-warmup", type=int, default=300)
    add("--mem-settle", type=float, default=1.0, help="s before the RSS readings of d (half first)")
    add("--stream-check-count", type=int, default=200)
    add("--stream-check-concurrency", type=int, default=8)
    add("--repeat", type=int, default=1, help="interleave the targets N times; medians")
    add("--server-cpus", default="0", help='taskset list for servers ("": no pinning)')
    add("--client-cpus", default="1", help="taskset list for wrk, httpx and py-spy")
    add("--wrk", default=shutil.which("wrk") or "wrk")
    add("--wrk-threads", type=int, default=1)
    add(
        "--peerwire-bin",
        type=Path,
        default=default_peerwire_bin(),
        help="the working tree's peerwire (default: $PEERWIRE_BIN, beside python, or .venv's)",
    )
    add(
        "--ref-python",
        "--sdk-python",
        default=os.environ.get("PEERWIRE_BENCH_REF_PYTHON"),
        help=f"python for sdk and floor (default: built on first use in {reference_venv().path})",
    )
    add(
        "--builtin-args",
        default=os.environ.get("PEERWIRE_BENCH_BUILTIN_ARGS", ""),
        help='extra arguments for sdk and floor, e.g. "--http h11 --loop asyncio"',
    )
    add("--client-python", default=sys.executable, help="python with httpx for the client")
    add("--rpc-url", help="the JSON-RPC URL to use (default: from the agent card)")
    add("--start-timeout", type=float, default=30)
    add("--py-spy", help="py-spy for p (default: on PATH, else the reference venv's)")
    add("--profile-duration", type=float, default=10)
    add("--profile-top", type=int, default=10)
    add("--profile-targets", default="", help="comma list of targets for p (default: all)")
    add("--quiet-wait", type=float, default=60, help="max s to wait for an idle machine")
    add("--quiet-threshold", type=float, default=15, help="busy %% (100 = one core) as idle")
    add("--json", help="write every figure (one value per repeat) here")
    add("--dry-run", action="store_true", help="print the targets and their commands; run none")
    a = ap.parse_args(argv)
    a.scenario_list = scenario_list(ap, a.scenarios)
    if a.repeat < 1 or a.concurrency < 1 or a.duration <= 0 or a.warmup < 0:
        ap.error("need --repeat >= 1, --concurrency >= 1, --duration > 0, --warmup >= 0")
    return a


def scenario_list(ap: argparse.ArgumentParser, text: str) -> list[str]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in names if s not in SCENARIOS and s != "e"]
    if unknown or not names:
        ap.error(f"unknown scenario(s) {unknown}: choose from a,e,l,b,c,d,p")
    # e is (a)'s latency: asking for it runs a.
    return list(dict.fromkeys("a" if s == "e" else s for s in names))


def build_targets(a: argparse.Namespace, names: catalog.Catalog) -> tuple[list[Target], str]:
    specs = list(a.server)
    if a.compare_rev:
        revisions = [f"peerwire@{rev}" for rev in a.compare_rev]
        named = {s.partition("=")[0] for s in specs}
        specs = revisions + ([] if "peerwire" in named else ["peerwire"]) + specs
    elif not specs and not a.url:
        specs = list(catalog.DEFAULT_TARGETS)
    targets = [names.target(spec) for spec in specs]
    for spec in a.url:
        name, eq, url = spec.partition("=")
        if not eq or not name:
            raise catalog.CatalogError(f"--url {spec!r}: give NAME=URL")
        targets.append(Target(name, url=loopback_only(url)))
    seen = [t.name for t in targets]
    if not targets:
        raise catalog.CatalogError("no targets")
    duplicates = sorted({n for n in seen if seen.count(n) > 1})
    if duplicates:
        raise catalog.CatalogError(f"targets named twice: {duplicates}")
    if a.baseline:
        baseline = a.baseline
    elif a.compare_rev:
        baseline = f"peerwire@{a.compare_rev[0]}"
    else:
        baseline = catalog.DEFAULT_BASELINE if catalog.DEFAULT_BASELINE in seen else seen[0]
    if baseline not in seen:
        raise catalog.CatalogError(f"baseline {baseline!r} is not a target ({', '.join(seen)})")
    return targets, baseline


def settings(a: argparse.Namespace, py_spy: str | None) -> Settings:
    return Settings(
        concurrency=a.concurrency,
        duration=a.duration,
        lat_duration=a.lat_duration,
        warmup=a.warmup,
        chunks=a.chunks,
        mem_tasks=a.mem_tasks,
        mem_warmup=a.mem_warmup,
        mem_settle=a.mem_settle,
        stream_check_count=a.stream_check_count,
        stream_check_concurrency=a.stream_check_concurrency,
        server_cpus=a.server_cpus,
        client_cpus=a.client_cpus,
        wrk=a.wrk,
        wrk_threads=a.wrk_threads,
        client_python=a.client_python,
        quiet_wait=a.quiet_wait,
        quiet_threshold=a.quiet_threshold,
        py_spy=py_spy,
        profile_duration=a.profile_duration,
        profile_top=a.profile_top,
    )


def find_py_spy(a: argparse.Namespace, names: catalog.Catalog) -> str | None:
    if a.py_spy:
        return str(a.py_spy)
    on_path = shutil.which("py-spy")
    if on_path:
        return on_path
    try:
        beside = Path(names.reference_python()).parent / "py-spy"
    except catalog.CatalogError:
        return None  # scenario p then says py-spy was not found
    return str(beside) if beside.exists() else None


def environment(targets: list[Target], wrk: str) -> dict[str, str]:
    """What ran: package versions of every target's interpreter, wrk, the machine."""
    found: dict[str, str] = {}
    for python in dict.fromkeys(t.python for t in targets if t.python):
        assert python is not None
        probe = subprocess.run([python, "-c", _VERSIONS], capture_output=True, text=True)
        found[python] = probe.stdout.strip() or f"(cannot run: {probe.stderr.strip()[-200:]})"
    if shutil.which(wrk):
        version = subprocess.run([wrk, "-v"], capture_output=True, text=True)
        found["wrk"] = " ".join((version.stdout + version.stderr).split()[:2])
    found["machine"] = f"{os.cpu_count()} cpus, Linux {os.uname().release}"
    return found


def dry_run(
    targets: list[Target], baseline: str, a: argparse.Namespace, names: catalog.Catalog
) -> None:
    for t in targets:
        print(f"{t.name} = {t.command if t.command is not None else t.url}")
    print(f"baseline = {baseline}")
    print(f"scenarios = {','.join(a.scenario_list)}")
    for label, revision in names.revisions.items():
        state = "built" if revision.venv.python.exists() else "to be built"
        print(f"revision {label} = {revision.commit} ({state}: {revision.home})")


def run(
    a: argparse.Namespace,
    targets: list[Target],
    baseline: str,
    s: Settings,
    context: dict[str, Any],
) -> int:
    names = [t.name for t in targets]
    results: dict[str, dict[str, list[Any]]] = {n: collections.defaultdict(list) for n in names}
    extra: dict[str, dict[str, list[Any]]] = {n: collections.defaultdict(list) for n in names}
    problems: dict[str, collections.Counter[str]] = {n: collections.Counter() for n in names}
    profile_targets = set(filter(None, a.profile_targets.split(","))) or set(names)
    started = time.monotonic()
    for scenario in a.scenario_list:
        for rep in range(1 if scenario == "p" else a.repeat):
            for t in targets:
                if scenario == "p" and t.name not in profile_targets:
                    continue
                elapsed = time.monotonic() - started
                print(
                    f"# [{elapsed:6.0f}s] scenario {scenario} target {t.name} rep {rep + 1}",
                    file=sys.stderr,
                    flush=True,
                )
                try:
                    t.start(a.server_cpus, a.start_timeout, a.rpc_url)
                    figures = SCENARIOS[scenario](s, t)
                finally:
                    problems[t.name].update(t.stop())
                for key, value in figures.items():
                    is_note = key[0] == "_" or key.startswith("p.") or isinstance(value, dict)
                    (extra if is_note else results)[t.name][key].append(value)
    labels = {
        "c": a.concurrency,
        "n": a.chunks,
        "m": a.mem_tasks,
        "sc": a.stream_check_concurrency,
    }
    print()
    print(report.table(results, names, baseline, labels))
    print()
    for line in report.paired(results, names, baseline):
        print(line)
    for line in report.notes(extra, problems):
        print(line)
    print(
        f"\nbaseline={baseline}; ratios are target/baseline (throughput: <1 is slower; "
        f"latency/RSS: >1 is worse); medians of {a.repeat}; server cpus={a.server_cpus!r} "
        f"client cpus={a.client_cpus!r}; total {time.monotonic() - started:.0f}s"
    )
    if a.json:
        payload = {
            "results": results,
            "extra": extra,
            "problems": problems,
            "baseline": baseline,
            "targets": {t.name: t.command or t.url for t in targets},
            **context,
            "args": {k: v for k, v in vars(a).items() if k != "scenario_list"},
        }
        Path(a.json).write_text(json.dumps(payload, indent=1, default=str))
    failed = report.failures(results)
    for line in failed:
        print(f"FAILED: {line}")
    return 1 if failed else 0


def _terminated(signum: int, frame: object) -> None:
    # As an exception, so the running scenario's ``finally`` stops its server: a target runs
    # in a session of its own and would outlive a harness that just died.
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _terminated)
    a = parse_args(argv)
    names = catalog.Catalog(
        peerwire_bin=a.peerwire_bin,
        ref_python=a.ref_python,
        builtin_args=a.builtin_args,
        build=not a.dry_run,
    )
    try:
        targets, baseline = build_targets(a, names)
    except (catalog.CatalogError, NotLoopback) as exc:
        print(f"bench harness: {exc}", file=sys.stderr)
        return 2
    if a.dry_run:
        dry_run(targets, baseline, a, names)
        return 0
    if set(a.scenario_list) & WRK_SCENARIOS and not shutil.which(a.wrk):
        print(
            "bench harness: wrk not found (apt-get install wrk; bench/run.sh does)", file=sys.stderr
        )
        return 2
    context = {
        "environment": environment(targets, a.wrk),
        "revisions": {label: r.commit for label, r in names.revisions.items()},
    }
    for source, line in context["environment"].items():
        print(f"# {source}: {line}")
    for label, commit in context["revisions"].items():
        print(f"# peerwire@{label} = commit {commit}")
    py_spy = find_py_spy(a, names) if "p" in a.scenario_list else None
    try:
        return run(a, targets, baseline, settings(a, py_spy), context)
    except (TargetError, WrkError, NotLoopback, RuntimeError) as exc:
        print(f"bench harness: {exc}", file=sys.stderr)
        return 1
