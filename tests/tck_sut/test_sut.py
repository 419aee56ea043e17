"""The TCK's system under test keeps doing what the TCK's scenarios ask for (README.md beside
this file says how to run the TCK itself against it): real servers, the public client."""

from __future__ import annotations

import asyncio
import re
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from peerwire import Message, Part, Role, Task, TaskState
from peerwire.client import CardCache, Client
from peerwire.errors import ContentTypeNotSupportedError
from peerwire.server import PushSettings
from peerwire.server.ssrf import UnresolvableHost
from peerwire.testing import live_server
from peerwire.types import Binding, TaskArtifactUpdateEvent, TaskStatusUpdateEvent

from .agent import PLACEHOLDER_ADDRESS, WEBHOOK_HOSTS, build_agent, resolve

pytestmark = pytest.mark.asyncio(loop_scope="module")

BINDINGS = pytest.mark.parametrize(
    "binding", [Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC], ids=["jsonrpc", "rest", "grpc"]
)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def sut() -> AsyncIterator[str]:
    push = PushSettings(allow=WEBHOOK_HOSTS, resolver=resolve)
    async with live_server(build_agent(), grpc_port=0, push=push, shutdown_grace=1.0) as url:
        yield url


def message(prefix: str, text: str = "TCK", task_id: str = "") -> Message:
    # Unique ids: peerwire's client activates idempotent sends, which a repeated id would hit.
    return Message(
        message_id=f"{prefix}-{uuid.uuid4()}",
        role=Role.USER,
        parts=[Part(text=text)],
        task_id=task_id,
    )


def connect(url: str, binding: str) -> Client:
    return Client.connect(url, bindings=[binding], card_cache=CardCache())


@BINDINGS
async def test_the_scenarios_by_prefix(sut: str, binding: str) -> None:
    async with connect(sut, binding) as client:
        done = await client.send(message("tck-complete-task"))
        assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED
        assert done.status.message is not None and done.status.message.text == "Hello from TCK"
        reply = await client.send(message("tck-message-response"))
        assert isinstance(reply, Message) and reply.text == "Direct message response"
        url = await client.send(message("tck-artifact-file-url"))
        assert isinstance(url, Task)
        assert url.artifacts[0].parts[0].url == "https://example.com/output.txt"
        raw = await client.send(message("tck-artifact-file"))
        assert isinstance(raw, Task) and raw.artifacts[0].parts[0].raw == b"tck"
        data = await client.send(message("tck-artifact-data"))
        assert isinstance(data, Task)
        assert data.artifacts[0].parts[0].data == {"key": "value", "count": 42}
        rejected = await client.send(message("tck-reject-task"))
        assert isinstance(rejected, Task) and rejected.status.state is TaskState.REJECTED


@BINDINGS
async def test_input_required_until_a_follow_up_completes(sut: str, binding: str) -> None:
    async with connect(sut, binding) as client:
        task = await client.send(message("tck-input-required"))
        assert isinstance(task, Task) and task.status.state is TaskState.INPUT_REQUIRED
        again = await client.send(message("tck-input-required", "more", task.id))
        assert isinstance(again, Task) and again.status.state is TaskState.INPUT_REQUIRED
        done = await client.send(message("tck-complete-task", "done", task.id))
        assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED
        assert [m.text for m in done.history if m.role is Role.USER] == ["TCK", "more", "done"]


@BINDINGS
async def test_a_stream_goes_through_working_to_completed(sut: str, binding: str) -> None:
    async with connect(sut, binding) as client:
        states = []
        chunks = []
        async for event in client.stream(message("tck-stream-artifact-chunked")):
            if isinstance(event, TaskStatusUpdateEvent):
                states.append(event.status.state)
            if isinstance(event, TaskArtifactUpdateEvent):
                chunks.append(event.artifact.parts[0].text)
        assert states[-1] is TaskState.COMPLETED
        assert chunks == ["chunk-1 ", "chunk-2"]


async def test_the_unsupported_media_type_of_core_send_003_is_refused(sut: str) -> None:
    part = Part(raw=b"tck", media_type="application/x-unsupported-tck-type")
    async with connect(sut, Binding.JSONRPC) as client:
        with pytest.raises(ContentTypeNotSupportedError):
            await client.send(Message(message_id="tck-send-003", role=Role.USER, parts=[part]))


async def test_the_placeholder_webhook_host_resolves_without_dns() -> None:
    addresses = await resolve("example.com", 443)
    assert addresses, "the system's addresses, or the placeholder's without DNS"
    with pytest.raises(UnresolvableHost):
        await resolve("peerwire-tck.invalid", 443)
    assert PLACEHOLDER_ADDRESS not in await resolve("localhost", 80)


async def test_the_sut_runs_as_its_readme_says() -> None:
    script = Path(__file__).with_name("agent.py")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        "--port",
        "0",
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stderr is not None
        url = None
        async with asyncio.timeout(30):
            while url is None:
                line = (await process.stderr.readline()).decode()
                assert line, "the SUT exited before it served"
                found = re.search(r"serving 'peerwire TCK SUT' on (http://\S+)", line)
                url = found.group(1) if found else None
        async with httpx.AsyncClient() as http:
            card = (await http.get(f"{url}/.well-known/agent-card.json")).json()
        assert [i["protocolBinding"] for i in card["supportedInterfaces"]] == [
            "JSONRPC",
            "HTTP+JSON",
            "GRPC",
        ]
        assert card["capabilities"]["pushNotifications"] is True
    finally:
        process.terminate()
        await process.wait()
