"""Run the a2a-sdk peer scripts (sdk_peer/) as subprocesses of the test process.

Nothing here imports a2a: the SDK's protobuf registers the same ``lf.a2a.v1``
package as peerwire's, so it only ever runs in its own venv (sdk_env.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import httpx

from .sdk_env import sdk_python

SDK_PEER_DIR = Path(__file__).parent / "sdk_peer"
SDK_CLIENT = SDK_PEER_DIR / "sdk_client.py"
GLOSSARY_SERVER = SDK_PEER_DIR / "glossary_server.py"
BINDINGS = ("jsonrpc", "rest", "grpc")
CLIENT_TIMEOUT_S = 60
SERVER_START_TIMEOUT_S = 30


class SdkPeerError(AssertionError):
    """An SDK peer process failed; the message carries its output."""


class SdkServer(NamedTuple):
    base_url: str  # http://127.0.0.1:P, the card is at /.well-known/agent-card.json
    grpc_address: str  # 127.0.0.1:G, as listed in the card


def _peer_env() -> dict[str, str]:
    env = dict(os.environ)
    # Our test process's import paths must not leak into the SDK's interpreter.
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONHOME", None)
    # The SDK's OpenTelemetry spans are no-ops without an exporter; skip the overhead.
    env.setdefault("OTEL_INSTRUMENTATION_A2A_SDK_ENABLED", "false")
    return env


def run_sdk_client(
    url: str,
    binding: str,
    scenario: str,
    *,
    text: str | None = None,
    check: bool = True,
    timeout: float = CLIENT_TIMEOUT_S,
) -> list[dict[str, Any]]:
    """Run sdk_client.py against ``url`` and return its JSON lines.

    With ``check`` (the default) a non-zero exit raises SdkPeerError with the
    output; without it, an error shows up as a final ``{"error": {...}}`` line.
    """
    cmd = [str(sdk_python()), str(SDK_CLIENT), "--url", url, "--binding", binding]
    cmd += ["--scenario", scenario]
    if text is not None:
        cmd += ["--text", text]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_peer_env())
    except subprocess.TimeoutExpired as exc:
        raise SdkPeerError(
            f"sdk_client {binding}/{scenario} timed out after {timeout} s\n"
            f"--- stdout ---\n{exc.stdout}\n--- stderr ---\n{exc.stderr}"
        ) from exc
    report = f"--- stdout ---\n{done.stdout}\n--- stderr ---\n{done.stderr[-6000:]}"
    if check and done.returncode != 0:
        raise SdkPeerError(f"sdk_client {binding}/{scenario} exited {done.returncode}\n{report}")
    try:
        return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise SdkPeerError(f"sdk_client {binding}/{scenario} printed non-JSON\n{report}") from exc


GLOSSARY_NAME = "Glossary Agent (a2a-sdk)"


def free_ports(count: int) -> list[int]:
    """Distinct free loopback ports (held open together so they differ)."""
    with contextlib.ExitStack() as stack:
        socks = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            socks.append(sock)
        return [s.getsockname()[1] for s in socks]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_until_ready(proc: subprocess.Popen[bytes], card_url: str, agent_name: str) -> bool:
    """True once this process's card answers; False if the process died first.

    The card's name is checked because the chosen port may meanwhile have been taken by a
    server of another test: its card would answer 200 while ours dies on EADDRINUSE.
    """
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    with httpx.Client(timeout=2) as http:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return False
            with contextlib.suppress(httpx.HTTPError, ValueError):
                answer = http.get(card_url)
                if answer.status_code == 200 and answer.json().get("name") == agent_name:
                    return True
            time.sleep(0.1)
    raise SdkPeerError(f"glossary_server did not answer {card_url} in {SERVER_START_TIMEOUT_S} s")


@contextlib.contextmanager
def start_glossary_server(attempts: int = 3) -> Iterator[SdkServer]:
    """Run sdk_peer/glossary_server.py on free loopback ports until the block ends."""
    python = sdk_python()
    errors = []
    # A free port can be taken between choosing it and binding it: retry then.
    for _ in range(attempts):
        port, grpc_port = free_ports(2)
        with tempfile.TemporaryFile() as stderr:
            cmd = [python, GLOSSARY_SERVER, "--port", str(port), "--grpc-port", str(grpc_port)]
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=stderr, env=_peer_env())
            try:
                base_url = f"http://127.0.0.1:{port}"
                card_url = f"{base_url}/.well-known/agent-card.json"
                if _wait_until_ready(proc, card_url, GLOSSARY_NAME):
                    yield SdkServer(base_url, f"127.0.0.1:{grpc_port}")
                    return
            finally:
                _stop(proc)
            stderr.seek(0)
            errors.append(f"exit {proc.returncode}: {stderr.read().decode(errors='replace')}")
    raise SdkPeerError("glossary_server failed to start:\n" + "\n".join(errors))
