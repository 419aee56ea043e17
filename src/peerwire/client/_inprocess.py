"""An httpx transport that calls an ASGI app in this process and streams its answers.

httpx's own ``ASGITransport`` runs the app to completion and buffers the whole body, so an SSE
stream would arrive in one piece when the task ends (and never, for a stream kept open at
AUTH_REQUIRED). Here the app runs in a task owned by the response: body chunks reach the caller
as the app sends them, closing the response early tells the app the client went away, and the
``read`` timeout httpx passes in the request applies to the response head and to each chunk, as
it would on a socket. The app's lifespan is not run here: enter it yourself (``app.lifespan()``
for a peerwire app) or use a server that already runs it.

asyncio only, like the rest of the server side.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

import anyio
import httpx

__all__ = ["StreamingASGITransport"]

Scope = MutableMapping[str, Any]
ASGIMessage = MutableMapping[str, Any]
ASGIApp = Callable[
    [Scope, Callable[[], Awaitable[ASGIMessage]], Callable[[ASGIMessage], Awaitable[None]]],
    Awaitable[None],
]

log = logging.getLogger("peerwire.client")

_END = None  # queued after the last body chunk
_DISCONNECT_GRACE_S = 0.5


class StreamingASGITransport(httpx.AsyncBaseTransport):
    """Send httpx requests to ``app`` without a network, streaming the responses."""

    def __init__(self, app: ASGIApp, *, client: tuple[str, int] = ("127.0.0.1", 123)) -> None:
        self.app = app
        self.client = client

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        exchange = _Exchange(self.app, _scope(request, self.client), body)
        read_timeout = request.extensions.get("timeout", {}).get("read")
        await exchange.start(read_timeout)
        return httpx.Response(
            exchange.status,
            headers=exchange.headers,
            stream=_ResponseStream(exchange, read_timeout),
            request=request,
        )


def _scope(request: httpx.Request, client: tuple[str, int]) -> Scope:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "headers": [(k.lower(), v) for k, v in request.headers.raw],
        "scheme": request.url.scheme,
        "path": request.url.path,
        "raw_path": request.url.raw_path.split(b"?")[0],
        "query_string": request.url.query,
        "server": (request.url.host, request.url.port),
        "client": client,
        "root_path": "",
    }


class _Exchange:
    """One request/response with the app, which runs in a task this object owns."""

    def __init__(self, app: ASGIApp, scope: Scope, body: bytes) -> None:
        self._app = app
        self._scope = scope
        self._body: bytes | None = body
        self._started = asyncio.Event()
        self._gone = asyncio.Event()  # the response finished or the client closed it
        self._chunks: asyncio.Queue[bytes | Exception | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._complete = False
        self.status = 500
        self.headers: list[tuple[bytes, bytes]] = []

    async def start(self, timeout: float | None) -> None:
        """Run the app until it has sent the response head (or died trying)."""
        self._task = asyncio.ensure_future(self._run())
        started = asyncio.ensure_future(self._started.wait())
        try:
            done, _ = await asyncio.wait(
                {started, self._task}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            started.cancel()
        if not done:
            await self.close()
            raise httpx.ReadTimeout("the in-process app sent no response in time")
        if not self._started.is_set():
            # The app returned or crashed without answering: what a server shows as a 500.
            self.status, self.headers = 500, []
            self._chunks.put_nowait(_END)

    async def next_chunk(self, timeout: float | None) -> bytes | Exception | None:
        try:
            return await asyncio.wait_for(self._chunks.get(), timeout)
        except TimeoutError:
            raise httpx.ReadTimeout("the in-process app sent nothing in time") from None

    async def close(self) -> None:
        """The client is done: the app sees a disconnect, and is stopped if it ignores it."""
        self._gone.set()
        task = self._task
        if task is None or task.done():
            return
        # Shielded, so a caller being cancelled still leaves no app behind; both waits are
        # short. An app that watches for the disconnect (peerwire's does) ends at once.
        with anyio.CancelScope(shield=True):
            await asyncio.wait({task}, timeout=_DISCONNECT_GRACE_S)
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait({task})

    async def _run(self) -> None:
        try:
            await self._app(self._scope, self._receive, self._send)
        except Exception:
            log.exception("peerwire: the in-process app failed")
            if self._started.is_set() and not self._complete:
                # Died mid-response: the client sees the connection break.
                broken = "the in-process app failed in the middle of its response"
                self._chunks.put_nowait(httpx.RemoteProtocolError(broken))
            return
        if self._started.is_set() and not self._complete:
            self._chunks.put_nowait(_END)

    async def _receive(self) -> ASGIMessage:
        if self._body is not None:
            body, self._body = self._body, None
            return {"type": "http.request", "body": body, "more_body": False}
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: ASGIMessage) -> None:
        if self._gone.is_set():
            return  # nobody is listening any more, as with a closed socket
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = list(message.get("headers", []))
            self._started.set()
        elif message["type"] == "http.response.body" and not self._complete:
            chunk = message.get("body", b"")
            if chunk and self._scope["method"] != "HEAD":
                self._chunks.put_nowait(chunk)
            if not message.get("more_body", False):
                self._complete = True
                self._chunks.put_nowait(_END)
                self._gone.set()


class _ResponseStream(httpx.AsyncByteStream):
    def __init__(self, exchange: _Exchange, read_timeout: float | None) -> None:
        self._exchange = exchange
        self._read_timeout = read_timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            chunk = await self._exchange.next_chunk(self._read_timeout)
            if chunk is _END:
                return
            if isinstance(chunk, Exception):
                raise chunk
            yield chunk

    async def aclose(self) -> None:
        await self._exchange.close()
