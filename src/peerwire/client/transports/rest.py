"""The HTTP+JSON (REST) binding, client side (A2A spec §11): the codec's route table run backwards.

``bindings.rest.encode_request`` turns a typed request into verb, path, query and body, the
same table the server matches against. Successful answers are decoded into the expected type
(``application/a2a+json`` or ``application/json``; an Empty result may be ``{}``, ``null`` or
no body at all). Failures are google.rpc.Status documents, decoded by ``from_rest_error``,
which also understands the 1.0.0 statuses and problem+json bodies of older servers.

Streams ask for ``text/event-stream``; each event's data is a bare ``StreamResponse``. An error
after the stream started arrives as one more event holding a Status document (named
``error`` by the reference SDK and by peerwire; recognised by its content either way), raised
from the iterator as its class (``StreamEndedError`` when the server ended the stream early).
SubscribeToTask is sent as POST by default, as the spec text and the reference SDK do;
``subscribe_method="GET"`` follows the proto's http rule instead.

``RestV03Transport`` speaks the binding to an A2A 0.3 agent: its ``/v1/...`` routes and the
ProtoJSON of the 0.3 proto (``peerwire.compat.v03.rest``), translated to and from the 1.0
operations and ``peerwire.types`` here; errors as the 0.3 SDKs answer them
(``compat.v03.errors.rest_error_from``); ``A2A-Version: 0.3`` and the extensions also as
``X-A2A-Extensions``. ListTasks has no 0.3 route: ``UnsupportedOperationError``, nothing sent.
Its streams are made to read as 1.0 streams (``_v03.as_v10``: the Task first; a finished
task's subscription refused as 1.0 does, also when a 0.3 server cuts it).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal, TypeVar

import httpx
import msgspec

from ...bindings.rest import A2A_JSON, encode_request, route_for
from ...compat.v03 import rest as v03
from ...compat.v03.errors import error_from_v03, rest_error_from
from ...compat.v03.files import FileBytes, check_file_bytes, sending_form
from ...compat.v03.version import PROTOCOL_VERSION as V03
from ...errors import A2AError, InvalidResponseError, from_rest_error
from ...protocol import PROTOCOL_VERSION, format_extensions
from ...types import AgentInterface, Binding, StreamResponse, decode
from ._exchange import HTTPExchange, PooledExchange, as_exchange
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

__all__ = ["RestTransport", "RestV03Transport", "create_transport", "create_v03_transport"]

T = TypeVar("T")

SubscribeMethod = Literal["POST", "GET"]

_ACCEPT_JSON = f"{A2A_JSON}, application/json"


class RestTransport:
    """Calls one HTTP+JSON interface URL through an HTTP exchange (or ``httpx.AsyncClient``);
    ``owns_http``: ``aclose`` closes it."""

    binding = Binding.HTTP_JSON

    def __init__(
        self,
        url: str,
        http: httpx.AsyncClient | HTTPExchange,
        *,
        timeout: float | None = 30.0,
        stream_idle_timeout: float | None = 60.0,
        subscribe_method: SubscribeMethod = "POST",
        owns_http: bool = False,
    ) -> None:
        if subscribe_method not in ("POST", "GET"):
            raise ValueError(f"subscribe_method must be 'POST' or 'GET', not {subscribe_method!r}")
        self.url = url
        self._base = url.rstrip("/")
        self._given_http = http
        self._http = as_exchange(http)
        self._timeout = timeout
        self._stream_idle_timeout = stream_idle_timeout
        self._subscribe_method = subscribe_method
        self._owns_http = owns_http

    async def call(
        self, operation: Operation, request: Any, response_type: type[T], options: CallOptions
    ) -> T:
        if route_for(operation).streaming:
            raise ValueError(f"{operation} is a streaming operation: use stream()")
        wire = encode_request(operation, request, subscribe_method=self._subscribe_method)
        headers = self._headers(options, accept=_ACCEPT_JSON, has_body=wire.body is not None)
        timeout = options.timeout if options.timeout is not None else self._timeout
        try:
            reply = await self._http.request(
                wire.method,
                with_query(self._base + wire.target, options.query),
                headers=headers,
                body=wire.body,
                timeout=timeout,
            )
        except HTTP_ERRORS as exc:
            raise client_error(exc, self.url, operation) from exc
        if not 200 <= reply.status < 300:
            raise from_rest_error(reply.status, reply.body)
        if response_type is type(None):
            # Empty: {} from peerwire and the SDK; null or 204 from others. Nothing to read.
            return None
        return self._decode(reply.body, response_type, operation)

    async def stream(
        self, operation: Operation, request: Any, options: CallOptions
    ) -> AsyncIterator[StreamResponse]:
        if not route_for(operation).streaming:
            raise ValueError(f"{operation} is not a streaming operation: use call()")
        wire = encode_request(operation, request, subscribe_method=self._subscribe_method)
        timeout = options.timeout if options.timeout is not None else self._timeout
        try:
            reply = await self._http.open_stream(
                wire.method,
                with_query(self._base + wire.target, options.query),
                headers=self._headers(
                    options, accept="text/event-stream", has_body=wire.body is not None
                ),
                body=wire.body,
                timeout=timeout,
                idle_timeout=self._stream_idle_timeout,
            )
        except HTTP_ERRORS as exc:
            raise client_error(exc, self.url, operation) from exc
        try:
            if not 200 <= reply.status < 300:
                content = await read_rest(reply, self.url, operation)
                raise from_rest_error(reply.status, content)
            content_type = reply.headers.get("content-type", "")
            if not is_event_stream(content_type):
                content = await read_rest(reply, self.url, operation)
                self._raise_if_error(content)
                raise self._invalid(
                    operation,
                    f"it answered with a single document instead of an event stream "
                    f"(Content-Type {content_type!r}): {excerpt(content)}",
                )
            async for data in sse_payloads(reply, self.url, operation):
                yield self._event(data, operation)
        finally:
            await reply.aclose()

    async def aclose(self) -> None:
        """Close the HTTP client if this transport made it; a shared one stays open."""
        if self._owns_http:
            await self._given_http.aclose()

    # -- helpers --------------------------------------------------------------------------

    def _headers(self, options: CallOptions, *, accept: str, has_body: bool) -> dict[str, str]:
        headers = {"Accept": accept, "A2A-Version": PROTOCOL_VERSION}
        if has_body:
            headers["Content-Type"] = A2A_JSON
        headers.update(options.headers)
        if options.extensions:
            headers["A2A-Extensions"] = format_extensions(options.extensions)
        return headers

    def _event(self, data: bytes, operation: str) -> StreamResponse:
        try:
            return decode(data, StreamResponse, path="event")
        except A2AError as exc:
            # Not an event: maybe the Status document of an error that ended the stream.
            self._raise_if_error(data)
            raise self._invalid(
                operation, f"a stream event is not a StreamResponse: {exc}"
            ) from None

    def _raise_if_error(self, content: bytes) -> None:
        try:
            document = msgspec.json.decode(content)
        except msgspec.DecodeError:
            return
        if isinstance(document, dict) and isinstance(document.get("error"), dict):
            code = document["error"].get("code")
            status = code if isinstance(code, int) and 400 <= code <= 599 else 500
            raise from_rest_error(status, document)

    def _decode(self, raw: bytes, type_: type[T], operation: str) -> T:
        return decode_answer(raw, type_, url=self.url, operation=operation, what="body")

    def _invalid(self, operation: str, why: str) -> InvalidResponseError:
        return invalid_answer(self.url, operation, why)


def create_transport(
    interface: AgentInterface,
    settings: TransportSettings | None = None,
    *,
    http_client: httpx.AsyncClient | None = None,
    subscribe_method: SubscribeMethod = "POST",
) -> RestTransport:
    """The registry's factory for ``HTTP+JSON`` interfaces.

    With ``settings`` (the client's registry) the transport uses the client's HTTP pool and
    timeouts. Standalone, it uses ``http_client`` if given (left open by ``aclose``) or makes
    its own native pool (closed by ``aclose``; see ``PooledExchange`` for proxies).
    """
    if interface.protocol_binding != Binding.HTTP_JSON:
        raise ValueError(
            f"an {Binding.HTTP_JSON} transport cannot serve a "
            f"{interface.protocol_binding!r} interface"
        )
    if settings is not None:
        if http_client is not None:
            raise TypeError("pass either settings or http_client, not both")
        return RestTransport(
            interface.url,
            settings.http,
            timeout=settings.timeout,
            stream_idle_timeout=settings.stream_idle_timeout,
            subscribe_method=subscribe_method,
        )
    own = http_client is None
    http = PooledExchange() if http_client is None else http_client
    return RestTransport(interface.url, http, subscribe_method=subscribe_method, owns_http=own)


class RestV03Transport:
    """Calls one A2A 0.3 HTTP+JSON interface URL (see the module docstring) through an HTTP
    exchange it does not own."""

    binding = Binding.HTTP_JSON
    protocol_version = V03

    def __init__(
        self,
        url: str,
        http: httpx.AsyncClient | HTTPExchange,
        *,
        timeout: float | None = 30.0,
        stream_idle_timeout: float | None = 60.0,
        v03_file_bytes: FileBytes = "auto",
    ) -> None:
        self.url = url
        self._base = url.rstrip("/")
        self._http = as_exchange(http)
        self._timeout = timeout
        self._stream_idle_timeout = stream_idle_timeout
        # File bytes: read under this setting, sent in its form (compat.v03.files).
        self._file_bytes = check_file_bytes(v03_file_bytes)
        self._file_form = sending_form(self._file_bytes)

    async def call(
        self, operation: Operation, request: Any, response_type: type[T], options: CallOptions
    ) -> T:
        if v03.is_streaming(operation):
            raise ValueError(f"{operation} is a streaming operation: use stream()")
        wire = v03.encode_request(operation, request, file_form=self._file_form)
        headers = self._headers(options, accept="application/json", has_body=wire.body is not None)
        timeout = options.timeout if options.timeout is not None else self._timeout
        try:
            reply = await self._http.request(
                wire.method,
                with_query(self._base + wire.target, options.query),
                headers=headers,
                body=wire.body,
                timeout=timeout,
            )
        except HTTP_ERRORS as exc:
            raise client_error(exc, self.url, operation) from exc
        if not 200 <= reply.status < 300:
            raise rest_error_from(reply.status, reply.body)
        if response_type is type(None):
            return None  # DELETE: {} from peerwire and the Python SDK, 204 from JavaScript's
        try:
            decoded = v03.decode_result(
                operation, msgspec.json.decode(reply.body), file_bytes=self._file_bytes
            )
        except (A2AError, msgspec.DecodeError) as exc:
            why = f"its body is not a valid A2A 0.3 answer to {operation}: {exc}"
            raise invalid_answer(self.url, operation, why) from None
        if not isinstance(decoded, response_type):
            raise invalid_answer(self.url, operation, f"its body is not a {response_type.__name__}")
        return decoded

    def stream(
        self, operation: Operation, request: Any, options: CallOptions
    ) -> AsyncIterator[StreamResponse]:
        """The events of a 0.3 stream, made to read as a 1.0 stream (``_v03.as_v10``)."""
        if not v03.is_streaming(operation):
            raise ValueError(f"{operation} is not a streaming operation: use call()")
        events = self._events(operation, request, options)
        return as_v10(self, operation, request, options, events)

    async def _events(
        self, operation: Operation, request: Any, options: CallOptions
    ) -> AsyncIterator[StreamResponse]:
        """The stream's events as the 0.3 server sends them."""
        wire = v03.encode_request(operation, request, file_form=self._file_form)
        timeout = options.timeout if options.timeout is not None else self._timeout
        try:
            reply = await self._http.open_stream(
                wire.method,
                with_query(self._base + wire.target, options.query),
                headers=self._headers(
                    options, accept="text/event-stream", has_body=wire.body is not None
                ),
                body=wire.body,
                timeout=timeout,
                idle_timeout=self._stream_idle_timeout,
            )
        except HTTP_ERRORS as exc:
            raise client_error(exc, self.url, operation) from exc
        try:
            if not 200 <= reply.status < 300:
                content = await read_rest(reply, self.url, operation)
                raise rest_error_from(reply.status, content)
            content_type = reply.headers.get("content-type", "")
            if not is_event_stream(content_type):
                content = await read_rest(reply, self.url, operation)
                raise invalid_answer(
                    self.url,
                    operation,
                    f"it answered with a single document instead of an event stream "
                    f"(Content-Type {content_type!r}): {excerpt(content)}",
                )
            async for data in sse_payloads(reply, self.url, operation):
                yield self._event(data, operation)
        finally:
            await reply.aclose()

    async def aclose(self) -> None:
        """Nothing to release: the HTTP client belongs to whoever built this transport."""

    def _headers(self, options: CallOptions, *, accept: str, has_body: bool) -> dict[str, str]:
        headers = {"Accept": accept, "A2A-Version": V03}
        if has_body:
            headers["Content-Type"] = "application/json"
        headers.update(options.headers)
        if options.extensions:
            extensions = format_extensions(options.extensions)
            headers["A2A-Extensions"] = headers["X-A2A-Extensions"] = extensions
        return headers

    def _event(self, data: bytes, operation: str) -> StreamResponse:
        try:
            document = msgspec.json.decode(data)
        except msgspec.DecodeError as exc:
            raise invalid_answer(
                self.url, operation, f"a stream event is not JSON: {exc}"
            ) from None
        if isinstance(document, dict) and isinstance(document.get("code"), int):
            raise error_from_v03(document)  # the error that ended the stream
        try:
            return v03.decode_event(document, file_bytes=self._file_bytes)
        except A2AError as exc:
            why = f"a stream event is not an A2A 0.3 StreamResponse: {exc}"
            raise invalid_answer(self.url, operation, why) from None


def create_v03_transport(
    interface: AgentInterface, settings: TransportSettings
) -> RestV03Transport:
    """The registry's factory for ``HTTP+JSON`` interfaces of A2A 0.3 agents."""
    return RestV03Transport(
        interface.url,
        settings.http,
        timeout=settings.timeout,
        stream_idle_timeout=settings.stream_idle_timeout,
        v03_file_bytes=settings.v03_file_bytes,
    )
