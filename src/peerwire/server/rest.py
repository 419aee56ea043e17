"""The HTTP+JSON (REST) binding, server side (A2A spec §11): ASGI in, dispatcher calls, ASGI out.

``A2AApp`` hands every request under the REST prefix (default ``/rest``) to ``RestHandler``.
The codec (``bindings/rest.py``) matches the route and builds the typed request; this module
does the HTTP around it: authentication (as on JSON-RPC: before anything is parsed), body
limits, content type, ``A2A-Version`` (header or query), ``A2A-Extensions`` (required ones
enforced, active ones echoed), then one dispatcher call on behalf of the caller.
Success is 200 ``application/a2a+json`` (``{}`` for Empty); the two streaming routes answer
SSE whose ``data:`` lines are bare ``StreamResponse`` objects. Every failure is a
google.rpc.Status document with the status of the wire table, decided before any state
changes; an error after a stream started travels as a last ``event: error`` frame (the
reference SDK's form) holding the same document. Refusals: 401 ``UNAUTHENTICATED`` with a
``WWW-Authenticate`` challenge, 403 ``PERMISSION_DENIED`` (with an ``insufficient_scope``
challenge when the scopes are known).

A2A 0.3's routes (``/v1/...`` below the prefix; ``peerwire.compat.v03.rest``) are served here
too, through ``_v03.V03Server``, unless the request's ``A2A-Version`` names 1.x (then
``/v1`` is a 1.0 tenant's path). With 0.3 off they answer 404.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable
from time import perf_counter
from typing import TYPE_CHECKING
from urllib.parse import quote

from ..bindings import rest
from ..bindings.sse import event_framer, frame
from ..compat.v03 import rest as v03_rest
from ..compat.v03.version import names_v1
from ..errors import A2AError, InternalError, InvalidRequestError, MethodNotFoundError
from ..ops import tracing
from ..ops.logs import ACCESS_SCOPE_KEY
from ..protocol import check_version, format_extensions, negotiate_extensions
from ..types import encode
from ._authn import authenticate_http, challenge_headers
from ._http import (
    BodyCutShort,
    BodyTooLarge,
    Headers,
    Receive,
    Scope,
    Send,
    query_param,
    read_body,
    respond,
    send_event_stream,
)
from ._mount import raw_tail, route_path
from .dispatch import CallContext, Dispatcher

if TYPE_CHECKING:
    from ..security import Authenticator
    from ._v03 import V03Server

__all__ = ["RestHandler"]

log = logging.getLogger("peerwire.server")

_A2A_JSON = rest.A2A_JSON.encode()
_ERROR_EVENT = b"error"
_V03_PREFIX = v03_rest.PREFIX  # where A2A 0.3's routes start: one test per request
_EXTENSIONS_HEADER = b"a2a-extensions"


class RestHandler:
    """Serves the REST binding of one dispatcher below ``prefix``."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        *,
        prefix: str = "/rest",
        max_body_bytes: int = 10 * 1024 * 1024,
        lenient_version: bool = False,
        keepalive_seconds: float = 15.0,
        supported_extensions: Iterable[str] = (),
        required_extensions: Iterable[str] = (),
        authenticator: Authenticator | None = None,
        v03: V03Server | None = None,
        reached: Callable[[Scope, str], tuple[str | None, str]] | None = None,
    ) -> None:
        self.dispatcher = dispatcher
        # Where a request reached the app (origin, mount prefix), for the extended card's URLs.
        self._reached = reached
        # None: metrics are off, and the REST path does no metrics work at all.
        self._meter = None if dispatcher.metrics is None else dispatcher.metrics.requests("rest")
        # The SERVER spans of REST requests (made only while ``tracing.STATE.tracer`` is set).
        self._spans = tracing.ServerSpans("HTTP+JSON", "1.0", dispatcher.card)
        # Serves the 0.3 routes; None: 0.3 is off and they answer 404.
        self._v03 = v03
        # None: the card requires no credentials and every caller is anonymous.
        self.authenticator = authenticator
        self.prefix = prefix.rstrip("/")
        self.max_body_bytes = max_body_bytes
        self.lenient_version = lenient_version
        self.keepalive_seconds = keepalive_seconds
        self._supported_extensions = tuple(supported_extensions)
        self._required_extensions = tuple(required_extensions)
        self._owned = self.prefix + "/"

    def owns(self, path: str) -> bool:
        """Whether ``path`` (decoded, as in the ASGI scope) is under the REST prefix."""
        return path.startswith(self._owned) or path == self.prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.handle(
            scope, receive, send, route_path(scope["path"], scope.get("root_path", ""))
        )

    async def refuse(self, send: Send, error: A2AError) -> None:
        """Answer ``error`` before any route is looked at (the app could not start)."""
        await self._error(send, error)

    async def handle(self, scope: Scope, receive: Receive, send: Send, path: str) -> None:
        """Serve the request for ``path``: the decoded path below any mount prefix."""
        method = scope["method"]
        relative = self._relative_path(scope, path)
        if relative.startswith(_V03_PREFIX) and await self._v03_route(
            scope, receive, send, method, relative
        ):
            return
        meter = self._meter
        started = perf_counter() if meter is not None else 0.0
        try:
            principal = (
                None
                if self.authenticator is None
                else await authenticate_http(self.authenticator, scope)
            )
            found = rest.match_route(method, relative)
        except A2AError as error:
            await self._error(send, error)
            if meter is not None:
                meter.failed("", error, started)
            return
        if isinstance(found, rest.MethodNotAllowed):
            allow = [(b"allow", ", ".join(found.allow).encode())]
            refusal = found.error()
            await self._error(send, refusal, http_status=405, extra=allow)
            if meter is not None:
                meter.failed("", refusal, started)
            return
        route = found.route
        headers = Headers(scope)
        body = b""
        if route.has_body:
            try:
                body = await read_body(receive, self.max_body_bytes, headers.content_length)
            except BodyTooLarge:
                too_large = InvalidRequestError(
                    f"Request payload validation error: the body is larger than "
                    f"{self.max_body_bytes} bytes"
                )
                await self._error(send, too_large, http_status=413)
                if meter is not None:
                    meter.failed(route.operation, too_large, started)
                return
            except BodyCutShort:
                return
        try:
            if body.strip():
                content_type = headers.content_type
                rest.check_content_type(
                    None if content_type is None else content_type.decode("latin-1")
                )
            version = headers.version
            if version is None:
                version = query_param(scope, rest.VERSION_PARAM)
            check_version(version, lenient=self.lenient_version)
            request = rest.build_request(found, query=scope.get("query_string", b""), body=body)
            extensions = negotiate_extensions(
                headers.extensions, self._supported_extensions, self._required_extensions
            )
        except A2AError as error:
            await self._error(send, error)
            if meter is not None:
                meter.failed(route.operation, error, started)
            return
        call = CallContext.of(principal, extensions)
        if route.dispatch == "get_extended_agent_card" and self._reached is not None:
            call = dataclasses.replace(call, reached=self._reached(scope, path))
        extra = [(_EXTENSIONS_HEADER, format_extensions(extensions).encode())] if extensions else []
        operation = getattr(self.dispatcher, route.dispatch)
        access = scope.get(ACCESS_SCOPE_KEY)  # None unless the access log is on
        if access is not None:
            access.noted("rest", route.operation, request)
        traced = None
        if tracing.STATE.tracer is not None:  # tracing off: this attribute read is all
            traced = self._spans.start(route.dispatch, scope["headers"], request)
            if access is not None:
                access.traced(*traced.ids())
        try:
            if traced is None:
                result = await operation(request, call)
            else:
                result = await traced.run(operation, request, call, streaming=route.streaming)
            if access is not None:
                access.answered(result)
        except A2AError as error:
            await self._error(send, error, extra=extra)
            if meter is not None:
                meter.failed(route.operation, error, started)
            return
        except Exception:
            log.exception("peerwire: %s failed", route.operation)
            internal = InternalError(
                "Internal error: the server failed while handling this request"
            )
            await self._error(send, internal, extra=extra)
            if meter is not None:
                meter.failed(route.operation, internal, started)
            return
        if not route.streaming:
            payload = b"{}" if result is None else encode(result)
            await respond(send, 200, payload, extra, content_type=_A2A_JSON)
            if meter is not None:
                meter.ok(route.operation, started)
            return
        if meter is not None:
            meter.ok(route.operation, started)  # the stream is open: its own gauge follows
        await send_event_stream(
            scope,
            receive,
            send,
            result,
            event_frame=_event_frame,
            error_frame=_error_frame,
            keepalive_seconds=self.keepalive_seconds,
            extra=extra,
            open_streams=None if meter is None else meter.streams,
            traced=traced,
        )

    async def _v03_route(
        self, scope: Scope, receive: Receive, send: Send, method: str, path: str
    ) -> bool:
        """Serve a request on a 0.3 route; ``False``: ``path`` is no 0.3 route, or the request
        names 1.x in ``A2A-Version`` (``/v1`` is then a tenant): it is a 1.0 request."""
        headers = Headers(scope)
        version = headers.version
        if version is None:
            version = query_param(scope, rest.VERSION_PARAM)
        if names_v1(version):
            return False
        v03 = self._v03
        try:
            found = v03_rest.match_route(method, path)
        except A2AError as error:  # a malformed id in a 0.3 path
            if v03 is None:
                return False
            await v03.rest_error(send, error)
            return True
        if found is None:
            return False
        if v03 is None:
            off = MethodNotFoundError(
                f"No A2A REST route for {method} {path}: it is an A2A 0.3 route, and this "
                "server serves A2A 1.0 only"
            )
            await self._error(send, off, http_status=404)
            return True
        try:
            principal = (
                None
                if self.authenticator is None
                else await authenticate_http(self.authenticator, scope)
            )
        except A2AError as error:
            await v03.rest_error(send, error)
            return True
        if isinstance(found, rest.MethodNotAllowed):
            allow = [(b"allow", ", ".join(found.allow).encode())]
            await v03.rest_error(send, found.error(), http_status=405, extra=allow)
            return True
        body = b""
        if found.route.has_body:
            try:
                body = await read_body(receive, self.max_body_bytes, headers.content_length)
            except BodyTooLarge:
                too_large = InvalidRequestError(
                    f"Request payload validation error: the body is larger than "
                    f"{self.max_body_bytes} bytes"
                )
                await v03.rest_error(send, too_large, http_status=413)
                return True
            except BodyCutShort:
                return True
        await v03.rest(scope, receive, send, found, body, headers, principal)
        return True

    def _relative_path(self, scope: Scope, path: str) -> str:
        """The still percent-encoded path below the prefix: ids may carry ``%2F`` and ``%3A``,
        and a malformed escape must stay visible to be refused."""
        decoded = path[len(self.prefix) :]
        raw: bytes | None = scope.get("raw_path")
        if raw:
            text = raw.split(b"?", 1)[0].decode("latin-1")
            if decoded.endswith("/") and not text.endswith("/"):
                decoded = decoded[:-1]  # Litestar's mount adds a slash to the decoded path only
            root = scope.get("root_path")
            if root:
                text = route_path(text, root)
            if text.startswith(self.prefix):
                relative = text[len(self.prefix) :]
                if relative == decoded or "%" in relative:
                    return relative
            # A mount prefix the host kept in the raw path only (Litestar): the end that
            # decodes to our path is ours.
            tail = raw_tail(text, decoded)
            if tail is not None:
                return tail
        # No raw path (or one a host rewrote): re-encode the decoded one.
        return quote(decoded, safe="/:@!$&'()*+,;=-._~")

    async def _error(
        self,
        send: Send,
        error: A2AError,
        *,
        http_status: int | None = None,
        extra: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        status, body = rest.encode_error(error, http_status=http_status)
        headers = [*(extra or []), *challenge_headers(error, self.authenticator)]
        await respond(send, status, body, headers, content_type=_A2A_JSON)


_event_frame = event_framer()  # a bare StreamResponse per event


def _error_frame(error: A2AError) -> bytes:
    return frame(rest.encode_stream_error(error), _ERROR_EVENT)
