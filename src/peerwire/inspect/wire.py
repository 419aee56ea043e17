"""The raw wire of every exchange the inspector's backend has with an agent.

HTTP bindings (JSON-RPC, HTTP+JSON, and the card): ``RecordingTransport`` is an httpx
transport around the real one, handed to ``Client.connect`` inside the caller's own
``httpx.AsyncClient``: it records each request (method, URL, headers, body) as it is sent and
the response as it arrives, a server-sent event stream event by event, so the page shows what
really crossed the wire, in the order it did. gRPC has no bytes worth reading:
``RecordingGrpcTransport`` wraps peerwire's gRPC transport and records the rpc, the metadata
sent and each message, as JSON.

Secrets the user gave the inspector (tokens, keys) are replaced by ``***`` in what is
recorded (``Redactor``): the wire view and its curl command never show them, and a curl
copied from the page has ``***`` where the credential goes.
"""

from __future__ import annotations

import itertools
import json
import re
import shlex
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import quote, quote_plus

import httpx

from ..client import CallOptions, Transport
from ..protocol import PROTOCOL_VERSION
from ..protocol.negotiation import format_extensions
from ..types import Binding, StreamResponse, to_builtins

__all__ = [
    "MAX_EVENTS",
    "MAX_EXCHANGES",
    "Exchange",
    "RecordingGrpcTransport",
    "RecordingTransport",
    "Redactor",
    "WireLog",
    "curl_command",
]

T = TypeVar("T")

MAX_EXCHANGES = 200  # the page keeps the latest; older ones are dropped
MAX_EVENTS = 1000  # events of one stream kept (a long stream's later ones are counted only)
MAX_BODY_CHARS = 256 * 1024  # a body shown past this is cut (and said to be)
REDACTED = "***"

# Headers httpx adds that say nothing about A2A and would only clutter a curl command.
_CURL_SKIPPED = frozenset({"host", "content-length", "accept-encoding", "connection", "user-agent"})


# Headers that carry credentials whoever set them; the card's API-key headers are added.
SENSITIVE_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})
_AUTH_SCHEMES = frozenset({"bearer", "basic", "dpop", "token"})
# Secrets in token endpoint answers and form posts (OAuth 2.0), whatever their value.
_SECRET_FIELDS = re.compile(
    r'("(?:access_token|refresh_token|id_token|client_secret)"\s*:\s*)"[^"]*"'
    r"|((?:^|&)(?:client_secret|refresh_token)=)[^&]*"
)


class Redactor:
    """Replaces secrets wherever they would be recorded: the values the user gave the
    inspector (as typed and URL-encoded), the values of credential headers (``Bearer ***``),
    and token fields of OAuth 2.0 bodies."""

    def __init__(self) -> None:
        self.secrets: tuple[str, ...] = ()
        self.header_names: frozenset[str] = SENSITIVE_HEADERS

    def set(self, secrets: Iterable[str]) -> None:
        forms = set()
        for secret in secrets:
            # However short: a one-letter password is still the user's password.
            if secret:
                forms |= {secret, quote(secret, safe=""), quote_plus(secret)}
        # Longest first, so a secret that contains another is replaced whole.
        self.secrets = tuple(sorted(forms, key=len, reverse=True))

    def set_headers(self, names: Iterable[str]) -> None:
        """Also hide the values of these headers (the card's API-key headers)."""
        self.header_names = SENSITIVE_HEADERS | {name.lower() for name in names}

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return text

    def header(self, name: str, value: str) -> str:
        if name.lower() not in self.header_names:
            return self(value)
        scheme, space, _ = value.partition(" ")
        if space and scheme.lower() in _AUTH_SCHEMES:
            return f"{scheme} {REDACTED}"
        return REDACTED

    def body(self, text: str) -> str:
        return _SECRET_FIELDS.sub(
            lambda m: (m.group(1) + f'"{REDACTED}"') if m.group(1) else m.group(2) + REDACTED,
            self(text),
        )


@dataclass
class Exchange:
    """One request and what came back: a unary call, or a stream with its events."""

    id: int
    binding: str
    operation: str
    request: dict[str, Any]
    started: float = field(default_factory=time.time)
    response: dict[str, Any] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    dropped_events: int = 0
    error: str = ""
    done: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "binding": self.binding,
            "operation": self.operation,
            "started": self.started,
            "request": self.request,
            "response": self.response,
            "events": self.events,
            "droppedEvents": self.dropped_events,
            "error": self.error,
            "done": self.done,
            "curl": curl_command(self.request) if "url" in self.request else "",
        }


