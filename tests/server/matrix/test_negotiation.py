"""Service parameters on every binding (A2A spec §3.2.6): ``A2A-Version`` and ``A2A-Extensions``.

Raw calls (``Peer.wire``) send exactly the parameters under test, headers for the HTTP bindings
and metadata for gRPC, and decode the answer with the binding's own error converter: each
binding must refuse or accept the same requests with the same typed error. The client
transports are checked too, with their version header overridden or emptied.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import anyio
import pytest
import pytest_asyncio

from peerwire.client import IDEMPOTENT_SEND_EXTENSION, CallOptions, CardCache, Client
from peerwire.errors import (
    ExtensionSupportRequiredError,
    TaskNotFoundError,
    VersionNotSupportedError,
)
from peerwire.types import (
    AgentExtension,
    Binding,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SendMessageResponse,
    Task,
    TaskState,
)

from .._agents import workbench
from ._peers import BINDINGS, Peer, connecting, serving

pytestmark = pytest.mark.asyncio(loop_scope="module")

OPTIONAL = "https://example.test/ext/trace/v1"
REQUIRED = "https://example.test/ext/must/v1"
UNKNOWN = "https://unknown.example/ext"
HTTP_BINDINGS = (Binding.JSONRPC, Binding.HTTP_JSON)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def strict(http_server: str) -> AsyncIterator[str]:
    """A server that declares an optional extension and takes no request without a version."""
    agent, _ = workbench(extensions=[AgentExtension(uri=OPTIONAL, description="traces")])
    async with serving(agent, http=http_server) as url:
        yield url


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def demanding(http_server: str) -> AsyncIterator[str]:
    """A server whose card marks an extension as required."""
    agent, _ = workbench(
        extensions=[AgentExtension(uri=REQUIRED, required=True), AgentExtension(uri=OPTIONAL)]
    )
    async with serving(agent, http=http_server) as url:
        yield url


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def lenient(http_server: str) -> AsyncIterator[str]:
    agent, _ = workbench()
    async with serving(agent, lenient_version=True, http=http_server) as url:
        yield url


@pytest.fixture(params=BINDINGS)
def binding(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def echo_request(context_id: str, text: str = "x") -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            message_id=f"m-{uuid.uuid4()}",
            role=Role.USER,
            parts=[Part(text=text)],
            context_id=context_id,
            metadata={"skill": "echo"},
        )
    )


async def created_in(peer: Peer, context_id: str) -> list[Task]:
    return [task async for task in peer.client.list_tasks(context_id=context_id)]


def new_context(peer: Peer) -> str:
    return peer.key(f"negotiation-{uuid.uuid4().hex[:8]}")


# -- A2A-Version ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", [None, ""], ids=["missing", "empty"])
async def test_a_missing_version_is_refused(strict: str, binding: str, version: str | None) -> None:
    async with connecting(strict, binding) as peer:
        context_id = new_context(peer)
        answer = await peer.wire.call(
            "SendMessage", echo_request(context_id), SendMessageResponse, version=version
        )
        assert type(answer.error) is VersionNotSupportedError, answer
        assert "A2A-Version" in answer.error.message
        assert answer.error.metadata["supportedVersions"] == "1.0"
        assert await created_in(peer, context_id) == []


@pytest.mark.parametrize("version", ["0.3", "2.0", "1.1", "1", "one", "1.0.x"])
async def test_an_unsupported_version_is_refused(strict: str, binding: str, version: str) -> None:
    async with connecting(strict, binding) as peer:
        context_id = new_context(peer)
        answer = await peer.wire.call(
            "SendMessage", echo_request(context_id), SendMessageResponse, version=version
        )
        assert type(answer.error) is VersionNotSupportedError, answer
        assert repr(version) in answer.error.message
        assert answer.error.metadata == {"requestedVersion": version, "supportedVersions": "1.0"}
        assert await created_in(peer, context_id) == []


@pytest.mark.parametrize("version", ["1.0", "1.0.0", "1.0.3"])
async def test_1_0_with_or_without_a_patch_is_accepted(
    strict: str, binding: str, version: str
) -> None:
    async with connecting(strict, binding) as peer:
        answer = await peer.wire.call(
            "SendMessage",
            echo_request(new_context(peer), "v"),
            SendMessageResponse,
            version=version,
        )
        assert answer.error is None, answer
        assert answer.result.task.status.state is TaskState.COMPLETED
        ghost = await peer.wire.call("GetTask", GetTaskRequest(id="ghost"), Task, version=version)
        assert type(ghost.error) is TaskNotFoundError  # past the version check


@pytest.mark.parametrize("version", ["", "0.3"], ids=["empty", "0.3"])
async def test_each_client_transport_reports_the_refusal_typed(
    strict: str, binding: str, version: str
) -> None:
    async with connecting(strict, binding) as peer:
        with pytest.raises(VersionNotSupportedError):
            await peer.call(
                "GetTask", GetTaskRequest(id="ghost"), Task, headers={"A2A-Version": version}
            )
        context_id = new_context(peer)
        with pytest.raises(VersionNotSupportedError):
            await peer.call(
                "SendMessage",
                echo_request(context_id),
                SendMessageResponse,
                headers={"A2A-Version": version},
            )
        events = peer.transport.stream(
            "SendStreamingMessage",
            echo_request(context_id),
            CallOptions(headers={"A2A-Version": version}),
        )
        with pytest.raises(VersionNotSupportedError), anyio.fail_after(30):
            await anext(events)
        await events.aclose()  # type: ignore[attr-defined]
        assert await created_in(peer, context_id) == []


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
async def test_the_version_may_come_as_a_query_parameter(strict: str, binding: str) -> None:
    async with connecting(strict, binding) as peer:
        request = echo_request(new_context(peer), "q")
        answer = await peer.wire.call(
            "SendMessage", request, SendMessageResponse, version=None, query_version="1.0"
        )
        assert answer.error is None, answer
        assert answer.result.task.status.state is TaskState.COMPLETED
        answer = await peer.wire.call(
            "GetTask", GetTaskRequest(id="ghost"), Task, version=None, query_version="0.3"
        )
        assert type(answer.error) is VersionNotSupportedError


async def test_a_lenient_server_takes_a_missing_version_as_1_0(lenient: str, binding: str) -> None:
    async with connecting(lenient, binding) as peer:
        for version in (None, ""):
            answer = await peer.wire.call(
                "SendMessage",
                echo_request(new_context(peer), "l"),
                SendMessageResponse,
                version=version,
            )
            assert answer.error is None, answer
            assert answer.result.task.artifacts[0].text == "l"
        # Leniency covers the missing header only: an explicit 0.3 is still not spoken here.
        context_id = new_context(peer)
        answer = await peer.wire.call(
            "SendMessage", echo_request(context_id), SendMessageResponse, version="0.3"
        )
        assert type(answer.error) is VersionNotSupportedError
        assert await created_in(peer, context_id) == []


# -- A2A-Extensions ------------------------------------------------------------------------


async def test_activated_extensions_are_echoed(strict: str, binding: str) -> None:
    async with connecting(strict, binding) as peer:
        # The agent's own extension first, then peerwire's (idempotent sends).
        own, *peerwire = peer.client.card.capabilities.extensions
        assert own == AgentExtension(uri=OPTIONAL, description="traces")
        assert [e.uri for e in peerwire] == [IDEMPOTENT_SEND_EXTENSION]
        requested = [f"{UNKNOWN}, {OPTIONAL}"]
        answer = await peer.wire.call(
            "SendMessage",
            echo_request(new_context(peer)),
            SendMessageResponse,
            extensions=requested,
        )
        assert answer.error is None and answer.extensions == OPTIONAL, answer
        # Also on an error the dispatcher reports.
        ghost = await peer.wire.call(
            "GetTask", GetTaskRequest(id="ghost"), Task, extensions=requested
        )
        assert type(ghost.error) is TaskNotFoundError and ghost.extensions == OPTIONAL
        # Nothing activated, nothing echoed.
        for extensions in ([], [UNKNOWN], [",, ,"]):
            plain = await peer.wire.call(
                "GetTask", GetTaskRequest(id="ghost"), Task, extensions=extensions
            )
            assert type(plain.error) is TaskNotFoundError and plain.extensions is None, extensions


async def test_a_required_extension_must_be_requested(demanding: str, binding: str) -> None:
    async with connecting(demanding, binding) as peer:
        context_id = new_context(peer)
        with pytest.raises(ExtensionSupportRequiredError) as refused:
            await peer.client.send("x", skill="echo", context_id=context_id)
        assert REQUIRED in refused.value.message
        assert refused.value.metadata == {"extensions": REQUIRED}
        with pytest.raises(ExtensionSupportRequiredError):
            async for _ in peer.client.stream("x", skill="echo", context_id=context_id):
                raise AssertionError("a stream started")
        with pytest.raises(ExtensionSupportRequiredError):
            await peer.client.get_task("ghost")
        # Requested in two headers (metadata entries), with the optional one: both active.
        answer = await peer.wire.call(
            "SendMessage",
            echo_request(context_id),
            SendMessageResponse,
            extensions=[OPTIONAL, REQUIRED],
        )
        assert answer.error is None, answer
        assert answer.extensions == f"{OPTIONAL},{REQUIRED}"
        assert answer.result.task.status.state is TaskState.COMPLETED
    async with Client.connect(
        demanding, bindings=[binding], extensions=[REQUIRED], card_cache=CardCache()
    ) as client:
        tasks = [t async for t in client.list_tasks(context_id=context_id)]
        assert [t.id for t in tasks] == [answer.result.task.id], "the refusals created nothing"
        done = await client.send("y", skill="echo", context_id=context_id)
        assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED
