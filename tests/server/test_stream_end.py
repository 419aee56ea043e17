"""A stream the server ends early ends with ``StreamEndedError``, on every binding.

On shutdown (``HTTPServer.request_exit()``, or SIGTERM to ``peerwire serve``) every open
stream gets that error as its last event within moments, not after the grace: a stream on a
task that goes on working, and a SubscribeToTask on a task waiting for input (which the server
would otherwise follow on). ``Dispatcher.end_streams`` does the same for an outage, with the
server staying up. The raw bytes of the final event are checked on each binding.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import grpc
import grpc.aio
import httpx
import pytest
from google.rpc import error_details_pb2, status_pb2

from peerwire import Agent, Client, Task, TaskState
from peerwire.bindings.grpc.convert import to_bytes
from peerwire.bindings.grpc.service import RPCS
from peerwire.bindings.grpc.status import DETAILS_KEY
from peerwire.errors import PEERWIRE_ERROR_DOMAIN, ServerBusyError, StreamEndedError
from peerwire.httpd import HTTPServer
from peerwire.server import A2AApp, create_app
from peerwire.types import Binding, SubscribeToTaskRequest

from ._agents import workbench

GRACE_S = 5.0  # no stream may wait for it: every one ends long before
WAIT_S = 30.0
REPO = Path(__file__).resolve().parents[2]
PEERWIRE = Path(sys.executable).with_name("peerwire")
HEADERS = {"A2A-Version": "1.0", "Accept": "text/event-stream"}


class Served:
    """An agent on peerwire's HTTP server (and gRPC) in this loop, shut down by the test."""

    def __init__(
        self, app: A2AApp, server: HTTPServer, url: str, serving: asyncio.Task[None]
    ) -> None:
        self.app = app
        self.server = server
        self.url = url
        self.serving = serving

    async def exited(self) -> None:
        with anyio.fail_after(GRACE_S + 3):
            await asyncio.wait({self.serving})
        self.serving.result()


@contextlib.asynccontextmanager
async def served(agent: Agent, **options: Any) -> AsyncIterator[Served]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    app = create_app(agent, public_url=url, grpc_port=0, shutdown_grace=GRACE_S, **options)
    server = HTTPServer(app)
    serving = asyncio.get_running_loop().create_task(server.serve(sock=sock))
    try:
        with anyio.fail_after(WAIT_S):
            await server.started.wait()
        yield Served(app, server, url, serving)
    finally:
        server.request_exit()
        with anyio.CancelScope(shield=True):
            await asyncio.wait({serving}, timeout=2 * GRACE_S + 5)
            if not serving.done():
                server.request_exit(force=True)
                await asyncio.wait({serving}, timeout=5)
            if not serving.done():
                serving.cancel()
                await asyncio.wait({serving})
        sock.close()


async def until_error(events: AsyncIterator[Any]) -> tuple[StreamEndedError, float]:
    """Read ``events`` to their end: the ``StreamEndedError`` they end with, and when."""
    with anyio.fail_after(WAIT_S):
        try:
            async for _ in events:
                pass
        except StreamEndedError as error:
            return error, time.monotonic()
    raise AssertionError("the stream ended without StreamEndedError")


async def input_required(client: Client) -> Task:
    task = await client.send("", skill="ask")
    assert isinstance(task, Task) and task.status.state is TaskState.INPUT_REQUIRED
    return task


