"""``peerwire serve peerwire.samples.glossary:agent``, run as a user would:
on peerwire's HTTP server and on uvicorn (``--http uvicorn``)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from server._rpc import user_message
from typer.testing import CliRunner

import peerwire.server
from peerwire.cli import app
from peerwire.client import CardCache, Client
from peerwire.types import Binding, Task, TaskState

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _peerwire_serve(port: int, *options: str) -> Iterator[subprocess.Popen[bytes]]:
    command = [
        str(Path(sys.executable).with_name("peerwire")),
        "serve",
        "peerwire.samples.glossary:agent",
        "--port",
        str(port),
        "--store",
        "memory",
        *options,
    ]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    process = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


def test_peerwire_serve_runs_the_sample_from_the_repository_root() -> None:
    for _ in range(3):  # a port picked free can be taken before the server binds it
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        with _peerwire_serve(port) as process, httpx.Client(trust_env=False) as http:
            card = _wait_for_card(process, http, url)
            if card is None:
                continue
            assert card["supportedInterfaces"][0]["url"] == url + "/"
            answer = http.post(
                url + "/",
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "SendMessage",
                    "params": {"message": user_message("record")},
                },
                headers={"A2A-Version": "1.0"},
                timeout=30,
            ).json()
            assert answer["result"]["task"]["artifacts"][0]["artifactId"] == "definition"
            return
    pytest.fail("peerwire serve did not start on any of three ports")


async def test_peerwire_serve_on_uvicorn_serves_every_binding_and_stops_on_sigterm() -> None:
    for _ in range(3):  # a port picked free can be taken before the server binds it
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        with (
            _peerwire_serve(port, "--http", "uvicorn", "--log-level", "info") as process,
            httpx.Client(trust_env=False) as http,
        ):
            card = _wait_for_card(process, http, url)
            if card is None:
                continue
            bindings = [i["protocolBinding"] for i in card["supportedInterfaces"]]
            assert bindings == [Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC]
            for binding in bindings:
                async with Client.connect(url, bindings=[binding], card_cache=CardCache()) as c:
                    assert c.interface.protocol_binding == binding
                    task = await c.send("record")
                assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
                assert [a.artifact_id for a in task.artifacts] == ["definition"], binding
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=15) == 0, "a graceful shutdown exits 0"
            assert process.stderr is not None
            log = process.stderr.read().decode(errors="replace")
            assert "Traceback" not in log, log
            # --log-level reaches uvicorn's own loggers: its info records are there.
            assert "Application startup complete" in log and "Shutting down" in log, log
            assert "Application shutdown complete" in log, "the lifespan ran to its end"
            return
    pytest.fail("peerwire serve --http uvicorn did not start on any of three ports")


def test_peerwire_serve_says_when_uvicorn_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    # As if uvicorn were not installed: importing it fails, and so does peerwire's module for it.
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    monkeypatch.delitem(sys.modules, "peerwire.server._uvicorn", raising=False)
    monkeypatch.delattr(peerwire.server, "_uvicorn", raising=False)
    result = CliRunner().invoke(
        app, ["serve", "peerwire.samples.glossary:agent", "--http", "uvicorn"]
    )
    assert result.exit_code == 2, result.output
    said = _words(result.stderr)
    assert "Invalid value for --http" in said and "pip install 'peerwire[uvicorn]'" in said


def test_peerwire_serve_knows_its_http_servers() -> None:
    result = CliRunner().invoke(
        app, ["serve", "peerwire.samples.glossary:agent", "--http", "hypercorn"]
    )
    assert result.exit_code == 2, result.output
    assert "'hypercorn' is not one of 'peerwire', 'uvicorn'" in _words(result.stderr)


def _words(text: str) -> str:
    """A usage error's text without the box rich draws around it."""
    return " ".join(re.sub("[│╭╮╰╯─]", " ", text).split())


def _wait_for_card(
    process: subprocess.Popen[bytes], http: httpx.Client, url: str
) -> dict[str, Any] | None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            assert process.stderr is not None
            error = process.stderr.read().decode(errors="replace")
            if "address already in use" in error.lower():
                return None
            pytest.fail(f"peerwire serve exited {process.returncode}:\n{error}")
        with contextlib.suppress(httpx.TransportError):
            response = http.get(url + "/.well-known/agent-card.json", timeout=2)
            if response.status_code == 200:
                return response.json()  # type: ignore[no-any-return]
        time.sleep(0.05)
    pytest.fail("peerwire serve did not answer within 30 s")


def test_peerwire_serve_applies_its_http_limits() -> None:
    # --head-timeout reaches peerwire's HTTP server: a head that never ends is refused 408.
    for _ in range(3):  # a port picked free can be taken before the server binds it
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        with (
            _peerwire_serve(port, "--head-timeout", "0.3", "--no-grpc") as process,
            httpx.Client(trust_env=False) as http,
        ):
            if _wait_for_card(process, http, url) is None:
                continue
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(b"GET /.well-known/agent-card.json HTTP/1.1\r\nhost: x\r\n")
                answer = sock.recv(4096)
            assert answer.startswith(b"HTTP/1.1 408 "), answer
            return
    pytest.fail("peerwire serve did not start on any of three ports")


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--head-timeout", "0"], "HTTPLimits.head_timeout must be positive"),
        (["--http", "uvicorn", "--keep-alive", "3"], "uvicorn has its own settings"),
    ],
)
def test_peerwire_serve_refuses_http_limits_it_cannot_apply(options: list[str], said: str) -> None:
    result = CliRunner().invoke(app, ["serve", "peerwire.samples.glossary:agent", *options])
    assert result.exit_code == 2, result.output
    assert said in _words(result.stderr)
