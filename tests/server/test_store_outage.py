"""A task store outage is a retryable, typed answer on every binding, not an internal error.

A real server keeps its tasks in the machine's PostgreSQL, reached through a TCP relay of
the test's own (``ops.test_health_postgres.Relay``), which the test cuts: nothing listens,
every pooled connection is dropped; the machine's PostgreSQL itself is never touched. Each
binding (JSON-RPC, HTTP+JSON, gRPC; A2A 0.3 JSON-RPC and HTTP+JSON) then answers a send
with ``ServiceUnavailableError``: HTTP 503 with ``Retry-After`` / gRPC UNAVAILABLE /
JSON-RPC -32603 with the ErrorInfo reason ``SERVICE_UNAVAILABLE``, no errno or driver text,
counted apart from internal errors; the peerwire client reads it back as the same error.
With the relay back, the same send succeeds.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator
from typing import Any

import anyio
import asyncpg
import grpc
import grpc.aio
import httpx
import pytest
from google.rpc import error_details_pb2, status_pb2
from ops.test_health_postgres import PG_DSN, Relay

from peerwire import Agent, Client, Task, TaskState
from peerwire.bindings.grpc._gen import a2a_v03_pb2 as pb03
from peerwire.bindings.grpc.convert import to_bytes
from peerwire.bindings.grpc.service import RPCS
from peerwire.bindings.grpc.status import DETAILS_KEY
from peerwire.client.transports.base import CallOptions
from peerwire.client.transports.grpc_v03 import GrpcV03Transport
from peerwire.client.transports.jsonrpc import JsonRpcV03Transport
from peerwire.client.transports.rest import RestV03Transport
from peerwire.errors import PEERWIRE_ERROR_DOMAIN, ServiceUnavailableError, StreamEndedError
from peerwire.server.stores.postgres import PostgresTaskStore
from peerwire.testing import live_server
from peerwire.types import (
    Binding,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SendMessageResponse,
)

pytestmark = pytest.mark.services

WAIT_S = 30.0
RETRY_AFTER = str(ServiceUnavailableError.DEFAULT_RETRY_AFTER)
OUTAGE_INFO = {
    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
    "reason": "SERVICE_UNAVAILABLE",
    "domain": PEERWIRE_ERROR_DOMAIN,
    "metadata": {"dependency": "task_store", "retryAfterSeconds": RETRY_AFTER},
}
ECHO = {"skill": "echo"}
# What the driver would say, which no caller may read.
DRIVER_TEXT = ("Errno", "refused", "Connection", "asyncpg", "OSError", "127.0.0.1")


class Gate:
    """What the ``gated`` skill waits on: it has started; the test lets it finish."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()


def _agent(gate: Gate | None = None) -> Agent:
    agent = Agent("Durable", description="Keeps its tasks in PostgreSQL")

    @agent.skill("echo", description="Echoes")
    async def echo(text: str) -> str:
        return text

    @agent.skill("gated", description="Works until the test opens its gate")
    async def gated(text: str) -> str:
        assert gate is not None
        gate.started.set()
        await gate.release.wait()
        return text

    return agent


class Outage:
    def __init__(self, url: str, relay: Relay, web: httpx.AsyncClient) -> None:
        self.url = url
        self.relay = relay
        self.web = web


@contextlib.asynccontextmanager
async def outage(gate: Gate | None = None, *, cut: bool = True) -> AsyncIterator[Outage]:
    """A served agent whose PostgreSQL is cut off (``cut=False``: not yet; the relay
    restarts with ``relay.start``)."""
    schema = f"pwtest_outage_{secrets.token_hex(6)}"
    relay = Relay()
    await relay.start()
    store = PostgresTaskStore(
        f"postgresql://postgres@127.0.0.1:{relay.port}/test",
        schema=schema,
        acquire_timeout=2.0,
        command_timeout=2.0,
    )
    try:
        async with (
            live_server(_agent(gate), store=store, grpc_port=0) as url,
            httpx.AsyncClient(base_url=url, trust_env=False, timeout=WAIT_S) as web,
        ):
            if cut:
                await relay.cut()
            yield Outage(url, relay, web)
    finally:
        await relay.cut()
        with contextlib.suppress(OSError, asyncpg.PostgresError):
            connection = await asyncpg.connect(PG_DSN)
            try:
                await connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            finally:
                await connection.close()


def _no_driver_text(body: str) -> None:
    for text in DRIVER_TEXT:
        assert text not in body, body


