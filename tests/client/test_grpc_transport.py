"""The gRPC client transport on its own: addresses, metadata, timeouts and failures.

What it talks to here is a small raw grpc.aio server on 127.0.0.1 playing a peer that
misbehaves on purpose (answers garbage, never answers, refuses); the transport against a real
peerwire server is covered by tests/server/test_grpc_server.py, and against a2a-sdk by the
interop suite.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import grpc
import grpc.aio
import httpx
import pytest
from google.rpc import status_pb2

from peerwire import Agent, Client
from peerwire.bindings.grpc.convert import to_bytes
from peerwire.bindings.grpc.status import DETAILS_KEY, encode_status
from peerwire.client import IDEMPOTENT_SEND_EXTENSION, _registry
from peerwire.client.transports.base import CallOptions, TransportSettings
from peerwire.client.transports.grpc import GrpcTransport, create_transport, grpc_target
from peerwire.errors import (
    A2AConnectionError,
    A2ATimeoutError,
    InvalidRequestError,
    InvalidResponseError,
    MethodNotFoundError,
    ServerBusyError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from peerwire.testing import live_server
from peerwire.types import (
    AgentInterface,
    Binding,
    GetTaskRequest,
    Part,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
    TaskStatus,
)

TIMEOUT_S = 30.0
SERVICE = "lf.a2a.v1.A2AService"
TASK = Task(id="t-1", context_id="c-1", status=TaskStatus(state=TaskState.WORKING))

Behaviour = Callable[[bytes, Any], Awaitable[Any]]


@dataclass
class Peer:
    """What the fake peer saw, and events a test can await."""

    url: str
    metadata: list[dict[str, str]] = field(default_factory=list)
    # Every call's metadata entry by entry, as it arrived (a dict would hide a repeated key).
    entries: list[tuple[tuple[str, str | bytes], ...]] = field(default_factory=list)
    requests: list[bytes] = field(default_factory=list)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    waiting: asyncio.Event = field(default_factory=asyncio.Event)


class MetadataRecorder(grpc.aio.ServerInterceptor):
    """Keeps each call's invocation metadata as gRPC received it, before any handler runs."""

    def __init__(self, entries: list[tuple[tuple[str, str | bytes], ...]]) -> None:
        self.entries = entries

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        self.entries.append(tuple(handler_call_details.invocation_metadata or ()))
        return await continuation(handler_call_details)


