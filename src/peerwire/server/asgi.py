"""The plain ASGI application: agent card, JSON-RPC endpoint, SSE streams, request limits.

Raw ASGI on purpose: measured here, Starlette's routing and the task group it adds to every
stream cost 30-50% of throughput. Routing is a dict lookup on the path; everything A2A happens
in the dispatcher. The app can be served by uvicorn directly or mounted inside a
Starlette/FastAPI application (enter ``app.lifespan()`` from the host's lifespan then).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl

from ..bindings import jsonrpc
from ..bindings.sse import KEEPALIVE, frame
from ..errors import (
    A2AError,
    ContentTypeNotSupportedError,
    InternalError,
    InvalidRequestError,
)
from ..protocol import active_extensions, check_version, format_extensions, parse_extensions
from .card import CARD_PATH, EncodedCard
from .dispatch import CallContext, Dispatcher, TaskStream

__all__ = ["A2AApp", "ASGIApp"]

log = logging.getLogger("peerwire.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_JSON_HEADERS = [(b"content-type", b"application/json")]
_SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
_JSON_TYPES = (b"application/json", b"application/a2a+json")


class _BodyTooLarge(Exception):
    pass


class A2AApp:
    """An agent as an ASGI application."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        *,
        rpc_path: str = "/",
        max_body_bytes: int = 10 * 1024 * 1024,
        lenient_version: bool = False,
        card_max_age: int = 300,
        keepalive_seconds: float = 15.0,
        lifespan: Callable[[], contextlib.AbstractAsyncContextManager[None]] | None = None,
    ) -> None:
        self.dispatcher = dispatcher
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
        if self._encoded_card is None:
            self._encoded_card = EncodedCard.of(self.dispatcher.card(), self._card_max_age)
        return self._encoded_card

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            path = scope["path"]
            if path == self.rpc_path:
                await self._jsonrpc(scope, receive, send)
            elif path == CARD_PATH:
                await self._serve_card(scope, send)
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
        if card.matches(_header(scope, b"if-none-match")):
            await send(
                {"type": "http.response.start", "status": 304, "headers": card.headers()[1:]}
            )
            await send({"type": "http.response.body", "body": b""})
            return
        body = b"" if scope["method"] == "HEAD" else card.body
        headers = [*card.headers(), (b"content-length", b"%d" % len(card.body))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
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
            await _respond(send, 200, jsonrpc.encode_error(jsonrpc.request_id_of(body), error))
            return
        call = CallContext(extensions=extensions)
        extra = [(b"a2a-extensions", format_extensions(extensions).encode())] if extensions else []
        operation = getattr(self.dispatcher, request.method.operation)
        try:
            result = await operation(request.params, call)
        except A2AError as error:
            await _respond(send, 200, jsonrpc.encode_error(request.id, error), extra)
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
        await self._stream(receive, send, request.id, result, extra)

    async def _stream(
        self,
        receive: Receive,
        send: Send,
        request_id: bytes,
        stream: TaskStream,
        extra: list[tuple[bytes, bytes]],
    ) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS + extra})
        # One watcher per stream notices the client going away and closes the stream, so an
        # abandoned stream stops following its task. It lives exactly as long as this call.
        watcher = asyncio.ensure_future(_wait_for_disconnect(receive))
        watcher.add_done_callback(lambda _: stream.close())
        try:
            while True:
                try:
                    item = await stream.next(self.keepalive_seconds)
                except StopAsyncIteration:
                    break
                except A2AError as error:
                    payload = frame(jsonrpc.encode_error(request_id, error))
                    await send({"type": "http.response.body", "body": payload, "more_body": True})
                    break
                if item is None:
                    payload = KEEPALIVE
                else:
                    payload = frame(jsonrpc.encode_result(request_id, item))
                await send({"type": "http.response.body", "body": payload, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            watcher.cancel()
            stream.close()


async def _wait_for_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


class _Headers:
    """The request headers a binding looks at, read in one pass."""

    __slots__ = ("content_length", "content_type", "extensions", "version")

    def __init__(self, scope: Scope) -> None:
        self.content_type: bytes | None = None
        self.content_length: int | None = None
        self.version: str | None = None
        self.extensions: list[str] = []
        for name, value in scope["headers"]:
            if name == b"content-type":
                self.content_type = value
            elif name == b"content-length":
                self.content_length = int(value) if value.isdigit() else None
            elif name == b"a2a-version":
                self.version = value.decode("latin-1")
            elif name == b"a2a-extensions":
                self.extensions.append(value.decode("latin-1"))


def _header(scope: Scope, wanted: bytes) -> bytes | None:
    for name, value in scope["headers"]:
        if name == wanted:
            return value  # type: ignore[no-any-return]
    return None


def _query_param(scope: Scope, name: str) -> str | None:
    query = scope.get("query_string", b"")
    if not query:
        return None
    for key, value in parse_qsl(query.decode("latin-1")):
        if key.lower() == name.lower():
            return str(value)
    return None


def _is_json(content_type: bytes | None) -> bool:
    if content_type is None:
        return False
    media = content_type.split(b";", 1)[0].strip().lower()
    return media in _JSON_TYPES


async def _read_body(receive: Receive, limit: int, declared: int | None) -> bytes:
    if declared is not None and declared > limit:
        raise _BodyTooLarge
    message = await receive()
    body = message.get("body", b"")
    if not message.get("more_body", False):
        if len(body) > limit:
            raise _BodyTooLarge
        return body  # type: ignore[no-any-return]
    chunks = [body]
    size = len(body)
    while message.get("more_body", False):
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


async def _respond(
    send: Send, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [*_JSON_HEADERS, (b"content-length", b"%d" % len(body))]
    if extra:
        headers.extend(extra)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _plain(
    send: Send, status: int, text: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", b"%d" % len(text)),
    ]
    if extra:
        headers.extend(extra)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": text})
