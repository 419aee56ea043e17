"""Continuing an INPUT_REQUIRED task on the official SDKs' 1.x agents, on every binding.

Their continuation streams differ from peerwire's: @a2a-js/sdk 1.3.0 begins with the task as it
was before it read the answer (still INPUT_REQUIRED, the status's old timestamp), then the
artifact and COMPLETED; a2a-sdk 1.3.0 (the Glossary Agent, written as its samples are) begins
with a WORKING status update, not the task. The client and the CLI read such a stream to the
task's real outcome (``Settling``) instead of stopping at its first event.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import anyio
import pytest

from peerwire import Client
from peerwire.client import CardCache
from peerwire.types import Binding, Task, TaskState, TaskStatusUpdateEvent

from .js_harness import start_js_server
from .sdk_harness import SdkServer

pytestmark = pytest.mark.interop

PEERWIRE = str(Path(sys.executable).with_name("peerwire"))
TIMEOUT_S = 30.0
BINDINGS = [Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC]
CLI_BINDINGS = {Binding.JSONRPC: "jsonrpc", Binding.HTTP_JSON: "rest", Binding.GRPC: "grpc"}


class Peer(NamedTuple):
    base_url: str
    ask: str  # the message that makes its agent ask for input
    answer: str  # the follow-up that completes the task
    result: str  # the completed task's artifact text


@pytest.fixture(scope="module")
def js_peer() -> Iterator[Peer]:
    with start_js_server() as server:
        yield Peer(server.base_url, "ask", "records", "answer: records")


@pytest.fixture(scope="module")
def sdk_peer(sdk_glossary_server: SdkServer) -> Peer:
    definition = "A record is a final class that is a transparent carrier for its components."
    return Peer(sdk_glossary_server.base_url, "", "record", definition)


@pytest.fixture(params=["js", "sdk"])
def peer(request: pytest.FixtureRequest) -> Peer:
    fixture = "js_peer" if request.param == "js" else "sdk_peer"
    return request.getfixturevalue(fixture)  # type: ignore[no-any-return]


async def connect(peer: Peer, binding: str) -> Client:
    return await Client.connect(
        peer.base_url, bindings=[binding], timeout=TIMEOUT_S, card_cache=CardCache()
    )


async def asking(client: Client, peer: Peer) -> Task:
    task = await client.send(peer.ask)
    assert isinstance(task, Task), task
    assert task.status.state is TaskState.INPUT_REQUIRED
    return task


def text_of(task: Task) -> str:
    return "".join(a.text for a in task.artifacts)


@pytest.mark.parametrize("binding", BINDINGS)
async def test_send_continues_to_the_outcome(peer: Peer, binding: str) -> None:
    async with await connect(peer, binding) as client:
        task = await asking(client, peer)
        done = await client.send(peer.answer, task_id=task.id)
    assert isinstance(done, Task), done
    assert done.status.state is TaskState.COMPLETED
    assert text_of(done) == peer.result


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_continued_stream_settles_at_the_outcome(peer: Peer, binding: str) -> None:
    async with await connect(peer, binding) as client:
        task = await asking(client, peer)
        seen = []
        # cancel_on_exit: leaving at a state the answer did not lead to would cancel the task.
        events = client.stream(peer.answer, task_id=task.id, cancel_on_exit=True)
        with anyio.fail_after(TIMEOUT_S):
            async for payload in events:
                seen.append(payload)
        after = await client.get_task(task.id)
    states = [p.status.state for p in seen if isinstance(p, Task | TaskStatusUpdateEvent)]
    assert states[-1] is TaskState.COMPLETED, states
    assert after.status.state is TaskState.COMPLETED
    assert text_of(after) == peer.result
    first = seen[0]
    if peer.ask == "ask":  # @a2a-js: the snapshot from before it read the answer comes first
        assert isinstance(first, Task) and first.status.state is TaskState.INPUT_REQUIRED
        assert states == [TaskState.INPUT_REQUIRED, TaskState.WORKING, TaskState.COMPLETED]
    else:  # a2a-sdk: the stream begins with a status update of the continued task
        assert isinstance(first, TaskStatusUpdateEvent) and first.task_id == task.id


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PEERWIRE, *args], capture_output=True, text=True, timeout=TIMEOUT_S * 2, check=False
    )


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("stream", [False, True], ids=["wait", "stream"])
async def test_the_cli_continues_a_task(peer: Peer, binding: str, stream: bool) -> None:
    async with await connect(peer, binding) as client:
        task = await asking(client, peer)
    args = ["send", peer.base_url, peer.answer, "--task", task.id, "--json"]
    args += ["--binding", CLI_BINDINGS[binding]] + (["--stream"] if stream else [])
    ran = await anyio.to_thread.run_sync(lambda: cli(*args))
    assert ran.returncode == 0, (ran.returncode, ran.stdout, ran.stderr)
    lines = [json.loads(line) for line in ran.stdout.splitlines() if line.strip()]
    if stream:
        assert lines[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED", lines
    else:
        (answer,) = lines
        assert answer["task"]["status"]["state"] == "TASK_STATE_COMPLETED", answer
        assert "".join(p["text"] for p in answer["task"]["artifacts"][0]["parts"]) == peer.result
