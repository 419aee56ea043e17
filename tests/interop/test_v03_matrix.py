"""The A2A 0.3 interop matrix's file and push cells, against the official SDKs' 0.3 releases.

{a2a-sdk 0.3, @a2a-js/sdk 0.3} x {JSON-RPC, HTTP+JSON, gRPC} x {their client -> peerwire,
peerwire's client -> their agent} x {file bytes in, file bytes out, push}. Send, stream and
resubscribe, in both directions, are test_v03_interop.py's.

* File bytes: the SDKs disagree on the 0.3 proto's ``fileWithBytes`` (a2a-sdk puts the base64
  *text* of the content there, @a2a-js the content; ``peerwire.compat.v03.files``). "In": the
  agent received exactly the content sent (each agent answers with a text part holding what
  it got, base64). "Out": the caller reads the file the agent answers with ("got:" and the
  content) from the send, a GetTask and a stream.
* The CLI: ``peerwire send --file`` to their agents, ``--v03-file-bytes`` as each needs.
* Push: their client registers a webhook served by the SDK's own web framework (Starlette,
  express) with its send and checks what arrives as a 0.3 notification; peerwire's client
  registers one with their agent and reads what arrives with ``peerwire.push``'s verifier.

Each SDK client run covers every scenario of its (SDK, binding) in one process; peerwire's
agent and each SDK's agent are started once for the module.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import pytest_asyncio

from peerwire import Agent, Client, Message
from peerwire.client import CardCache, PushConfig
from peerwire.push import verify_notification
from peerwire.server import PushSettings
from peerwire.testing import live_server
from peerwire.types import Part, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState
from tests.server._webhook import Receiver, receiving

from . import v03_harness as peers
from .v03_harness import BINDINGS, CHUNKS, SDKS, Line, V03Server, lines_of

pytestmark = [pytest.mark.interop, pytest.mark.asyncio(loop_scope="module")]

TIMEOUT_S = 30.0
CONTENT = b"\x00\x01\xfe\xff peerwire \x80"  # FILE_B64 of the peers' clients
FILE_B64 = base64.b64encode(CONTENT).decode()
GOT = b"got:" + CONTENT  # the file every agent answers with
PUSH_TOKEN = "push-token-0.3"  # the peers' clients register this one
CELLS = ("files_in", "files_out", "push")
TERMINAL = ("completed", "failed", "canceled", "rejected")


def mirror_agent() -> Agent:
    """peerwire's side: a file is answered as the SDK agents answer it; text is defined."""
    agent = Agent("Matrix Agent", description="The 0.3 matrix's file and push cells")

    @agent.skill(
        input_modes=["text/plain", "application/octet-stream"],
        output_modes=["text/plain", "application/octet-stream"],
    )
    async def mirror(message: Message) -> list[Part]:
        """A file: a text part with its content (base64), then a file of "got:" and it."""
        raw = [p.raw for p in message.parts if p.raw is not None]
        if not raw:
            return [Part(text="".join(CHUNKS))]
        return [
            Part(text=base64.b64encode(raw[0]).decode()),
            Part(raw=b"got:" + raw[0], media_type="application/octet-stream", filename="out.bin"),
        ]

    return agent


# --- their clients drive peerwire --------------------------------------------------------------


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def peerwire_url() -> AsyncIterator[str]:
    options: dict[str, Any] = {"push": PushSettings(allow=("127.0.0.1",)), "shutdown_grace": 1.0}
    async with live_server(mirror_agent(), grpc_port=0, **options) as url:
        yield url


_runs: dict[tuple[str, str], list[Line]] = {}


async def their_lines(sdk: str, binding: str, url: str) -> list[Line]:
    """The lines of the SDK client's files and push scenarios, one run per (SDK, binding)."""
    key = (sdk, binding)
    if key not in _runs:
        # A subprocess: waiting in a worker thread keeps this loop (our server's) serving it.
        _runs[key] = await anyio.to_thread.run_sync(
            lambda: peers.run_client(sdk, url, binding, "files,push")
        )
    return _runs[key]


def parts_of(task: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for a in task.get("artifacts", ()) for p in a.get("parts", ())]


def their_file(parts: list[dict[str, Any]]) -> bytes:
    [file] = [p["file"] for p in parts if p.get("kind") == "file"]
    return base64.b64decode(file["bytes"])


def their_text(parts: list[dict[str, Any]]) -> str:
    return "".join(p.get("text", "") for p in parts if p.get("kind") == "text")


def check_files_in(lines: list[Line]) -> None:
    [sent] = lines_of(lines, "files", "send")
    assert sent["result"]["status"]["state"] == "completed", sent
    assert their_text(parts_of(sent["result"])) == FILE_B64  # what peerwire's agent received


def check_files_out(lines: list[Line]) -> None:
    [sent] = lines_of(lines, "files", "send")
    assert their_file(parts_of(sent["result"])) == GOT
    [got] = lines_of(lines, "files", "get")
    assert got["task"]["id"] == sent["result"]["id"]
    assert their_file(parts_of(got["task"])) == GOT
    events = [line["event"] for line in lines_of(lines, "files", "stream")]
    updates = [e["artifact"]["parts"] for e in events if e.get("kind") == "artifact-update"]
    assert [their_file(parts) for parts in updates] == [GOT]
    assert events[-1]["kind"] == "status-update" and events[-1]["status"]["state"] == "completed"


