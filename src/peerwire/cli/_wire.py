"""``--wire``: print each HTTP request and response as it crosses the wire.

``WireTap`` is an httpx transport wrapped around the real one. It prints a request (method,
URL, the A2A headers, the body as indented JSON) before sending it, and the response's status
and headers when they arrive. A JSON body is printed once it has been read; a stream
(``text/event-stream``) event by event, as each one arrives, so the printout shows the timing
a client really sees.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable

import httpx
from rich.console import Console
from rich.text import Text

__all__ = ["WireTap"]

# Header lookups are case-insensitive; these spellings are the ones printed.
_REQUEST_HEADERS = ("Content-Type", "Accept", "A2A-Version", "A2A-Extensions", "If-None-Match")
_RESPONSE_HEADERS = ("Content-Type", "ETag", "Cache-Control")
_SENT, _RECEIVED = ">>> ", "<<< "
_INDENT = "    "


class WireTap(httpx.AsyncBaseTransport):
    """Prints the traffic of the transport it wraps on ``out``."""

    def __init__(self, out: Console, inner: httpx.AsyncBaseTransport | None = None) -> None:
        self._out = out
        self._inner = inner or httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        self._out.print(Text(f"{_SENT}{request.method} {request.url}", style="bold cyan"))
        self._headers(request.headers, _REQUEST_HEADERS)
        self._body(body)
        response = await self._inner.handle_async_request(request)
        reason = response.extensions.get("reason_phrase", b"")
        phrase = reason.decode("ascii", "replace") if isinstance(reason, bytes) else ""
        self._out.print(
            Text(f"{_RECEIVED}HTTP {response.status_code} {phrase}".rstrip(), style="bold green")
        )
        self._headers(response.headers, _RESPONSE_HEADERS)
        streaming = response.headers.get("content-type", "").startswith("text/event-stream")
        assert isinstance(response.stream, httpx.AsyncByteStream)
        tapped = _TappedStream(
            response.stream,
            on_chunk=_EventPrinter(self._line).feed if streaming else None,
            on_end=None if streaming else self._body,
        )
        return httpx.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=tapped,
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()

    def _headers(self, headers: httpx.Headers, names: tuple[str, ...]) -> None:
        for name in names:
            value = headers.get(name)
            if value is not None:
                self._line(f"{name}: {value}", style="dim")

    def _body(self, body: bytes) -> None:
        if not body:
            return
        try:
            shown = json.dumps(json.loads(body), indent=2, ensure_ascii=False)
        except ValueError:
            shown = body.decode("utf-8", "replace")
        for line in shown.splitlines():
            self._line(line)

    def _line(self, line: str, style: str = "") -> None:
        self._out.print(Text(_INDENT + line, style=style))


class _EventPrinter:
    """Prints server-sent events whole, however the bytes were split into chunks."""

    def __init__(self, line: Callable[..., None]) -> None:
        self._line = line
        self._pending = ""

    def feed(self, chunk: bytes) -> None:
        self._pending += chunk.decode("utf-8", "replace").replace("\r\n", "\n")
        while "\n\n" in self._pending:
            event, self._pending = self._pending.split("\n\n", 1)
            for line in event.splitlines():
                # A comment line (": ...") is a keep-alive, not an event.
                self._line(line, style="dim" if line.startswith(":") else "")
            self._line("")


class _TappedStream(httpx.AsyncByteStream):
    """A response body passed through unchanged, shown on the way."""

    def __init__(
        self,
        inner: httpx.AsyncByteStream,
        *,
        on_chunk: Callable[[bytes], None] | None,
        on_end: Callable[[bytes], None] | None,
    ) -> None:
        self._inner = inner
        self._on_chunk = on_chunk
        self._on_end = on_end

    async def __aiter__(self) -> AsyncIterator[bytes]:
        body = b""
        async for chunk in self._inner:
            if self._on_chunk is not None:
                self._on_chunk(chunk)
            if self._on_end is not None:
                body += chunk
            yield chunk
        if self._on_end is not None:
            self._on_end(body)

    async def aclose(self) -> None:
        await self._inner.aclose()
