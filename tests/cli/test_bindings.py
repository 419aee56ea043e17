"""``peerwire send --binding jsonrpc|rest|grpc URL record --json`` against the Glossary Agent,
served with all three bindings: each exits 0 and prints the same Task JSON, ids and
timestamps aside. Once in process per binding, and once as a real subprocess.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from peerwire.types import SendMessageResponse, TaskState, decode, from_builtins, to_builtins

from .conftest import CLI_TIMEOUT, invoke

pytestmark = pytest.mark.asyncio(loop_scope="module")

REPO = Path(__file__).resolve().parents[2]
PEERWIRE = str(Path(sys.executable).with_name("peerwire"))
BINDINGS = ("jsonrpc", "rest", "grpc")
RECORD = "A record is a final class that is a transparent carrier for its components."
SUBPROCESS_TIMEOUT_S = 60

_IDS = frozenset({"id", "taskId", "contextId", "messageId", "artifactId"})


def without_ids(printed: str) -> SendMessageResponse:
    """The printed response with ids and timestamps replaced by placeholders."""
    names: dict[str, str] = {}

    def walk(item: Any, key: str = "") -> Any:
        if isinstance(item, dict):
            return {k: walk(v, k) for k, v in item.items()}
        if isinstance(item, list):
            return [walk(v) for v in item]
        if key in _IDS and isinstance(item, str):
            return names.setdefault(item, f"id-{len(names) + 1}")
        if key == "timestamp":
            return "2000-01-01T00:00:00.000Z"
        return item

    response = decode(printed, SendMessageResponse)
    return from_builtins(walk(to_builtins(response)), SendMessageResponse)


async def test_send_prints_the_same_task_on_every_binding(glossary_url: str) -> None:
    printed = {}
    for binding in BINDINGS:
        ran = await invoke(
            "send", "--binding", binding, glossary_url, "record", "--json", "--timeout", CLI_TIMEOUT
        )
        assert ran.code == 0, (binding, ran.err)
        assert ran.err == ""
        printed[binding] = ran.out
    responses = {binding: decode(out, SendMessageResponse) for binding, out in printed.items()}
    for binding, response in responses.items():
        task = response.task
        assert task is not None, binding
        assert task.status.state is TaskState.COMPLETED
        assert [a.text for a in task.artifacts] == [RECORD]
    # Three different tasks, one answer.
    assert len({r.task.id for r in responses.values() if r.task is not None}) == 3
    reference = without_ids(printed["jsonrpc"])
    for binding in ("rest", "grpc"):
        assert without_ids(printed[binding]) == reference, binding


async def test_send_as_a_subprocess_over_grpc(glossary_url: str) -> None:
    in_process = await invoke("send", "--binding", "jsonrpc", glossary_url, "record", "--json")
    assert in_process.code == 0, in_process.err
    with anyio.fail_after(SUBPROCESS_TIMEOUT_S):
        # Its own event loop, in its own process: the server keeps serving in ours meanwhile.
        done = await anyio.run_process(
            [PEERWIRE, "send", "--binding", "grpc", glossary_url, "record", "--json"],
            cwd=REPO,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr == b""
    assert without_ids(done.stdout.decode()) == without_ids(in_process.out)
