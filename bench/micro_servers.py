"""The servers of the micro benchmarks: the same echo agent behind different HTTP plumbing.

    python bench/micro_servers.py VARIANT --port 8000

Every variant serves the benchmark agent (bench/echo_agent.py) from the same peerwire
Dispatcher, memory store and runner, and answers JSON-RPC with the same codec; they differ
only in what carries a request to the dispatcher and its reply back:

  peerwire       A2AApp as shipped: raw ASGI, our SSE framing (plus its header checks)
  raw            a minimal raw ASGI app: path lookup, body, the handler below, our SSE framing
  starlette      Starlette Route + Request/Response; streams as StreamingResponse of our frames
  sse-starlette  like starlette, but streams through sse-starlette's EventSourceResponse
                 (what the a2a-sdk uses)

``raw`` against ``starlette`` is the cost of Starlette's routing and request/response objects
for one handler (micro_asgi_vs_starlette.py); ``starlette`` against ``sse-starlette`` the cost
of that library over our framing, and ``raw`` against ``starlette`` for streams that of
StreamingResponse's per-stream task group (micro_sse.py). Needs starlette and sse-starlette
(the ``bench`` extra), which peerwire itself never imports.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import uvicorn

from bench.echo_agent import agent
from peerwire import create_app
from peerwire.bindings import jsonrpc
from peerwire.bindings.sse import frame
from peerwire.errors import A2AError
from peerwire.server._http import Receive, Scope, Send, plain, read_body, respond, send_event_stream
from peerwire.server.asgi import A2AApp
from peerwire.server.card import CARD_PATH
from peerwire.server.dispatch import CallContext, TaskStream

MAX_BODY = 10 * 1024 * 1024
ANONYMOUS = CallContext()


class Handler:
    """One JSON-RPC request to the dispatcher: a complete reply body, or an open stream."""

    def __init__(self, a2a: A2AApp) -> None:
        self.dispatcher = a2a.dispatcher

    async def __call__(self, body: bytes) -> bytes | tuple[bytes, TaskStream]:
        try:
            request = jsonrpc.decode_request(body)
            operation = getattr(self.dispatcher, request.method.operation)
            result = await operation(request.params, ANONYMOUS)
        except A2AError as error:
            return jsonrpc.encode_error(jsonrpc.request_id_of(body), error)
        if request.method.streaming:
            return request.id, result
        return jsonrpc.encode_result(request.id, {} if result is None else result)


def event(request_id: bytes, item: Any) -> bytes:
    return jsonrpc.encode_result(request_id, item)


async def stream_items(stream: TaskStream) -> AsyncIterator[Any]:
    try:
        async for item in stream:
            yield item
    finally:
        stream.close()


# -- raw ASGI -----------------------------------------------------------------------------


def raw_app(a2a: A2AApp) -> Callable[[Scope, Receive, Send], Any]:
    handle = Handler(a2a)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(a2a, receive, send)
            return
        path = scope["path"]
        if path == "/" and scope["method"] == "POST":
            reply = await handle(await read_body(receive, MAX_BODY, None))
            if isinstance(reply, bytes):
                await respond(send, 200, reply)
                return
            request_id, stream = reply
            await send_event_stream(
                receive,
                send,
                stream,
                event_frame=lambda item: frame(event(request_id, item)),
                error_frame=lambda error: frame(jsonrpc.encode_error(request_id, error)),
                keepalive_seconds=15.0,
                extra=[],
            )
        elif path == CARD_PATH:
            await respond(send, 200, a2a.card.body)
        else:
            await plain(send, 404, b"Not Found")

    return app


async def _lifespan(a2a: A2AApp, receive: Receive, send: Send) -> None:
    await receive()  # lifespan.startup
    async with a2a.lifespan():
        await send({"type": "lifespan.startup.complete"})
        await receive()  # lifespan.shutdown
    await send({"type": "lifespan.shutdown.complete"})


# -- Starlette ----------------------------------------------------------------------------


def starlette_app(a2a: A2AApp, *, sse_starlette: bool) -> Any:
    from sse_starlette import EventSourceResponse
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Route

    handle = Handler(a2a)

    async def rpc(request: Request) -> Response:
        reply = await handle(await request.body())
        if isinstance(reply, bytes):
            return Response(reply, media_type="application/json")
        request_id, stream = reply
        if sse_starlette:

            async def events() -> AsyncIterator[dict[str, str]]:
                async for item in stream_items(stream):
                    yield {"data": event(request_id, item).decode()}

            return EventSourceResponse(events())

        async def frames() -> AsyncIterator[bytes]:
            async for item in stream_items(stream):
                yield frame(event(request_id, item))

        return StreamingResponse(
            frames(), media_type="text/event-stream", headers={"cache-control": "no-cache"}
        )

    async def card(request: Request) -> Response:
        return Response(a2a.card.body, media_type="application/json")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with a2a.lifespan():
            yield

    routes = [Route("/", rpc, methods=["POST"]), Route(CARD_PATH, card, methods=["GET"])]
    return Starlette(routes=routes, lifespan=lifespan)


VARIANTS = ("peerwire", "raw", "starlette", "sse-starlette")


def build(variant: str, port: int) -> tuple[Any, A2AApp]:
    """The variant's ASGI app, and the A2AApp under it (whose ``lifespan()`` the app runs)."""
    a2a = create_app(agent, store="memory", public_url=f"http://127.0.0.1:{port}", rest_path=None)
    if variant == "peerwire":
        return a2a, a2a
    if variant == "raw":
        return raw_app(a2a), a2a
    return starlette_app(a2a, sse_starlette=variant == "sse-starlette"), a2a


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("variant", choices=VARIANTS)
    ap.add_argument("--port", type=int, required=True)
    a = ap.parse_args()
    # The same uvicorn settings as ``peerwire serve`` (httptools and uvloop when installed).
    app, _ = build(a.variant, a.port)
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=a.port,
        log_level="warning",
        access_log=False,
        lifespan="on",
    )


if __name__ == "__main__":
    main()
