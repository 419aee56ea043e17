"""The official a2a-sdk client follows the card of agents mounted in FastAPI without
``public_url``: two agents on a real uvicorn server on a free port, the
SDK's client (a subprocess, sdk_harness) resolving each card under its prefix and sending on
every binding the mount serves (gRPC for the agent started with ``grpc_port=0``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest
from fastapi import FastAPI

from peerwire import create_app
from tests.server.test_mounting import answering, free_socket, on_uvicorn, url_of

RunSdkClient = Callable[..., list[dict[str, Any]]]


@pytest.mark.parametrize("binding", ["jsonrpc", "rest", "grpc"])
async def test_the_sdk_client_follows_a_mounted_card_without_public_url(
    run_sdk_client: RunSdkClient, binding: str
) -> None:
    sock = free_socket()
    url = url_of(sock)
    host = FastAPI()
    host.mount("/a2a/glossary", create_app(answering("Glossary"), grpc_port=0))
    host.mount("/a2a/weather", create_app(answering("Weather"), grpc_port=0))
    with on_uvicorn(host, sock):
        for name in ("glossary", "weather"):
            base = f"{url}/a2a/{name}"
            lines = await anyio.to_thread.run_sync(
                lambda base=base: run_sdk_client(base, binding, "send", text="hello")
            )
            assert all("error" not in line for line in lines), lines
            [sent] = [line for line in lines if line.get("op") == "send"]
            task = sent["response"]["task"]
            assert task["status"]["state"] == "TASK_STATE_COMPLETED"
            assert task["artifacts"][0]["parts"][0]["text"] == f"{name.title()} got hello"