@contextlib.asynccontextmanager
async def fake_peer(
    unary: Behaviour | None = None, streaming: Behaviour | None = None
) -> AsyncIterator[Peer]:
    """A grpc.aio server answering GetTask with ``unary`` and SubscribeToTask with ``streaming``
    (an async generator of raw bytes)."""
    entries: list[tuple[tuple[str, str | bytes], ...]] = []
    server = grpc.aio.server(interceptors=[MetadataRecorder(entries)])
    port = server.add_insecure_port("127.0.0.1:0")
    peer = Peer(url=f"127.0.0.1:{port}", entries=entries)

    def record(payload: bytes, context: Any) -> None:
        peer.requests.append(payload)
        peer.metadata.append({k: v for k, v in context.invocation_metadata() if isinstance(v, str)})

    async def get_task(payload: bytes, context: Any) -> bytes:
        record(payload, context)
        assert unary is not None
        result: bytes = await unary(payload, context)
        return result

    async def subscribe(payload: bytes, context: Any) -> AsyncIterator[bytes]:
        record(payload, context)
        assert streaming is not None
        try:
            async for item in streaming(payload, context):  # type: ignore[attr-defined]
                yield item
        except asyncio.CancelledError:
            # How grpc.aio tells a handler its client cancelled (context.cancelled() stays False).
            peer.cancelled.set()
            raise

    handlers = {
        "GetTask": grpc.unary_unary_rpc_method_handler(get_task),
        "SubscribeToTask": grpc.unary_stream_rpc_method_handler(subscribe),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    await server.start()
    try:
        yield peer
    finally:
        await server.stop(0)


@contextlib.asynccontextmanager
async def transport(url: str, **options: Any) -> AsyncIterator[GrpcTransport]:
    client = GrpcTransport(url, **options)
    try:
        yield client
    finally:
        await client.aclose()


async def answer_task(payload: bytes, context: Any) -> bytes:
    return to_bytes(TASK)


async def abort_with(context: Any, error: Any, code: grpc.StatusCode | None = None) -> None:
    number, message, details = encode_status(error)
    if code is not None:  # a status other than ours, its details saying the same
        proto = status_pb2.Status.FromString(details)
        proto.code = number = code.value[0]
        details = proto.SerializeToString()
    status = next(c for c in grpc.StatusCode if c.value[0] == number)
    await context.abort(status, message, trailing_metadata=((DETAILS_KEY, details),))


NO_OPTIONS = CallOptions()


def get_task(client: GrpcTransport, options: CallOptions = NO_OPTIONS) -> Awaitable[Task]:
    return client.call("GetTask", GetTaskRequest(id="t-1"), Task, options)


# --- addresses ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "target", "secure"),
    [
        ("127.0.0.1:50051", "127.0.0.1:50051", None),
        ("agent.example:443", "agent.example:443", None),
        ("https://agent.example/a2a/grpc", "agent.example:443", True),
        ("https://agent.example:8443", "agent.example:8443", True),
        ("grpcs://agent.example:9000/", "agent.example:9000", True),
        ("http://127.0.0.1:50051", "127.0.0.1:50051", False),
        ("grpc://[::1]:50051", "[::1]:50051", False),
        ("HTTP://localhost", "localhost:80", False),
    ],
)
def test_interface_urls_become_dial_targets(url: str, target: str, secure: bool | None) -> None:
    assert grpc_target(url) == (target, secure)


@pytest.mark.parametrize("url", ["ftp://host:1", "https://", ""])
def test_unusable_urls_are_refused(url: str) -> None:
    with pytest.raises(ValueError):
        grpc_target(url)


@pytest.mark.parametrize(
    ("url", "secure"),
    [
        ("127.0.0.1:1", False),
        ("localhost:1", False),
        ("[::1]:1", False),
        ("agent.example:443", True),
        ("10.1.2.3:50051", True),
        ("http://agent.example:80", False),
        ("https://127.0.0.1:1", True),
    ],
)
def test_tls_unless_loopback_or_the_scheme_says(url: str, secure: bool) -> None:
    assert GrpcTransport(url).secure is secure
    assert GrpcTransport(url, secure=not secure).secure is (not secure)


# --- calls --------------------------------------------------------------------------------------


async def test_metadata_carries_version_extensions_and_headers() -> None:
    async with fake_peer(unary=answer_task) as peer, transport(peer.url) as client:
        options = CallOptions(
            extensions=("urn:a", "urn:b"), headers={"Authorization": "Bearer tok", "X-Trace": "1"}
        )
        assert await get_task(client, options) == TASK
        [seen] = peer.metadata
        assert seen["a2a-version"] == "1.0"
        assert seen["a2a-extensions"] == "urn:a,urn:b"
        assert seen["authorization"] == "Bearer tok"
        assert seen["x-trace"] == "1"
        assert peer.requests == [to_bytes(GetTaskRequest(id="t-1"))]


def keys_of(entries: tuple[tuple[str, str | bytes], ...]) -> list[str]:
    return sorted(key for key, _ in entries if not key.startswith(("grpc-", "user-agent")))


