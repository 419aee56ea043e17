"""The harness of the fuzz tests: the real app in an event loop of its own thread.

hypothesis runs its examples synchronously, so the app (its lifespan entered: runner, store,
gRPC server when asked) lives in a background thread's loop, and each example hands it one
request: straight through ASGI for the HTTP bindings (raw bytes, nothing normalised on the
way), over a real socket with a default grpcio client for gRPC. Every record the peerwire and
asyncio loggers emit at ERROR, and every record with a traceback, is kept: a fuzz test
asserts there is none.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import unquote_to_bytes

from bench.fuzz_cases import HttpCase
from peerwire.server import A2AApp

T = TypeVar("T")
CALL_TIMEOUT_S = 20.0


class Failures(logging.Handler):
    """Log records that mean the server failed: ERROR and above, or any with a traceback."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR or record.exc_info:
            self.records.append(record)

    def take(self) -> list[str]:
        found = [f"{r.name}: {r.getMessage()} {r.exc_info!r}" for r in self.records]
        self.records.clear()
        return found


@contextmanager
def watching_logs() -> Iterator[Failures]:
    handler = Failures()
    loggers = [logging.getLogger(name) for name in ("peerwire", "asyncio")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(level)


class AppThread:
    """``app`` with its lifespan entered, in an event loop run by a thread of its own."""

    def __init__(self, app: A2AApp) -> None:
        self.app = app
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="fuzz app loop")
        self._stop: asyncio.Event | None = None
        self._holder: concurrent.futures.Future[None] | None = None

    def __enter__(self) -> AppThread:
        self._thread.start()
        started = threading.Event()

        async def hold() -> None:
            self._stop = asyncio.Event()
            async with self.app.lifespan():
                started.set()
                await self._stop.wait()

        self._holder = asyncio.run_coroutine_threadsafe(hold(), self.loop)
        if not started.wait(CALL_TIMEOUT_S):
            raise RuntimeError("the app did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._stop is not None and self._holder is not None
        self.loop.call_soon_threadsafe(self._stop.set)
        self._holder.result(CALL_TIMEOUT_S)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(CALL_TIMEOUT_S)
        self.loop.close()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(CALL_TIMEOUT_S)

    def http(self, case: HttpCase) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """Send ``case`` through ASGI; the status, headers and whole body of the answer."""
        return self.run(_asgi_call(self.app, case))


async def _asgi_call(app: A2AApp, case: HttpCase) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    raw_path, _, query = case.target.partition(b"?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": case.method,
        "scheme": "http",
        # As uvicorn and peerwire's server decode it: percent escapes as UTF-8, replaced if not.
        "path": unquote_to_bytes(raw_path).decode("utf-8", "replace"),
        "raw_path": raw_path,
        "query_string": query,
        "root_path": "",
        "headers": [*case.headers, (b"content-length", b"%d" % len(case.body))],
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 50000),
    }
    done = asyncio.Event()
    sent_body = False
    status = 0
    headers: list[tuple[bytes, bytes]] = []
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": case.body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status = message["status"]
            headers = list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                done.set()

    await app(scope, receive, send)  # type: ignore[arg-type]
    if not done.is_set():
        raise AssertionError(f"the app returned without finishing its answer to {case}")
    return status, headers, b"".join(chunks)
