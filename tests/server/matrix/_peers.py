"""One server, three bindings: a peerwire client per binding, and raw calls per binding.

``serving(agent)`` runs the agent on a live server with JSON-RPC, HTTP+JSON and gRPC.
``connecting(url, binding)`` yields a ``Peer``: a ``Client`` restricted to that binding, a
transport of the same interface (for calls with options of the test's own, such as another
``A2A-Version``), and a ``Wire`` that sends a request with exactly the service parameters a
test gives, through nothing of peerwire's client (httpx for the HTTP bindings, a bare
grpc.aio channel for gRPC), and decodes the answer with the binding's own error converter.

``normalised`` makes results of different runs comparable: ids and timestamps are replaced by
placeholders numbered in order of first appearance, the rest is kept.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

import grpc
import grpc.aio
import httpx
from google.protobuf import json_format

from peerwire import Agent
from peerwire.bindings import jsonrpc, rest
from peerwire.bindings.grpc.convert import from_bytes, proto_class, to_bytes
from peerwire.bindings.grpc.service import RPCS
from peerwire.bindings.grpc.status import DETAILS_KEY, decode_status
from peerwire.client import CallOptions, CardCache, Client, Transport, TransportSettings
from peerwire.client.transports import grpc as grpc_transport
from peerwire.client.transports import jsonrpc as jsonrpc_transport
from peerwire.client.transports import rest as rest_transport
from peerwire.client.transports.grpc import grpc_target
from peerwire.errors import A2AError, from_jsonrpc_error, from_rest_error
from peerwire.testing import live_server
from peerwire.types import Binding, StreamResponse, decode, from_builtins, to_builtins

from .._agents import Controls

T = TypeVar("T")

BINDINGS = (Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC)
TIMEOUT_S = 30.0
SHUTDOWN_GRACE_S = 1.0

_TRANSPORTS: dict[str, Callable[..., Transport | None]] = {
    Binding.JSONRPC: jsonrpc_transport.create_transport,
    Binding.HTTP_JSON: rest_transport.create_transport,
    Binding.GRPC: grpc_transport.create_transport,
}


@contextlib.asynccontextmanager
async def serving(agent: Agent, **options: Any) -> AsyncIterator[str]:
    """``agent`` on a live server that offers all three bindings; yields its base URL."""
    async with live_server(agent, grpc_port=0, shutdown_grace=SHUTDOWN_GRACE_S, **options) as url:
        yield url


@dataclass(frozen=True)
class Answer:
    """What a raw call got: its decoded result, or the error the binding carried."""

    result: Any
    error: A2AError | None
    extensions: str | None
    """The ``A2A-Extensions`` the server echoed (HTTP header, gRPC initial metadata)."""
    status: str = ""
    """How the binding said it: ``"<HTTP status> <JSON-RPC code>"`` for JSON-RPC,
    ``"<HTTP status> <ErrorInfo reason>"`` for REST, the status code name for gRPC."""


class Wire:
    """Raw calls to one interface, with exactly the service parameters a test gives."""

    def __init__(self, binding: str, url: str, http: httpx.AsyncClient) -> None:
        self.binding = binding
        self.url = url
        self.http = http
        self._channel: grpc.aio.Channel | None = None
        self._ids = itertools.count(1)

    async def call(
        self,
        operation: str,
        request: Any,
        response_type: type[Any] | None,
        *,
        version: str | None = "1.0",
        extensions: Sequence[str] = (),
        query_version: str | None = None,
    ) -> Answer:
        """One unary call. ``version=None`` sends no ``A2A-Version`` at all; ``query_version``
        sends it as the query parameter instead (HTTP bindings only). Each of ``extensions``
        is one ``A2A-Extensions`` header (metadata entry)."""
        if self.binding == Binding.GRPC:
            assert query_version is None, "gRPC has no query string"
            return await self._grpc(operation, request, response_type, version, extensions)
        headers = [] if version is None else [("A2A-Version", version)]
        headers += [("A2A-Extensions", value) for value in extensions]
        params = {"A2A-Version": query_version} if query_version is not None else None
        if self.binding == Binding.JSONRPC:
            return await self._jsonrpc(operation, request, response_type, headers, params)
        return await self._rest(operation, request, response_type, headers, params)

    async def _jsonrpc(
        self,
        operation: str,
        request: Any,
        response_type: type[Any] | None,
        headers: list[tuple[str, str]],
        params: dict[str, str] | None,
    ) -> Answer:
        body = jsonrpc.encode_request(next(self._ids), operation, request)
        response = await self.http.post(
            self.url,
            content=body,
            params=params,
            headers=[*headers, ("Content-Type", "application/json")],
        )
        return _jsonrpc_answer(response, response_type)

    async def _rest(
        self,
        operation: str,
        request: Any,
        response_type: type[Any] | None,
        headers: list[tuple[str, str]],
        params: dict[str, str] | None,
    ) -> Answer:
        wire = rest.encode_request(operation, request)
        if wire.body is not None:
            headers = [*headers, ("Content-Type", rest.A2A_JSON)]
        response = await self.http.request(
            wire.method,
            self.url.rstrip("/") + wire.target,
            content=wire.body,
            params=params,
            headers=headers,
        )
        return _rest_answer(response, response_type)

    async def _grpc(
        self,
        operation: str,
        request: Any,
        response_type: type[Any] | None,
        version: str | None,
        extensions: Sequence[str],
    ) -> Answer:
        metadata = [] if version is None else [("a2a-version", version)]
        metadata += [("a2a-extensions", value) for value in extensions]
        return await self.grpc_bytes(
            operation, to_bytes(request), response_type, metadata=tuple(metadata)
        )

    async def grpc_bytes(
        self,
        operation: str,
        payload: bytes,
        response_type: type[Any] | None,
        *,
        metadata: tuple[tuple[str, str | bytes], ...] = (("a2a-version", "1.0"),),
    ) -> Answer:
        """Any bytes as the request of a gRPC call (the first event, for a streaming rpc)."""
        rpc = RPCS[operation]
        try:
            if rpc.streaming:
                call: Any = self.channel.unary_stream(rpc.path)(
                    payload, metadata=metadata, timeout=TIMEOUT_S
                )
                answer = await call.read()
                call.cancel()
                response_type = StreamResponse
            else:
                call = self.channel.unary_unary(rpc.path)(
                    payload, metadata=metadata, timeout=TIMEOUT_S
                )
                answer = await call
        except grpc.aio.AioRpcError as exc:
            details = next((v for k, v in exc.trailing_metadata() or () if k == DETAILS_KEY), None)
            error = decode_status(exc.code().value[0], exc.details() or "", details)
            return Answer(None, error, _echoed(exc.initial_metadata()), exc.code().name)
        echoed = _echoed(await call.initial_metadata())
        if response_type is None:
            return Answer(None, None, echoed, "OK")
        return Answer(from_bytes(answer, response_type), None, echoed, "OK")

    async def send_document(self, operation: str, document: dict[str, Any]) -> Answer:
        """The request ``document`` (ProtoJSON, valid or not) in the binding's own form: the
        JSON-RPC params, the REST path, query and body, or the protobuf message."""
        rpc = RPCS[operation]
        response_type = StreamResponse if rpc.streaming else rpc.response
        if self.binding == Binding.GRPC:
            message = json_format.ParseDict(document, proto_class(rpc.request)())
            return await self.grpc_bytes(operation, message.SerializeToString(), response_type)
        headers = {"A2A-Version": "1.0", "Accept": "application/json, text/event-stream"}
        if self.binding == Binding.JSONRPC:
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": operation, "params": document})
            request = self.http.build_request(
                "POST",
                self.url,
                content=body.encode(),
                headers={**headers, "Content-Type": "application/json"},
            )
            async with contextlib.aclosing(self._sent(request)) as sent:
                async for response in sent:
                    return _jsonrpc_answer(response, response_type)
        route = rest.route_for(operation)
        values = dict(document)
        segments = [
            quote(str(values.pop(s[1:-1], "")), safe="") if s.startswith("{") else s
            for s in route.segments
        ]
        path = "/" + "/".join(segments) + (f":{route.verb}" if route.verb else "")
        query: dict[str, str] | None = None
        content: bytes | None = None
        if route.has_body:
            content = json.dumps(values).encode()
            headers["Content-Type"] = rest.A2A_JSON
        else:
            query = {k: v if isinstance(v, str) else json.dumps(v) for k, v in values.items()}
        request = self.http.build_request(
            route.method,
            self.url.rstrip("/") + path,
            content=content,
            params=query,
            headers=headers,
        )
        async with contextlib.aclosing(self._sent(request)) as sent:
            async for response in sent:
                return _rest_answer(response, response_type)
        raise AssertionError("unreachable")

    async def _sent(self, request: httpx.Request) -> AsyncIterator[httpx.Response]:
        """The response, read unless it is an event stream (a request that was accepted)."""
        response = await self.http.send(request, stream=True)
        try:
            if not response.headers.get("content-type", "").startswith("text/event-stream"):
                await response.aread()
            yield response
        finally:
            await response.aclose()

    @property
    def channel(self) -> grpc.aio.Channel:
        if self._channel is None:
            self._channel = grpc.aio.insecure_channel(grpc_target(self.url)[0])
        return self._channel

    async def aclose(self) -> None:
        if self._channel is not None:
            await self._channel.close()


def _jsonrpc_answer(response: httpx.Response, response_type: type[Any] | None) -> Answer:
    echoed = response.headers.get("a2a-extensions")
    if response.headers.get("content-type") == "text/event-stream":
        return Answer("a stream", None, echoed, f"{response.status_code} stream")
    assert response.headers["content-type"] == "application/json", response.text
    document = response.json()
    if "error" in document:
        status = f"{response.status_code} {document['error']['code']}"
        return Answer(None, from_jsonrpc_error(document["error"]), echoed, status)
    assert response.status_code == 200, response.text
    result = None if response_type is None else from_builtins(document["result"], response_type)
    return Answer(result, None, echoed, "200")


def _rest_answer(response: httpx.Response, response_type: type[Any] | None) -> Answer:
    echoed = response.headers.get("a2a-extensions")
    if response.headers.get("content-type") == "text/event-stream":
        return Answer("a stream", None, echoed, f"{response.status_code} stream")
    assert response.headers["content-type"] == rest.A2A_JSON, response.text
    if response.status_code != 200:
        reasons = [
            d.get("reason") for d in response.json()["error"].get("details", []) if "reason" in d
        ]
        status = " ".join([str(response.status_code), *reasons])
        return Answer(None, from_rest_error(response.status_code, response.content), echoed, status)
    result = None if response_type is None else decode(response.content, response_type)
    return Answer(result, None, echoed, "200")


def _echoed(metadata: Any) -> str | None:
    return next((v for k, v in metadata or () if k == "a2a-extensions"), None)


@dataclass(frozen=True)
class Bench:
    """The workbench agent of the server tests on a live server, and its controls."""

    url: str
    controls: Controls


@dataclass
class Peer:
    """A client restricted to one binding of a server, and raw access to that binding."""

    binding: str
    url: str
    client: Client
    transport: Transport
    wire: Wire

    def key(self, name: str) -> str:
        """A gate or context name of this binding's run (the server is shared by all three)."""
        return f"{name}@{self.binding}"

    async def call(self, operation: str, request: Any, response_type: type[T], **options: Any) -> T:
        """One unary call through the binding's transport, with ``CallOptions(**options)``."""
        return await self.transport.call(
            operation, request, response_type, CallOptions(timeout=TIMEOUT_S, **options)
        )


