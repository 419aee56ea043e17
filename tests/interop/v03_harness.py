"""Run the A2A 0.3 interop peers as subprocesses of the test process: the official SDKs' 0.3
releases, a2a-sdk 0.3 (sdk03_peer/, in its own venv: sdk03_env.py) and @a2a-js/sdk 0.3
(js_peer_v03/, under Node: js03_env.py).

Both peers have the same two scripts, so a test names the SDK and gets the same behaviour:

* an agent (``start_server(sdk)``), a Glossary Agent serving 0.3 over JSON-RPC, HTTP+JSON and
  gRPC with a 0.3 card (record, sealed class, "" asks for input, slow, anything else fails;
  a file is answered with its bytes as text and a file "got:" + its content), pushing with
  its SDK's own notification sender;
* a client (``run_client(sdk, url, binding)``) that runs the scenarios card, send, stream,
  get, input_required, cancel, subscribe and errors against an agent's base URL over one
  binding, in one process, and prints one JSON line per thing it saw (``scenario``, ``op``,
  then the 0.3 JSON of it; or ``error``). ``lines_of(lines, scenario, op)`` picks them out.
  ``files`` and ``push`` (a webhook on the SDK's own web framework) run when named
  (``run_client(sdk, url, binding, "files,push")``).

Nothing here imports an SDK: their generated protobuf registers ``a2a.v1``, as ours does.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from .js03_env import js03_peer_ready
from .js_env import node
from .js_harness import _ready_line
from .sdk03_env import sdk03_python
from .sdk_harness import SdkPeerError, _peer_env, _stop, _wait_until_ready, free_ports

SDK03_PEER_DIR = Path(__file__).parent / "sdk03_peer"
SDKS = ("a2a-sdk", "a2a-js")
"""The SDKs: a2a-sdk 0.3 (Python) and @a2a-js/sdk 0.3 (JavaScript)."""

BINDINGS = {"jsonrpc": "JSONRPC", "rest": "HTTP+JSON", "grpc": "GRPC"}
SCENARIOS = ("card", "send", "stream", "get", "input_required", "cancel", "subscribe", "errors")
CLIENT_TIMEOUT_S = 60
CHUNKS = ["A record is a final class that is a transparent", " carrier for its components."]

Line = dict[str, Any]


class V03Server(NamedTuple):
    base_url: str  # http://127.0.0.1:P; the 0.3 card at /.well-known/agent-card.json
    grpc_address: str  # 127.0.0.1:G, as the card lists it


def _client_command(
    sdk: str, url: str, binding: str, scenario: str
) -> tuple[list[str], Path | None]:
    if sdk == "a2a-sdk":
        cmd = [str(sdk03_python()), str(SDK03_PEER_DIR / "sdk_client.py"), "--url", url]
        return [*cmd, "--binding", binding, "--scenario", scenario], None
    if sdk == "a2a-js":
        cwd = js03_peer_ready()
        cmd = [node(), "client.js", "--url", url, "--binding", binding, "--scenario", scenario]
        return cmd, cwd
    raise ValueError(f"unknown SDK {sdk!r} (known: {', '.join(SDKS)})")


def run_client(
    sdk: str, url: str, binding: str, scenario: str = "all", *, timeout: float = CLIENT_TIMEOUT_S
) -> list[Line]:
    """The JSON lines of the ``sdk``'s 0.3 client running ``scenario`` (default: all of them)
    against the agent at ``url`` over ``binding`` (jsonrpc, rest, grpc). A scenario that fails
    shows as its ``error`` line (the exit code says so too; it is not raised on)."""
    cmd, cwd = _client_command(sdk, url, binding, scenario)
    return _run(cmd, cwd, f"{sdk} client {binding}/{scenario}", timeout)


def run_client_at_grpc(
    sdk: str,
    address: str,
    scenario: str,
    *,
    task: tuple[str, str] | None = None,
    timeout: float = CLIENT_TIMEOUT_S,
) -> list[Line]:
    """As ``run_client`` over gRPC, the card fetched with the GetAgentCard rpc from ``address``
    (a2a-sdk only). ``task`` (id, context id) is the task the ``continue`` scenario continues;
    ``ask`` leaves a task waiting for input."""
    if sdk != "a2a-sdk":
        raise ValueError("only the a2a-sdk client fetches its card over gRPC")
    cmd = [str(sdk03_python()), str(SDK03_PEER_DIR / "sdk_client.py"), "--grpc-address", address]
    cmd += ["--binding", "grpc", "--scenario", scenario]
    if task is not None:
        cmd += ["--task-id", task[0], "--context-id", task[1]]
    return _run(cmd, None, f"{sdk} client grpc/{scenario} at {address}", timeout)


def _run(cmd: list[str], cwd: Path | None, what: str, timeout: float) -> list[Line]:
    try:
        done = subprocess.run(
            cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=_peer_env()
        )
    except subprocess.TimeoutExpired as exc:
        raise SdkPeerError(
            f"{what} timed out after {timeout} s\n"
            f"--- stdout ---\n{exc.stdout}\n--- stderr ---\n{exc.stderr}"
        ) from exc
    report = f"--- stdout ---\n{done.stdout}\n--- stderr ---\n{done.stderr[-6000:]}"
    try:
        lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise SdkPeerError(f"{what} printed non-JSON\n{report}") from exc
    if done.returncode not in (0, 3) or not lines:
        raise SdkPeerError(f"{what} exited {done.returncode}\n{report}")
    return lines


def lines_of(lines: list[Line], scenario: str, op: str | None = None) -> list[Line]:
    """The lines of ``scenario`` (of one ``op`` only, if given); a scenario that failed
    raises with its error, so a test says which scenario broke and why."""
    mine = [line for line in lines if line.get("scenario") == scenario]
    failed = [line["error"] for line in mine if "error" in line and "op" not in line]
    if failed:
        raise AssertionError(f"scenario {scenario!r} failed: {failed[0]}")
    return [line for line in mine if op is None or line.get("op") == op]


# --- the agents ---------------------------------------------------------------------------------


@contextlib.contextmanager
def _python_server() -> Iterator[V03Server]:
    python = sdk03_python()
    script = SDK03_PEER_DIR / "glossary_server.py"
    errors = []
    for _ in range(3):  # a free port can be taken between choosing and binding it
        port, grpc_port = free_ports(2)
        with tempfile.TemporaryFile() as stderr:
            cmd = [str(python), str(script), "--port", str(port), "--grpc-port", str(grpc_port)]
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=stderr, env=_peer_env())
            try:
                base_url = f"http://127.0.0.1:{port}"
                if _wait_until_ready(
                    proc, f"{base_url}/.well-known/agent-card.json", "Glossary Agent (a2a-sdk 0.3)"
                ):
                    yield V03Server(base_url, f"127.0.0.1:{grpc_port}")
                    return
            finally:
                _stop(proc)
            stderr.seek(0)
            errors.append(f"exit {proc.returncode}: {stderr.read().decode(errors='replace')}")
    raise SdkPeerError("sdk03_peer/glossary_server.py failed to start:\n" + "\n".join(errors))


@contextlib.contextmanager
def _js_server() -> Iterator[V03Server]:
    peer_dir = js03_peer_ready()
    errors = []
    for _ in range(3):
        http_port, grpc_port = free_ports(2)
        cmd = [node(), "agent.js", "--http-port", str(http_port), "--grpc-port", str(grpc_port)]
        with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
            proc = subprocess.Popen(cmd, cwd=peer_dir, stdout=stdout, stderr=stderr)
            try:
                ready = _ready_line(proc, stdout)
                if ready is not None:
                    yield V03Server(ready["http"], ready["grpc"])
                    return
            finally:
                _stop(proc)
            stderr.seek(0)
            errors.append(f"exit {proc.returncode}: {stderr.read().decode(errors='replace')}")
    raise SdkPeerError("js_peer_v03/agent.js failed to start:\n" + "\n".join(errors))


@contextlib.contextmanager
def start_server(sdk: str) -> Iterator[V03Server]:
    """Run the ``sdk``'s 0.3 Glossary Agent on free loopback ports until the block ends (then
    end it by its pid)."""
    if sdk == "a2a-sdk":
        with _python_server() as server:
            yield server
    elif sdk == "a2a-js":
        with _js_server() as server:
            yield server
    else:
        raise ValueError(f"unknown SDK {sdk!r} (known: {', '.join(SDKS)})")
