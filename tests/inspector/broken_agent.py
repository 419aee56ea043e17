"""A deliberately broken A2A agent for the self-check's tests: raw ASGI, JSON-RPC at ``/`` and
HTTP+JSON at ``/rest``, served by uvicorn on loopback in the test's event loop.

Without faults it is a small, correct 1.0 agent (one echo skill, streaming): the self-check
finds nothing wrong with it. Each fault in ``FAULTS`` breaks one thing, and names the one
check id of the self-check that must flag it. It is written by hand, not with peerwire's
server, so that it can get wrong what peerwire's server cannot.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterator
from typing import Any

import uvicorn
from joserfc.jwk import ECKey

from peerwire.security import CardSigner

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

FAULTS: dict[str, str] = {
    # fault name -> the check id that must flag it
    "card_not_json": "card.fetch",  # an HTML page where the card should be
    "card_missing_fields": "card.fields",  # no version, no defaultOutputModes
    "card_without_cache_headers": "card.caching",
    "unknown_binding": "card.interfaces",  # a third interface bound "REST"
    "relative_interface_url": "card.interfaces",  # a third interface at "/rpc2"
    "duplicate_skill_ids": "card.skills",
    "undeclared_security_scheme": "card.security",
    "card_signature_mismatch": "card.signature",  # signed, then changed
    "interface_404": "interfaces.reachable",  # the HTTP+JSON URL leads nowhere
    "stalls": "interfaces.reachable",  # the JSON-RPC endpoint never answers
    "refuses_patch_version": "version.patch",  # 1.0.3 -> VersionNotSupportedError
    "ignores_missing_version": "version.missing",  # no header -> served as 1.0
    "accepts_any_version": "version.unsupported",  # 9.9 -> served as 1.0
    "wrong_unknown_task_code": "errors.unknown_task",  # -32602 / HTTP 400
    "bad_json_500": "errors.bad_request",  # a body that is not JSON -> HTTP 500
    "stream_starts_with_status": "stream.order",  # statusUpdate before the Task
    "stream_without_final_state": "stream.order",  # closes while WORKING
    "stream_garbage": "stream.order",  # an event that is not JSON after the Task
    "stream_stays_open": "stream.order",  # COMPLETED, and the stream is never closed
}

_DOMAIN = "a2a-protocol.org"
_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


class BrokenAgent:
    """The ASGI app. ``faults`` are names from ``FAULTS``; ``signed`` signs the card (with a
    fresh EC key whose JWKS is served at ``/jwks.json``, the signature's ``jku``)."""

    def __init__(
        self, base_url: str, faults: Collection[str] = (), *, signed: bool = False
    ) -> None:
        unknown = set(faults) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown faults: {sorted(unknown)}")
        self.base_url = base_url
        self.faults = frozenset(faults)
        self.signer: CardSigner | None = None
        if signed or "card_signature_mismatch" in self.faults:
            self.signer = CardSigner(
                ECKey.generate_key("P-256").as_dict(private=True),
                kid="broken-1",
                jku=f"{base_url}/jwks.json",
            )

    # -- the card --------------------------------------------------------------------------

    def card(self) -> dict[str, Any]:
        rest_path = "/nowhere" if "interface_404" in self.faults else "/rest"
        interfaces = [
            {"url": f"{self.base_url}/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {
                "url": f"{self.base_url}{rest_path}",
                "protocolBinding": "HTTP+JSON",
                "protocolVersion": "1.0",
            },
        ]
        if "unknown_binding" in self.faults:
            interfaces.append(
                {
                    "url": f"{self.base_url}/rest",
                    "protocolBinding": "REST",
                    "protocolVersion": "1.0",
                }
            )
        if "relative_interface_url" in self.faults:
            interfaces.append(
                {"url": "/rpc2", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
            )
        skill = {"id": "echo", "name": "Echo", "description": "Repeats its text", "tags": ["echo"]}
        card: dict[str, Any] = {
            "name": "Broken Agent",
            "description": "Breaks the protocol on purpose",
            "version": "0.0.1",
            "supportedInterfaces": interfaces,
            "capabilities": {"streaming": True, "pushNotifications": False},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [skill],
        }
        if "card_missing_fields" in self.faults:
            del card["version"], card["defaultOutputModes"]
        if "duplicate_skill_ids" in self.faults:
            card["skills"] = [skill, {**skill, "name": "Echo again"}]
        if "undeclared_security_scheme" in self.faults:
            card["securitySchemes"] = {
                "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}},
            }
            # Requires "oauth", which it never declares (and the server checks nothing).
            card["securityRequirements"] = [{"schemes": {"oauth": {"list": ["read"]}}}]
        if self.signer is not None:
            signature = self.signer.signature(card)
            card["signatures"] = [
                {"protected": signature.protected, "signature": signature.signature}
            ]
            if "card_signature_mismatch" in self.faults:
                card["description"] += " (changed after signing)"
        return card

    # -- ASGI ------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path, method = scope["path"], scope["method"]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        body = await _read_body(receive)
        if path == "/.well-known/agent-card.json" and method == "GET":
            extra = (
                {}
                if "card_without_cache_headers" in self.faults
                else {
                    "cache-control": "public, max-age=60",
                    "etag": '"broken-1"',
                }
            )
            if "card_not_json" in self.faults:
                await _respond_text(send, 200, "<html><body>Welcome!</body></html>")
                return
            await _respond(send, 200, self.card(), "application/json", extra)
        elif path == "/jwks.json" and method == "GET" and self.signer is not None:
            await _respond(send, 200, self.signer.public_jwks())
        elif path == "/" and method == "POST":
            await self._jsonrpc(headers, body, send)
        elif path.startswith("/rest/"):
            await self._rest(method, path.removeprefix("/rest"), headers, body, send)
        else:
            await _respond_text(send, 404, "Not Found")

    # -- version negotiation ---------------------------------------------------------------

    def _version_refusal(self, headers: dict[str, str]) -> str | None:
        """Why the request's A2A-Version is refused (None: it is served as 1.0)."""
        version = headers.get("a2a-version")
        if version is None or not version.strip():
            return None if "ignores_missing_version" in self.faults else "missing means 0.3"
        if version.strip() == "1.0":
            return None
        if version.strip().startswith("1.0."):
            if "refuses_patch_version" in self.faults:
                return f"version {version!r} is not supported"
            return None
        if "accepts_any_version" in self.faults:
            return None
        return f"version {version!r} is not supported"

    # -- JSON-RPC --------------------------------------------------------------------------

    async def _jsonrpc(self, headers: dict[str, str], body: bytes, send: Send) -> None:
        if "stalls" in self.faults:
            await asyncio.sleep(3600)  # cancelled when the server shuts down
        try:
            request = json.loads(body)
        except ValueError:
            if "bad_json_500" in self.faults:
                await _respond_text(send, 500, "Internal Server Error")
                return
            await _respond(send, 200, _rpc_error(None, -32700, "Invalid JSON", "PARSE_ERROR"))
            return
        request_id = request.get("id")
        refusal = self._version_refusal(headers)
        if refusal is not None:
            error = _rpc_error(request_id, -32009, refusal, "VERSION_NOT_SUPPORTED")
            await _respond(send, 200, error)
            return
        method, params = request.get("method"), request.get("params") or {}
        if method in ("GetTask", "CancelTask"):
            if "wrong_unknown_task_code" in self.faults:
                error = _rpc_error(request_id, -32602, "bad id", "INVALID_PARAMS")
            else:
                error = _rpc_error(
                    request_id, -32001, f"no task {params.get('id')}", "TASK_NOT_FOUND"
                )
            await _respond(send, 200, error)
        elif method == "SendStreamingMessage":
            events = self._events(params.get("message") or {})
            await _respond_sse(
                send,
                ({"jsonrpc": "2.0", "id": request_id, "result": e} for e in events),
                hold_open="stream_stays_open" in self.faults,
            )
        else:
            error = _rpc_error(request_id, -32601, f"no method {method}", "METHOD_NOT_FOUND")
            await _respond(send, 200, error)

    # -- HTTP+JSON -------------------------------------------------------------------------

    async def _rest(
        self, method: str, path: str, headers: dict[str, str], body: bytes, send: Send
    ) -> None:
        refusal = self._version_refusal(headers)
        if refusal is not None:
            await _rest_error(send, 400, "FAILED_PRECONDITION", refusal, "VERSION_NOT_SUPPORTED")
            return
        if method == "GET" and path.startswith("/tasks/"):
            if "wrong_unknown_task_code" in self.faults:
                await _rest_error(send, 400, "INVALID_ARGUMENT", "bad id", "INVALID_PARAMS")
            else:
                await _rest_error(send, 404, "NOT_FOUND", "no such task", "TASK_NOT_FOUND")
        elif method == "POST" and path in ("/message:send", "/message:stream"):
            try:
                request = json.loads(body)
            except ValueError:
                if "bad_json_500" in self.faults:
                    await _respond_text(send, 500, "Internal Server Error")
                else:
                    await _rest_error(send, 400, "INVALID_ARGUMENT", "not JSON", "PARSE_ERROR")
                return
            if path == "/message:send":
                await _rest_error(
                    send, 400, "FAILED_PRECONDITION", "stream instead", "UNSUPPORTED_OPERATION"
                )
                return
            await _respond_sse(
                send,
                self._events(request.get("message") or {}),
                hold_open="stream_stays_open" in self.faults,
            )
        elif method == "POST" and path.endswith(":cancel"):
            await _rest_error(send, 404, "NOT_FOUND", "no such task", "TASK_NOT_FOUND")
        else:
            await _rest_error(send, 404, "NOT_FOUND", f"no route {method} {path}", "")

    # -- streams ---------------------------------------------------------------------------

    def _events(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """The StreamResponses of one streamed message: a task that echoes its text."""
        task_id, context_id = str(uuid.uuid4()), str(uuid.uuid4())
        text = "".join(p.get("text", "") for p in message.get("parts") or [])

        def status(state: str) -> dict[str, Any]:
            update = {"taskId": task_id, "contextId": context_id, "status": {"state": state}}
            return {"statusUpdate": update}

        task = {
            "task": {
                "id": task_id,
                "contextId": context_id,
                "status": {"state": "TASK_STATE_SUBMITTED"},
            }
        }
        artifact = {
            "artifactUpdate": {
                "taskId": task_id,
                "contextId": context_id,
                "artifact": {"artifactId": "a1", "parts": [{"text": text}]},
                "lastChunk": True,
            }
        }
        events = [task, status("TASK_STATE_WORKING"), artifact, status("TASK_STATE_COMPLETED")]
        if "stream_starts_with_status" in self.faults:
            events = [status("TASK_STATE_WORKING"), task, *events[2:]]
        if "stream_without_final_state" in self.faults:
            events = events[:3]
        if "stream_garbage" in self.faults:
            events.insert(1, {"garbage": "not a StreamResponse"})
        return events


def _rpc_error(request_id: Any, code: int, message: str, reason: str) -> dict[str, Any]:
    data = [{"@type": _INFO, "reason": reason, "domain": _DOMAIN}]
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": code, "message": message, "data": data},
    }


async def _rest_error(send: Send, status: int, name: str, message: str, reason: str) -> None:
    details = [{"@type": _INFO, "reason": reason, "domain": _DOMAIN}] if reason else []
    document = {"error": {"code": status, "status": name, "message": message, "details": details}}
    await _respond(send, status, document, "application/a2a+json")


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def _respond(
    send: Send,
    status: int,
    document: Any,
    content_type: str = "application/json",
    extra: dict[str, str] | None = None,
) -> None:
    body = json.dumps(document).encode()
    headers = [(b"content-type", content_type.encode())]
    headers += [(k.encode(), v.encode()) for k, v in (extra or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _respond_text(send: Send, status: int, text: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain")],
        }
    )
    await send({"type": "http.response.body", "body": text.encode()})


async def _respond_sse(send: Send, events: Any, *, hold_open: bool = False) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")],
        }
    )
    for event in events:
        frame = b"data: " + json.dumps(event).encode() + b"\n\n"
        await send({"type": "http.response.body", "body": frame, "more_body": True})
    if hold_open:
        await asyncio.sleep(3600)  # cancelled when the server shuts down
    await send({"type": "http.response.body", "body": b""})


class _EmbeddedServer(uvicorn.Server):
    """uvicorn in the test's event loop: the test runner keeps its signal handlers."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@contextlib.asynccontextmanager
async def serve_broken_agent(
    faults: Collection[str] = (), *, signed: bool = False
) -> AsyncIterator[str]:
    """Serve a ``BrokenAgent`` with ``faults`` on 127.0.0.1 (uvicorn); yield its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    config = uvicorn.Config(
        BrokenAgent(url, faults, signed=signed),
        lifespan="off",
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=1,
    )
    server = _EmbeddedServer(config)
    serving = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(10):
            while not server.started:
                if serving.done():
                    serving.result()  # raises why it could not start
                await asyncio.sleep(0.01)
        yield url
    finally:
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(serving, 10)
        sock.close()