async def test_each_key_is_sent_once_whatever_the_headers_repeat() -> None:
    # Node's gRPC server joins a repeated key into one value: "1.0, 1.0" is no version it speaks.
    async with fake_peer(unary=answer_task) as peer, transport(peer.url) as client:
        options = CallOptions(
            extensions=("urn:a",),
            headers={
                "A2A-Version": "1.0",
                "a2a-version": "0.3",
                "A2A-Extensions": "urn:other",
                "Authorization": "Bearer old",
                "authorization": "Bearer new",
            },
        )
        assert await get_task(client, options) == TASK
        [entries] = peer.entries
        assert keys_of(entries) == ["a2a-extensions", "a2a-version", "authorization"]
        seen = dict(entries)
        assert seen["a2a-version"] == "0.3"  # the caller's header, once: the last alike
        assert seen["a2a-extensions"] == "urn:a"
        assert seen["authorization"] == "Bearer new"  # the last of the names alike


async def test_a_client_sends_one_a2a_version_entry(agent: Agent) -> None:
    # The Client gives every transport an A2A-Version header; over gRPC it must not repeat.
    async with (
        live_server(agent) as url,
        fake_peer(unary=answer_task) as peer,
        Client.connect(
            url,
            transport=GrpcTransport(peer.url),
            headers={"X-Trace": "7"},
            extensions=["urn:a", "urn:b"],
        ) as client,
    ):
        assert await client.get_task("t-1") == TASK
        [entries] = peer.entries
        assert keys_of(entries) == ["a2a-extensions", "a2a-version", "x-trace"]
        assert [v for k, v in entries if k == "a2a-version"] == ["1.0"]
        # The caller's, then idempotent sends, which the (peerwire) card offers.
        extensions = f"urn:a,urn:b,{IDEMPOTENT_SEND_EXTENSION}"
        assert [v for k, v in entries if k == "a2a-extensions"] == [extensions]


async def test_scheme_in_the_interface_url_is_stripped() -> None:
    async with (
        fake_peer(unary=answer_task) as peer,
        transport(f"http://{peer.url}/a2a/grpc") as client,
    ):
        assert client.url == peer.url
        assert await get_task(client) == TASK


async def test_a2a_errors_decode_by_reason() -> None:
    async def not_found(payload: bytes, context: Any) -> bytes:
        await abort_with(context, TaskNotFoundError("gone", metadata={"taskId": "t-1"}))
        return b""

    async with fake_peer(unary=not_found) as peer, transport(peer.url) as client:
        with pytest.raises(TaskNotFoundError) as exc:
            await get_task(client)
        assert (exc.value.message, exc.value.metadata) == ("gone", {"taskId": "t-1"})


async def test_legacy_status_with_a_reason_is_classified_by_the_reason() -> None:
    async def legacy(payload: bytes, context: Any) -> bytes:
        # 1.0.0 servers sent UNIMPLEMENTED here (the 1.0.0 table).
        error = UnsupportedOperationError("old server")
        await abort_with(context, error, grpc.StatusCode.UNIMPLEMENTED)
        return b""

    async with fake_peer(unary=legacy) as peer, transport(peer.url) as client:
        with pytest.raises(UnsupportedOperationError):
            await get_task(client)


async def test_busy_server_is_not_mistaken_for_an_unreachable_one() -> None:
    async def busy(payload: bytes, context: Any) -> bytes:
        await abort_with(context, ServerBusyError())
        return b""

    async def down(payload: bytes, context: Any) -> bytes:
        await context.abort(grpc.StatusCode.UNAVAILABLE, "draining")
        return b""

    async with fake_peer(unary=busy) as peer, transport(peer.url) as client:
        with pytest.raises(ServerBusyError):
            await get_task(client)
    async with fake_peer(unary=down) as peer, transport(peer.url) as client:
        with pytest.raises(A2AConnectionError, match="draining"):
            await get_task(client)


async def test_garbage_answers_are_invalid_responses() -> None:
    async def garbage(payload: bytes, context: Any) -> bytes:
        return b"\xff\xff"

    async def not_a_task(payload: bytes, context: Any) -> bytes:
        return b""  # a Task without id or status

    for behaviour in (garbage, not_a_task):
        async with fake_peer(unary=behaviour) as peer, transport(peer.url) as client:
            with pytest.raises(InvalidResponseError, match="not a valid Task") as exc:
                await get_task(client)
            assert exc.value.url == peer.url


