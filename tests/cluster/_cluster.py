"""The fault-suite harness: a whole peerwire cluster of real processes, and faults to inject.

``cluster(tmp_path, replicas=2, workers=2)`` (an async context manager) starts

- its **own** ``redis-server`` on a free port (no persistence, loopback only; the machine's
  Redis on 6379 is never touched), as ``Cluster.redis`` (a ``RedisServer``);
- a fresh PostgreSQL schema on the machine's PostgreSQL (dropped afterwards);
- ``replicas`` x ``peerwire serve`` (``--no-local-workers`` unless ``local_workers=True``)
  and ``workers`` x ``peerwire worker``, all running ``fault_agent:{agent}`` with short
  timing knobs (``TIMING``: leases of 2 s, sweeps every second);

and on exit stops every process (SIGTERM, then SIGKILL), prints the processes' logs if the
test failed (``PEERWIRE_FAULT_LOG=info`` makes them say more), and removes what it created.
Every wait is bounded.

API (what the fault tests use; see each method's docstring):

``RedisServer``
    ``url``, ``port``, ``client()`` (a redis.asyncio client of the test's own: close it),
    ``await kill()`` (SIGKILL, by pid), ``await start()`` (a new, empty server on the same
    port), ``await restart(down_for=0.0)`` (kill, wait, start empty), ``running``.
``Member`` (one process)
    ``name``, ``role`` (``"replica"`` or ``"worker"``), ``pid``, ``alive``, ``returncode``,
    ``rpc`` (replicas: a ``server._rpc.Rpc`` bound to it), ``log`` (its log file).
``Cluster``
    ``replicas``, ``workers``, ``members`` (all of them), ``redis``, ``store`` / ``bus``
    (the ``--store`` / ``--bus`` specs), ``prefix``, ``files`` (the agent's directory);
    ``await add_replica(local_workers=None)``, ``await add_worker()``;
    ``await kill(member)`` (SIGKILL), ``await restart(member)`` (kill if alive, start it
    again with the same arguments and port, wait until ready);
    ``exited()``: members that exited while the test did not stop them (``[]`` is the
    "no process exits" assertion);
    ``release(task_id)`` / ``release_all()`` (lets ``hold`` handlers finish);
    ``runs(task_id)``: the handler runs recorded by the agent (``Run``: pid, ended);
    ``running_handlers()``: task id -> pids whose handler is running now in a live member;
    ``cancel_hooks(task_id)``: the pids whose ``on_cancel`` ran for it;
    ``worker_pids()``; ``log_text()``.
Streams and tasks
    ``follow(stream, timeout)`` reads a ``server._rpc.Stream`` to its end: a ``Followed``
    with ``events`` (the results), ``ended`` (the error of a stream that ended with
    ``StreamEndedError``: its ``data``/``cause``) and ``cause``;
    ``until_running(stream, events=None)``: reads up to a handler's "running on pid N"
    status (every skill of the agent says so first) and returns N;
    ``all_tasks(rpc)``: every task, through ``ListTasks`` pages;
    ``until_terminal(rpc, task_ids, timeout)``: waits until GetTask says each is terminal;
    ``artifact_text(task)``, ``folded(snapshot, events)`` (``Task``), ``assert_no_repeats``.

The agent (``fault_agent.py``) is steered and observed through files, not Redis, because the
suite kills Redis. Long repetitions of a fault are marked ``@pytest.mark.slow``: conftest.py
skips them unless asked for (``-m slow`` or ``PEERWIRE_SLOW=1``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError
from server._rpc import TIMEOUT_S, Rpc, Stream, state_of, status_text
from server._services import PG_DSN, fresh_schema

from peerwire.protocol import fold_events
from peerwire.types import StreamResponse, Task, from_builtins

HERE = Path(__file__).parent
PEERWIRE = str(Path(sys.executable).parent / "peerwire")
REDIS_SERVER = "redis-server"
TIMING = ["--lease-ttl", "2", "--reclaim-idle", "3", "--sweep-every", "1"]
# The processes' --log-level (their logs are printed when a test fails): PEERWIRE_FAULT_LOG.
LOG_LEVEL = os.environ.get("PEERWIRE_FAULT_LOG", "warning")
READY_S = 60.0
STOP_S = 20.0
SETTLE_S = 60.0
TERMINAL = {
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_REJECTED",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _stop_process(process: asyncio.subprocess.Process, sig: int) -> None:
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(sig)
    try:
        with anyio.fail_after(STOP_S):
            await process.wait()
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()


class RedisServer:
    """A ``redis-server`` of the test's own, on a port of its own, keeping nothing on disk."""

    def __init__(self, logs: Path, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}"
        self.logs = logs
        self.process: asyncio.subprocess.Process | None = None
        self.starts = 0

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None

    def client(self) -> Redis:
        """A client of the test's own (close it with ``aclose``); it reconnects after a
        restart (a few retries with backoff)."""
        return Redis.from_url(
            self.url,
            socket_timeout=5,
            socket_connect_timeout=5,
            retry=Retry(ExponentialBackoff(cap=0.5, base=0.05), 5),
            retry_on_error=[RedisConnectionError, RedisTimeoutError],
        )

    async def start(self) -> None:
        """Start an empty server on ``port``; return once it answers PING."""
        assert not self.running, "redis-server is already running"
        self.starts += 1
        log = (self.logs / f"redis{self.starts}.log").open("wb")
        self.process = await asyncio.create_subprocess_exec(
            REDIS_SERVER,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.logs),
            stdout=log,
            stderr=log,
        )
        log.close()
        client = self.client()
        try:
            with anyio.fail_after(READY_S):
                while True:
                    assert self.process.returncode is None, self.log_text()
                    with contextlib.suppress(OSError, RedisError):
                        if await client.ping():
                            return
                    await asyncio.sleep(0.05)
        finally:
            await client.aclose()

    async def kill(self) -> None:
        """SIGKILL the server (by pid) and wait for it to be gone: everything in it is lost."""
        if self.process is not None:
            await _stop_process(self.process, signal.SIGKILL)

    async def restart(self, down_for: float = 0.0) -> None:
        """Kill the server, stay down ``down_for`` seconds, start an empty one on the port."""
        await self.kill()
        await asyncio.sleep(down_for)
        await self.start()

    async def stop(self) -> None:
        if self.process is not None:
            await _stop_process(self.process, signal.SIGTERM)

    def log_text(self) -> str:
        return "\n".join(p.read_text()[-2000:] for p in sorted(self.logs.glob("redis*.log")))


