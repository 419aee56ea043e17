"""Scale-out with real processes: ``peerwire serve`` replicas and ``peerwire worker``s sharing
the machine's PostgreSQL (a fresh schema) and Redis (a fresh key prefix).

The replicas run with ``--no-local-workers``, so every handler runs in a worker process; the
agent (``scale_agent``) is steered through Redis keys. Timing knobs are small (leases of 2 s,
sweeps every second) so recovery takes seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from redis.asyncio import Redis

from peerwire.protocol import fold_events
from peerwire.protocol.extensions import ANSWERABLE_BY_EXTENSION as ANSWERED_BY
from peerwire.types import StreamResponse, Task, from_builtins

from ._agents import ask_for
from ._rpc import TIMEOUT_S, Rpc, Stream, state_of, status_text, user_message
from ._services import PG_DSN, REDIS_URL, fresh_prefix, fresh_schema

pytestmark = pytest.mark.services

HERE = Path(__file__).parent
PEERWIRE = str(Path(sys.executable).parent / "peerwire")
TIMING = ["--lease-ttl", "2", "--reclaim-idle", "3", "--sweep-every", "1"]
READY_S = 60.0
STOP_S = 20.0
SETTLE_S = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Cluster:
    """Running replicas and workers, and what the test needs to drive them."""

    prefix: str
    store: str
    bus: str
    logs: Path
    agent: str
    redis: Redis
    http: httpx.AsyncClient
    serve_options: tuple[str, ...] = ()
    replicas: list[Rpc] = field(default_factory=list)
    workers: list[asyncio.subprocess.Process] = field(default_factory=list)
    processes: list[asyncio.subprocess.Process] = field(default_factory=list)

    async def spawn(self, name: str, *args: str) -> asyncio.subprocess.Process:
        log = (self.logs / f"{name}.log").open("wb")
        env = {
            **os.environ,
            "PEERWIRE_SCALE_PREFIX": self.prefix,
            "PEERWIRE_SCALE_REDIS": REDIS_URL,
        }
        process = await asyncio.create_subprocess_exec(
            PEERWIRE, *args, cwd=HERE, env=env, stdout=log, stderr=log
        )
        log.close()
        self.processes.append(process)
        return process

    async def add_replica(self) -> Rpc:
        port = free_port()
        await self.spawn(
            f"replica{len(self.replicas)}",
            "serve",
            f"scale_agent:{self.agent}",
            "--port",
            str(port),
            "--store",
            self.store,
            "--bus",
            self.bus,
            "--no-local-workers",
            "--no-grpc",
            "--shutdown-grace",
            "2",
            *TIMING,
            *self.serve_options,
        )
        rpc = Rpc(self.http, f"http://127.0.0.1:{port}")
        with anyio.fail_after(READY_S):
            while True:
                with contextlib.suppress(httpx.TransportError):
                    card = await self.http.get(rpc.url + "/.well-known/agent-card.json")
                    if card.status_code == 200:
                        break
                await asyncio.sleep(0.1)
        self.replicas.append(rpc)
        return rpc

    async def add_worker(self) -> asyncio.subprocess.Process:
        process = await self.spawn(
            f"worker{len(self.workers)}",
            "worker",
            f"scale_agent:{self.agent}",
            "--store",
            self.store,
            "--bus",
            self.bus,
            "--concurrency",
            "100",
            "--shutdown-grace",
            "2",
            *TIMING,
        )
        self.workers.append(process)
        # Ready once it reads the queue: it is then a consumer of the group.
        with anyio.fail_after(READY_S):
            while await self._consumers() < len(self.workers):
                assert process.returncode is None, self.log_text()
                await asyncio.sleep(0.1)
        return process

    async def _consumers(self) -> int:
        try:
            return len(await self.redis.xinfo_consumers(f"{self.prefix}:jobs", "workers"))
        except Exception:  # no stream or group yet
            return 0

    async def release(self, task_id: str) -> None:
        await self.redis.set(f"{self.prefix}:release:{task_id}", 1, ex=600)

    def log_text(self) -> str:
        return "\n".join(f"== {p.name}\n{p.read_text()[-3000:]}" for p in self.logs.iterdir())

    async def stop(self) -> None:
        for process in self.processes:
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                with anyio.fail_after(STOP_S):
                    await process.wait()
            except TimeoutError:
                process.kill()
                await process.wait()


@contextlib.asynccontextmanager
async def cluster(
    tmp_path: Path,
    *,
    replicas: int = 2,
    workers: int = 2,
    agent: str = "agent",
    serve_options: tuple[str, ...] = (),
    headers: dict[str, str] | None = None,
) -> AsyncIterator[Cluster]:
    async with (
        fresh_schema() as schema,
        fresh_prefix() as prefix,
        httpx.AsyncClient(trust_env=False, timeout=TIMEOUT_S, headers=headers) as http,
    ):
        redis = Redis.from_url(REDIS_URL)
        running = Cluster(
            prefix=prefix,
            store=f"{PG_DSN}?schema={schema}",
            bus=f"{REDIS_URL}?prefix={prefix}",
            logs=tmp_path,
            agent=agent,
            redis=redis,
            http=http,
            serve_options=serve_options,
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
            await redis.aclose()


def pid_of(text: str) -> int:
    """The process a handler said it runs on ("running on pid N", "done on pid N")."""
    return int(text.rsplit("pid ", 1)[1].split()[0])


def artifact_text(task: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for a in task.get("artifacts", []) for p in a["parts"])


def folded(snapshot: dict[str, Any], events: list[dict[str, Any]]) -> Task:
    updates = [from_builtins(e, StreamResponse).payload for e in events]
    return fold_events(from_builtins(snapshot, Task), updates)  # type: ignore[arg-type]


def assert_no_repeats(events: list[dict[str, Any]]) -> None:
    seen = [json.dumps(event, sort_keys=True) for event in events]
    assert len(set(seen)) == len(seen), "an event came twice"


async def until_running(stream: Stream, events: list[dict[str, Any]]) -> int:
    """Read into ``events`` up to the handler's "running on pid N" status; that pid."""
    while True:
        event = await stream.next()
        events.append(event)
        text = status_text(event["statusUpdate"]) if "statusUpdate" in event else ""
        if text.startswith("running on"):
            return pid_of(text)