async def test_a_request_past_the_servers_limit_is_a_request_error(agent: Agent) -> None:
    limit = 64 * 1024
    big = Part(raw=b"x" * (2 * limit), filename="big.bin", media_type="application/octet-stream")
    async with (
        live_server(agent, grpc_port=0, max_body_bytes=limit) as url,
        Client.connect(url, bindings=[Binding.GRPC]) as client,
    ):
        with pytest.raises(InvalidRequestError) as caught:
            await client.send([Part(text="here"), big], skill="files")
        assert f"larger than the {limit} bytes the server accepts" in caught.value.message
        with pytest.raises(InvalidRequestError):
            async for _ in client.stream([Part(text="here"), big], skill="files"):
                pass


async def test_an_answer_past_the_receive_limit_is_an_invalid_response() -> None:
    large = Task(
        id="t-1",
        context_id="c-1",
        status=TaskStatus(state=TaskState.WORKING),
        metadata={"padding": "x" * 4096},
    )

    async def answer_large(payload: bytes, context: Any) -> bytes:
        return to_bytes(large)

    async with (
        fake_peer(unary=answer_large) as peer,
        transport(peer.url, max_receive_bytes=1024) as client,
    ):
        with pytest.raises(InvalidResponseError, match=r"max_receive_bytes \(1024 bytes\)"):
            await get_task(client)


async def test_unary_timeout_is_a2a_timeout() -> None:
    async def never(payload: bytes, context: Any) -> bytes:
        peer_waiting.set()
        await asyncio.Event().wait()
        return b""

    peer_waiting = asyncio.Event()
    async with fake_peer(unary=never) as peer, transport(peer.url, timeout=0.2) as client:
        with pytest.raises(A2ATimeoutError, match="timed out"):
            await get_task(client)
        with pytest.raises(A2ATimeoutError):
            await get_task(client, CallOptions(timeout=0.1))
        assert peer_waiting.is_set()


async def test_nobody_listening_is_a_connection_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"127.0.0.1:{sock.getsockname()[1]}"  # bound, never listening: refused
        async with transport(url, timeout=TIMEOUT_S) as client:
            with pytest.raises(A2AConnectionError) as exc:
                await get_task(client)
            assert exc.value.url == url


async def test_programming_errors_are_caught_before_the_wire() -> None:
    async with transport("127.0.0.1:1") as client:
        with pytest.raises(MethodNotFoundError):
            await client.call("SendMessages", GetTaskRequest(id="x"), Task, CallOptions())
        with pytest.raises(TypeError, match="use the transport's stream"):
            await client.call(
                "SubscribeToTask", SubscribeToTaskRequest(id="x"), Task, CallOptions()
            )
        with pytest.raises(TypeError, match="GetTask takes a GetTaskRequest"):
            await client.call("GetTask", SubscribeToTaskRequest(id="x"), Task, CallOptions())


# --- streams ------------------------------------------------------------------------------------


def events(*items: StreamResponse, then: Behaviour | None = None) -> Behaviour:
    async def stream(payload: bytes, context: Any) -> AsyncIterator[bytes]:
        for item in items:
            yield to_bytes(item)
        if then is not None:
            await then(payload, context)

    return stream  # type: ignore[return-value]


def subscribe(
    client: GrpcTransport, options: CallOptions = NO_OPTIONS
) -> AsyncIterator[StreamResponse]:
    return client.stream("SubscribeToTask", SubscribeToTaskRequest(id="t-1"), options)


async def test_stream_yields_events_until_the_server_ends_it() -> None:
    first, second = StreamResponse(task=TASK), StreamResponse(task=TASK)
    async with fake_peer(streaming=events(first, second)) as peer, transport(peer.url) as client:
        assert [e async for e in subscribe(client)] == [first, second]


