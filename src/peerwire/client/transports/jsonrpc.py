"""The JSON-RPC 2.0 binding, client side (A2A spec §9): POSTs and SSE streams over HTTP.

Unary calls POST one request envelope and decode the ``result`` into the expected type.
Streaming calls ask for ``text/event-stream`` and branch on the answer's Content-Type: an error
found before the stream started comes back as an ordinary JSON body; one after it started is
the stream's last event, an envelope with ``error`` instead of ``result``, raised from the
iterator as its class (``StreamEndedError`` when the server ended the stream early: shutdown,
outage). A stream ends when the server ends the response; a caller that stops early
(``aclose``, ``break``) closes the HTTP response and sees no error. Requests go through an
``HTTPExchange`` (``_exchange``): the client's native pool, or an ``httpx.AsyncClient``.

``JsonRpcV03Transport`` speaks the same binding to an A2A 0.3 agent: 0.3 method names and
shapes (``peerwire.compat.v03.jsonrpc``), translated to and from the 1.0 operations and
``peerwire.types`` at this edge, errors with 0.3's ``data`` object, ``A2A-Version: 0.3`` and
the extensions also as 0.3's ``X-A2A-Extensions``. ListTasks has no 0.3 method: it raises
``UnsupportedOperationError`` before anything is sent. Its streams are made to read as 1.0
streams (``_v03.as_v10``: the Task first; a finished task's subscription refused as 1.0 does).
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from typing import Any, TypeVar

import httpx
import msgspec

from ...bindings.jsonrpc import encode_request
from ...compat.v03 import jsonrpc as v03
from ...compat.v03.errors import error_from_v03
from ...compat.v03.version import PROTOCOL_VERSION as V03
from ...errors import (
    A2AError,
    InvalidResponseError,
    from_jsonrpc_error,
    from_rest_error,
)
from ...protocol import PROTOCOL_VERSION, format_extensions
from ...types import AgentInterface, Binding, StreamResponse
from ._exchange import HTTPExchange, as_exchange
from ._http import (
    HTTP_ERRORS,
    client_error,
    decode_answer,
    excerpt,
    invalid_answer,
    is_event_stream,
    read_rest,
    sse_payloads,
    with_query,
)
from ._v03 import as_v10
from .base import CallOptions, Operation, TransportSettings

__all__ = ["JsonRpcTransport", "JsonRpcV03Transport", "create_transport", "create_v03_transport"]

T = TypeVar("T")


class _Envelope(msgspec.Struct):
    """A JSON-RPC response; ``result`` stays raw until we know what type it must be."""

    jsonrpc: str | msgspec.UnsetType = msgspec.UNSET
    id: int | str | msgspec.UnsetType | None = msgspec.UNSET
    result: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    error: Any | msgspec.UnsetType = msgspec.UNSET


_envelope_decoder = msgspec.json.Decoder(_Envelope)


class JsonRpcTransport:
    """Calls one JSON-RPC interface URL through an HTTP exchange (or ``httpx.AsyncClient``)
    it does not own."""

    binding = Binding.JSONRPC
    protocol_version = PROTOCOL_VERSION
    # What the 0.3 transport replaces: the request codec and the error decoder.
    _encode_request = staticmethod(encode_request)
    _error_from = staticmethod(from_jsonrpc_error)

    def __init__(
        self,
        url: str,
        http: httpx.AsyncClient | HTTPExchange,
        *,
        timeout: float | None = 30.0,
        stream_idle_timeout: float | None = 60.0,
    ) -> None:
        self.url = url
        self._http = as_exchange(http)
        self._timeout = timeout
        self._stream_idle_timeout = stream_idle_timeout
        self._ids = itertools.count(1)

    async def call(
        self, operation: Operation, request: Any, response_type: type[T], options: CallOptions
    ) -> T:
        request_id = next(self._ids)
        body = self._encode_request(request_id, operation, request)
        headers = self._headers(options, accept="application/json")
        timeout = options.timeout if options.timeout is not None else self._timeout
        try:
            reply = await self._http.request(
                "POST",
                with_query(self.url, options.query),
                headers=headers,
                body=body,
                timeout=timeout,
            )
        except HTTP_ERRORS as exc:
            raise client_error(exc, self.url, operation) from exc
        result = self._result(reply.status, reply.body, request_id, operation)
        if response_type is type(None):
            # Empty: servers answer {} or null (A2A spec §3.1.10); there is nothing to read.
            return None
        return self._decode(result, response_type, operation)

    async def stream(
        self, operation: Operation, request: Any, options: CallOptions
    ) -> AsyncIterator[StreamResponse]:
        request_id = next(self._ids)
        body = self._encode_request(request_id, operation, request)
        timeout = options.timeout if options.timeout is not None else self._timeout
        try:
            reply = await self._http.open_stream(
                "POST",
                with_query(self.url, options.query),
                headers=self._headers(options, accept="text/event-stream"),
                body=body,
                timeout=timeout,
                idle_timeout=self._stream_idle_timeout,
            )
        except HTTP_ERRORS as exc:
            raise client_error(exc, self.url, operation) from exc
        try:
            content_type = reply.headers.get("content-type", "")
            if not is_event_stream(content_type):
                content = await read_rest(reply, self.url, operation)
                self._result(reply.status, content, request_id, operation)
                raise InvalidResponseError(
                    f"{operation} to {self.url} answered with a single result instead of an "
                    f"event stream (Content-Type {content_type!r})",
                    url=self.url,
                )
            if reply.status != 200:
                content = await read_rest(reply, self.url, operation)
                raise from_rest_error(reply.status, content)
            async for data in sse_payloads(reply, self.url, operation):
                yield self._event(data, request_id, operation)
        finally:
            await reply.aclose()

    async def aclose(self) -> None:
        """Nothing to release: the HTTP client belongs to whoever built this transport."""

    # -- helpers --------------------------------------------------------------------------

    def _headers(self, options: CallOptions, *, accept: str) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": accept,
            "A2A-Version": self.protocol_version,
            **options.headers,
        }
        if options.extensions:
            headers["A2A-Extensions"] = format_extensions(options.extensions)
        return headers

    def _result(self, status: int, content: bytes, request_id: int, operation: str) -> bytes:
        """The raw ``result`` of a response, or the error it carries raised."""
        envelope = self._envelope(content)
        if envelope is None:
            if status != 200:
                # Rejected before JSON-RPC got involved (401, 403, 404, 5xx from a proxy).
                raise from_rest_error(status, content)
            raise self._invalid(
                operation, f"its body is not a JSON-RPC response: {excerpt(content)}"
            )
        if not isinstance(envelope.error, msgspec.UnsetType):
            raise self._error_from(envelope.error)
        if status != 200:
            raise from_rest_error(status, content)
        if envelope.id != request_id:
            raise self._invalid(
                operation, f"it answers request id {envelope.id!r}, not {request_id}"
            )
        if isinstance(envelope.result, msgspec.UnsetType):
            raise self._invalid(operation, "it has neither a result nor an error")
        return bytes(envelope.result)

    def _event(self, data: bytes, request_id: int, operation: str) -> StreamResponse:
        envelope = self._envelope(data)
        if envelope is None:
            raise self._invalid(
                operation, f"a stream event is not a JSON-RPC response: {excerpt(data)}"
            )
        if not isinstance(envelope.error, msgspec.UnsetType):
            raise self._error_from(envelope.error)
        if envelope.id != request_id:
            raise self._invalid(operation, f"a stream event answers request id {envelope.id!r}")
        if isinstance(envelope.result, msgspec.UnsetType):
            raise self._invalid(operation, "a stream event has neither a result nor an error")
        return self._decode(bytes(envelope.result), StreamResponse, operation)

    def _envelope(self, content: bytes) -> _Envelope | None:
        try:
            envelope = _envelope_decoder.decode(content)
        except msgspec.DecodeError:
            return None
        if envelope.jsonrpc != "2.0" or (
            isinstance(envelope.result, msgspec.UnsetType)
            and isinstance(envelope.error, msgspec.UnsetType)
            and isinstance(envelope.id, msgspec.UnsetType)
        ):
            return None
        return envelope

    def _decode(self, raw: bytes, type_: type[T], operation: str) -> T:
        return decode_answer(raw, type_, url=self.url, operation=operation, what="result")

    def _invalid(self, operation: str, why: str) -> InvalidResponseError:
        return invalid_answer(self.url, operation, why)


def create_transport(interface: AgentInterface, settings: TransportSettings) -> JsonRpcTransport:
    """The registry's factory for ``JSONRPC`` interfaces."""
    return JsonRpcTransport(
        interface.url,
        settings.http,
        timeout=settings.timeout,
        stream_idle_timeout=settings.stream_idle_timeout,
    )


