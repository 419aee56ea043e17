"""What one request costs a server, counted by valgrind: the same figure on a busy machine.

    .venv/bin/python bench/cost_per_request.py --rev 278a5f2 --method SendMessage --requests 2000

On a shared machine the wall-clock rate of one server moves by up to 2.7x between runs of
the same code (the host's speed, not ours), which drowns a question of 1-3%. valgrind's
callgrind counts what the server's own process does, whatever else the machine does: the
instructions it ran and, with its cache simulation, the first-level and last-level cache
misses. Per target: start ``peerwire serve bench.echo_agent:agent --store memory`` under
callgrind (no gRPC), send ``--warmup`` requests, zero the counters (``callgrind_control``),
send ``--requests`` more over ``--connections`` keep-alive connections (a small raw client
of its own, in this process), dump the counters and divide. The estimate of cycles is
cachegrind's usual weighting: an instruction 1, a first-level miss 10, a last-level miss
100. Kernel time (system calls) is outside these counts; ``--syscalls`` adds strace's count
of system calls per request from a separate run without valgrind.

Targets: the working tree with metrics off (``--with-metrics`` adds it with them; ``--no-tree``
leaves it out) and each ``--rev REV`` (built under
.bench-cache/ like ``bench/run.sh --compare-rev``). A benchmark, never part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: the checkout's bench package

from bench.harness import revisions  # noqa: E402
from bench.harness.client import request_body  # noqa: E402
from bench.harness.proc import free_port  # noqa: E402
from bench.harness.targets import get_json, jsonrpc_url, rpc  # noqa: E402

AGENT = "bench.echo_agent:agent"
READY_S = 300.0  # start-up under valgrind takes a while
# cachegrind's weighting of its counts into an estimate of cycles.
L1_MISS_COST, LL_MISS_COST = 10, 100
STREAMING, STREAM_CHUNKS = "SendStreamingMessage", 20
EVENTS = ("Ir", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw")


@dataclass(frozen=True)
class Server:
    name: str
    python: Path
    tree: Path
    options: tuple[str, ...] = ()

    def argv(self, port: int) -> list[str]:
        script = self.python.parent / "peerwire"
        return [str(self.python), str(script), "serve", AGENT, "--no-grpc", "--store", "memory",
                *self.options, "--port", str(port)]  # fmt: skip

    def env(self) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": str(self.tree)}


@dataclass(frozen=True)
class Cost:
    counts: dict[str, float]  # per request

    @property
    def cycles(self) -> float:
        c = self.counts
        l1 = c["I1mr"] + c["D1mr"] + c["D1mw"]
        ll = c["ILmr"] + c["DLmr"] + c["DLmw"]
        return c["Ir"] + L1_MISS_COST * l1 + LL_MISS_COST * ll


# -- a small raw HTTP/1.1 client: keep-alive, Content-Length or chunked answers ---------------


def _body(method: str, task_id: str, tag: str, n: int) -> bytes:
    if method != "GetTask":  # the harness's own send body (its messageIds: bench-TAG-N)
        return request_body(method, n, tag, STREAM_CHUNKS if method == STREAMING else 0)
    return json.dumps(
        {"jsonrpc": "2.0", "id": n, "method": method, "params": {"id": task_id}}
    ).encode()


def _request(path: str, host: str, method: str, body: bytes) -> bytes:
    accept = "text/event-stream" if method == STREAMING else "application/json"
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Accept: {accept}\r\nA2A-Version: 1.0\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def _answer(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    status = head.split(b" ", 2)[1]
    if status != b"200":
        raise RuntimeError(f"HTTP {status.decode()}: {head[:200]!r}")
    lower = head.lower()
    found = re.search(rb"content-length: *(\d+)", lower)
    if found:
        return await reader.readexactly(int(found.group(1)))
    chunks: list[bytes] = []
    while True:
        size = int((await reader.readuntil(b"\r\n")).strip().split(b";")[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            return b"".join(chunks)
        chunks.append(await reader.readexactly(size + 2))


async def _drive(url: str, method: str, task_id: str, total: int, connections: int) -> None:
    parsed = urllib.parse.urlparse(url)
    host, port, path = parsed.hostname or "127.0.0.1", parsed.port or 80, parsed.path or "/"
    tag = secrets.token_hex(4)
    counter = iter(range(total))

    async def one_connection() -> None:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            for n in counter:
                body = _body(method, task_id, tag, n)
                writer.write(_request(path, f"{host}:{port}", method, body))
                answer = await _answer(reader)
                if b"TASK_STATE_COMPLETED" not in answer or b'"error"' in answer:
                    raise RuntimeError(f"not a completed task: {answer[:300]!r}")
        finally:
            writer.close()

    await asyncio.wait_for(
        asyncio.gather(*(one_connection() for _ in range(connections))), timeout=3600
    )


# -- one target ----------------------------------------------------------------------------


def _wait_ready(base: str, proc: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited ({proc.returncode}) before it was ready")
        try:
            return jsonrpc_url(get_json(f"{base}/.well-known/agent-card.json", timeout=5), base)
        except (OSError, ValueError):
            time.sleep(0.5)
    raise RuntimeError("the server was not ready in time")


@dataclass(frozen=True)
class Running:
    pid: int
    url: str
    task_id: str  # GetTask's (a task made by one SendMessage), else ""


@contextlib.contextmanager
def _warmed(
    server: Server, args: argparse.Namespace, prefix: list[str] | None = None
) -> Iterator[Running]:
    """The server (after ``prefix``: valgrind) started, ready and warmed up; stopped after."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [*(prefix or []), *server.argv(port)],
        env=server.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = _wait_ready(base, proc)
        task_id = ""
        if args.method == "GetTask":
            first = json.loads(_body("SendMessage", "", "first", 0))["params"]
            task_id = str(rpc(url, "SendMessage", first)["result"]["task"]["id"])
        running = Running(proc.pid, url, task_id)
        _send(running, args, args.warmup)
        yield running
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _send(running: Running, args: argparse.Namespace, count: int) -> None:
    asyncio.run(_drive(running.url, args.method, running.task_id, count, args.connections))


def measure(server: Server, args: argparse.Namespace) -> Cost:
    with tempfile.TemporaryDirectory(prefix="pw-cost-") as tmp:
        out = Path(tmp) / "callgrind.out"
        valgrind = [
            "valgrind", "--tool=callgrind", "--cache-sim=yes", f"--callgrind-out-file={out}",
            "--dump-instr=no", "--compress-strings=no",
        ]  # fmt: skip
        with _warmed(server, args, valgrind) as running:
            _control("--zero", running.pid)
            _send(running, args, args.requests)
            before = set(Path(tmp).iterdir())
            _control("--dump", running.pid)
            dumps = sorted(set(Path(tmp).iterdir()) - before)
        if not dumps:
            raise RuntimeError("callgrind wrote no dump")
        totals = _totals(dumps[-1])
        if args.keep is not None:  # for callgrind_annotate: where the counts went
            args.keep.mkdir(parents=True, exist_ok=True)
            shutil.copy(dumps[-1], args.keep / f"callgrind.{server.name}.{args.method}")
    return Cost({k: totals[k] / args.requests for k in EVENTS})


def _control(option: str, pid: int) -> None:
    subprocess.run(["callgrind_control", option, str(pid)], check=True, capture_output=True)


def _totals(dump: Path) -> dict[str, float]:
    events: list[str] = []
    values: list[float] = []
    for line in dump.read_text(errors="replace").splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith(("summary:", "totals:")):
            values = [float(v) for v in line.split()[1:]]
    if not events or not values:
        raise RuntimeError(f"no totals in {dump}")
    return dict(zip(events, values, strict=False))


def syscalls(server: Server, args: argparse.Namespace) -> float:
    """System calls per request, by strace -c over the measured requests (no valgrind)."""
    with tempfile.TemporaryDirectory(prefix="pw-strace-") as tmp:
        report = Path(tmp) / "strace.txt"
        with _warmed(server, args) as running:
            tracer = subprocess.Popen(
                ["strace", "-c", "-f", "-o", str(report), "-p", str(running.pid)],
                stderr=subprocess.DEVNULL,
            )
            time.sleep(1.0)  # strace attaches
            _send(running, args, args.requests)
            tracer.send_signal(signal.SIGINT)
            tracer.wait(timeout=30)
        # The last row: "100.00  SECONDS  USECS  CALLS  [ERRORS]  total".
        last_row = r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?total$"
        total = re.search(last_row, report.read_text(), re.M)
        if total is None:
            raise RuntimeError(f"no total in strace's report:\n{report.read_text()[-500:]}")
        return float(total.group(1)) / int(args.requests)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", action="append", default=[], help="a revision to compare")
    parser.add_argument("--no-tree", action="store_true", help="only the --rev targets")
    methods = ("SendMessage", "GetTask", "SendStreamingMessage")
    parser.add_argument("--method", default="SendMessage", choices=methods)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--with-metrics", action="store_true", help="also the tree with metrics")
    parser.add_argument("--syscalls", action="store_true", help="also count system calls")
    parser.add_argument(
        "--keep", type=Path, help="copy each callgrind dump here (read with callgrind_annotate)"
    )
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        parser.error("valgrind is needed (apt-get install valgrind)")
    servers = [
        Server(f"peerwire@{label}", rev.home / "venv" / "bin" / "python", rev.tree)
        for label in args.rev
        for rev in [revisions.ensure(revisions.resolve(label))]
    ]
    if not args.no_tree:
        # Older revisions have no metrics to turn off: the tree without them is the like for like.
        servers.append(Server("tree-metrics-off", Path(sys.executable), ROOT, ("--no-metrics",)))
        if args.with_metrics:
            servers.append(Server("tree", Path(sys.executable), ROOT))
    results = {s.name: measure(s, args) for s in servers}
    calls = {s.name: syscalls(s, args) for s in servers} if args.syscalls else {}
    first = next(iter(results.values()))
    print(f"\n{args.method}, per request ({args.requests} after {args.warmup}, "
          f"{args.connections} connections)")  # fmt: skip
    header = ["target", "instructions", "L1 misses", "LL misses", "est. cycles", "/ first"]
    if calls:
        header.append("syscalls")
    print("  ".join(f"{h:>14}" for h in header))
    for name, cost in results.items():
        c = cost.counts
        row = [
            name,
            f"{c['Ir']:,.0f}",
            f"{c['I1mr'] + c['D1mr'] + c['D1mw']:,.0f}",
            f"{c['ILmr'] + c['DLmr'] + c['DLmw']:,.1f}",
            f"{cost.cycles:,.0f}",
            f"{cost.cycles / first.cycles:.3f}",
        ]
        if calls:
            row.append(f"{calls[name]:.2f}")
        print("  ".join(f"{v:>14}" for v in row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