class WireLog:
    """The latest exchanges, each reported to ``on_change`` whenever it grows."""

    def __init__(
        self,
        on_change: Callable[[Exchange], None] = lambda exchange: None,
        redact: Redactor | None = None,
    ) -> None:
        self.exchanges: deque[Exchange] = deque(maxlen=MAX_EXCHANGES)
        self.on_change = on_change
        self.redact = redact or Redactor()
        self._ids = itertools.count(1)

    def begin(self, binding: str, operation: str, request: dict[str, Any]) -> Exchange:
        exchange = Exchange(next(self._ids), binding, operation, request)
        self.exchanges.append(exchange)
        self.on_change(exchange)
        return exchange

    def respond(self, exchange: Exchange, response: dict[str, Any]) -> None:
        exchange.response = response
        self.on_change(exchange)

    def event(self, exchange: Exchange, event: dict[str, Any]) -> None:
        if len(exchange.events) >= MAX_EVENTS:
            exchange.dropped_events += 1
            return
        exchange.events.append(event)
        self.on_change(exchange)

    def finish(self, exchange: Exchange, error: str = "") -> None:
        if exchange.done:
            return
        exchange.done = True
        exchange.error = self.redact(error)
        self.on_change(exchange)

    def to_json(self) -> list[dict[str, Any]]:
        return [exchange.to_json() for exchange in self.exchanges]

    def clear(self) -> None:
        self.exchanges.clear()


def _shown(body: bytes, redact: Redactor) -> str:
    text = body.decode("utf-8", "replace")
    if len(text) > MAX_BODY_CHARS:
        text = text[:MAX_BODY_CHARS] + f"\n... ({len(body)} bytes in all, cut here)"
    return redact.body(text)


def _headers(headers: Iterable[tuple[str, str]], redact: Redactor) -> list[list[str]]:
    return [[name, redact.header(name, value)] for name, value in headers]


def curl_command(request: Mapping[str, Any]) -> str:
    """The request as a curl command line (``-N``: print a stream as it arrives)."""
    words = ["curl", "-sS", "-N", "-X", str(request["method"]), shlex.quote(str(request["url"]))]
    for name, value in request.get("headers", ()):
        if name.lower() not in _CURL_SKIPPED:
            words += ["-H", shlex.quote(f"{name}: {value}")]
    body = request.get("body") or ""
    if body:
        words += ["--data-raw", shlex.quote(body)]
    return " ".join(words)


def _operation(request: httpx.Request, body: bytes) -> str:
    """What the request is: the card, a JSON-RPC method, or an HTTP+JSON route."""
    path = request.url.path
    if path.endswith("agent-card.json"):
        return "GET agent card"
    if request.method == "POST" and body[:1] == b"{":
        try:
            method = json.loads(body).get("method")
        except (ValueError, AttributeError):
            method = None
        if isinstance(method, str):
            return method
    return f"{request.method} {path}"


class RecordingTransport(httpx.AsyncBaseTransport):
    """An httpx transport that records every exchange on ``log`` under ``binding``."""

    def __init__(
        self, log: WireLog, binding: str, inner: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self._log = log
        self._binding = binding
        self._inner = inner if inner is not None else httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        redact = self._log.redact
        exchange = self._log.begin(
            self._binding,
            _operation(request, body),
            {
                "method": request.method,
                "url": redact(str(request.url)),
                "headers": _headers(request.headers.multi_items(), redact),
                "body": _shown(body, redact),
            },
        )
        try:
            response = await self._inner.handle_async_request(request)
        except Exception as exc:
            self._log.finish(exchange, f"{type(exc).__name__}: {exc}")
            raise
        content_type = response.headers.get("content-type", "")
        streaming = content_type.startswith("text/event-stream")
        self._log.respond(
            exchange,
            {
                "status": response.status_code,
                "headers": _headers(response.headers.multi_items(), redact),
                "body": "",
                "stream": streaming,
            },
        )
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_RecordedBody(response.stream, self._log, exchange, streaming),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class _RecordedBody(httpx.AsyncByteStream):
    """A response body passed on unchanged, recorded on the way: whole, or event by event."""

    def __init__(
        self, inner: httpx.AsyncByteStream, log: WireLog, exchange: Exchange, streaming: bool
    ) -> None:
        self._inner = inner
        self._log = log
        self._exchange = exchange
        self._events = _EventSplitter() if streaming else None
        self._body = bytearray()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                self._record(chunk)
                yield chunk
        except Exception as exc:
            self._log.finish(self._exchange, f"{type(exc).__name__}: {exc}")
            raise
        self._end()

    def _record(self, chunk: bytes) -> None:
        if self._events is None:
            if len(self._body) <= MAX_BODY_CHARS * 4:
                self._body += chunk
            return
        for raw in self._events.feed(chunk):
            self._log.event(self._exchange, _sse_event(raw, self._log.redact))

    def _end(self) -> None:
        if self._events is None and self._exchange.response is not None:
            self._exchange.response["body"] = _shown(bytes(self._body), self._log.redact)
        self._log.finish(self._exchange)

    async def aclose(self) -> None:
        # A stream the client stopped reading (it has what it wanted) ends here too.
        self._end()
        await self._inner.aclose()


class _EventSplitter:
    """Whole server-sent events out of chunks however they were cut; comments (keep-alives)
    are kept too, marked as such, since they are on the wire."""

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, chunk: bytes) -> list[str]:
        self._pending += chunk.decode("utf-8", "replace").replace("\r\n", "\n")
        events = []
        while "\n\n" in self._pending:
            event, self._pending = self._pending.split("\n\n", 1)
            if event:
                events.append(event)
        return events


