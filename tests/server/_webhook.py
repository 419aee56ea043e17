"""A real webhook receiver for the push tests: uvicorn on 127.0.0.1, a free port, raw ASGI.

It records every POST (headers, body, the notification id), answers each with the status its
``answer`` function picks (2xx by default), and counts acknowledgements per notification id,
so a test can tell "delivered once" from "delivered twice". Tests wait for what they expect
with ``until`` (woken by each request, bounded in time), never with sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import uvicorn

WAIT_S = 30.0


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    status: int
    """What the receiver answered."""

    @property
    def notification_id(self) -> str:
        return self.headers.get("x-a2a-notification-id", "")

    @property
    def json(self) -> dict[str, Any]:
        return json.loads(self.body)  # type: ignore[no-any-return]

    @property
    def kind(self) -> str:
        (member,) = self.json
        return member

    @property
    def event(self) -> dict[str, Any]:
        return self.json[self.kind]  # type: ignore[no-any-return]


Answer = Callable[[Received], int]


class Receiver:
    """Records notifications; ``answer`` decides each response's status (default 200)."""

    def __init__(self, answer: Answer | None = None) -> None:
        self.answer: Answer = answer or (lambda _: 200)
        self.received: list[Received] = []
        self.acks: Counter[str] = Counter()
        """2xx answers per notification id."""
        self.url = ""
        self.hold: asyncio.Event | None = None
        """When set to an unset event, requests wait for it before being answered."""
        self._changed = asyncio.Condition()

    @property
    def accepted(self) -> list[Received]:
        """The acknowledged notifications, in the order they arrived."""
        return [r for r in self.received if 200 <= r.status < 300]

    async def until(self, condition: Callable[[Receiver], bool], timeout: float = WAIT_S) -> None:
        with anyio.fail_after(timeout):
            async with self._changed:
                await self._changed.wait_for(lambda: condition(self))

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        probe = Received(scope["path"], headers, body, 0)
        if self.hold is not None:
            with anyio.move_on_after(WAIT_S):
                await self.hold.wait()
        status = self.answer(probe)
        received = Received(scope["path"], headers, body, status)
        async with self._changed:
            self.received.append(received)
            if 200 <= status < 300:
                self.acks[received.notification_id] += 1
            self._changed.notify_all()
        extra = [(b"location", b"/elsewhere")] if 300 <= status < 400 else []
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"text/plain"), *extra],
            }
        )
        await send({"type": "http.response.body", "body": b"ok"})


@contextlib.asynccontextmanager
async def receiving(receiver: Receiver) -> AsyncIterator[Receiver]:
    """``receiver`` served on 127.0.0.1 (its ``url`` set to the base URL) while in the block."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    receiver.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    config = uvicorn.Config(
        receiver,
        lifespan="on",
        log_config=None,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    serving = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
    try:
        with anyio.fail_after(WAIT_S):
            while not server.started and not serving.done():  # noqa: ASYNC110
                await anyio.sleep(0.005)  # uvicorn offers a flag, not an event
        assert server.started, "the webhook receiver did not start"
        yield receiver
    finally:
        if receiver.hold is not None:
            receiver.hold.set()
        server.should_exit = True
        with anyio.CancelScope(shield=True):
            await asyncio.wait({serving}, timeout=10)
            if not serving.done():
                serving.cancel()
                await asyncio.wait({serving})
        sock.close()