@dataclass
class Member:
    """One ``peerwire serve`` or ``peerwire worker`` process of the cluster."""

    name: str
    role: str
    args: list[str]
    log: Path
    process: asyncio.subprocess.Process
    rpc: Rpc | None = None
    stopping: bool = False
    """Set while the harness itself stops or kills it (``exited`` leaves it out)."""

    @property
    def pid(self) -> int:
        return int(self.process.pid)

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    @property
    def returncode(self) -> int | None:
        return self.process.returncode


@dataclass(frozen=True)
class Run:
    """One handler run the agent recorded: where, and whether it left (not SIGKILLed)."""

    pid: int
    ended: bool


@dataclass
class Followed:
    """What one stream delivered, to its end."""

    events: list[dict[str, Any]]
    ended: dict[str, Any] | None = None
    """The JSON-RPC error a stream ended with (``StreamEndedError``), or None."""

    @property
    def cause(self) -> str | None:
        """The ``cause`` of a ``StreamEndedError`` end (``outage``, ``shutdown``), or None."""
        if self.ended is None:
            return None
        for detail in self.ended.get("data", []) or []:
            metadata = detail.get("metadata", {}) if isinstance(detail, dict) else {}
            if "cause" in metadata:
                return str(metadata["cause"])
        return None


@dataclass
class Cluster:
    """Running replicas and workers on a Redis of their own, and the faults to inject."""

    redis: RedisServer
    prefix: str
    store: str
    bus: str
    logs: Path
    files: Path
    agent: str
    http: httpx.AsyncClient
    local_workers: bool = False
    replicas: list[Member] = field(default_factory=list)
    workers: list[Member] = field(default_factory=list)

    @property
    def members(self) -> list[Member]:
        return [*self.replicas, *self.workers]

    # -- processes --------------------------------------------------------------------------

    async def _spawn(self, name: str, args: list[str]) -> asyncio.subprocess.Process:
        log = (self.logs / f"{name}.log").open("ab")
        env = {**os.environ, "PEERWIRE_FAULT_DIR": str(self.files)}
        process = await asyncio.create_subprocess_exec(
            PEERWIRE, *args, cwd=HERE, env=env, stdout=log, stderr=log
        )
        log.close()
        return process

    async def add_replica(self, *, local_workers: bool | None = None) -> Member:
        """One more ``peerwire serve`` replica; returns once it serves its card."""
        local = self.local_workers if local_workers is None else local_workers
        port = free_port()
        args = [
            "serve",
            f"fault_agent:{self.agent}",
            "--port",
            str(port),
            "--store",
            self.store,
            "--bus",
            self.bus,
            "--local-workers" if local else "--no-local-workers",
            "--no-grpc",
            "--shutdown-grace",
            "2",
            "--log-level",
            LOG_LEVEL,
            *TIMING,
        ]
        name = f"replica{len(self.replicas)}"
        process = await self._spawn(name, args)
        member = Member(name, "replica", args, self.logs / f"{name}.log", process)
        member.rpc = Rpc(self.http, f"http://127.0.0.1:{port}")
        self.replicas.append(member)
        await self._replica_ready(member)
        return member

    async def _replica_ready(self, member: Member) -> None:
        assert member.rpc is not None
        with anyio.fail_after(READY_S):
            while True:
                assert member.alive, self.log_text()
                with contextlib.suppress(httpx.TransportError):
                    card = await self.http.get(member.rpc.url + "/.well-known/agent-card.json")
                    if card.status_code == 200:
                        return
                await asyncio.sleep(0.1)

    async def add_worker(self) -> Member:
        """One more ``peerwire worker``; returns once it is a consumer of the job queue."""
        args = [
            "worker",
            f"fault_agent:{self.agent}",
            "--store",
            self.store,
            "--bus",
            self.bus,
            "--concurrency",
            "100",
            "--shutdown-grace",
            "2",
            "--log-level",
            LOG_LEVEL,
            *TIMING,
        ]
        name = f"worker{len(self.workers)}"
        process = await self._spawn(name, args)
        member = Member(name, "worker", args, self.logs / f"{name}.log", process)
        self.workers.append(member)
        await self._worker_ready(member)
        return member

    async def _worker_ready(self, member: Member) -> None:
        with anyio.fail_after(READY_S):
            while member.process.pid not in await self._consumer_pids():
                assert member.alive, self.log_text()
                await asyncio.sleep(0.1)

    async def _consumer_pids(self) -> set[int]:
        """The pids of the job queue's consumers (their names are ``host-pid-random``)."""
        client = self.redis.client()
        try:
            consumers = await client.xinfo_consumers(f"{self.prefix}:jobs", "workers")
        except Exception:  # no stream or group yet, or Redis down
            return set()
        finally:
            await client.aclose()
        pids = set()
        for consumer in consumers:
            parts = consumer["name"].decode().rsplit("-", 2)
            if len(parts) == 3 and parts[1].isdigit():
                pids.add(int(parts[1]))
        return pids

    async def kill(self, member: Member) -> None:
        """SIGKILL ``member`` (by pid) and wait for it to be gone."""
        member.stopping = True
        await _stop_process(member.process, signal.SIGKILL)

    async def restart(self, member: Member) -> None:
        """Kill ``member`` if alive, start it again (same arguments and port), wait for it."""
        await self.kill(member)
        member.process = await self._spawn(member.name, member.args)
        member.stopping = False
        if member.role == "replica":
            await self._replica_ready(member)
        else:
            await self._worker_ready(member)

    def exited(self) -> list[tuple[str, int | None]]:
        """``(name, returncode)`` of every member that exited without the harness stopping it."""
        return [(m.name, m.returncode) for m in self.members if not m.alive and not m.stopping]

    def worker_pids(self) -> set[int]:
        """The pids that run handlers now (workers, and replicas with local workers)."""
        pids = {m.pid for m in self.workers if m.alive}
        if self.local_workers:
            pids |= {m.pid for m in self.replicas if m.alive}
        return pids

    async def stop(self) -> None:
        for member in self.members:
            member.stopping = True
        await asyncio.gather(*(_stop_process(m.process, signal.SIGTERM) for m in self.members))

    def log_text(self) -> str:
        logs = sorted(self.logs.glob("*.log"))
        return "\n".join(f"== {p.name}\n{p.read_text(errors='replace')[-4000:]}" for p in logs)

    # -- the agent's files ------------------------------------------------------------------

    def release(self, task_id: str) -> None:
        (self.files / "release").mkdir(exist_ok=True)
        (self.files / "release" / task_id).touch()

    def release_all(self) -> None:
        self.release("all")

    def _lines(self, kind: str, task_id: str) -> list[str]:
        path = self.files / kind / task_id
        return path.read_text().splitlines() if path.exists() else []

    def runs(self, task_id: str) -> list[Run]:
        """Every handler run of ``task_id`` the agent recorded, in the order they started."""
        runs: list[Run] = []
        open_runs: dict[int, int] = {}
        for line in self._lines("runs", task_id):
            what, pid_text = line.split()
            pid = int(pid_text)
            if what == "start":
                open_runs[pid] = len(runs)
                runs.append(Run(pid, ended=False))
            elif pid in open_runs:
                runs[open_runs.pop(pid)] = Run(pid, ended=True)
        return runs

    def running_handlers(self) -> dict[str, list[int]]:
        """Task id -> the pids of live members where its handler runs now."""
        live = {m.pid for m in self.members if m.alive}
        found: dict[str, list[int]] = {}
        folder = self.files / "runs"
        for path in folder.iterdir() if folder.exists() else ():
            pids = [r.pid for r in self.runs(path.name) if not r.ended and r.pid in live]
            if pids:
                found[path.name] = pids
        return found

    def cancel_hooks(self, task_id: str) -> list[int]:
        """The pids where ``task_id``'s ``on_cancel`` hook ran, once per run."""
        return [int(line) for line in self._lines("canceled", task_id)]


