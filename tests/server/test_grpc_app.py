"""gRPC beside HTTP: ``create_app(grpc_port=...)``, the card that advertises it, and
``peerwire serve`` (run as a real process) with ``--grpc-port``, ``--no-grpc``, ``--interfaces``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from peerwire import Agent, create_app
from peerwire.client.transports.base import CallOptions
from peerwire.client.transports.grpc import GrpcTransport
from peerwire.errors import A2AConnectionError
from peerwire.server import A2AApp
from peerwire.server.card import CARD_PATH
from peerwire.types import (
    AgentCard,
    Binding,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SendMessageResponse,
    Task,
    TaskState,
    decode,
)

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 30.0


def echo_agent() -> Agent:
    agent = Agent("Echo", description="Repeats what it is told")

    @agent.skill()
    async def echo(text: str) -> str:
        return text

    return agent


def bindings(card: AgentCard) -> list[tuple[str, str]]:
    return [(i.protocol_binding, i.url) for i in card.supported_interfaces]


async def served_card(app: A2AApp) -> AgentCard:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        response = await http.get(CARD_PATH)
    assert response.status_code == 200
    return decode(response.content, AgentCard)


async def test_default_app_serves_no_grpc() -> None:
    app = create_app(echo_agent(), store="memory")
    async with app.lifespan():
        card = await served_card(app)
    assert [b for b, _ in bindings(card)] == [Binding.JSONRPC, Binding.HTTP_JSON]


async def test_grpc_joins_the_card_once_its_port_is_bound() -> None:
    app = create_app(echo_agent(), store="memory", public_url="http://agent.test:9000", grpc_port=0)
    before = app.card.card  # encoded before startup: must not stay cached without gRPC
    assert Binding.GRPC not in [b for b, _ in bindings(before)]
    async with app.lifespan():
        card = await served_card(app)
        (grpc_binding, grpc_url) = bindings(card)[-1]
        assert grpc_binding == Binding.GRPC
        host, _, port = grpc_url.rpartition(":")
        assert host == "agent.test" and int(port) > 0
        assert card.supported_interfaces[-1].protocol_version == "1.0"
        # The server really listens there (on grpc_host, 127.0.0.1).
        client = GrpcTransport(f"127.0.0.1:{port}", timeout=TIMEOUT_S)
        try:
            request = SendMessageRequest(
                message=Message(
                    message_id=str(uuid.uuid4()), role=Role.USER, parts=[Part(text="hi")]
                )
            )
            response = await client.call("SendMessage", request, SendMessageResponse, CallOptions())
            assert response.task is not None and response.task.artifacts[0].text == "hi"
        finally:
            await client.aclose()
    # Stopped with the app: nothing listens any more.
    client = GrpcTransport(f"127.0.0.1:{port}", timeout=TIMEOUT_S)
    try:
        with pytest.raises(A2AConnectionError):
            await client.call("GetTask", GetTaskRequest(id="t"), Task, CallOptions())
    finally:
        await client.aclose()


async def test_interface_order_and_public_address() -> None:
    app = create_app(
        echo_agent(),
        store="memory",
        grpc_port=0,
        grpc_public_address="grpc.agent.test:443",
        interface_order=["grpc", "JSONRPC"],
    )
    async with app.lifespan():
        card = await served_card(app)
    assert bindings(card) == [
        (Binding.GRPC, "grpc.agent.test:443"),
        # Without public_url, the HTTP URLs name the host the request reached.
        (Binding.JSONRPC, "http://testserver/"),
        (Binding.HTTP_JSON, "http://testserver/rest"),
    ]


def test_unknown_interface_names_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown interface 'soap'"):
        create_app(echo_agent(), store="memory", interface_order=["jsonrpc", "soap"])


# --- peerwire serve -----------------------------------------------------------------------------


def free_ports(count: int) -> list[int]:
    with contextlib.ExitStack() as stack:
        sockets = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket())
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [s.getsockname()[1] for s in sockets]


def peerwire_cli(*args: str) -> list[str]:
    return [sys.executable, "-c", "from peerwire.cli import main; main()", *args]


@contextlib.contextmanager
def peerwire_serve(*args: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    (port,) = free_ports(1)
    command = peerwire_cli(
        "serve", "peerwire.samples.glossary:agent", "--port", str(port), "--store", "memory", *args
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + TIMEOUT_S
        with httpx.Client(timeout=2) as http:
            while True:
                if process.poll() is not None:
                    stderr = process.stderr.read().decode() if process.stderr else ""
                    raise AssertionError(f"peerwire serve exited {process.returncode}: {stderr}")
                with contextlib.suppress(httpx.HTTPError):
                    if http.get(base_url + CARD_PATH).status_code == 200:
                        break
                assert time.monotonic() < deadline, "peerwire serve did not start in time"
                time.sleep(0.1)  # a process of its own: polling is the only way to see it up
        yield base_url, process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stderr is not None:
            process.stderr.close()


def fetch_card(base_url: str) -> AgentCard:
    return decode(httpx.get(base_url + CARD_PATH, timeout=TIMEOUT_S).content, AgentCard)


async def test_serve_starts_grpc_on_the_given_port_first_in_the_card() -> None:
    (grpc_port,) = free_ports(1)
    with peerwire_serve("--grpc-port", str(grpc_port), "--interfaces", "grpc,jsonrpc") as (
        base_url,
        _,
    ):
        card = fetch_card(base_url)
        assert bindings(card)[:2] == [
            (Binding.GRPC, f"127.0.0.1:{grpc_port}"),
            (Binding.JSONRPC, f"{base_url}/"),
        ]
        client = GrpcTransport(card.supported_interfaces[0].url, timeout=TIMEOUT_S)
        try:
            request = SendMessageRequest(
                message=Message(
                    message_id=str(uuid.uuid4()), role=Role.USER, parts=[Part(text="record")]
                )
            )
            response = await client.call("SendMessage", request, SendMessageResponse, CallOptions())
        finally:
            await client.aclose()
        assert response.task is not None
        assert response.task.status.state is TaskState.COMPLETED


def test_serve_without_grpc() -> None:
    with peerwire_serve("--no-grpc") as (base_url, _):
        assert Binding.GRPC not in [b for b, _ in bindings(fetch_card(base_url))]


def test_serve_refuses_unknown_interface_names() -> None:
    done = subprocess.run(
        peerwire_cli("serve", "peerwire.samples.glossary:agent", "--interfaces", "jsonrpc,soap"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert done.returncode == 2
    assert "unknown interface(s) soap" in done.stderr
