"""``peerwire serve`` and its metrics options, as a user runs them: a real process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

PEERWIRE = [str(Path(sys.executable).with_name("peerwire"))]
WAIT_S = 30.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_no_metrics_with_a_metrics_port_is_a_usage_error() -> None:
    done = subprocess.run(
        [
            *PEERWIRE,
            "serve",
            "peerwire.samples.glossary:agent",
            "--no-metrics",
            "--metrics-port",
            "9",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "300"},  # the error box on one line
    )
    assert done.returncode == 2
    assert "need metrics on" in done.stderr


def test_serve_with_a_metrics_port_and_a_token(tmp_path: Path) -> None:
    port, metrics_port = free_port(), free_port()
    env = {**os.environ, "PEERWIRE_METRICS_TOKEN": "t0ken"}
    command = [
        *PEERWIRE,
        "serve",
        "peerwire.samples.glossary:agent",
        "--store",
        "memory",
        "--no-grpc",
        "--port",
        str(port),
        "--metrics-port",
        str(metrics_port),
    ]
    log = tmp_path / "serve.log"
    with log.open("wb") as output:
        server = subprocess.Popen(
            command, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=output
        )
    try:
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                answer = httpx.get(
                    f"http://127.0.0.1:{metrics_port}/metrics",
                    headers={"Authorization": "Bearer t0ken"},
                    timeout=5,
                )
                break
            except httpx.TransportError:
                assert server.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "the metrics port never answered"
                time.sleep(0.1)
        assert answer.status_code == 200
        assert "peerwire_active_streams" in answer.text
        assert httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).status_code == 401
        assert httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).status_code == 404
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=WAIT_S)
