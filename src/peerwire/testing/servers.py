"""A real server on loopback, or the app in process: the two ways a test reaches an agent.

``live_server`` (``peerwire.server._loopback``) serves an agent on 127.0.0.1 in the caller's
event loop; ``in_process`` calls the app without a network.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx

from ..server import A2AApp, Agent
from ..server._loopback import AppSource, build_app, live_server

__all__ = ["AppSource", "in_process", "live_server"]


@contextlib.asynccontextmanager
async def in_process(
    source: Agent | A2AApp, **create_app_options: Any
) -> AsyncIterator[httpx.AsyncClient]:
    """An ``httpx.AsyncClient`` calling the app in process, its lifespan entered.

    Requests go to ``http://testserver``. httpx's ASGI transport hands over a response only
    when the app has finished it, so a stream is seen whole once it ends. Works in a test body
    and in an async fixture alike.
    """
    app = build_app(source, "http://testserver", create_app_options)
    transport = httpx.ASGITransport(app=app)
    async with (
        _lifespan_running(app),
        httpx.AsyncClient(transport=transport, base_url="http://testserver") as client,
    ):
        yield client


@contextlib.asynccontextmanager
async def _lifespan_running(app: A2AApp) -> AsyncIterator[None]:
    """Keep ``app.lifespan()`` entered in a task of its own, as an ASGI server does.

    The lifespan holds the runner's task group open; entering it in the caller's task would
    tie its exit to that task, which a fixture's teardown is not.
    """
    started = asyncio.Event()
    stop = asyncio.Event()

    async def hold() -> None:
        async with app.lifespan():
            started.set()
            await stop.wait()

    holder = asyncio.get_running_loop().create_task(hold(), name="peerwire in_process lifespan")
    try:
        starting = asyncio.ensure_future(started.wait())
        try:
            await asyncio.wait({holder, starting}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            starting.cancel()
        if holder.done():
            holder.result()  # the startup error
            raise RuntimeError("the app's lifespan ended during startup")
        yield
    finally:
        stop.set()
        with anyio.CancelScope(shield=True):
            await asyncio.wait({holder})
        failure = holder.exception()  # retrieved on every path, raised on the quiet one
    if failure is not None:
        raise failure
