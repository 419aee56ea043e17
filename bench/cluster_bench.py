"""End-to-end throughput of a cluster: replicas and workers sharing PostgreSQL and Redis.

    .venv/bin/python bench/cluster_bench.py --rev HEAD --repeat 2

Per target and repeat, on this machine: a redis-server of its own on a free loopback port
(started and stopped here, by pid; never the machine's 6379), a fresh schema in the machine's
PostgreSQL (``--pg``, dropped after), ``--replicas`` times ``peerwire serve
bench.echo_agent:agent --no-local-workers`` and ``--workers`` times ``peerwire worker``. The
load generator (this process, with a small keep-alive JSON-RPC client of its own, independent
of the code under test) keeps ``--concurrency`` blocking SendMessage calls in flight, spread
round robin over the replicas, checks every reply (a completed task echoing its text), and
times ``--tasks`` of them after ``--warmup`` unmeasured ones: completed tasks per second.

Targets: the working tree, and for every ``--rev REV`` the revision's own code and
bench/echo_agent.py, installed once per commit under .bench-cache/ (bench/harness/revisions.py:
``git archive``, never a checkout). Revisions run first in each repeat, then the tree, so
"before" is measured first in the same run; the table gives medians and tree/revision ratios.

Where the time goes, per run: the CPU each kind of process used over the measured window
(replicas, workers, our redis-server, the PostgreSQL backends serving peerwire, the load
generator, everything else: the noise) and as CPU milliseconds per task, which hold up better
than tasks/s while other work shares the machine; Redis commands per task (``INFO
commandstats`` of our redis-server, scripts' inner commands included) and PostgreSQL row
operations and scans per task (``pg_stat_user_tables`` of our schema). ``--py-spy DIR``
also records a replica and a worker with py-spy during the first repeat (the venv's py-spy,
from the ``bench`` extra, else one on PATH). Under other load, py-spy counts a process that
waits for a core as busy where it was preempted (mostly the socket write that woke its peer):
read CPU seconds per task first.

A benchmark, never part of the test suite. Exits 1 if any reply was wrong.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: the checkout's bench package

import asyncpg  # noqa: E402
from redis.asyncio import Redis  # noqa: E402

from bench.harness import profile, revisions  # noqa: E402
from bench.harness.proc import cpu_seconds, free_port, machine_busy_seconds  # noqa: E402
from bench.harness.targets import jsonrpc_url  # noqa: E402

PG_DSN = "postgresql://postgres@127.0.0.1:5432/test"
AGENT = "bench.echo_agent:agent"
PREFIX = "pwbench"
READY_S = 60.0
STOP_S = 20.0
CALL_TIMEOUT_S = 30.0
# A busy backend reports its table statistics at most once a second, an idle one within 10 s.
PG_STATS_S = 11.0
# py-spy: the venv's own (pip install py-spy), else one on PATH, else the reference venv's.
PY_SPY = next(
    (
        Path(found)
        for found in (
            str(Path(sys.executable).parent / "py-spy"),
            shutil.which("py-spy") or "",
        )
        if found and Path(found).exists()
    ),
    Path.home() / ".cache/peerwire/bench-reference-a2a-sdk-1.3.0/bin/py-spy",
)


CLUSTER_KINDS = ("replicas", "workers", "redis", "postgres")


class BadReply(Exception):
    """A reply that is not a completed task echoing the text sent."""


@dataclass(frozen=True)
class Target:
    label: str
    peerwire: Path  # the revision's `peerwire` command
    cwd: Path  # where its bench/echo_agent.py is importable as bench.echo_agent


@dataclass
class Result:
    label: str
    tasks_per_s: float
    bad: int
    window_s: float
    cpu_pct: dict[str, float] = field(default_factory=dict)  # by kind of process
    redis_per_task: dict[str, float] = field(default_factory=dict)
    pg_per_task: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


# -- the pieces of one cluster ------------------------------------------------------------------


@contextlib.contextmanager
def redis_server(logs: Path) -> Iterator[tuple[str, int]]:
    """A redis-server of our own on a free port: (url, pid); stopped by its pid after."""
    binary = shutil.which("redis-server")
    if binary is None:
        sys.exit("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    log = (logs / "redis.log").open("wb")
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=logs,
    )
    log.close()
    try:
        yield f"redis://127.0.0.1:{port}/0", process.pid
    finally:
        process.terminate()
        try:
            process.wait(STOP_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.asynccontextmanager
async def fresh_schema(dsn: str) -> AsyncIterator[str]:
    schema = f"pwbench_cluster_{secrets.token_hex(6)}"
    try:
        yield schema
    finally:
        connection = await asyncpg.connect(dsn)
        try:
            await connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        finally:
            await connection.close()


@dataclass
class Cluster:
    target: Target
    store: str
    bus: str
    logs: Path
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    urls: list[str] = field(default_factory=list)

    def spawn(self, name: str, *args: str) -> None:
        log = (self.logs / f"{name}.log").open("wb")
        self.processes[name] = subprocess.Popen(
            [str(self.target.peerwire), *args],
            cwd=self.target.cwd,
            stdout=log,
            stderr=subprocess.STDOUT,
            # Its own group: a signal to the bench (Ctrl-C) reaches it through stop() only.
            start_new_session=True,
        )
        log.close()

    async def start(self, replicas: int, workers: int, concurrency: int) -> None:
        shared = ["--store", self.store, "--bus", self.bus]
        for i in range(replicas):
            port = free_port()
            self.spawn(
                f"replica{i}",
                *("serve", AGENT, "--port", str(port), "--no-local-workers", "--no-grpc"),
                *shared,
            )
            self.urls.append(f"http://127.0.0.1:{port}")
            if i == 0:  # the first one migrates the schema; the others then find it done
                await self._wait_ready(self.urls[0])
        for i in range(workers):
            self.spawn(f"worker{i}", "worker", AGENT, "--concurrency", str(concurrency), *shared)
        for url in self.urls:
            await self._wait_ready(url)

    async def _wait_ready(self, url: str) -> None:
        deadline = time.monotonic() + READY_S
        while time.monotonic() < deadline:
            self.check_alive()
            with contextlib.suppress(OSError, ValueError):
                rpc_url(url)
                return
            await asyncio.sleep(0.2)
        raise RuntimeError(f"{url} did not come up within {READY_S:g} s\n{self.log_tail()}")

    def check_alive(self) -> None:
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited with {process.returncode}\n{self.log_tail()}")

    def pids(self, kind: str) -> list[int]:
        return [p.pid for name, p in self.processes.items() if name.startswith(kind)]

    def log_tail(self) -> str:
        return "\n".join(f"== {p.name}\n{p.read_text()[-2000:]}" for p in self.logs.glob("*.log"))

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(STOP_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# -- measuring ---------------------------------------------------------------------------------


class Connection:
    """One keep-alive HTTP/1.1 connection posting JSON-RPC: the load generator's client.

    Deliberately tiny (stdlib asyncio streams, a precomputed request head, Content-Length
    replies only): it must cost the machine far less than the cluster it drives, and it must
    not depend on the peerwire under test (a revision, or a working tree mid-change).
    """

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.head = (
            f"POST {parts.path or '/'} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            "Content-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: "
        ).encode()
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, body: bytes) -> Any:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        self.writer.write(self.head + str(len(body)).encode() + b"\r\n\r\n" + body)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = head.split(b" ", 2)[1]
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.lower().split(b"\r\n")
            if line.startswith(b"content-length:")
        )
        reply = json.loads(await self.reader.readexactly(length))
        if status != b"200":
            raise BadReply(f"HTTP {status.decode()}: {str(reply)[:200]}")
        return reply

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def rpc_url(base: str) -> str:
    with urllib.request.urlopen(base + "/.well-known/agent-card.json", timeout=10) as reply:
        return jsonrpc_url(json.loads(reply.read()), base)


async def load(
    urls: list[str], *, tasks: int, warmup: int, concurrency: int
) -> tuple[float, int, list[str]]:
    """Send ``warmup`` then ``tasks`` blocking SendMessage calls, ``concurrency`` at a time
    (each lane its own connection, lanes spread over the replicas); (seconds the measured ones
    took, bad replies among them, samples of what was wrong)."""
    bad: list[str] = []
    endpoints = [rpc_url(url) for url in urls]
    lanes = [Connection(endpoints[i % len(endpoints)]) for i in range(concurrency)]
    tag = secrets.token_hex(4)

    async def one(connection: Connection, n: int) -> None:
        text = f"hello cluster {n}"
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": n,
                "method": "SendMessage",
                "params": {
                    "message": {
                        "messageId": f"bench-{tag}-{n}",
                        "role": "ROLE_USER",
                        "parts": [{"text": text}],
                    }
                },
            }
        ).encode()
        try:
            async with asyncio.timeout(CALL_TIMEOUT_S):
                reply = await connection.post(body)
            task = reply.get("result", {}).get("task")
            if not isinstance(task, dict) or task["status"]["state"] != "TASK_STATE_COMPLETED":
                raise BadReply(f"not a completed task: {str(reply)[:200]}")
            echoed = "".join(
                part.get("text", "") for artifact in task["artifacts"] for part in artifact["parts"]
            )
            if echoed != text:
                raise BadReply(f"task {task['id']} echoed {echoed[:80]!r}, not {text!r}")
        except Exception as exc:
            connection.close()
            connection.writer = None  # a fresh connection for the next call
            bad.append(f"{type(exc).__name__}: {str(exc)[:200]}")

    async def run(first: int, count: int) -> None:
        numbers = iter(range(first, first + count))

        async def lane(connection: Connection) -> None:
            for n in numbers:
                await one(connection, n)

        await asyncio.gather(*(lane(connection) for connection in lanes))

    try:
        await run(0, warmup)
        bad.clear()  # only the measured calls count
        started = time.perf_counter()
        await run(warmup, tasks)
        return time.perf_counter() - started, len(bad), bad[:3]
    finally:
        for connection in lanes:
            connection.close()


async def redis_counts(url: str, *, reset: bool) -> dict[str, int]:
    client = Redis.from_url(url)
    try:
        if reset:
            await client.config_resetstat()
            return {}
        stats = await client.info("commandstats")
        return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}
    finally:
        await client.aclose()


async def pg_counts(dsn: str, schema: str) -> dict[str, int]:
    """Row operations and index scans per table of ``schema`` (as the statistics say)."""
    connection = await asyncpg.connect(dsn)
    try:
        await connection.execute("SELECT pg_stat_clear_snapshot()")
        rows = await connection.fetch(
            "SELECT relname, n_tup_ins, n_tup_upd, n_tup_del, coalesce(idx_scan, 0) AS idx, "
            "seq_scan FROM pg_stat_user_tables WHERE schemaname = $1",
            schema,
        )
        xact = await connection.fetchval(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        )
    finally:
        await connection.close()
    counts = {"commits (whole database)": int(xact)}
    for row in rows:
        for column, what in (
            ("n_tup_ins", "inserted"),
            ("n_tup_upd", "updated"),
            ("n_tup_del", "deleted"),
            ("idx", "index scans"),
            ("seq_scan", "seq scans"),
        ):
            counts[f"{row['relname']} {what}"] = int(row[column])
    return counts


async def postgres_backends(dsn: str) -> list[int]:
    """Pids of the PostgreSQL backends serving peerwire (by application_name): whose CPU to
    read (the server runs on this machine)."""
    connection = await asyncpg.connect(dsn)
    try:
        rows = await connection.fetch(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'peerwire'"
        )
    finally:
        await connection.close()
    return [int(row["pid"]) for row in rows]


async def measure(target: Target, args: argparse.Namespace, spy_dir: Path | None) -> Result:
    with tempfile.TemporaryDirectory(prefix="pwbench-cluster-") as tmp:
        logs = Path(tmp)
        with redis_server(logs) as (redis_url, redis_pid):
            async with fresh_schema(args.pg) as schema:
                cluster = Cluster(
                    target,
                    store=f"{args.pg}?schema={schema}",
                    bus=f"{redis_url}?prefix={PREFIX}",
                    logs=logs,
                )
                try:
                    await cluster.start(args.replicas, args.workers, args.worker_concurrency)
                    return await _measure_running(
                        cluster, args, redis_url, redis_pid, schema, spy_dir
                    )
                except BaseException:
                    print(cluster.log_tail(), file=sys.stderr)
                    raise
                finally:
                    cluster.stop()


async def _measure_running(
    cluster: Cluster,
    args: argparse.Namespace,
    redis_url: str,
    redis_pid: int,
    schema: str,
    spy_dir: Path | None,
) -> Result:
    # Warm-up first, on its own: connections, caches and the JIT-free interpreter's first calls.
    await load(cluster.urls, tasks=args.warmup, warmup=0, concurrency=args.concurrency)
    await asyncio.sleep(args.stats_wait)
    await redis_counts(redis_url, reset=True)
    pg_before = await pg_counts(args.pg, schema)
    kinds = {
        "replicas": cluster.pids("replica"),
        "workers": cluster.pids("worker"),
        "redis": [redis_pid],
        "postgres": await postgres_backends(args.pg),
        "load generator": [os.getpid()],
    }
    cpu_before = {kind: cpu_seconds(pids) for kind, pids in kinds.items()}
    machine_before, started = machine_busy_seconds(), time.perf_counter()
    spies = _start_spies(cluster, args, spy_dir)
    seconds, bad, samples = await load(
        cluster.urls, tasks=args.tasks, warmup=0, concurrency=args.concurrency
    )
    wall = time.perf_counter() - started
    cpu = {
        kind: (cpu_seconds(pids) - cpu_before[kind]) / wall * 100 for kind, pids in kinds.items()
    }
    cpu["other (noise)"] = max(
        0.0, (machine_busy_seconds() - machine_before) / wall * 100 - sum(cpu.values())
    )
    redis_after = await redis_counts(redis_url, reset=False)
    await asyncio.sleep(args.stats_wait)
    pg_after = await pg_counts(args.pg, schema)
    _finish_spies(spies, args)
    cluster.check_alive()
    per_task = max(args.tasks, 1)
    return Result(
        cluster.target.label,
        tasks_per_s=args.tasks / seconds,
        bad=bad,
        window_s=seconds,
        cpu_pct=cpu,
        redis_per_task={
            name: calls / per_task
            for name, calls in sorted(redis_after.items(), key=lambda kv: -kv[1])
            if name not in ("config|resetstat", "info")
        },
        pg_per_task={
            name: (pg_after[name] - pg_before.get(name, 0)) / per_task
            for name in sorted(pg_after)
            if pg_after[name] != pg_before.get(name, 0)
        },
        errors=samples,
    )


def _start_spies(
    cluster: Cluster, args: argparse.Namespace, spy_dir: Path | None
) -> list[tuple[str, subprocess.Popen[bytes], Path]]:
    if spy_dir is None:
        return []
    spy_dir.mkdir(parents=True, exist_ok=True)
    spies = []
    for name in ("replica0", "worker0"):
        out = spy_dir / f"{cluster.target.label.replace('/', '_')}-{name}.txt"
        command = profile.record_command(
            str(PY_SPY), cluster.processes[name].pid, args.spy_seconds, str(out)
        )
        spies.append(
            (
                name,
                subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE),
                out,
            )
        )
    return spies


def _finish_spies(
    spies: list[tuple[str, subprocess.Popen[bytes], Path]], args: argparse.Namespace
) -> None:
    for name, spy, out in spies:
        try:
            spy.wait(args.spy_seconds + 30)
        except subprocess.TimeoutExpired:
            spy.kill()
            spy.wait()
        if not out.exists():
            print(f"# py-spy of {name} wrote nothing", file=sys.stderr)
            continue
        folded = profile.fold(out.read_text(), args.spy_top)
        print(f"\n## py-spy: {out.name} ({folded.samples} samples)")
        print("self time by package: " + ", ".join(f"{p} {x:.0f}%" for p, x in folded.by_package))
        print("top frames, inclusive:")
        for what, share in folded.top_inclusive:
            print(f"  {share:5.1f}%  {what}")
        print("top frames, self:")
        for what, share in folded.top_self:
            print(f"  {share:5.1f}%  {what}")


# -- the report -------------------------------------------------------------------------------


def report(results: dict[str, list[Result]], baseline: str | None) -> None:
    labels = list(results)
    median = {
        label: statistics.median(r.tasks_per_s for r in runs) for label, runs in results.items()
    }
    print("\n## End-to-end tasks/s (medians of the repeats)\n")
    print(
        "| target | tasks/s | runs | bad replies |"
        + (" ratio to " + baseline + " |" if baseline else "")
    )
    print("| --- | ---: | --- | ---: |" + (" ---: |" if baseline else ""))
    for label in labels:
        runs = results[label]
        line = (
            f"| {label} | {median[label]:,.0f} | "
            f"{', '.join(f'{r.tasks_per_s:,.0f}' for r in runs)} | {sum(r.bad for r in runs)} |"
        )
        if baseline:
            line += f" {median[label] / median[baseline]:.2f} |"
        print(line)
    for label in labels:
        last = results[label][-1]
        print(f"\n### {label}: where the time goes (last repeat, {last.window_s:.1f} s window)\n")
        print("CPU % of one core: " + ", ".join(f"{k} {v:.0f}" for k, v in last.cpu_pct.items()))
        # CPU per task holds up better than tasks/s when other work shares the machine.
        per_task = {k: v / 100 / last.tasks_per_s * 1e3 for k, v in last.cpu_pct.items()}
        cluster = sum(v for k, v in per_task.items() if k in CLUSTER_KINDS)
        print(
            f"CPU ms per task: cluster {cluster:.2f} ("
            + ", ".join(f"{k} {per_task[k]:.2f}" for k in CLUSTER_KINDS)
            + ")"
        )
        redis_total = sum(last.redis_per_task.values())
        print(
            f"Redis commands per task ({redis_total:.1f}): "
            + ", ".join(f"{k} {v:.2f}" for k, v in last.redis_per_task.items() if v >= 0.01)
        )
        print(
            "PostgreSQL per task: " + ", ".join(f"{k} {v:.2f}" for k, v in last.pg_per_task.items())
        )
        if last.errors:
            print("bad replies, samples: " + " | ".join(last.errors))


def targets(args: argparse.Namespace) -> list[Target]:
    found = []
    for label in args.rev:
        revision = revisions.ensure(revisions.resolve(label))
        found.append(Target(f"peerwire@{label}", revision.peerwire, revision.tree))
    if not args.no_tree:
        found.append(Target("peerwire (tree)", Path(sys.executable).parent / "peerwire", ROOT))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rev", action="append", default=[], help="also run this git revision (first)"
    )
    parser.add_argument("--no-tree", action="store_true", help="run only the --rev targets")
    parser.add_argument("--tasks", type=int, default=3000, help="measured tasks per run")
    parser.add_argument("--warmup", type=int, default=300, help="unmeasured tasks first")
    parser.add_argument("--concurrency", type=int, default=16, help="calls in flight")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--worker-concurrency", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--pg", default=PG_DSN, help="PostgreSQL to use (a fresh schema in it)")
    parser.add_argument(
        "--py-spy", type=Path, help="record a replica and a worker into this folder"
    )
    parser.add_argument("--spy-seconds", type=float, default=8.0)
    parser.add_argument("--spy-top", type=int, default=25)
    parser.add_argument(
        "--stats-wait",
        type=float,
        default=PG_STATS_S,
        help="seconds to let PostgreSQL report its statistics before and after the window",
    )
    parser.add_argument("--json", type=Path, help="write every result here")
    args = parser.parse_args()
    if args.stats_wait < 0:
        parser.error("--stats-wait must be >= 0")
    if min(args.tasks, args.concurrency, args.replicas, args.workers, args.repeat) < 1:
        parser.error("--tasks, --concurrency, --replicas, --workers and --repeat must be >= 1")
    chosen = targets(args)
    if not chosen:
        parser.error("nothing to run: --no-tree without --rev")
    results: dict[str, list[Result]] = {t.label: [] for t in chosen}

    async def run() -> None:
        for repeat in range(args.repeat):
            for target in chosen:
                result = await measure(target, args, args.py_spy if repeat == 0 else None)
                results[target.label].append(result)
                print(
                    f"# {target.label} run {repeat + 1}: {result.tasks_per_s:,.0f} tasks/s, "
                    f"{result.bad} bad, noise {result.cpu_pct.get('other (noise)', 0):.0f}%",
                    file=sys.stderr,
                    flush=True,
                )

    asyncio.run(run())
    report(results, chosen[0].label if len(chosen) > 1 else None)
    if args.json:
        args.json.write_text(
            json.dumps({k: [r.__dict__ for r in v] for k, v in results.items()}, indent=1)
        )
    if any(r.bad for runs in results.values() for r in runs):
        sys.exit(1)


if __name__ == "__main__":
    main()