@pytest.mark.parametrize("binding", [Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC])
async def test_shutdown_ends_every_stream_with_the_typed_error(binding: str) -> None:
    agent, controls = workbench()
    async with served(agent) as server, Client.connect(server.url, bindings=[binding]) as client:
        assert client.interface.protocol_binding == binding
        asked = await input_required(client)
        working = client.stream("w", skill="wait")
        subscribed = client.subscribe(asked.id)
        started = await anext(working)
        assert isinstance(started, Task)
        await controls.started("w")
        snapshot = await anext(subscribed)
        assert isinstance(snapshot, Task) and snapshot.id == asked.id
        both = asyncio.gather(until_error(working), until_error(subscribed))

        begun = time.monotonic()
        server.server.request_exit()
        (on_working, working_at), (on_asked, asked_at) = await both
        # The handler of "w" is still running: its stream did not wait for it.
        assert not server.serving.done()
        assert (on_working.task_id, on_working.cause) == (started.id, "shutdown")
        assert (on_asked.task_id, on_asked.cause) == (asked.id, "shutdown")
        assert isinstance(on_working, ServerBusyError), "temporary: retry later"
        assert max(working_at, asked_at) - begun < GRACE_S  # liveness, not a timing claim

        # Shutting down, the server opens no new stream (gRPC still listens meanwhile).
        if binding == Binding.GRPC:
            with pytest.raises(ServerBusyError) as refused:
                await anext(client.subscribe(asked.id))
            assert not isinstance(refused.value, StreamEndedError)
        controls.release("w")
        await server.exited()


async def test_end_streams_ends_them_for_an_outage_and_the_server_serves_on() -> None:
    agent, _ = workbench()
    async with served(agent) as server, Client.connect(server.url) as client:
        asked = await input_required(client)
        subscribed = client.subscribe(asked.id)
        await anext(subscribed)
        assert server.app.dispatcher.end_streams(StreamEndedError.OUTAGE) == 1
        error, _ = await until_error(subscribed)
        assert (error.task_id, error.cause) == (asked.id, "outage")
        # Only the open streams ended: the task is followed again as before.
        again = client.subscribe(asked.id)
        snapshot = await anext(again)
        assert isinstance(snapshot, Task) and snapshot.status.state is TaskState.INPUT_REQUIRED
        await again.aclose()  # type: ignore[attr-defined]


# -- the bytes on the wire -----------------------------------------------------------------------


def error_info(task_id: str) -> dict[str, Any]:
    return {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "STREAM_ENDED",
        "domain": "peerwire.dev",
        "metadata": {"taskId": task_id, "cause": "shutdown"},
    }


def message_for(task_id: str) -> str:
    return (
        f"The server ended the stream of task {task_id} (shutdown) before the task reached a "
        "closing state; subscribe to the task again to follow it"
    )


async def raw_stream_end(
    server: Served, http: httpx.AsyncClient, method: str, path: str, body: Any
) -> bytes:
    """Open a stream, shut the server down, and return every byte the stream carried."""
    async with http.stream(method, server.url + path, json=body, headers=HEADERS) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        chunks = response.aiter_raw()
        raw = await anext(chunks)  # the snapshot
        server.server.request_exit()
        with anyio.fail_after(GRACE_S):
            async for chunk in chunks:
                raw += chunk
    return raw


def last_event(raw: bytes) -> bytes:
    assert raw.endswith(b"\n\n"), raw
    return raw[:-2].rsplit(b"\n\n", 1)[-1] + b"\n\n"


async def test_the_jsonrpc_event_is_an_error_envelope() -> None:
    agent, _ = workbench()
    async with served(agent) as server, Client.connect(server.url) as client:
        asked = await input_required(client)
        request = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "SubscribeToTask",
            "params": {"id": asked.id},
        }
        async with httpx.AsyncClient(trust_env=False, timeout=WAIT_S) as http:
            raw = await raw_stream_end(server, http, "POST", "/", request)
        await server.exited()
    event = last_event(raw)
    assert event.startswith(b"data: {") and event.count(b"\n") == 2, event
    assert json.loads(event[len(b"data: ") :]) == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32603, "message": message_for(asked.id), "data": [error_info(asked.id)]},
    }


async def test_the_rest_event_is_a_status_document_named_error() -> None:
    agent, _ = workbench()
    async with served(agent) as server, Client.connect(server.url) as client:
        asked = await input_required(client)
        async with httpx.AsyncClient(trust_env=False, timeout=WAIT_S) as http:
            raw = await raw_stream_end(
                server, http, "POST", f"/rest/tasks/{asked.id}:subscribe", None
            )
        await server.exited()
    event = last_event(raw)
    assert event.startswith(b"event: error\ndata: {") and event.count(b"\n") == 3, event
    assert json.loads(event[len(b"event: error\ndata: ") :]) == {
        "error": {
            "code": 503,
            "status": "UNAVAILABLE",
            "message": message_for(asked.id),
            "details": [error_info(asked.id)],
        }
    }


