"""Running a secured agent on every binding, and calling it with peerwire's own client.

``serving`` starts the agent on a real uvicorn server with gRPC beside it (``live_server``),
so one URL offers JSON-RPC, HTTP+JSON and gRPC; ``connect`` builds a client held to one of
them. Each test gets a fresh card cache: a card must not outlive its server.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from peerwire import Agent
from peerwire.client import CardCache, Client
from peerwire.testing import live_server
from peerwire.types import Binding, Task, TaskState

BINDINGS = pytest.mark.parametrize(
    "binding", [Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC], ids=["jsonrpc", "rest", "grpc"]
)
"""Parametrises a test over the three bindings (its ``binding`` argument)."""


@contextlib.asynccontextmanager
async def serving(agent: Agent, **options: Any) -> AsyncIterator[str]:
    """``agent`` on loopback over all three bindings; yields the base URL."""
    options.setdefault("shutdown_grace", 1.0)
    async with live_server(agent, grpc_port=0, **options) as url:
        yield url


def connect(url: str, binding: str, **options: Any) -> Any:
    """``Client.connect`` held to ``binding`` (await it or use it with ``async with``)."""
    options.setdefault("card_cache", CardCache())
    return Client.connect(url, bindings=[binding], **options)


def completed_text(result: object) -> str:
    """The text artifact of a completed task."""
    assert isinstance(result, Task), result
    assert result.status.state is TaskState.COMPLETED, result.status
    return "".join(part.text or "" for artifact in result.artifacts for part in artifact.parts)
