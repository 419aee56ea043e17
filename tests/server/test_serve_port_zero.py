"""``peerwire.serve(agent, port=0)``: a free port, reported where it is bound, in the card.

``serve`` runs a process's server (signals, the event loop), so it runs in a child process
here: its ``on_ready`` prints the ``Listening`` it gets as JSON on stdout, and the test talks
to that address: the card's interfaces carry the real ports (HTTP and gRPC), a message gets
its answer over JSON-RPC and over gRPC, and SIGTERM ends the server cleanly.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx
import pytest

from peerwire import Client, Task, TaskState
from peerwire.client import CardCache
from peerwire.types import Binding

WAIT_S = 30.0
CHILD = """
import json, sys
from peerwire import Agent, serve

agent = Agent("Zero")

@agent.skill()
async def echo(text: str) -> str:
    return text.upper()

def ready(listening):
    print(json.dumps({"url": listening.url, "port": listening.port, "grpc": listening.grpc_url}))
    sys.stdout.flush()

serve(agent, port=0, http=sys.argv[1], on_ready=ready)
"""


def _port(url: str) -> int | None:
    return urlsplit(url if "://" in url else f"//{url}").port


@pytest.mark.parametrize("http", ["peerwire", "uvicorn"])
async def test_serve_on_port_zero_reports_the_port_it_got(http: str) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CHILD,
        http,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        with anyio.fail_after(WAIT_S):
            line = await process.stdout.readline()
        assert line, (await process.stderr.read()).decode()
        ready: dict[str, Any] = json.loads(line)
        port = ready["port"]
        assert port > 0 and ready["url"] == f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient(trust_env=False) as web:
            card = (await web.get(ready["url"] + "/.well-known/agent-card.json")).json()
        interfaces = {i["protocolBinding"]: i["url"] for i in card["supportedInterfaces"]}
        assert _port(interfaces[Binding.JSONRPC]) == port
        assert _port(interfaces[Binding.HTTP_JSON]) == port
        grpc_port = _port(interfaces[Binding.GRPC])
        assert grpc_port not in (None, 0, port) and interfaces[Binding.GRPC] == ready["grpc"]
        for binding in (Binding.JSONRPC, Binding.GRPC):
            async with Client.connect(
                ready["url"], bindings=[binding], card_cache=CardCache()
            ) as client:
                task = await client.send("zero")
            assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
            assert task.artifacts[0].parts[0].text == "ZERO"
        process.send_signal(signal.SIGTERM)
        with anyio.fail_after(WAIT_S):
            assert await process.wait() == 0
        said = (await process.stderr.read()).decode()
        assert f"peerwire: serving 'Zero' on http://127.0.0.1:{port}" in said, said
        assert "Traceback" not in said, said
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
