"""Replay after a SIGKILL: the handler run again sees the same ``ctx.caller`` (the callers
recorded with the task) and adds its id-less artifacts under the same ids, on SQLite and on
PostgreSQL.

``peerwire serve --auth`` runs ``replay_agent`` in a subprocess; one task is killed while
WORKING after its answer (``on_restart="resume"`` runs it again at start-up), another while
waiting for its answer (answered after the restart, the handler runs again from the start).
Before the fix, the re-run read "quote for ? ([])" until ``ask`` returned, and each id-less
artifact came again under a new id (three or four artifacts instead of two).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from .._rpc import Rpc, state_of, status_text, user_message
from .._services import PG_DSN, fresh_schema
from .test_restart import Served, serve

AGENTS = "tests.server.stores.replay_agent"
OPTIONS = ("--auth", f"{AGENTS}:AUTH", "--no-grpc")
EXPECTED = ["quote for Alice (['book'])", "booked 2 nights for Alice"]


def _texts(task: dict[str, Any]) -> list[str]:
    return ["".join(p.get("text", "") for p in a["parts"]) for a in task.get("artifacts", [])]


def _ids(task: dict[str, Any]) -> list[str]:
    return [a["artifactId"] for a in task.get("artifacts", [])]


async def _until(rpc: Rpc, task_id: str, wanted: str) -> dict[str, Any]:
    with anyio.fail_after(30):
        while True:
            task = await rpc.get(task_id)
            if state_of(task) == wanted:
                return task
            await anyio.sleep(0.05)  # another process: nothing to await but its answers


async def _kill_and_replay(tmp_path: Path, store: str | None) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    headers = {"A2A-Version": "1.0", "X-API-Key": "k-alice"}

    def served() -> Any:
        return serve(
            "agent", cwd=tmp_path, markers=markers, store=store, agents=AGENTS, options=OPTIONS
        )

    async with httpx.AsyncClient(trust_env=False, timeout=30, headers=headers) as http:
        process: Served
        async with served() as process:
            rpc = Rpc(http, process.url)
            working = await rpc.send(user_message("stall", metadata={"skill": "book"}))
            assert status_text(working) == "How many nights?"
            waiting = await rpc.send(user_message("book", metadata={"skill": "book"}))
            assert status_text(waiting) == "How many nights?"
            await rpc.send(user_message("2", taskId=working["id"]), returnImmediately=True)
            with anyio.fail_after(30):
                # Another process: nothing to await but the file it leaves.
                while not (markers / working["id"]).exists():  # noqa: ASYNC110
                    await anyio.sleep(0.05)
            before = await rpc.get(working["id"])
            assert state_of(before) == "TASK_STATE_WORKING"
            assert _texts(before) == EXPECTED
            waiting = await rpc.get(waiting["id"])
            assert _texts(waiting) == EXPECTED[:1]
            await process.kill()

        async with served() as process:
            rpc = Rpc(http, process.url)
            resumed = await _until(rpc, working["id"], "TASK_STATE_COMPLETED")
            answered = await rpc.send(user_message("2", taskId=waiting["id"]))
            answered = await _until(rpc, waiting["id"], "TASK_STATE_COMPLETED")

    # The re-run read the recorded caller from its first step, not an empty one, and its
    # artifacts replaced the first run's under the same ids.
    assert _texts(resumed) == EXPECTED
    assert _ids(resumed) == _ids(before)
    assert _texts(answered) == EXPECTED
    assert _ids(answered)[0] == _ids(waiting)[0]
    assert len(set(_ids(resumed) + _ids(answered))) == 4, "ids are per task and per step"


async def test_a_replay_after_sigkill_keeps_the_caller_and_the_artifact_ids_sqlite(
    tmp_path: Path,
) -> None:
    await _kill_and_replay(tmp_path, None)


@pytest.mark.services
async def test_a_replay_after_sigkill_keeps_the_caller_and_the_artifact_ids_postgres(
    tmp_path: Path,
) -> None:
    async with fresh_schema() as schema:
        await _kill_and_replay(tmp_path, f"{PG_DSN}?schema={schema}")