def _jsonrpc_send(message_id: str) -> dict[str, Any]:
    message = {
        "messageId": message_id,
        "role": "ROLE_USER",
        "parts": [{"text": "hi"}],
        "metadata": ECHO,
    }
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}


def _v03_message(message_id: str) -> dict[str, Any]:
    return {
        "kind": "message",
        "messageId": message_id,
        "role": "user",
        "parts": [{"kind": "text", "text": "hi"}],
        "metadata": ECHO,
    }


async def _until_sent(client: Client) -> Task:
    """Send until the store answers again (the pool reconnects on its own)."""
    with anyio.fail_after(WAIT_S):
        while True:
            try:
                task = await client.send("hi", skill="echo")
            except ServiceUnavailableError:
                await anyio.sleep(0.2)
                continue
            assert isinstance(task, Task)
            return task


@pytest.mark.parametrize("binding", [Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC])
async def test_the_client_reads_an_outage_back_and_the_send_succeeds_once_it_is_over(
    binding: str,
) -> None:
    async with outage() as down, Client.connect(down.url, bindings=[binding]) as client:
        with pytest.raises(ServiceUnavailableError) as refused:
            await client.send("hi", skill="echo")
        error = refused.value
        assert (error.dependency, error.retry_after) == ("task_store", 5)
        assert error.message == "The agent's task store is unavailable; retry in 5 s"
        await down.relay.start()
        task = await _until_sent(client)
        assert task.status.state is TaskState.COMPLETED


async def test_the_wire_says_unavailable_retry_after_and_nothing_of_the_driver() -> None:
    async with outage() as down:
        web = down.web
        # JSON-RPC 1.0: a 200 carrying -32603 with the outage's ErrorInfo.
        answer = await web.post("/", json=_jsonrpc_send("m1"), headers={"A2A-Version": "1.0"})
        assert answer.status_code == 200, answer.text
        assert answer.headers.get("retry-after") == RETRY_AFTER, (answer.headers, answer.text)
        error = answer.json()["error"]
        assert error["code"] == -32603 and error["data"] == [OUTAGE_INFO], error
        _no_driver_text(answer.text)

        # HTTP+JSON 1.0: 503, Retry-After, google.rpc.Status UNAVAILABLE.
        card = (await web.get("/.well-known/agent-card.json")).json()
        [rest] = [
            i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "HTTP+JSON"
        ]
        message = {
            "messageId": "m2",
            "role": "ROLE_USER",
            "parts": [{"text": "hi"}],
            "metadata": ECHO,
        }
        answer = await web.post(
            f"{rest}/message:send", json={"message": message}, headers={"A2A-Version": "1.0"}
        )
        assert answer.status_code == 503, answer.text
        assert answer.headers["retry-after"] == RETRY_AFTER
        status = answer.json()["error"]
        assert (status["code"], status["status"]) == (503, "UNAVAILABLE")
        assert status["details"] == [OUTAGE_INFO]
        _no_driver_text(answer.text)

        # A2A 0.3 JSON-RPC: -32603, data an object with the same reason.
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "message/send",
            "params": {"message": _v03_message("m3")},
        }
        answer = await web.post("/", json=body)
        assert answer.status_code == 200, answer.text
        error = answer.json()["error"]
        assert error["code"] == -32603, error
        assert error["data"] == {k: v for k, v in OUTAGE_INFO.items() if k != "@type"}
        _no_driver_text(answer.text)

        # A2A 0.3 HTTP+JSON: 503 with Retry-After.
        proto = {
            "messageId": "m4",
            "role": "ROLE_USER",
            "content": [{"text": "hi"}],
            "metadata": ECHO,
        }
        answer = await web.post("/rest/v1/message:send", json={"message": proto})
        assert answer.status_code == 503, answer.text
        assert answer.headers["retry-after"] == RETRY_AFTER
        assert answer.json()["data"]["reason"] == "SERVICE_UNAVAILABLE"
        _no_driver_text(answer.text)

        # Counted apart from internal errors.
        metrics = (await web.get("/metrics")).text
        assert 'peerwire_dependency_unavailable_total{dependency="task_store"} 4.0' in metrics
        for binding in ("jsonrpc", "rest"):
            assert (
                f'peerwire_requests_total{{binding="{binding}",operation="SendMessage",'
                'outcome="SERVICE_UNAVAILABLE"} 2.0'
            ) in metrics
        assert 'outcome="INTERNAL_ERROR"' not in metrics

        await down.relay.start()
        with anyio.fail_after(WAIT_S):
            while True:
                answer = await web.post(
                    "/", json=_jsonrpc_send(secrets.token_hex(4)), headers={"A2A-Version": "1.0"}
                )
                if "error" not in answer.json():
                    break
                await anyio.sleep(0.2)
        assert answer.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("binding", [Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC])
