"""The floor: what uvicorn and Starlette cost on their own, answering precomputed replies.

    python bench/floor_server.py --port 8000 [--mode starlette|asgi] [--http ...] [--loop ...]

A reference target of the bench harness, run in its reference venv (the a2a-sdk's uvicorn,
httptools, uvloop and Starlette: bench/harness/venvs.py). It follows the bench contract
(bench/README.md) just far enough to be driven like any A2A server: it parses every JSON-RPC
body, reads the method, the id and (for streams) ``message.metadata.chunks``, and answers
with task-shaped JSON or SSE events prepared at start-up, the request's id spliced in. No
task store, no validation, nothing built per request: what any A2A server on this HTTP stack
pays before doing any work, and so the baseline of the ratios.

  --mode starlette  Starlette Route, Response and StreamingResponse (the default)
  --mode asgi       a raw ASGI callable, no framework
"""

from __future__ import annotations

import argparse
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import uvicorn

TASK_ID = "00000000-0000-4000-8000-0000000000f1"
CONTEXT_ID = "00000000-0000-4000-8000-0000000000f2"
ARTIFACT_ID = "00000000-0000-4000-8000-0000000000f3"
TIMESTAMP = "2026-01-01T00:00:00.000Z"
TEXT = "hello bench"
CARD_PATH = "/.well-known/agent-card.json"

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def status(state: str) -> dict[str, Any]:
    return {"state": f"TASK_STATE_{state}", "timestamp": TIMESTAMP}


def task(state: str, artifacts: bool) -> dict[str, Any]:
    user = {"messageId": "m-1", "contextId": CONTEXT_ID, "taskId": TASK_ID, "role": "ROLE_USER"}
    shaped: dict[str, Any] = {"id": TASK_ID, "contextId": CONTEXT_ID, "status": status(state)}
    if artifacts:
        shaped["artifacts"] = [
            {"artifactId": ARTIFACT_ID, "name": "echo", "parts": [{"text": TEXT}]}
        ]
    shaped["history"] = [{**user, "parts": [{"text": TEXT}]}]
    return shaped


def status_update(state: str) -> dict[str, Any]:
    return {"statusUpdate": {"taskId": TASK_ID, "contextId": CONTEXT_ID, "status": status(state)}}


def chunk(i: int, last: bool) -> dict[str, Any]:
    artifact = {"artifactId": ARTIFACT_ID, "name": "echo", "parts": [{"text": f"{TEXT}[{i}]"}]}
    update: dict[str, Any] = {"taskId": TASK_ID, "contextId": CONTEXT_ID, "artifact": artifact}
    if i:
        update["append"] = True
    if last:
        update["lastChunk"] = True
    return {"artifactUpdate": update}


class Replies:
    """Every reply prepared once: JSON-RPC bodies split around where the id goes."""

    def __init__(self) -> None:
        self.results = {
            "SendMessage": compact({"task": task("COMPLETED", artifacts=True)}),
            "GetTask": compact(task("COMPLETED", artifacts=True)),
        }
        self.unknown = b',"error":{"code":-32601,"message":"Method not found"}}'
        self.streams: dict[int, list[bytes]] = {}

    def _stream(self, chunks: int) -> list[bytes]:
        if chunks not in self.streams:
            n = max(chunks, 1)
            results = [{"task": task("SUBMITTED", artifacts=False)}, status_update("WORKING")]
            results += [chunk(i, i == n - 1) for i in range(n)]
            results.append(status_update("COMPLETED"))
            self.streams[chunks] = [
                b'data: {"jsonrpc":"2.0","result":' + compact(r) + b',"id":' for r in results
            ]
        return self.streams[chunks]

    def answer(self, body: bytes) -> bytes | list[bytes]:
        """One JSON body, or the SSE frames of a stream."""
        request = json.loads(body)
        request_id = compact(request.get("id"))
        method = request.get("method")
        if method == "SendStreamingMessage":
            try:
                chunks = int(request["params"]["message"].get("metadata", {}).get("chunks", 0))
            except (KeyError, TypeError, ValueError, AttributeError):
                chunks = 0
            end = request_id + b"}\n\n"
            return [head + end for head in self._stream(chunks)]
        head = b'{"jsonrpc":"2.0","id":' + request_id
        result = self.results.get(method)
        return head + (b',"result":' + result + b"}" if result else self.unknown)


def card(base: str) -> bytes:
    return compact(
        {
            "name": "Floor (precomputed replies)",
            "description": "Precomputed replies: what the HTTP stack costs on its own.",
            "version": "1.0.0",
            "supportedInterfaces": [
                {"url": base + "/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
            ],
            "capabilities": {"streaming": True},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "echo", "name": "echo", "description": "echo", "tags": ["echo"]}],
        }
    )


def starlette_app(base: str) -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Route

    replies, card_body = Replies(), card(base)

    async def agent_card(request: Request) -> Response:
        return Response(card_body, media_type="application/json")

    async def rpc(request: Request) -> Response:
        reply = replies.answer(await request.body())
        if isinstance(reply, bytes):
            return Response(reply, media_type="application/json")

        async def frames() -> AsyncIterator[bytes]:
            for frame in reply:
                yield frame

        return StreamingResponse(
            frames(), media_type="text/event-stream", headers={"cache-control": "no-store"}
        )

    routes = [Route(CARD_PATH, agent_card, methods=["GET"]), Route("/", rpc, methods=["POST"])]
    return Starlette(routes=routes)


def asgi_app(base: str) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    replies, card_body = Replies(), card(base)
    json_headers = [(b"content-type", b"application/json")]
    sse_headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-store")]

    async def respond(send: Send, body: bytes) -> None:
        length = (b"content-length", str(len(body)).encode())
        await send(
            {"type": "http.response.start", "status": 200, "headers": [*json_headers, length]}
        )
        await send({"type": "http.response.body", "body": body})

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await receive()  # lifespan.startup
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        if scope["method"] == "GET" and scope["path"] == CARD_PATH:
            await respond(send, card_body)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        reply = replies.answer(body)
        if isinstance(reply, bytes):
            await respond(send, reply)
            return
        await send({"type": "http.response.start", "status": 200, "headers": sse_headers})
        for frame in reply:
            await send({"type": "http.response.body", "body": frame, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    return app


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--mode", choices=["starlette", "asgi"], default="starlette")
    ap.add_argument("--http", choices=["auto", "h11", "httptools"], default="auto")
    ap.add_argument("--loop", choices=["auto", "asyncio", "uvloop"], default="auto")
    a = ap.parse_args()
    base = f"http://{a.host}:{a.port}"
    app = starlette_app(base) if a.mode == "starlette" else asgi_app(base)
    uvicorn.run(
        app,
        host=a.host,
        port=a.port,
        http=a.http,
        loop=a.loop,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