async def test_the_grpc_status_is_unavailable_with_error_info() -> None:
    agent, _ = workbench()
    async with served(agent) as server, Client.connect(server.url, bindings=["GRPC"]) as client:
        asked = await input_required(client)
        rpc = RPCS["SubscribeToTask"]
        async with grpc.aio.insecure_channel(client.interface.url) as channel:
            call = channel.unary_stream(rpc.path)(
                to_bytes(SubscribeToTaskRequest(id=asked.id)), metadata=(("a2a-version", "1.0"),)
            )
            assert await call.read() is not grpc.aio.EOF  # the snapshot
            server.server.request_exit()
            with anyio.fail_after(GRACE_S), pytest.raises(grpc.aio.AioRpcError) as ended:
                await call.read()
        await server.exited()
    assert ended.value.code() is grpc.StatusCode.UNAVAILABLE
    assert ended.value.details() == message_for(asked.id)
    trailer = dict(ended.value.trailing_metadata() or ())[DETAILS_KEY]
    status = status_pb2.Status.FromString(trailer)
    assert (status.code, status.message) == (14, message_for(asked.id))
    info = error_details_pb2.ErrorInfo()
    assert len(status.details) == 1 and status.details[0].Unpack(info)
    assert (info.reason, info.domain) == ("STREAM_ENDED", PEERWIRE_ERROR_DOMAIN)
    assert dict(info.metadata) == {"taskId": asked.id, "cause": "shutdown"}


# -- SIGTERM to `peerwire serve` -----------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _until_card(process: asyncio.subprocess.Process, url: str) -> None:
    async with httpx.AsyncClient(trust_env=False, timeout=5) as http:
        with anyio.fail_after(WAIT_S):
            for _ in range(10_000):
                if process.returncode is not None:
                    pytest.fail(f"peerwire serve exited early ({process.returncode})")
                with contextlib.suppress(httpx.TransportError):
                    if (await http.get(url + "/.well-known/agent-card.json")).status_code == 200:
                        return
                await anyio.sleep(0.05)  # the process gives no other signal that it listens


async def test_sigterm_to_peerwire_serve_ends_every_stream_then_exits_within_the_grace() -> None:
    grace = 3.0
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    arguments = [
        "serve",
        "tests.server.stream_end_agent:agent",
        "--port",
        str(port),
        "--store",
        "memory",
        "--shutdown-grace",
        str(grace),
    ]
    process = await asyncio.create_subprocess_exec(
        PEERWIRE, *arguments, cwd=REPO, env=env, stdout=asyncio.subprocess.DEVNULL
    )
    try:
        await _until_card(process, url)
        streams = []
        clients = [Client.connect(url, bindings=[b]) for b in ("JSONRPC", "HTTP+JSON", "GRPC")]
        async with contextlib.AsyncExitStack() as stack:
            for connecting in clients:
                client = await stack.enter_async_context(connecting)
                asked = await input_required(client)
                working = client.stream("", skill="work")  # works until the grace is over
                subscribed = client.subscribe(asked.id)
                for events in (working, subscribed):
                    first = await anext(events)
                    assert isinstance(first, Task)
                    streams.append((first.id, events))
            ending = asyncio.gather(*(until_error(events) for _, events in streams))
            signalled = time.monotonic()
            process.send_signal(signal.SIGTERM)
            errors = await ending
            with anyio.fail_after(grace + 3):
                code = await process.wait()
            exited = time.monotonic()
        assert code == 0
        for (task_id, _), (error, _) in zip(streams, errors, strict=True):
            assert (error.task_id, error.cause) == (task_id, "shutdown")
        latest = max(at for _, at in errors) - signalled
        print(f"SIGTERM -> last stream error {latest:.3f} s; -> exit {exited - signalled:.3f} s")
        assert latest < grace  # liveness bounds, not timing claims: the grace is not waited for
        assert exited - signalled < grace + 3
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
