"""One benchmark target: a server the harness starts (a command) or one already running.

A command is a shell string run as ``bash -c "exec COMMAND"`` in a session of its own,
pinned to the server CPUs; ``{port}`` becomes a free loopback port and ``{tmp}`` a fresh
directory (removed when the target stops: a new SQLite file for every start, say). The
target is ready when its agent card answers; its JSON-RPC URL comes from the card (or
``--rpc-url``), and must be loopback too.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from .loopback import loopback_only
from .proc import free_port, group_pids, listening_pid, pinned

CARD_PATH = "/.well-known/agent-card.json"
STOP_TIMEOUT_S = 10.0
# Log lines that count as a problem: a clean benchmark run logs none of them.
PROBLEM_WORDS = ("Traceback", "ERROR", "WARNING", "Exception")


class TargetError(RuntimeError):
    """A target would not start, or does not follow the bench contract."""


def get_json(url: str, timeout: float = 2.0) -> Any:
    with urllib.request.urlopen(loopback_only(url), timeout=timeout) as reply:
        return json.loads(reply.read())


def rpc(url: str, method: str, params: dict[str, Any], request_id: int = 1) -> Any:
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    request = urllib.request.Request(
        loopback_only(url),
        data=json.dumps(body).encode(),
        method="POST",
        headers={"content-type": "application/json", "a2a-version": "1.0"},
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.loads(reply.read())


def jsonrpc_url(card: Any, base: str) -> str:
    """The card's JSON-RPC interface URL (protocol 1.x preferred), else ``base/``."""
    interfaces = card.get("supportedInterfaces") if isinstance(card, dict) else None
    if not isinstance(interfaces, list):
        interfaces = []
    jsonrpc = [
        i for i in interfaces if isinstance(i, dict) and i.get("protocolBinding") == "JSONRPC"
    ]
    v1 = [i for i in jsonrpc if str(i.get("protocolVersion", "")).startswith("1.")]
    chosen = v1 or jsonrpc
    return str(chosen[0].get("url") or base + "/") if chosen else base + "/"


@dataclass
class Target:
    name: str
    command: str | None = None  # a shell command with {port} (and maybe {tmp})
    url: str | None = None  # or the base URL of a server already running
    python: str | None = None  # the interpreter it runs on, for the versions line
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    base: str = ""
    rpc_url: str = ""
    pid: int | None = None
    log_path: str | None = None
    tmp: str | None = None

    def start(self, server_cpus: str, timeout: float, rpc_url: str | None = None) -> None:
        if self.command is None:
            assert self.url is not None
            self.base = loopback_only(self.url).rstrip("/")
            port = urllib.parse.urlsplit(self.base).port or 80
        else:
            port = free_port()
            self.base = f"http://127.0.0.1:{port}"
            self._spawn(port, server_cpus)
        try:
            card = self._wait_for_card(timeout)
            self.rpc_url = loopback_only(rpc_url or jsonrpc_url(card, self.base))
            self.pid = listening_pid(port) or (self.proc.pid if self.proc else None)
        except BaseException:  # a server that is not ready is never left running
            self.stop()
            raise

    def _spawn(self, port: int, server_cpus: str) -> None:
        assert self.command is not None
        self.tmp = tempfile.mkdtemp(prefix=f"peerwire-bench-{self.name}-")
        command = self.command.replace("{port}", str(port)).replace("{tmp}", self.tmp)
        self.log_path = os.path.join(self.tmp, "server.log")
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [*pinned(server_cpus), "bash", "-c", "exec " + command],
                stdout=log,
                stderr=log,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group: stopped as a whole
            )

    def _wait_for_card(self, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise TargetError(
                    f"{self.name}: the server exited ({self.proc.returncode}) before serving "
                    f"its card; its log ends:\n{self.log_tail()}"
                )
            try:
                return get_json(self.base + CARD_PATH)
            except (OSError, ValueError) as exc:
                last = exc
                time.sleep(0.1)
        raise TargetError(f"{self.name}: no agent card at {self.base} after {timeout:g} s ({last})")

    def server_pids(self) -> list[int]:
        if self.proc is not None:
            return group_pids(self.proc.pid) or [self.proc.pid]
        return [self.pid] if self.pid else []

    def stop(self) -> collections.Counter[str]:
        """Stop the server (SIGTERM to its group, SIGKILL after a while) and return the
        problems its log shows."""
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
            self.proc = None
        problems = self.log_problems()
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = self.log_path = None
        return problems

    def _log_lines(self) -> list[str]:
        if self.log_path is None or not os.path.exists(self.log_path):
            return []
        with open(self.log_path, errors="replace") as fh:
            return fh.readlines()

    def log_tail(self, lines: int = 20) -> str:
        return "".join(self._log_lines()[-lines:])

    def log_problems(self) -> collections.Counter[str]:
        """Counts of log lines by problem word, and the first such line of each as a
        ``"_sample ..."`` key."""
        counts: collections.Counter[str] = collections.Counter()
        for line in self._log_lines():
            for word in PROBLEM_WORDS:
                if word in line:
                    counts[word] += 1
                    if counts[word] == 1:
                        counts["_sample " + line.strip()[:160]] += 1
        return counts