def check_their_push(lines: list[Line]) -> None:
    [sent] = lines_of(lines, "push", "send")
    task_id = sent["result"]["id"]
    notifications = [line["notification"] for line in lines_of(lines, "push", "notification")]
    assert notifications, "no notification arrived"
    for notification in notifications:
        # As 0.3 receivers read them: the bare 0.3 Task, application/json, no A2A-Version.
        assert notification["contentType"].startswith("application/json"), notification
        assert notification["token"] == PUSH_TOKEN
        assert notification["a2aVersion"] is None
        task = notification["task"]
        assert task["kind"] == "task" and task["id"] == task_id
    last = notifications[-1]["task"]
    assert last["status"]["state"] == "completed"
    assert their_text(parts_of(last)) == "".join(CHUNKS)


CHECKS = {"files_in": check_files_in, "files_out": check_files_out, "push": check_their_push}


@pytest.mark.parametrize("cell", CELLS)
@pytest.mark.parametrize("binding", list(BINDINGS))
@pytest.mark.parametrize("sdk", SDKS)
async def test_their_client_drives_peerwire(
    sdk: str, binding: str, cell: str, peerwire_url: str
) -> None:
    CHECKS[cell](await their_lines(sdk, binding, peerwire_url))


# --- peerwire drives their agents --------------------------------------------------------------


@pytest.fixture(scope="module", params=SDKS)
def their_agent(request: pytest.FixtureRequest) -> Iterator[tuple[str, V03Server]]:
    with peers.start_server(request.param) as server:
        yield request.param, server


def file_form(sdk: str) -> str:
    # No card field tells the SDKs apart: a caller of an a2a-sdk agent says which form it
    # expects (JSON-RPC is not concerned; the setting is per connection).
    return "base64" if sdk == "a2a-sdk" else "auto"


async def connect(sdk: str, server: V03Server, binding: str) -> Client:
    # A cache of its own: another module's server may later get this port.
    return await Client.connect(
        server.base_url,
        bindings=[BINDINGS[binding]],
        timeout=TIMEOUT_S,
        card_cache=CardCache(),
        v03_file_bytes=file_form(sdk),
    )


def a_file() -> Part:
    return Part(raw=CONTENT, media_type="application/octet-stream", filename="in.bin")


def our_text(task: Task) -> str:
    return "".join(p.text or "" for a in task.artifacts for p in a.parts)


def our_file(parts: list[Part]) -> bytes | None:
    [raw] = [p.raw for p in parts if p.raw is not None]
    return raw


async def sent_file(client: Client) -> Task:
    task = await client.send(a_file())
    assert isinstance(task, Task), task
    assert task.status.state is TaskState.COMPLETED, task.status
    return task


@pytest.mark.parametrize("binding", list(BINDINGS))
async def test_we_send_their_agent_file_bytes(
    their_agent: tuple[str, V03Server], binding: str
) -> None:
    sdk, server = their_agent
    async with await connect(sdk, server, binding) as client:
        assert client.interface.protocol_version == "0.3"
        task = await sent_file(client)
        # Their agent answers with the bytes as it read them: the content's base64.
        assert our_text(task) == FILE_B64


@pytest.mark.parametrize("binding", list(BINDINGS))
async def test_we_read_their_agents_file_bytes(
    their_agent: tuple[str, V03Server], binding: str
) -> None:
    sdk, server = their_agent
    async with await connect(sdk, server, binding) as client:
        task = await sent_file(client)
        assert our_file([p for a in task.artifacts for p in a.parts]) == GOT
        got = await client.get_task(task.id)
        assert our_file([p for a in got.artifacts for p in a.parts]) == GOT
        streamed = [
            e.artifact.parts
            async for e in client.stream(a_file())
            if isinstance(e, TaskArtifactUpdateEvent)
        ]
        assert [our_file(parts) for parts in streamed] == [GOT]


@pytest.mark.parametrize("binding", list(BINDINGS))
async def test_their_agent_pushes_to_our_receiver(
    their_agent: tuple[str, V03Server], binding: str
) -> None:
    sdk, server = their_agent
    async with receiving(Receiver()) as hook, await connect(sdk, server, binding) as client:
        push = PushConfig(url=f"{hook.url}/{sdk}/{binding}", token=PUSH_TOKEN)
        task = await client.send("record", push=push)
        assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED

        def finished(r: Receiver) -> bool:
            return any(n.json.get("status", {}).get("state") == "completed" for n in r.received)

        await hook.until(finished)
        tasks = []
        for received in list(hook.received):
            assert received.headers["content-type"].startswith("application/json")
            assert "a2a-version" not in received.headers
            notification = await verify_notification(
                received.headers, received.body, token=PUSH_TOKEN, expected_task_ids={task.id}
            )
            assert isinstance(notification, StreamResponse) and notification.task is not None
            tasks.append(notification.task)
        [done] = [t for t in tasks if t.status.state is TaskState.COMPLETED][-1:]
        assert our_text(done) == "".join(CHUNKS)


@pytest.mark.parametrize("binding", list(BINDINGS))
async def test_the_cli_sends_their_agent_a_file(
    their_agent: tuple[str, V03Server], binding: str, tmp_path: Path
) -> None:
    sdk, server = their_agent
    (tmp_path / "in.bin").write_bytes(CONTENT)
    command = [str(Path(sys.executable).with_name("peerwire")), "send", server.base_url, ""]
    command += ["--file", str(tmp_path / "in.bin"), "--binding", binding, "--json"]
    command += ["--v03-file-bytes", file_form(sdk)]
    with anyio.fail_after(TIMEOUT_S):
        ran = await anyio.run_process(command, check=False)
    assert ran.returncode == 0, ran.stderr.decode()
    task = json.loads(ran.stdout)["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    parts = [p for a in task["artifacts"] for p in a["parts"]]
    assert [p["text"] for p in parts if "text" in p] == [FILE_B64]
    assert [base64.b64decode(p["raw"]) for p in parts if "raw" in p] == [GOT]
