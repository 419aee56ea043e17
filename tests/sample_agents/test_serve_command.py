"""``peerwire serve samples.glossary:agent``, run as a user would, from the repository root."""

from __future__ import annotations

import contextlib
import os
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

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _peerwire_serve(port: int) -> Iterator[subprocess.Popen[bytes]]:
    command = [
        str(Path(sys.executable).with_name("peerwire")),
        "serve",
        "samples.glossary:agent",
        "--port",
        str(port),
        "--store",
        "memory",
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
