"""uvicorn, shut down in the order an A2A server needs.

uvicorn waits for open connections before it tells the app (lifespan) to stop. A caller
blocked on a task, or following its stream, holds its connection until the task settles, so
the runner's shutdown grace would only start once uvicorn gave up on those connections and
dropped them. ``DrainingServer`` drains the runner first: tasks finish or fail within the
grace, their callers get that outcome, and only then does uvicorn close what is left.
"""

from __future__ import annotations

import socket

import anyio
import uvicorn

from .asgi import A2AApp

__all__ = ["DrainingServer"]


class DrainingServer(uvicorn.Server):
    """A ``uvicorn.Server`` for an ``A2AApp`` that drains its runner before closing down."""

    def __init__(self, config: uvicorn.Config, app: A2AApp) -> None:
        super().__init__(config)
        self._runner = app.dispatcher.runner

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        with anyio.CancelScope(shield=True):
            await self._runner.drain()
        await super().shutdown(sockets)
