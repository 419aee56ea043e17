"""Blocking SendMessage load from the peerwire client (run with the project's venv python).

    python bench/peerwire_client_load.py http://127.0.0.1:8000 --concurrency 32 --duration 10

One ``peerwire.Client`` over the JSON-RPC binding with its own HTTP connections (the native
HTTP/1.1 pool, which keeps up to 100 connections per origin alive: no reconnects at any
``concurrency`` up to that), ``concurrency`` concurrent ``send`` calls in one asyncio loop; the
measuring loop is _load_loop.py's, shared with sdk_client_load.py.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from _load_loop import CALL_TIMEOUT_S, BadResponse, Call, main

import peerwire
from peerwire import Client, Task, TaskState
from peerwire.types import Binding


@contextlib.asynccontextmanager
async def connect(url: str, concurrency: int) -> AsyncIterator[Call]:
    async with Client.connect(url, bindings=[Binding.JSONRPC], timeout=CALL_TIMEOUT_S) as client:

        async def call(text: str) -> None:
            reply = await client.send(text)
            if not isinstance(reply, Task):
                raise BadResponse(f"expected a task, got {type(reply).__name__}")
            if reply.status.state != TaskState.COMPLETED:
                raise BadResponse(f"task {reply.id} is {reply.status.state}")
            echoed = "".join(artifact.text for artifact in reply.artifacts)
            if echoed != text:
                raise BadResponse(f"task {reply.id} echoed {echoed[:80]!r}, not {text!r}")

        yield call


if __name__ == "__main__":
    main("peerwire", connect, version=peerwire.__version__)