@contextlib.asynccontextmanager
async def connecting(url: str, binding: str) -> AsyncIterator[Peer]:
    """A ``Peer`` of the server at ``url`` over ``binding``."""
    async with (
        httpx.AsyncClient(trust_env=False, timeout=TIMEOUT_S) as http,
        Client.connect(
            url,
            bindings=[binding],
            http_client=http,
            timeout=TIMEOUT_S,
            # Servers of other modules may have had this port: their cards must not be reused.
            card_cache=CardCache(),
        ) as client,
    ):
        interface = client.interface
        assert interface.protocol_binding == binding
        transport = _TRANSPORTS[binding](interface, TransportSettings(http=http, timeout=TIMEOUT_S))
        assert transport is not None
        wire = Wire(binding, interface.url, http)
        try:
            yield Peer(binding, url, client, transport, wire)
        finally:
            await wire.aclose()
            await transport.aclose()


# -- comparing results across bindings -------------------------------------------------------

_ID_MEMBERS = frozenset({"id", "taskId", "contextId", "messageId", "artifactId"})
_TIMESTAMP = "2000-01-01T00:00:00.000Z"


def normalised(value: T) -> T:
    """``value`` (an A2A object, or a list of them) with ids and timestamps replaced."""
    names: dict[str, str] = {}

    def name(original: str) -> str:
        return names.setdefault(original, f"id-{len(names) + 1}")

    def walk(item: Any) -> Any:
        if isinstance(item, dict):
            return {key: member(key, inner) for key, inner in item.items()}
        if isinstance(item, list):
            return [walk(inner) for inner in item]
        return item

    def member(key: str, inner: Any) -> Any:
        if key in _ID_MEMBERS and isinstance(inner, str) and inner:
            return name(inner)
        if key == "referenceTaskIds" and isinstance(inner, list):
            return [name(i) for i in inner]
        if key == "timestamp" and isinstance(inner, str):
            return _TIMESTAMP
        return walk(inner)

    if isinstance(value, list):
        return [from_builtins(walk(to_builtins(v)), type(v)) for v in value]  # type: ignore[return-value]
    return from_builtins(walk(to_builtins(value)), type(value))


def dumped(value: Any) -> str:
    """A readable form for assertion messages."""
    return json.dumps(to_builtins(value), indent=1, sort_keys=True)