async def test_a_stream_whose_task_cannot_be_recorded_ends_with_the_outage(binding: str) -> None:
    gate = Gate()
    async with (
        outage(gate, cut=False) as down,
        Client.connect(down.url, bindings=[binding]) as client,
    ):
        stream = client.stream("hi", skill="gated")
        first = await anext(stream)
        assert isinstance(first, Task)
        await down.relay.cut()
        gate.release.set()  # the handler ends; its COMPLETED cannot be stored
        with anyio.fail_after(WAIT_S), pytest.raises(StreamEndedError) as ended:
            async for _ in stream:
                pass
        assert (ended.value.task_id, ended.value.cause) == (first.id, "outage")


@pytest.mark.parametrize("binding", [Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC])
async def test_a_blocking_send_whose_task_cannot_be_recorded_is_told_so(binding: str) -> None:
    gate = Gate()
    async with (
        outage(gate, cut=False) as down,
        Client.connect(down.url, bindings=[binding]) as client,
    ):
        sending = asyncio.ensure_future(client.send("hi", skill="gated"))
        with anyio.fail_after(WAIT_S):
            await gate.started.wait()
        await down.relay.cut()
        gate.release.set()
        with anyio.fail_after(WAIT_S), pytest.raises(ServiceUnavailableError):
            await sending


def _grpc_outage_info(failure: grpc.aio.AioRpcError) -> dict[str, Any]:
    trailers = dict(failure.trailing_metadata() or ())
    assert trailers.get("retry-after") == RETRY_AFTER, trailers
    status = status_pb2.Status.FromString(trailers[DETAILS_KEY])
    info = error_details_pb2.ErrorInfo()
    assert len(status.details) == 1 and status.details[0].Unpack(info)
    return {"reason": info.reason, "domain": info.domain, "metadata": dict(info.metadata)}


async def test_grpc_says_unavailable_on_1_0_and_0_3() -> None:
    async with outage() as down:
        card = (await down.web.get("/.well-known/agent-card.json")).json()
        [url] = [i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
        message = Message(
            message_id="g1", role=Role.USER, parts=[Part(text="hi")], metadata=dict(ECHO)
        )
        v03_request = pb03.SendMessageRequest(
            request=pb03.Message(
                message_id="g2", role=pb03.ROLE_USER, content=[pb03.Part(text="hi")]
            )
        )
        v03_request.request.metadata.update(ECHO)
        async with grpc.aio.insecure_channel(url) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as v10:
                await channel.unary_unary(RPCS["SendMessage"].path)(
                    to_bytes(SendMessageRequest(message=message)),
                    metadata=(("a2a-version", "1.0"),),
                    timeout=WAIT_S,
                )
            with pytest.raises(grpc.aio.AioRpcError) as v03:
                await channel.unary_unary("/a2a.v1.A2AService/SendMessage")(
                    v03_request.SerializeToString(), timeout=WAIT_S
                )
    expected = {k: v for k, v in OUTAGE_INFO.items() if k != "@type"}
    for failure in (v10.value, v03.value):
        assert failure.code() is grpc.StatusCode.UNAVAILABLE, failure
        assert _grpc_outage_info(failure) == expected
        _no_driver_text(failure.details() or "")
    assert (v03.value.details() or "").startswith("InternalError: ")  # 0.3's nearest class


async def test_the_0_3_client_transports_read_the_outage_back() -> None:
    async with outage() as down:
        card = (await down.web.get("/.well-known/agent-card.json")).json()
        urls = {i["protocolBinding"]: i["url"] for i in card["supportedInterfaces"]}
        request = SendMessageRequest(
            message=Message(
                message_id="v03", role=Role.USER, parts=[Part(text="hi")], metadata=dict(ECHO)
            )
        )
        transports: list[Any] = [
            JsonRpcV03Transport(urls["JSONRPC"], down.web),
            RestV03Transport(urls["HTTP+JSON"], down.web),
            GrpcV03Transport(urls["GRPC"], timeout=WAIT_S),
        ]
        try:
            for transport in transports:
                with pytest.raises(ServiceUnavailableError) as refused:
                    await transport.call("SendMessage", request, SendMessageResponse, CallOptions())
                assert (refused.value.dependency, refused.value.retry_after) == ("task_store", 5)
        finally:
            for transport in transports:
                await transport.aclose()
