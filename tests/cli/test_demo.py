"""``peerwire demo``: run as a user would (from any folder), and with ``--wire``; it must end
and clean up, leaving the current folder as it was."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import invoke

PEERWIRE = str(Path(sys.executable).with_name("peerwire"))
DEMO_TIMEOUT_S = 120

RECORD = "A record is a final class that is a transparent carrier for its components."
SEALED = "A sealed class restricts which other classes may extend it."


def _agent_urls(output: str) -> list[str]:
    return re.findall(r"^  (?:Glossary|Brief) Agent\s+(http://127\.0\.0\.1:\d+)", output, re.M)


def _refuses_connections(url: str) -> bool:
    host, port = url.removeprefix("http://").split(":")
    with socket.socket() as sock:
        sock.settimeout(5)
        return sock.connect_ex((host, int(port))) != 0


def test_the_demo_walks_through_every_step_and_exits_0(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GLOSSARY_URL")}
    env["NO_COLOR"] = "1"
    done = subprocess.run(
        [PEERWIRE, "demo"],
        cwd=tmp_path,  # the samples come with the package, not from a checkout
        env=env,
        capture_output=True,
        text=True,
        timeout=DEMO_TIMEOUT_S,
        check=False,
    )
    out = done.stdout
    assert done.returncode == 0, (out, done.stderr)
    assert done.stderr == ""
    for state in ("submitted", "working", "completed", "input-required", "failed", "canceled"):
        assert state in out, state
    assert RECORD in out and SEALED in out
    assert "question: Which term should I define?" in out
    assert "same task both turns: yes" in out
    assert (
        "reason: Glossary Agent could not help with \"monad\": I do not know the term 'monad'."
        in out
    )
    assert 'SendStreamingMessage "monad" -> FAILED' in out, "the calls the Brief Agent made"
    # The streamed definition arrives in two chunks, between WORKING and COMPLETED.
    streamed = out[out.index("Streaming shows the lifecycle") :]
    order = [
        "submitted",
        "working",
        '"A record is a final class that is a transparent"',
        '" carrier for its components."',
        "completed",
    ]
    positions = [streamed.index(piece) for piece in order]
    assert positions == sorted(positions)
    heading = "canceled mid-way"
    canceled = out[out.index(heading) + len(heading) :]  # after the heading's own "canceled"
    assert (
        canceled.index("thinking (2/10)")
        < canceled.index("CancelTask")
        < canceled.index("canceled")
    )
    urls = _agent_urls(out)
    assert len(urls) == 2
    assert all(_refuses_connections(url) for url in urls), "both agents were stopped"
    stores = re.search(r"Their tasks are kept in SQLite files under (\S+)", out)
    assert stores is not None and not Path(stores[1]).exists(), "its stores were temporary"
    assert list(tmp_path.iterdir()) == [], "nothing written to the current folder"


@pytest.mark.asyncio
async def test_wire_shows_the_http_traffic_as_it_went() -> None:
    ran = await invoke("demo", "--wire")
    assert ran.code == 0, (ran.out, ran.err)
    out = ran.out
    assert ">>> GET http://127.0.0.1:" in out and "/.well-known/agent-card.json" in out
    assert "A2A-Version: 1.0" in out
    assert '"method": "SendMessage"' in out and '"method": "SendStreamingMessage"' in out
    assert '"method": "GetTask"' in out and '"method": "CancelTask"' in out
    assert "<<< HTTP 200 OK" in out
    assert "Content-Type: text/event-stream" in out
    assert 'data: {"jsonrpc":"2.0"' in out, "stream events as they arrived"
    assert "TASK_STATE_CANCELED" in out
    assert all(_refuses_connections(url) for url in _agent_urls(out))