async def until_state(rpc: Rpc, task_id: str, states: set[str]) -> dict[str, Any]:
    with anyio.fail_after(SETTLE_S):
        while True:
            task = await rpc.get(task_id)
            if state_of(task) in states:
                return task
            await asyncio.sleep(0.1)


# -- the whole picture ---------------------------------------------------------------------------


@dataclass
class Seen:
    task_id: str
    sender: list[dict[str, Any]]
    sender_snapshot: dict[str, Any]
    watcher: list[dict[str, Any]] | None = None
    watcher_snapshot: dict[str, Any] | None = None


async def test_200_tasks_on_two_replicas_and_two_workers_one_killed(tmp_path: Path) -> None:
    async with cluster(tmp_path) as running:
        replicas, workers = running.replicas, running.workers
        worker_pids = {w.pid for w in workers}
        gate = asyncio.Semaphore(16)
        seen: list[Seen] = []
        kill_at = 90
        killed: list[int] = []
        # The kill lands while tasks are held on the victim but none of its handlers is between
        # storing an event and publishing it: an event stored and never published is a known
        # gap (docs/DEPLOYMENT.md), not what this test measures. ``go`` pauses new tasks and
        # releases; ``moving`` counts tasks whose handlers may be emitting right now.
        go = asyncio.Event()
        go.set()
        moving = [0]

        async def quiet() -> None:
            with anyio.fail_after(SETTLE_S):
                # Polling, bounded, once per run: the killing task itself is held, not emitting.
                while moving[0] > 1:  # noqa: ASYNC110
                    await asyncio.sleep(0.05)

        async def one(i: int) -> None:
            home, other = replicas[i % 2], replicas[(i + 1) % 2]
            observed = (i // 2) % 2 == 0  # half the tasks, from either replica
            await go.wait()
            await gate.acquire()
            moving[0] += 1  # counted from here: the send below starts a handler
            async with home.send_stream(ask_for("hold", f"task {i}")) as sender:
                first = await sender.next()
                task_id = first["task"]["id"]
                events: list[dict[str, Any]] = []
                running_on = await until_running(sender, events)
                assert running_on in worker_pids
                record = Seen(task_id, events, first["task"])
                if i == kill_at:
                    go.clear()
                    await quiet()
                    victim = next(w for w in workers if w.pid == running_on)
                    victim.kill()  # SIGKILL, mid-run: this task (and others) are held there
                    killed.append(running_on)
                    go.set()
                moving[0] -= 1  # held now: it emits nothing until released
                await go.wait()
                moving[0] += 1
                if observed:
                    async with other.subscribe(task_id) as watcher:
                        record.watcher_snapshot = (await watcher.next())["task"]
                        await running.release(task_id)
                        record.watcher = await watcher.rest(SETTLE_S)
                else:
                    await running.release(task_id)
                events.extend(await sender.rest(SETTLE_S))
                moving[0] -= 1
                seen.append(record)
            gate.release()

        with anyio.fail_after(240):
            async with anyio.create_task_group() as group:
                for i in range(200):
                    group.start_soon(one, i)

        assert len(killed) == 1 and len(seen) == 200
        observed = 0
        for record in seen:
            final = await replicas[0].get(record.task_id)
            assert state_of(final) == "TASK_STATE_COMPLETED", final
            expected = from_builtins(final, Task)
            assert folded(record.sender_snapshot, record.sender) == expected
            assert_no_repeats(record.sender)
            if record.watcher is not None:
                observed += 1
                assert record.watcher_snapshot is not None
                assert folded(record.watcher_snapshot, record.watcher) == expected
                assert_no_repeats(record.watcher)
        assert observed == 100
        # Tasks that were running on the killed worker were resumed by the other one.
        resumed = [
            r
            for r in seen
            if pid_of(artifact_text(await replicas[1].get(r.task_id))) not in killed
            and any(
                "statusUpdate" in e
                and "running on" in status_text(e["statusUpdate"])
                and pid_of(status_text(e["statusUpdate"])) in killed
                for e in r.sender
            )
        ]
        assert resumed, "no task of the killed worker was resumed elsewhere"


# -- one behaviour at a time ----------------------------------------------------------------------


async def test_cancel_on_another_replica_reaches_the_worker(tmp_path: Path) -> None:
    async with cluster(tmp_path, workers=1) as running:
        a, b = running.replicas
        async with a.send_stream(ask_for("forever")) as sender:
            task_id = (await sender.next())["task"]["id"]
            working = (await sender.next())["statusUpdate"]
            assert state_of(working) == "TASK_STATE_WORKING"
            canceled = await b.result("CancelTask", {"id": task_id})
            assert state_of(canceled) == "TASK_STATE_CANCELED"
            rest = await sender.rest(SETTLE_S)
        assert state_of(rest[-1]["statusUpdate"]) == "TASK_STATE_CANCELED"
        # The cancel hook ran in the worker that held the task.
        hook_ran_on = await running.redis.get(f"{running.prefix}:canceled:{task_id}")
        assert hook_ran_on == f"pid {running.workers[0].pid}".encode()


async def test_a_conversation_continues_through_another_replica(tmp_path: Path) -> None:
    async with cluster(tmp_path, workers=1) as running:
        a, b = running.replicas
        async with a.send_stream(ask_for("chat")) as sender:
            task_id = (await sender.next())["task"]["id"]
            events = await sender.rest(SETTLE_S)
        assert state_of(events[-1]["statusUpdate"]) == "TASK_STATE_INPUT_REQUIRED"
        context_id = events[-1]["statusUpdate"]["contextId"]
        answer = user_message("Ada", taskId=task_id, contextId=context_id)
        done = await b.send(answer)
        assert state_of(done) == "TASK_STATE_COMPLETED", done
        assert artifact_text(done) == f"hello Ada from pid {running.workers[0].pid}"


async def test_a_dead_workers_task_fails_under_the_fail_policy(tmp_path: Path) -> None:
    async with cluster(tmp_path, replicas=1, agent="failing_agent") as running:
        (a,) = running.replicas
        async with a.send_stream(ask_for("hold")) as sender:
            task_id = (await sender.next())["task"]["id"]
            running_on = await until_running(sender, [])
            victim = next(w for w in running.workers if w.pid == running_on)
            victim.kill()
            rest = await sender.rest(SETTLE_S)
        final = rest[-1]["statusUpdate"]
        assert state_of(final) == "TASK_STATE_FAILED"
        assert status_text(final) == "the worker running this task stopped"
        # Said in a machine-readable way too (protocol.reasons): it may have acted.
        reason = final["status"]["message"]["metadata"]["peerwire.dev/errorInfo"]
        assert reason == {"reason": "INTERRUPTED", "domain": "peerwire.dev", "metadata": {}}
        assert state_of(await a.get(task_id)) == "TASK_STATE_FAILED"


async def test_a_killed_workers_replay_keeps_the_caller_and_the_artifact_ids(
    tmp_path: Path,
) -> None:
    """A task whose worker is SIGKILLed after its answer runs again on the other worker: from
    its first step it sees the caller recorded with the task (the claims name Alice), and its
    id-less artifacts replace the first run's under the same ids (two, not three or four)."""
    async with cluster(
        tmp_path,
        replicas=1,
        agent="secure_agent",
        serve_options=("--auth", "scale_agent:AUTH"),
        headers={"X-API-Key": "k-alice"},
    ) as running:
        (a,) = running.replicas
        task = await a.send(ask_for("book"))
        assert status_text(task) == "How many nights?", task
        answer = user_message("2", taskId=task["id"], contextId=task["contextId"])
        async with a.send_stream(answer) as sender:
            running_on = await until_running(sender, [])
        expected = ["quote for Alice", "booked 2 nights for Alice"]
        with anyio.fail_after(SETTLE_S):
            # Polling another process, bounded: the second artifact is stored before the kill.
            while len((before := await a.get(task["id"])).get("artifacts", [])) < 2:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        assert [artifact_text({"artifacts": [x]}) for x in before["artifacts"]] == expected
        victim = next(w for w in running.workers if w.pid == running_on)
        victim.kill()  # SIGKILL: the sweeper resumes the task on the other worker
        assert await victim.wait() == -signal.SIGKILL
        await running.release(task["id"])
        final = await until_state(a, task["id"], {"TASK_STATE_COMPLETED"})
        assert pid_of(status_text(final)) != running_on, "it ran again elsewhere"
        assert [artifact_text({"artifacts": [x]}) for x in final["artifacts"]] == expected
        assert [x["artifactId"] for x in final["artifacts"]] == [
            x["artifactId"] for x in before["artifacts"]
        ]


async def test_another_principals_answer_reaches_the_worker_holding_the_handler(
    tmp_path: Path,
) -> None:
    """A manager answers Alice's question through the replica: the answer goes to the worker
    parked in ``ask`` through Redis, without its credential; the handler reads the recorded
    caller of that answer (Mona), and the task stays Alice's."""
    async with cluster(
        tmp_path,
        replicas=1,
        workers=1,
        agent="secure_agent",
        serve_options=("--auth", "scale_agent:AUTH"),
        headers={"X-API-Key": "k-alice"},
    ) as running:
        (a,) = running.replicas
        task = await a.send(ask_for("book"))
        assert status_text(task) == "How many nights?", task
        async with httpx.AsyncClient(
            trust_env=False, timeout=TIMEOUT_S, headers={"X-API-Key": "k-mona"}
        ) as http:
            mona = Rpc(http, a.url)
            seen = await mona.get(task["id"])
            assert status_text(seen) == "How many nights?" and "history" not in seen
            answer = user_message("3", taskId=task["id"], contextId=task["contextId"])
            answered = await mona.send(answer, returnImmediately=True)
            assert "artifacts" not in answered and "history" not in answered
        with anyio.fail_after(SETTLE_S):
            # Polling another process, bounded: the answer's artifact is stored.
            while len((now := await a.get(task["id"])).get("artifacts", [])) < 2:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        assert [artifact_text({"artifacts": [x]}) for x in now["artifacts"]] == [
            "quote for Alice",
            "booked 3 nights for Mona",
        ]
        await running.release(task["id"])
        final = await until_state(a, task["id"], {"TASK_STATE_COMPLETED"})
        (recorded,) = [m for m in final["history"] if m["parts"][0].get("text") == "3"]
        assert recorded["metadata"][ANSWERED_BY] == {"principal": "mona", "scheme": "key"}


async def test_the_sweeper_requeues_tasks_whose_job_redis_lost(tmp_path: Path) -> None:
    async with cluster(tmp_path, replicas=1, workers=0) as running:
        (a,) = running.replicas
        task = (
            await a.result(
                "SendMessage",
                {"message": ask_for("hold"), "configuration": {"returnImmediately": True}},
            )
        )["task"]
        assert state_of(task) == "TASK_STATE_SUBMITTED"
        # Redis loses the queued job (as a restart of a Redis that keeps nothing would).
        assert await running.redis.delete(f"{running.prefix}:jobs") == 1
        await running.release(task["id"])
        await running.add_worker()
        final = await until_state(a, task["id"], {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED"})
        assert state_of(final) == "TASK_STATE_COMPLETED"
        assert artifact_text(final) == f"done on pid {running.workers[0].pid}"
