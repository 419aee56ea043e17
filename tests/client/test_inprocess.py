"""The in-process HTTP transport: streams arrive as sent, and closing one reaches the app."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import httpx
import pytest

from peerwire import Agent, Task, TaskState
from peerwire.client._inprocess import StreamingASGITransport
from peerwire.errors import InternalError

from .conftest import TIMEOUT_S, Gates, connected


class TwoPartApp:
    """Sends a first chunk, then waits for ``go`` (or the client leaving), then the second."""

    def __init__(self) -> None:
        self.go = asyncio.Event()
        self.body = b""
        self.disconnected = asyncio.Event()
        self.done = asyncio.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            message = await receive()
            self.body = message["body"]
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"first;", "more_body": True})
            waiting = asyncio.ensure_future(self.go.wait())
            leaving = asyncio.ensure_future(receive())
            done, pending = await asyncio.wait(
                {waiting, leaving}, return_when=asyncio.FIRST_COMPLETED
            )
            for task in pending:
                task.cancel()
            if leaving in done and leaving.result()["type"] == "http.disconnect":
                self.disconnected.set()
                return
            await send({"type": "http.response.body", "body": b"second", "more_body": False})
        finally:
            self.done.set()


async def test_chunks_arrive_while_the_app_is_still_running() -> None:
    app = TwoPartApp()
    async with httpx.AsyncClient(transport=StreamingASGITransport(app)) as http:
        with anyio.fail_after(TIMEOUT_S):
            async with http.stream("POST", "http://app/x", content=b"hello") as response:
                chunks = response.aiter_bytes()
                assert await anext(chunks) == b"first;"
                assert not app.done.is_set()
                app.go.set()
                assert [c async for c in chunks] == [b"second"]
    assert app.body == b"hello"


async def test_closing_early_tells_the_app_the_client_left() -> None:
    app = TwoPartApp()
    async with httpx.AsyncClient(transport=StreamingASGITransport(app)) as http:
        with anyio.fail_after(TIMEOUT_S):
            async with http.stream("GET", "http://app/x") as response:
                assert await anext(response.aiter_bytes()) == b"first;"
            await app.done.wait()
    assert app.disconnected.is_set()


async def test_an_app_that_fails_before_answering_is_a_500() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("boom")

    async with httpx.AsyncClient(transport=StreamingASGITransport(app)) as http:
        response = await http.get("http://app/")
    assert response.status_code == 500


async def test_an_app_that_fails_midway_breaks_the_connection() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"part", "more_body": True})
        raise RuntimeError("boom")

    async with httpx.AsyncClient(transport=StreamingASGITransport(app)) as http:
        with pytest.raises(httpx.RemoteProtocolError):
            await http.get("http://app/")


async def test_read_timeouts_apply() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await anyio.sleep_forever()

    async with httpx.AsyncClient(transport=StreamingASGITransport(app)) as http:
        with pytest.raises(httpx.ReadTimeout):
            await http.get("http://app/", timeout=0.1)


async def test_a_stream_is_seen_while_the_task_is_still_running(agent: Agent, gates: Gates) -> None:
    # httpx's own ASGITransport would hand over nothing until the task ended.
    async with connected("inprocess", agent) as client:
        events = client.stream("", skill="steps")
        with anyio.fail_after(TIMEOUT_S):
            first = await anext(events)
            assert isinstance(first, Task)
            assert (await client.get_task(first.id)).status.state is TaskState.WORKING
            gates.release.set()
            gates.finish.set()
            rest = [e async for e in events]
        assert rest[-1].status.state is TaskState.COMPLETED  # type: ignore[union-attr]


async def test_a_crashing_app_is_an_internal_error_for_the_client(agent: Agent) -> None:
    from peerwire import Client

    from .conftest import app_factory

    app = app_factory(agent)("http://testserver")
    calls = 0

    async def crashing(scope: Any, receive: Any, send: Any) -> None:
        nonlocal calls
        if scope["type"] == "http" and scope["method"] == "POST":
            calls += 1
            raise RuntimeError("boom")
        await app(scope, receive, send)

    async with Client.connect("http://testserver", app=crashing) as client:
        with pytest.raises(InternalError):
            await client.get_task("t1")
    assert calls == 1
