"""The plain ASGI application: agent card, JSON-RPC endpoint, SSE streams, request limits.

Raw ASGI on purpose: measured here, Starlette's routing and the task group it adds to every
stream cost 30-50% of throughput. Routing is a dict lookup on the path; everything A2A happens
in the dispatcher. ``serve`` runs it on peerwire's own HTTP server (``peerwire.httpd``); any
ASGI server can run it too (it speaks the lifespan protocol), or it can be mounted inside a
Starlette/FastAPI application (enter ``app.lifespan()`` from the host's lifespan then).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from ..bindings import jsonrpc
from ..bindings.sse import event_framer, frame
from ..errors import (
    A2AError,
    ContentTypeNotSupportedError,
    InternalError,
    InvalidRequestError,
)
from ..protocol import active_extensions, check_version, format_extensions, parse_extensions
from ._authn import authenticate_http, challenge_headers
from ._http import BodyCutShort as _BodyCutShort
from ._http import BodyTooLarge as _BodyTooLarge
from ._http import Headers as _Headers
from ._http import Receive, Scope, Send, send_event_stream
from ._http import header as _header
from ._http import is_json as _is_json
from ._http import plain as _plain
from ._http import query_param as _query_param
from ._http import read_body as _read_body
from ._http import respond as _respond
from .card import CARD_PATH, EncodedCard
from .dispatch import CallContext, Dispatcher, TaskStream
from .rest import RestHandler

if TYPE_CHECKING:
    from ..security import Authenticator

__all__ = ["A2AApp", "ASGIApp"]

log = logging.getLogger("peerwire.server")

ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class A2AApp:
    """An agent as an ASGI application."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        *,
        rpc_path: str = "/",
        rest_path: str | None = "/rest",
        max_body_bytes: int = 10 * 1024 * 1024,
        lenient_version: bool = False,
        card_max_age: int = 300,
        keepalive_seconds: float = 15.0,
        lifespan: Callable[[], contextlib.AbstractAsyncContextManager[None]] | None = None,
        authenticator: Authenticator | None = None,
        documents: Mapping[str, bytes] | None = None,
    ) -> None:
        self.dispatcher = dispatcher
        # Public JSON documents by path (the push-signing JWKS), served like the card.
        self._documents = dict(documents or {})
        # Checks every request but the public card; None: the card requires no credentials.
        self.authenticator = authenticator
        self.rpc_path = rpc_path
        self.max_body_bytes = max_body_bytes
        self.lenient_version = lenient_version
        self.keepalive_seconds = keepalive_seconds
        self._card_max_age = card_max_age
        self._encoded_card: EncodedCard | None = None
        self._lifespan = lifespan
        card = dispatcher.card()
        self._supported_extensions = tuple(e.uri for e in card.capabilities.extensions)
        self._required_extensions = tuple(e.uri for e in card.capabilities.extensions if e.required)
        # REST owns every path under its prefix; "" (or "/") puts it at the root, where the
        # exact JSON-RPC and card paths above still win.
        self.rest_path = None if rest_path is None else rest_path.rstrip("/")
        self._rest = (
            None
            if self.rest_path is None
            else RestHandler(
                dispatcher,
                prefix=self.rest_path,
                max_body_bytes=max_body_bytes,
                lenient_version=lenient_version,
                keepalive_seconds=keepalive_seconds,
                supported_extensions=self._supported_extensions,
                required_extensions=self._required_extensions,
                authenticator=authenticator,
            )
        )

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Start the store, runner and bus; stop them on exit (for embedding in another app)."""
        if self._lifespan is None:
            yield
            return
        async with self._lifespan():
            yield

    @property
    def card(self) -> EncodedCard:
        card = self.dispatcher.card()
        # Re-encoded when the card changes (the gRPC interface joins it once its port is bound).
        if self._encoded_card is None or self._encoded_card.card is not card:
            self._encoded_card = EncodedCard.of(card, self._card_max_age)
        return self._encoded_card

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            path = scope["path"]
            if path == self.rpc_path:
                await self._jsonrpc(scope, receive, send)
            elif path == CARD_PATH:
                await self._serve_card(scope, send)
            elif path in self._documents:
                await self._serve_document(scope, send, self._documents[path])
            elif self._rest is not None and self._rest.owns(path):
                await self._rest(scope, receive, send)
            else:
                await _plain(send, 404, b"Not Found")
        elif kind == "lifespan":
            await self._run_lifespan(receive, send)

    # -- lifespan -----------------------------------------------------------------------------

    async def _run_lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        assert message["type"] == "lifespan.startup"
        try:
            async with self.lifespan():
                await send({"type": "lifespan.startup.complete"})
                message = await receive()
                assert message["type"] == "lifespan.shutdown"
        except Exception as exc:
            log.exception("peerwire: lifespan failed")
            failed = (
                "lifespan.shutdown.failed"
                if message["type"] == "lifespan.shutdown"
                else "lifespan.startup.failed"
            )
            await send({"type": failed, "message": str(exc)})
            return
        await send({"type": "lifespan.shutdown.complete"})

    # -- the agent card -----------------------------------------------------------------------

    async def _serve_card(self, scope: Scope, send: Send) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await _plain(send, 405, b"Method Not Allowed", [(b"allow", b"GET, HEAD")])
            return
        card = self.card
        if card.not_modified(
            _header(scope, b"if-none-match"), _header(scope, b"if-modified-since")
        ):
            await send(
                {"type": "http.response.start", "status": 304, "headers": card.headers()[1:]}
            )
            await send({"type": "http.response.body", "body": b""})
            return
        body = b"" if scope["method"] == "HEAD" else card.body
        headers = [*card.headers(), (b"content-length", b"%d" % len(card.body))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _serve_document(self, scope: Scope, send: Send, document: bytes) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await _plain(send, 405, b"Method Not Allowed", [(b"allow", b"GET, HEAD")])
            return
        headers = [
            (b"content-type", b"application/json"),
            (b"cache-control", b"max-age=%d" % self._card_max_age),
            (b"content-length", b"%d" % len(document)),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        body = b"" if scope["method"] == "HEAD" else document
        await send({"type": "http.response.body", "body": body})

    # -- JSON-RPC -----------------------------------------------------------------------------

    async def _jsonrpc(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "POST":
            await _plain(send, 405, b"Method Not Allowed", [(b"allow", b"POST")])
            return
        headers = _Headers(scope)
        try:
            body = await _read_body(receive, self.max_body_bytes, headers.content_length)
        except _BodyTooLarge:
            error = InvalidRequestError(
                f"Request payload validation error: the body is larger than "
                f"{self.max_body_bytes} bytes"
            )
            await _respond(send, 413, jsonrpc.encode_error(b"null", error))
            return
        except _BodyCutShort:
            return  # the client left mid-body: nothing to dispatch, nobody to answer
        try:
            principal = await authenticate_http(self.authenticator, scope)
        except A2AError as error:
            await self._jsonrpc_error(send, jsonrpc.request_id_of(body), error)
            return
        try:
            if not _is_json(headers.content_type):
                raise ContentTypeNotSupportedError(
                    "JSON-RPC requests must be sent as application/json, not "
                    f"{(headers.content_type or b'(none)').decode(errors='replace')!r}"
                )
            version = headers.version
            if version is None:
                version = _query_param(scope, "A2A-Version")
            check_version(version, lenient=self.lenient_version)
            request = jsonrpc.decode_request(body)
            extensions = active_extensions(
                parse_extensions(headers.extensions),
                self._supported_extensions,
                self._required_extensions,
            )
        except A2AError as error:
            await _respond(send, 200, jsonrpc.encode_error(jsonrpc.error_id(body, error), error))
            return
        call = CallContext.of(principal, extensions)
        extra = [(b"a2a-extensions", format_extensions(extensions).encode())] if extensions else []
        operation = getattr(self.dispatcher, request.method.operation)
        try:
            result = await operation(request.params, call)
        except A2AError as error:
            await self._jsonrpc_error(send, request.id, error, extra)
            return
        except Exception:
            log.exception("peerwire: %s failed", request.method.name)
            internal = InternalError(
                "Internal error: the server failed while handling this request"
            )
            await _respond(send, 200, jsonrpc.encode_error(request.id, internal), extra)
            return
        if not request.method.streaming:
            body = jsonrpc.encode_result(request.id, {} if result is None else result)
            await _respond(send, 200, body, extra)
            return
        await self._stream(scope, receive, send, request.id, result, extra)

    async def _jsonrpc_error(
        self,
        send: Send,
        request_id: bytes,
        error: A2AError,
        extra: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        """An error response; authentication and permission errors at HTTP level (401 with
        ``WWW-Authenticate``, 403), the others as HTTP 200 (facts §6.1, §7.3)."""
        headers = [*(extra or []), *challenge_headers(error, self.authenticator)]
        status = jsonrpc.response_status(error)
        await _respond(send, status, jsonrpc.encode_error(request_id, error), headers)

    async def _stream(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        request_id: bytes,
        stream: TaskStream,
        extra: list[tuple[bytes, bytes]],
    ) -> None:
        await send_event_stream(
            scope,
            receive,
            send,
            stream,
            event_frame=event_framer(*jsonrpc.result_envelope(request_id)),
            error_frame=lambda error: frame(jsonrpc.encode_error(request_id, error)),
            keepalive_seconds=self.keepalive_seconds,
            extra=extra,
        )