def _sse_event(raw: str, redact: Redactor) -> dict[str, Any]:
    name = ""
    data = []
    for line in raw.split("\n"):
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    return {
        "at": time.time(),
        "raw": redact.body(raw),
        "event": name,
        "data": redact.body("\n".join(data)),
        "comment": not data and not name,
    }


# -- gRPC -------------------------------------------------------------------------------------


def grpc_metadata(options: CallOptions) -> list[tuple[str, str]]:
    """The metadata peerwire's gRPC transport sends for ``options`` (its documented rule:
    headers lower-cased, each once; ``a2a-version`` unless given; the extensions asked for)."""
    metadata = {name.lower(): value for name, value in options.headers.items()}
    metadata.setdefault("a2a-version", PROTOCOL_VERSION)
    if options.extensions:
        metadata["a2a-extensions"] = format_extensions(options.extensions)
    return list(metadata.items())


def _rpc_path(operation: str) -> str:
    from ..bindings.grpc.service import RPCS

    rpc = RPCS.get(operation)
    return rpc.path if rpc is not None else operation


class RecordingGrpcTransport:
    """A gRPC ``Transport`` that records each call on ``log``: rpc, metadata, messages."""

    binding = Binding.GRPC

    def __init__(self, inner: Transport, log: WireLog) -> None:
        self._inner = inner
        self._log = log
        self.url = inner.url
        self.protocol_version = getattr(inner, "protocol_version", PROTOCOL_VERSION)

    def _begin(self, operation: str, request: Any, options: CallOptions) -> Exchange:
        redact = self._log.redact
        return self._log.begin(
            Binding.GRPC,
            operation,
            {
                "rpc": _rpc_path(operation),
                "target": self.url,
                "metadata": _headers(grpc_metadata(options), redact),
                "message": json.loads(redact(json.dumps(to_builtins(request)))),
            },
        )

    async def call(
        self, operation: str, request: Any, response_type: type[T], options: CallOptions
    ) -> T:
        exchange = self._begin(operation, request, options)
        try:
            answer = await self._inner.call(operation, request, response_type, options)
        except Exception as exc:
            self._log.finish(exchange, f"{type(exc).__name__}: {exc}")
            raise
        self._log.respond(exchange, {"status": "OK", "message": to_builtins(answer)})
        self._log.finish(exchange)
        return answer

    async def stream(
        self, operation: str, request: Any, options: CallOptions
    ) -> AsyncIterator[StreamResponse]:
        exchange = self._begin(operation, request, options)
        self._log.respond(exchange, {"status": "", "stream": True})
        events = self._inner.stream(operation, request, options)
        try:
            async for event in events:
                self._log.event(exchange, {"at": time.time(), "data": to_builtins(event)})
                yield event
        except Exception as exc:
            self._log.finish(exchange, f"{type(exc).__name__}: {exc}")
            raise
        finally:
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()
            if exchange.response is not None and not exchange.error:
                exchange.response["status"] = "OK"
            self._log.finish(exchange)

    async def aclose(self) -> None:
        await self._inner.aclose()
