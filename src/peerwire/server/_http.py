"""Raw ASGI plumbing the HTTP bindings share: request headers, bodies, responses, SSE streams.

JSON-RPC (asgi.py) and HTTP+JSON (rest.py) differ in their codecs only; reading a request,
answering it and running a stream until its end or the client's disconnect happen here once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl

from ..bindings.sse import KEEPALIVE
from ..errors import A2AError, InternalError
from ..httpd import DISCONNECT_EXTENSION, answer_whole, drained, take_whole_body, write_part
from ..ops.metrics import Level
from ..ops.tracing import ServerCall
from ..types import StreamResponse
from .dispatch import TaskStream

__all__ = [
    "SSE_HEADERS",
    "BodyCutShort",
    "BodyTooLarge",
    "Headers",
    "Message",
    "Receive",
    "Scope",
    "Send",
    "header",
    "is_json",
    "plain",
    "query_param",
    "read_body",
    "respond",
    "send_event_stream",
]

log = logging.getLogger("peerwire.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
_JSON_TYPES = (b"application/json", b"application/a2a+json")


class BodyTooLarge(Exception):
    pass


class BodyCutShort(Exception):
    """The client went away before its body ended: nothing may be dispatched on a truncated
    body (the server answers the client, if at all; the app answers nothing)."""


class Headers:
    """The request headers a binding looks at, read in one pass."""

    __slots__ = ("content_length", "content_type", "extensions", "version")

    def __init__(self, scope: Scope) -> None:
        self.content_type: bytes | None = None
        # As sent: read_body parses it only when the body is not all here already (the
        # server has checked it then, and the body's length is what counts).
        self.content_length: bytes | None = None
        self.version: str | None = None
        self.extensions: list[str] = []
        for name, value in scope["headers"]:
            if name == b"content-type":
                self.content_type = value
            elif name == b"content-length":
                self.content_length = value
            elif name == b"a2a-version":
                self.version = value.decode("latin-1")
            elif name == b"a2a-extensions":
                self.extensions.append(value.decode("latin-1"))


def header(scope: Scope, wanted: bytes) -> bytes | None:
    for name, value in scope["headers"]:
        if name == wanted:
            return value  # type: ignore[no-any-return]
    return None


def query_param(scope: Scope, name: str) -> str | None:
    query = scope.get("query_string", b"")
    if not query:
        return None
    for key, value in parse_qsl(query.decode("latin-1")):
        if key.lower() == name.lower():
            return str(value)
    return None


def is_json(content_type: bytes | None) -> bool:
    if content_type is None:
        return False
    media = content_type.split(b";", 1)[0].strip().lower()
    return media in _JSON_TYPES


async def read_body(receive: Receive, limit: int, declared: bytes | None) -> bytes:
    """The request's body, at most ``limit`` bytes (``declared``: its Content-Length, as
    sent): ``BodyTooLarge`` beyond, before reading any when the declared length says so;
    ``BodyCutShort`` when the client left before its end."""
    body = take_whole_body(receive)  # peerwire's server, the body all here: no message
    if body is not None:
        if len(body) > limit:
            raise BodyTooLarge
        return body
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge
    message = await receive()
    if message["type"] != "http.request":
        raise BodyCutShort
    body = message.get("body", b"")
    if not message.get("more_body", False):
        if len(body) > limit:
            raise BodyTooLarge
        return body  # type: ignore[no-any-return]
    chunks = [body]
    size = len(body)
    while message.get("more_body", False):
        message = await receive()
        if message["type"] != "http.request":
            raise BodyCutShort
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
    return b"".join(chunks)


async def respond(
    send: Send,
    status: int,
    body: bytes,
    extra: list[tuple[bytes, bytes]] | None = None,
    content_type: bytes = b"application/json",
) -> None:
    headers = [(b"content-type", content_type), (b"content-length", b"%d" % len(body))]
    if extra:
        headers.extend(extra)
    await _send_whole(send, status, headers, body)


async def _send_whole(
    send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes
) -> None:
    # peerwire's server takes the whole answer in one call; any other, the two messages.
    paused = answer_whole(send, status, headers, body)
    if paused is None:
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
    elif paused:
        await drained(send)


async def plain(
    send: Send, status: int, text: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", b"%d" % len(text)),
    ]
    if extra:
        headers.extend(extra)
    await _send_whole(send, status, headers, text)


async def send_event_stream(
    scope: Scope,
    receive: Receive,
    send: Send,
    stream: TaskStream,
    *,
    event_frame: Callable[[StreamResponse], bytes],
    error_frame: Callable[[A2AError], bytes],
    keepalive_seconds: float,
    extra: list[tuple[bytes, bytes]],
    open_streams: Level | None = None,
    traced: ServerCall | None = None,
) -> None:
    """Answer 200 ``text/event-stream`` and send ``stream`` until it ends or the client leaves.

    ``open_streams`` (the binding's ``peerwire_active_streams``) counts the stream from its
    response's start until this call returns, however it ends. ``traced``, the request's span
    when it has one, counts the events and notes the error the stream ends with, and ends
    with the stream.

    ``event_frame`` and ``error_frame`` turn an event, or an error that ends the stream after
    it started, into a complete SSE frame: the bindings differ only there. A stream the server
    ends early (``StreamEndedError``: shutdown, outage) ends with that error's frame too.
    """
    if traced is not None:
        event_frame, error_frame = traced.framing(event_frame, error_frame)
    try:
        await _send_events(
            scope,
            receive,
            send,
            stream,
            event_frame,
            error_frame,
            keepalive_seconds,
            extra,
            open_streams,
        )
    finally:
        if traced is not None:
            traced.end()


async def _send_events(
    scope: Scope,
    receive: Receive,
    send: Send,
    stream: TaskStream,
    event_frame: Callable[[StreamResponse], bytes],
    error_frame: Callable[[A2AError], bytes],
    keepalive_seconds: float,
    extra: list[tuple[bytes, bytes]],
    open_streams: Level | None,
) -> None:
    try:
        await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS + extra})
    except BaseException:
        stream.close()  # the client left before the stream began: stop following the task
        raise
    # The client going away closes the stream, so an abandoned stream stops following its
    # task. The watch lives exactly as long as this call.
    stop_watching = _watch_disconnect(scope, receive, stream.close)
    try:
        if open_streams is not None:
            open_streams.inc()
        while True:
            try:
                batch = await stream.next_batch(keepalive_seconds)
            except StopAsyncIteration:
                break
            except A2AError as error:
                payload = error_frame(error)
                await send({"type": "http.response.body", "body": payload, "more_body": True})
                break
            except Exception:
                # The response has started: the error can only travel as the stream's last event.
                log.exception("peerwire: a stream failed")
                payload = error_frame(
                    InternalError("Internal error: the server failed while streaming")
                )
                await send({"type": "http.response.body", "body": payload, "more_body": True})
                break
            if batch is None:
                await send({"type": "http.response.body", "body": KEEPALIVE, "more_body": True})
                continue
            for item in batch:
                # Still one write per event: the client sees each as it is sent (peerwire's
                # server takes it in a call; any other, one ASGI message per event).
                payload = event_frame(item)
                paused = write_part(send, payload)
                if paused is None:
                    await send({"type": "http.response.body", "body": payload, "more_body": True})
                elif paused:
                    await drained(send)
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        stop_watching()
        stream.close()
        if open_streams is not None:
            open_streams.dec()


def _watch_disconnect(
    scope: Scope, receive: Receive, on_disconnect: Callable[[], None]
) -> Callable[[], None]:
    """Call ``on_disconnect`` once the client has gone; returns what stops watching.

    peerwire's HTTP server offers the ``peerwire.disconnect`` scope extension for this
    (``peerwire.httpd.DISCONNECT_EXTENSION``): no task per stream."""
    watch = scope.get("extensions", {}).get(DISCONNECT_EXTENSION)
    if watch is not None:
        return watch(on_disconnect)  # type: ignore[no-any-return]
    # Any ASGI server: a task of its own reads ``receive()`` until ``http.disconnect``.
    watcher = asyncio.ensure_future(_wait_for_disconnect(receive))
    watcher.add_done_callback(lambda _: on_disconnect())

    def stop() -> None:
        watcher.cancel()

    return stop


async def _wait_for_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
