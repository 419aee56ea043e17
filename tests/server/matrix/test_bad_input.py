"""Bad input on every binding: the binding's own spec error, a typed error behind it, no trace.

The per-binding suites (tests/server/test_jsonrpc_endpoint.py, test_rest.py,
test_grpc_server.py) cover each binding's transport-level garbage: verbs, routes, path ids,
content types, envelopes, invalid protobuf bytes. This module sends the *same* invalid
requests over all three, written in each binding's form (JSON-RPC params, REST path, query and
body, a protobuf message), and checks they are refused alike: JSON-RPC -32602 with HTTP 200,
REST 400 ``INVALID_PARAMS``, gRPC ``INVALID_ARGUMENT``, all ``InvalidParamsError`` naming the
field, and nothing created. Oversized requests and invalid protobuf are checked for leaving
no trace too.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from google.protobuf import json_format

from peerwire.bindings.grpc.convert import proto_class
from peerwire.errors import (
    InvalidParamsError,
    InvalidRequestError,
    JSONParseError,
    UnknownA2AError,
    VersionNotSupportedError,
    from_jsonrpc_error,
    from_rest_error,
)
from peerwire.types import (
    Binding,
    ListTasksRequest,
    ListTasksResponse,
    SendMessageRequest,
    TaskState,
)

from .._agents import workbench
from ._peers import Bench, Peer, connecting, serving

pytestmark = pytest.mark.asyncio(loop_scope="module")

BODY_LIMIT = 4096
INVALID_PARAMS = {
    Binding.JSONRPC: "200 -32602",
    Binding.HTTP_JSON: "400 INVALID_PARAMS",
    Binding.GRPC: "INVALID_ARGUMENT",
}


def message(context_id: str, **changes: Any) -> dict[str, Any]:
    """A valid user message routed to the echo skill, with ``changes`` applied."""
    document: dict[str, Any] = {
        "messageId": f"m-{uuid.uuid4()}",
        "role": "ROLE_USER",
        "parts": [{"text": "x"}],
        "contextId": context_id,
        "metadata": {"skill": "echo"},
    }
    document.update(changes)
    return {key: value for key, value in document.items() if value is not None}


# (operation, request document for a context id, a word the error names); every case is
# expressible in all three forms (protobuf cannot carry, say, two members of a oneof).
SEND_CASES = [
    ("no message", lambda c: {}, "message"),
    ("no parts", lambda c: {"message": message(c, parts=[])}, "part"),
    ("empty messageId", lambda c: {"message": message(c, messageId="")}, "messageId"),
    ("no role", lambda c: {"message": message(c, role="ROLE_UNSPECIFIED")}, "role"),
    ("unknown role", lambda c: {"message": message(c, role=99)}, "role"),
    ("agent role", lambda c: {"message": message(c, role="ROLE_AGENT")}, "ROLE_USER"),
    ("empty part", lambda c: {"message": message(c, parts=[{}])}, "exactly one"),
    (
        "negative history",
        lambda c: {"message": message(c), "configuration": {"historyLength": -1}},
        "historyLength",
    ),
]

QUERY_CASES = [
    ("ListTasks", {"status": 99}, "status"),
    ("ListTasks", {"pageSize": -1}, "pageSize"),
    ("ListTasks", {"pageSize": 0}, "pageSize"),
    ("ListTasks", {"historyLength": -5}, "historyLength"),
    ("ListTasks", {"pageToken": "not-a-token"}, "pageToken"),
    ("GetTask", {"id": ""}, "id"),
    ("GetTask", {"id": "ghost", "historyLength": -1}, "historyLength"),
    ("CancelTask", {"id": ""}, "id"),
    ("SubscribeToTask", {"id": ""}, "id"),
]


async def task_total(peer: Peer) -> int:
    page = await peer.call("ListTasks", ListTasksRequest(page_size=1), ListTasksResponse)
    return page.total_size


async def created_in(peer: Peer, context_id: str) -> int:
    return len([task async for task in peer.client.list_tasks(context_id=context_id)])


@pytest.mark.parametrize("operation", ["SendMessage", "SendStreamingMessage"])
@pytest.mark.parametrize(("case", "build", "word"), SEND_CASES, ids=[c[0] for c in SEND_CASES])
async def test_an_invalid_message_is_refused_alike(
    peer: Peer, operation: str, case: str, build: Any, word: str
) -> None:
    context_id = peer.key(f"invalid-{uuid.uuid4().hex[:8]}")
    answer = await peer.wire.send_document(operation, build(context_id))
    assert answer.status == INVALID_PARAMS[peer.binding], answer
    assert type(answer.error) is InvalidParamsError
    assert word in answer.error.message, answer.error
    assert await created_in(peer, context_id) == 0


@pytest.mark.parametrize(
    ("operation", "document", "field"), QUERY_CASES, ids=[f"{c[0]}-{c[2]}" for c in QUERY_CASES]
)
async def test_invalid_parameters_are_refused_alike(
    peer: Peer, operation: str, document: dict[str, Any], field: str
) -> None:
    answer = await peer.wire.send_document(operation, document)
    assert answer.status == INVALID_PARAMS[peer.binding], answer
    assert type(answer.error) is InvalidParamsError
    # JSON-RPC names a field by its path in the envelope ("params.status").
    named = [v.field.removeprefix("params.") for v in answer.error.field_violations]
    assert field in named, answer.error


async def test_a_valid_document_passes_every_form(peer: Peer) -> None:
    # The forms above are right, so what they refuse is the invalid value alone.
    context_id = peer.key(f"valid-{uuid.uuid4().hex[:8]}")
    answer = await peer.wire.send_document("SendMessage", {"message": message(context_id)})
    assert answer.error is None, answer
    assert answer.result.task.status.state is TaskState.COMPLETED
    listed = await peer.wire.send_document(
        "ListTasks", {"contextId": context_id, "status": "TASK_STATE_COMPLETED", "pageSize": 5}
    )
    assert [t.id for t in listed.result.tasks] == [answer.result.task.id]
    streamed = await peer.wire.send_document("SendStreamingMessage", {"message": message("")})
    assert streamed.error is None and streamed.status.endswith(("stream", "OK")), streamed


# -- gRPC: bytes and metadata the HTTP bindings cannot send ----------------------------------


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        (b"\xff", InvalidRequestError),
        (b"\x0a\x05\x0a\x03\xff\xfe\xfd", InvalidRequestError),
        (b"", InvalidParamsError),
        (b"\x10\x01", InvalidParamsError),  # a field of another wire type: message missing
    ],
    ids=["truncated", "not-utf8", "empty", "wrong-wire-type"],
)
@pytest.mark.parametrize("operation", ["SendMessage", "SendStreamingMessage"])
async def test_grpc_bytes_that_are_no_request_leave_no_trace(
    bench: Bench, operation: str, payload: bytes, error: type[Exception]
) -> None:
    async with connecting(bench.url, Binding.GRPC) as peer:
        before = await task_total(peer)
        answer = await peer.wire.grpc_bytes(operation, payload, None)
        assert answer.status == "INVALID_ARGUMENT", answer
        assert type(answer.error) is error
        assert await task_total(peer) == before


async def test_grpc_binary_version_metadata_is_no_version(bench: Bench) -> None:
    async with connecting(bench.url, Binding.GRPC) as peer:
        request = {"message": message(peer.key("binary-version"))}
        payload = json_format.ParseDict(
            request, proto_class(SendMessageRequest)()
        ).SerializeToString()
        before = await task_total(peer)
        answer = await peer.wire.grpc_bytes(
            "SendMessage", payload, None, metadata=(("a2a-version-bin", b"1.0"),)
        )
        assert answer.status == "FAILED_PRECONDITION"
        assert type(answer.error) is VersionNotSupportedError
        assert await task_total(peer) == before


# -- oversized requests --------------------------------------------------------------------


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def small(http_server: str) -> AsyncIterator[str]:
    """A server that takes requests of at most ``BODY_LIMIT`` bytes."""
    agent, _ = workbench()
    async with serving(agent, max_body_bytes=BODY_LIMIT, http=http_server) as url:
        yield url


@pytest.mark.parametrize(
    ("binding", "status", "error"),
    [
        (Binding.JSONRPC, "413 -32600", InvalidRequestError),
        (Binding.HTTP_JSON, "413 INVALID_REQUEST", InvalidRequestError),
        # gRPC refuses it itself, before any of our code (no A2A details).
        (Binding.GRPC, "RESOURCE_EXHAUSTED", UnknownA2AError),
    ],
)
async def test_an_oversized_request_is_refused_and_leaves_no_trace(
    small: str, binding: str, status: str, error: type[Exception]
) -> None:
    async with connecting(small, binding) as peer:
        context_id = peer.key("oversized")
        big = {"message": message(context_id, parts=[{"text": "x" * (2 * BODY_LIMIT)}])}
        for operation in ("SendMessage", "SendStreamingMessage"):
            answer = await peer.wire.send_document(operation, big)
            assert answer.status == status, answer
            assert type(answer.error) is error
        assert await created_in(peer, context_id) == 0
        fits = await peer.wire.send_document("SendMessage", {"message": message(context_id)})
        assert fits.error is None and fits.result.task.status.state is TaskState.COMPLETED


@pytest.mark.parametrize("binding", [Binding.JSONRPC, Binding.HTTP_JSON])
async def test_json_that_is_not_json_is_a_parse_error(bench: Bench, binding: str) -> None:
    async with connecting(bench.url, binding) as peer:
        before = await task_total(peer)
        http = peer.wire.http
        headers = {"A2A-Version": "1.0", "Content-Type": "application/json"}
        if binding == Binding.JSONRPC:
            response = await http.post(peer.wire.url, content=b"{not json", headers=headers)
            assert (response.status_code, response.json()["error"]["code"]) == (200, -32700)
            error = from_jsonrpc_error(response.json()["error"])
        else:
            response = await http.post(
                peer.wire.url + "/message:send", content=b"{not json", headers=headers
            )
            assert response.status_code == 400
            error = from_rest_error(response.status_code, response.content)
        assert type(error) is JSONParseError
        assert await task_total(peer) == before
