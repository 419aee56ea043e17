"""``peerwire serve`` on a SQLite file, killed with SIGKILL and started again, loses nothing.

Each test runs the real command in a subprocess (``restart_agent`` holds the agents), drives it
with raw JSON-RPC, kills it with SIGKILL (no shutdown code runs), starts it again on the same
file and checks every task, artifact and history entry through GetTask and ListTasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from .._rpc import Rpc, state_of, status_text, user_message

REPO = Path(__file__).resolve().parents[3]
PEERWIRE = Path(sys.executable).with_name("peerwire")
AGENTS = "tests.server.stores.restart_agent"
STARTUP_TIMEOUT_S = 30.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Served:
    """One ``peerwire serve`` process."""

    def __init__(self, process: asyncio.subprocess.Process, url: str, log: Path) -> None:
        self.process = process
        self.url = url
        self.log = log

    async def kill(self) -> None:
        """SIGKILL: the process gets no chance to flush, close or checkpoint anything."""
        self.process.send_signal(signal.SIGKILL)
        with anyio.fail_after(15):
            assert await self.process.wait() == -signal.SIGKILL


@contextlib.asynccontextmanager
async def serve(
    target: str,
    *,
    cwd: Path,
    markers: Path,
    store: str | None = None,
    agents: str = AGENTS,
    options: tuple[str, ...] = (),
) -> AsyncIterator[Served]:
    port = _free_port()
    arguments = ["serve", f"{agents}:{target}", "--port", str(port), *options]
    if store is not None:
        arguments += ["--store", store]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        "RESTART_MARKERS": str(markers),
    }
    log = cwd / f"serve-{port}.log"
    with log.open("wb") as sink:
        process = await asyncio.create_subprocess_exec(
            PEERWIRE, *arguments, cwd=cwd, env=env, stdout=sink, stderr=sink
        )
    served = Served(process, f"http://127.0.0.1:{port}", log)
    try:
        await _until_ready(served)
        yield served
    finally:
        if process.returncode is None:
            process.kill()
            with anyio.fail_after(15):
                await process.wait()


async def _until_ready(served: Served) -> None:
    async with httpx.AsyncClient(trust_env=False, timeout=5) as http:
        with anyio.fail_after(STARTUP_TIMEOUT_S):
            for _ in range(10_000):
                if served.process.returncode is not None:
                    pytest.fail(f"peerwire serve exited early:\n{served.log.read_text()}")
                with contextlib.suppress(httpx.TransportError):
                    card = await http.get(served.url + "/.well-known/agent-card.json")
                    if card.status_code == 200:
                        return
                await anyio.sleep(0.05)  # the process gives no other signal that it listens


@contextlib.asynccontextmanager
async def rpc_to(url: str) -> AsyncIterator[Rpc]:
    async with httpx.AsyncClient(trust_env=False, timeout=30) as http:
        yield Rpc(http, url)


def ask(skill: str, text: str = "go", **fields: Any) -> dict[str, Any]:
    return user_message(text, metadata={"skill": skill}, **fields)


async def stream_until_artifact(rpc: Rpc, message: dict[str, Any]) -> str:
    """Stream ``message`` until the first artifact update arrives; return the task id."""
    async with rpc.stream("SendStreamingMessage", {"message": message}) as stream:
        first = await stream.next()
        task_id = first["task"]["id"] if "task" in first else first["statusUpdate"]["taskId"]
        for _ in range(20):
            event = await stream.next()
            if "artifactUpdate" in event:
                return str(task_id)
    raise AssertionError("no artifact was streamed")


async def get_all(rpc: Rpc, ids: dict[str, str]) -> dict[str, dict[str, Any]]:
    return {name: await rpc.get(task_id) for name, task_id in ids.items()}


def texts(artifact: dict[str, Any]) -> list[str]:
    return [part.get("text", "") for part in artifact["parts"]]


async def test_sigkill_loses_nothing_and_working_tasks_fail(tmp_path: Path) -> None:
    db = tmp_path / "tasks.db"
    store = f"sqlite:{db}"
    ids: dict[str, str] = {}
    async with serve("agent", cwd=tmp_path, markers=tmp_path, store=store) as served:
        async with rpc_to(served.url) as rpc:
            done = await rpc.send(ask("chunks"))
            assert state_of(done) == "TASK_STATE_COMPLETED"
            assert texts(done["artifacts"][0]) == [
                "alpha ",
                "beta ",
                "gamma ",
                "delta",
            ]
            failed = await rpc.send(ask("explode", "fly"))
            assert state_of(failed) == "TASK_STATE_FAILED"
            waiting = await rpc.send(ask("question"))
            assert state_of(waiting) == "TASK_STATE_INPUT_REQUIRED"
            auth = await rpc.send(ask("credentials"))
            assert state_of(auth) == "TASK_STATE_AUTH_REQUIRED"
            ids.update(done=done["id"], failed=failed["id"], waiting=waiting["id"], auth=auth["id"])
            ids["grinding"] = await stream_until_artifact(rpc, ask("grind"))
            stalled = await rpc.send(ask("stall"))
            ids["stalled"] = await stream_until_artifact(
                rpc, user_message("long", taskId=stalled["id"])
            )
            before = await get_all(rpc, ids)
            listed = await rpc.result("ListTasks", {"includeArtifacts": True})
        assert before["grinding"]["status"]["state"] == "TASK_STATE_WORKING"
        assert before["stalled"]["status"]["state"] == "TASK_STATE_WORKING"
        await served.kill()

    async with (
        serve("agent", cwd=tmp_path, markers=tmp_path, store=store) as served,
        rpc_to(served.url) as rpc,
    ):
        after = await get_all(rpc, ids)
        for name in ("done", "failed", "waiting", "auth"):
            assert after[name] == before[name], name
        for name in ("grinding", "stalled"):
            task, old = after[name], before[name]
            assert state_of(task) == "TASK_STATE_FAILED", name
            assert status_text(task) == "interrupted by restart"
            metadata = task["status"]["message"]["metadata"]
            assert metadata["peerwire.dev/errorInfo"]["reason"] == "INTERRUPTED", name
            assert task["artifacts"] == old["artifacts"], name
            assert task["history"][: len(old["history"])] == old["history"], name
            assert task["history"][-1] == task["status"]["message"]
        relisted = await rpc.result("ListTasks", {"includeArtifacts": True})
        assert relisted["totalSize"] == listed["totalSize"] == len(ids)
        assert {t["id"] for t in relisted["tasks"]} == set(ids.values())
        unchanged = {t["id"]: t for t in relisted["tasks"]}
        for task in listed["tasks"]:
            if task["id"] not in (ids["grinding"], ids["stalled"]):
                assert unchanged[task["id"]] == task

        # The interrupted task simply waited: it can be continued to completion.
        finished = await rpc.send(user_message("idempotence", taskId=ids["waiting"]))
        assert state_of(finished) == "TASK_STATE_COMPLETED"
        assert texts(finished["artifacts"][-1]) == ["defined idempotence"]
        assert (await rpc.get(ids["auth"]))["status"] == before["auth"]["status"]


async def test_resume_policy_reruns_working_tasks_with_replay(tmp_path: Path) -> None:
    """On the default store (./peerwire.db): a re-run handler gets its recorded answers."""
    markers = tmp_path / "markers"
    markers.mkdir()
    async with serve("resume_agent", cwd=tmp_path, markers=markers) as served:
        async with rpc_to(served.url) as rpc:
            stalled = await rpc.send(ask("stall"))
            assert status_text(stalled) == "How long?"
            task_id = await stream_until_artifact(rpc, user_message("long", taskId=stalled["id"]))
            before = await rpc.get(task_id)
        assert (markers / task_id).exists()
        await served.kill()
    assert (tmp_path / "peerwire.db").exists()

    async with (
        serve("resume_agent", cwd=tmp_path, markers=markers) as served,
        rpc_to(served.url) as rpc,
    ):
        task = await _until_finished(rpc, task_id)
    assert state_of(task) == "TASK_STATE_COMPLETED"
    assert task["history"][: len(before["history"])] == before["history"]
    user_turns = [m for m in task["history"] if m["role"] == "ROLE_USER"]
    assert [m["parts"][0]["text"] for m in user_turns] == ["go", "long"]
    questions = [m for m in task["history"] if m["parts"][0].get("text") == "How long?"]
    assert len(questions) == 1  # the replay answered ask() from history, it did not ask again
    assert [texts(a) for a in task["artifacts"]] == [["partial"], ["resumed long"]]


async def _until_finished(rpc: Rpc, task_id: str) -> dict[str, Any]:
    with anyio.fail_after(30):
        for _ in range(10_000):
            task = await rpc.get(task_id)
            if state_of(task) not in ("TASK_STATE_WORKING", "TASK_STATE_SUBMITTED"):
                return task
            await anyio.sleep(0.05)  # another process: nothing to await but its answers
    raise AssertionError("unreachable")