@contextlib.asynccontextmanager
async def cluster(
    tmp_path: Path,
    *,
    replicas: int = 2,
    workers: int = 2,
    agent: str = "agent",
    local_workers: bool = False,
) -> AsyncIterator[Cluster]:
    """A running cluster (see the module docstring); everything is stopped and removed after."""
    logs, files = tmp_path / "logs", tmp_path / "files"
    logs.mkdir()
    files.mkdir()
    redis = RedisServer(logs)
    await redis.start()
    prefix = "pwfault"
    try:
        async with (
            fresh_schema() as schema,
            httpx.AsyncClient(trust_env=False, timeout=TIMEOUT_S) as http,
        ):
            running = Cluster(
                redis=redis,
                prefix=prefix,
                store=f"{PG_DSN}?schema={schema}",
                bus=f"{redis.url}?prefix={prefix}",
                logs=logs,
                files=files,
                agent=agent,
                http=http,
                local_workers=local_workers,
            )
            try:
                for _ in range(replicas):
                    await running.add_replica()
                for _ in range(workers):
                    await running.add_worker()
                yield running
            except BaseException:
                print(running.log_text())
                raise
            finally:
                await running.stop()
    finally:
        await redis.kill()


# -- streams and tasks --------------------------------------------------------------------------


async def follow(stream: Stream, timeout: float = SETTLE_S) -> Followed:
    """Read ``stream`` to its end: every result, and the error it ended with if any."""
    followed = Followed([])
    with anyio.fail_after(timeout):
        for _ in range(100_000):
            envelope = await stream.next_envelope(timeout)
            if envelope is None:
                return followed
            if "error" in envelope:
                followed.ended = envelope["error"]
                assert await stream.next_envelope(timeout) is None, "events after the error"
                return followed
            followed.events.append(envelope["result"])
    raise AssertionError("the stream did not end")


