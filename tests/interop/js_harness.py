"""Run the JavaScript interop agent (js_peer/agent.js) as a subprocess of the test process."""

from __future__ import annotations

import contextlib
import json
import subprocess
import tempfile
import time
from collections.abc import Iterator
from typing import IO, NamedTuple

from .js_env import js_peer_ready, node
from .sdk_harness import free_ports

READY_PREFIX = "READY "
START_TIMEOUT_S = 30
STOP_TIMEOUT_S = 10
_POLL_S = 0.05


class JsPeerError(AssertionError):
    """The JavaScript peer failed to start; the message carries its output."""


class JsServer(NamedTuple):
    base_url: str  # http://127.0.0.1:P: the card, and JSON-RPC at /a2a/jsonrpc, REST at /a2a/rest
    grpc_address: str  # 127.0.0.1:G, as its card lists it
    pid: int


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _ready_line(proc: subprocess.Popen[bytes], stdout: IO[bytes]) -> dict[str, str] | None:
    """The agent's ready announcement; None if it exited first."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        stdout.seek(0)
        for line in stdout.read().decode(errors="replace").splitlines():
            if line.startswith(READY_PREFIX):
                ready: dict[str, str] = json.loads(line[len(READY_PREFIX) :])
                return ready
        if proc.poll() is not None:
            return None
        time.sleep(_POLL_S)
    raise JsPeerError(f"js_peer/agent.js printed no ready line in {START_TIMEOUT_S} s")


@contextlib.contextmanager
def start_js_server(attempts: int = 3) -> Iterator[JsServer]:
    """Run js_peer/agent.js on free loopback ports until the block ends, then end it by pid."""
    peer_dir = js_peer_ready()
    errors = []
    # A free port can be taken between choosing it and binding it: retry then.
    for _ in range(attempts):
        http_port, grpc_port = free_ports(2)
        cmd = [node(), "agent.js", "--http-port", str(http_port), "--grpc-port", str(grpc_port)]
        with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
            proc = subprocess.Popen(cmd, cwd=peer_dir, stdout=stdout, stderr=stderr)
            try:
                ready = _ready_line(proc, stdout)
                if ready is not None:
                    yield JsServer(ready["http"], ready["grpc"], proc.pid)
                    return
            finally:
                _stop(proc)
            stderr.seek(0)
            errors.append(f"exit {proc.returncode}: {stderr.read().decode(errors='replace')}")
    raise JsPeerError("js_peer/agent.js failed to start:\n" + "\n".join(errors))
