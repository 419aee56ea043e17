"""Blocking SendMessage load from the official a2a-sdk client.

Run ONLY with the a2a-sdk venv's python (tests/interop/sdk_env.py builds it:
``python tests/interop/sdk_env.py`` prints its interpreter), never in peerwire's venv: both
register the ``lf.a2a.v1`` protobuf package.

    $SDK_PYTHON bench/sdk_client_load.py http://127.0.0.1:8000 --concurrency 32 --duration 10

One SDK ``Client`` (``ClientFactory.create_from_url``, JSON-RPC, ``streaming=False`` so each
call is one blocking SendMessage), ``concurrency`` concurrent ``send_message`` calls in one
asyncio loop; the measuring loop is _load_loop.py's, shared with peerwire_client_load.py.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from importlib.metadata import version

import httpx
from _load_loop import CALL_TIMEOUT_S, BadResponse, Call, main, pooled_limits
from a2a.client import ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, SendMessageRequest, TaskState


@contextlib.asynccontextmanager
async def connect(url: str, concurrency: int) -> AsyncIterator[Call]:
    http = httpx.AsyncClient(
        limits=httpx.Limits(**pooled_limits(concurrency)), timeout=CALL_TIMEOUT_S
    )
    async with http:
        config = ClientConfig(
            streaming=False, httpx_client=http, supported_protocol_bindings=["JSONRPC"]
        )
        client = await ClientFactory(config).create_from_url(url)
        async with client:

            async def call(text: str) -> None:
                message = Message(
                    message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)]
                )
                replies = [
                    r async for r in client.send_message(SendMessageRequest(message=message))
                ]
                if len(replies) != 1 or not replies[0].HasField("task"):
                    raise BadResponse(f"expected one task, got {len(replies)} replies")
                task = replies[0].task
                if task.status.state != TaskState.TASK_STATE_COMPLETED:
                    raise BadResponse(f"task {task.id} is {TaskState.Name(task.status.state)}")
                echoed = "".join(p.text for a in task.artifacts for p in a.parts)
                if echoed != text:
                    raise BadResponse(f"task {task.id} echoed {echoed[:80]!r}, not {text!r}")

            yield call


if __name__ == "__main__":
    main("a2a-sdk", connect, version=version("a2a-sdk"))