async def until_running(stream: Stream, events: list[dict[str, Any]] | None = None) -> int:
    """Read ``stream`` (into ``events``) up to a handler's "running on pid N"; that pid."""
    for _ in range(10_000):
        event = await stream.next()
        if events is not None:
            events.append(event)
        text = status_text(event["statusUpdate"]) if "statusUpdate" in event else ""
        if text.startswith("running on pid "):
            return int(text.rsplit(" ", 1)[1])
    raise AssertionError("no handler said where it runs")


async def all_tasks(rpc: Rpc, page_size: int = 100) -> list[dict[str, Any]]:
    """Every task the replica lists, through ``ListTasks`` pages."""
    tasks: list[dict[str, Any]] = []
    token = ""
    for _ in range(10_000):
        params: dict[str, Any] = {"pageSize": page_size}
        if token:
            params["pageToken"] = token
        page = await rpc.result("ListTasks", params)
        tasks.extend(page.get("tasks", []))
        token = page.get("nextPageToken", "")
        if not token:
            return tasks
    raise AssertionError("ListTasks did not end")


async def until_terminal(
    rpc: Rpc, task_ids: Iterable[str], timeout: float = SETTLE_S
) -> dict[str, dict[str, Any]]:
    """Wait until GetTask says every task is terminal; the tasks by id."""
    pending = set(task_ids)
    done: dict[str, dict[str, Any]] = {}
    with anyio.fail_after(timeout):
        while pending:
            for task_id in sorted(pending):
                with contextlib.suppress(httpx.TransportError):
                    task = await rpc.get(task_id)
                    if state_of(task) in TERMINAL:
                        done[task_id] = task
                        pending.discard(task_id)
            if pending:
                await asyncio.sleep(0.2)
    return done


def artifact_text(task: dict[str, Any], name: str | None = None) -> str:
    return "".join(
        p.get("text", "")
        for a in task.get("artifacts", [])
        if name is None or a.get("name") == name
        for p in a["parts"]
    )


def folded(snapshot: dict[str, Any], events: list[dict[str, Any]]) -> Task:
    updates = [from_builtins(e, StreamResponse).payload for e in events]
    return fold_events(from_builtins(snapshot, Task), updates)  # type: ignore[arg-type]


def assert_no_repeats(events: list[dict[str, Any]]) -> None:
    seen = [json.dumps(event, sort_keys=True) for event in events]
    assert len(set(seen)) == len(seen), "an event came twice"
