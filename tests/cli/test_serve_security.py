"""``peerwire serve`` of a secured agent: ``--auth MODULE:ATTR``, ``--card-signing-key`` (a
key file or MODULE:ATTR) and ``--tracing console|otlp``, run as a user would (a subprocess
from the repository root), and the one-line errors of a command line that lacks them."""

from __future__ import annotations

import contextlib
import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from peerwire.client import CardCache, Client
from peerwire.client.auth import BearerToken, Credentials
from peerwire.errors import AuthenticationError
from peerwire.types import Task

from ._secured import ALICE_TOKEN

REPO = Path(__file__).resolve().parents[2]
PEERWIRE = str(Path(sys.executable).with_name("peerwire"))
TARGET = "tests.cli.serve_targets:vault"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("OTEL_")}
    return {**env, **extra}


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PEERWIRE, "serve", *args, "--store", "memory", "--port", str(_free_port())],
        cwd=REPO,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@contextlib.contextmanager
def _serving(*args: str, **env: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    port = _free_port()
    process = subprocess.Popen(
        [PEERWIRE, "serve", TARGET, "--store", "memory", "--port", str(port), "--no-grpc", *args],
        cwd=REPO,
        env=_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                pytest.fail(f"peerwire serve exited {process.returncode}: {process.stderr.read()}")  # type: ignore[union-attr]
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(url + "/.well-known/agent-card.json", timeout=2).status_code == 200:
                    break
            assert time.monotonic() < deadline, "the agent did not come up"
            time.sleep(0.1)
        yield url, process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def test_a_secured_agent_without_auth_is_a_one_line_error() -> None:
    done = _run(TARGET)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "--auth MODULE:ATTR" in lines[0] and "'Vault Agent' declares security" in lines[0]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--auth", "tests.cli.serve_targets:nothing"], "has no attribute 'nothing'"),
        (["--auth", "tests.cli.serve_targets:not_a_verifier"], "nor a dict of scheme name"),
        (["--auth", "tests.cli.serve_targets:verifiers_of"], "a function that needs arguments"),
        (["--card-signing-key", "no-such-key.pem"], "no key file or MODULE:ATTR"),
    ],
)
def test_a_wrong_option_is_a_usage_error_naming_it(args: list[str], said: str) -> None:
    done = _run(TARGET, "--auth", "tests.cli.serve_targets:verifiers", *args)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    flat = " ".join(done.stderr.split())
    assert said in flat and args[0] in flat


def _card(url: str) -> dict[str, object]:
    document: dict[str, object] = httpx.get(url + "/.well-known/agent-card.json").json()
    return document


async def _whoami(url: str) -> Task:
    credentials = Credentials(BearerToken(ALICE_TOKEN))
    async with Client.connect(url, credentials=credentials, card_cache=CardCache()) as client:
        task = await client.send("who?", skill="whoami")
    assert isinstance(task, Task)
    return task


@pytest.mark.parametrize("auth", ["verifiers", "authenticator", "vault_auth"])
async def test_auth_and_a_signing_key_file_and_console_spans(auth: str, tmp_path: Path) -> None:
    key = tmp_path / "card-key.pem"
    key.write_bytes(
        ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    options = ["--auth", f"tests.cli.serve_targets:{auth}", "--card-signing-key", str(key)]
    with _serving(*options, "--tracing", "console") as (url, process):
        assert _card(url)["signatures"], "the card is signed"
        task = await _whoami(url)
        assert task.artifacts[0].text.startswith("alice via bearer")
        with pytest.raises(AuthenticationError):
            async with Client.connect(url, card_cache=CardCache()) as anonymous:
                await anonymous.send("who?", skill="whoami")
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=30)
    assert '"name": "SendMessage"' in out, out[-2000:]


async def test_a_signer_object_and_otlp_spans() -> None:
    received: list[tuple[str, bytes]] = []

    class Collector(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, body))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    collector = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    thread = threading.Thread(target=collector.serve_forever, daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{collector.server_address[1]}/v1/traces"
    try:
        options = [
            "--auth",
            "tests.cli.serve_targets:verifiers",
            "--card-signing-key",
            "tests.cli.serve_targets:signer",
            "--tracing",
            "otlp",
        ]
        with _serving(*options, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=endpoint) as (url, process):
            assert _card(url)["signatures"]
            await _whoami(url)
            process.send_signal(signal.SIGTERM)  # the batch is flushed at exit
            process.wait(timeout=30)
    finally:
        collector.shutdown()
        collector.server_close()
    assert received and all(path == "/v1/traces" for path, _ in received)
    assert any(b"SendMessage" in body for _, body in received)