class JsonRpcV03Transport(JsonRpcTransport):
    """Calls one A2A 0.3 JSON-RPC interface URL (see the module docstring); the same options
    as ``JsonRpcTransport``."""

    protocol_version = V03
    _encode_request = staticmethod(v03.encode_request)
    _error_from = staticmethod(error_from_v03)

    def stream(
        self, operation: Operation, request: Any, options: CallOptions
    ) -> AsyncIterator[StreamResponse]:
        """As 1.0's, made to read as a 1.0 stream (``_v03.as_v10``)."""
        events = super().stream(operation, request, options)
        return as_v10(self, operation, request, options, events)

    def _headers(self, options: CallOptions, *, accept: str) -> dict[str, str]:
        headers = super()._headers(options, accept=accept)
        if options.extensions:
            headers["X-A2A-Extensions"] = headers["A2A-Extensions"]
        return headers

    def _decode(self, raw: bytes, type_: type[T], operation: str) -> T:
        try:
            value = msgspec.json.decode(raw)
            if type_ is StreamResponse:
                decoded: Any = v03.decode_event(value)
            else:
                decoded = v03.decode_result(operation, value)
        except (A2AError, msgspec.DecodeError) as exc:
            why = f"its result is not a valid A2A 0.3 answer to {operation}: {exc}"
            raise self._invalid(operation, why) from None
        if not isinstance(decoded, type_):
            why = f"its result is not a {type_.__name__}"
            raise self._invalid(operation, why)
        return decoded


def create_v03_transport(
    interface: AgentInterface, settings: TransportSettings
) -> JsonRpcV03Transport:
    """The registry's factory for ``JSONRPC`` interfaces of A2A 0.3 agents."""
    return JsonRpcV03Transport(
        interface.url,
        settings.http,
        timeout=settings.timeout,
        stream_idle_timeout=settings.stream_idle_timeout,
    )