async def test_errors_before_the_first_event_surface_from_anext() -> None:
    async def refuse(payload: bytes, context: Any) -> None:
        await abort_with(context, UnsupportedOperationError("finished"))

    async with fake_peer(streaming=events(then=refuse)) as peer, transport(peer.url) as client:
        stream = subscribe(client)
        with pytest.raises(UnsupportedOperationError, match="finished"):
            await anext(stream)


async def test_error_mid_stream_follows_the_events_before_it() -> None:
    async def fail(payload: bytes, context: Any) -> None:
        await abort_with(context, TaskNotFoundError("purged"))

    event = StreamResponse(task=TASK)
    async with fake_peer(streaming=events(event, then=fail)) as peer, transport(peer.url) as client:
        seen = []
        with pytest.raises(TaskNotFoundError, match="purged"):
            async for item in subscribe(client):
                seen.append(item)
        assert seen == [event]


async def test_garbage_event_is_an_invalid_response() -> None:
    async def garbage(payload: bytes, context: Any) -> AsyncIterator[bytes]:
        yield b""  # a StreamResponse with no member set

    async with fake_peer(streaming=garbage) as peer, transport(peer.url) as client:  # type: ignore[arg-type]
        with pytest.raises(InvalidResponseError, match="not a valid StreamResponse"):
            await anext(subscribe(client))


async def test_closing_the_stream_cancels_the_call() -> None:
    async def hold(payload: bytes, context: Any) -> None:
        await asyncio.Event().wait()

    async with (
        fake_peer(streaming=events(StreamResponse(task=TASK), then=hold)) as peer,
        transport(peer.url) as client,
    ):
        stream = subscribe(client)
        assert (await anext(stream)).task == TASK
        await stream.aclose()  # type: ignore[attr-defined]
        with anyio.fail_after(TIMEOUT_S):
            await peer.cancelled.wait()


async def test_first_event_must_come_within_the_timeout_later_ones_need_not() -> None:
    release = asyncio.Event()

    async def late(payload: bytes, context: Any) -> AsyncIterator[bytes]:
        await release.wait()
        yield to_bytes(StreamResponse(task=TASK))

    async with fake_peer(streaming=late) as peer, transport(peer.url, timeout=0.2) as client:
        with pytest.raises(A2ATimeoutError, match=r"sent nothing for 0\.2 s"):
            await anext(subscribe(client))

    async def slow_second(payload: bytes, context: Any) -> AsyncIterator[bytes]:
        yield to_bytes(StreamResponse(task=TASK))
        await release.wait()
        yield to_bytes(StreamResponse(task=TASK))

    async with fake_peer(streaming=slow_second) as peer:
        async with transport(peer.url, timeout=0.2) as client:
            stream = subscribe(client)
            await anext(stream)
            pending = asyncio.ensure_future(anext(stream))
            await asyncio.sleep(0.5)  # longer than the timeout: no idle limit by default
            assert not pending.done()
            release.set()
            with anyio.fail_after(TIMEOUT_S):
                assert (await pending).task == TASK
        release.clear()
        async with transport(peer.url, timeout=TIMEOUT_S, stream_idle_timeout=0.2) as client:
            stream = subscribe(client)
            await anext(stream)
            with pytest.raises(A2ATimeoutError, match=r"sent nothing for 0\.2 s"):
                await anext(stream)


# --- the client's registry ----------------------------------------------------------------------


async def test_factory_is_what_the_registry_finds_for_grpc() -> None:
    assert _registry.transport_factory(Binding.GRPC) is create_transport
    interface = AgentInterface(
        url="127.0.0.1:50051", protocol_binding=Binding.GRPC, protocol_version="1.0"
    )
    async with httpx.AsyncClient() as http:
        built = create_transport(interface, TransportSettings(http=http, timeout=7.0))
        assert isinstance(built, GrpcTransport)
        assert (built.url, built._timeout) == ("127.0.0.1:50051", 7.0)
        assert create_transport(interface, TransportSettings(http=http, in_process=True)) is None
    assert create_transport(interface, secure=True).secure is True  # type: ignore[union-attr]
