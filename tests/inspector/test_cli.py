"""``peerwire inspect`` as a user runs it: a real process serving the page, the agent given
on the command line already loaded; stopped with SIGINT."""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import sys
from pathlib import Path

import pytest

from .pages import api_client

pytestmark = pytest.mark.asyncio(loop_scope="module")

PEERWIRE = str(Path(sys.executable).with_name("peerwire"))
START_TIMEOUT_S = 30.0


async def test_peerwire_inspect_serves_the_page_with_the_agent_loaded(
    glossary_url: str, tmp_path: Path
) -> None:
    # --open asks the default browser, which $BROWSER names: here, a command noting the URL.
    opened = tmp_path / "opened.txt"
    note = f"import sys, pathlib; pathlib.Path({str(opened)!r}).write_text(sys.argv[1])"
    browser = f"{shlex.quote(sys.executable)} -c {shlex.quote(note)} %s"
    process = await asyncio.create_subprocess_exec(
        PEERWIRE,
        "inspect",
        glossary_url,
        "--port",
        "0",
        "--open",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "BROWSER": browser},
    )
    try:
        assert process.stdout is not None
        async with asyncio.timeout(START_TIMEOUT_S):
            line = (await process.stdout.readline()).decode()
        assert line.startswith("peerwire inspect: open http://127.0.0.1:"), line
        page = line.split()[3]
        async with api_client(page, timeout=10.0) as http:
            assert "peerwire inspect" in (await http.get("/")).text
            state = (await http.get("/api/state")).json()
        assert state["url"] == glossary_url
        assert state["card"]["document"]["name"] == "Glossary Agent"
        for _ in range(100):  # the browser command runs on its own: a liveness bound
            if opened.exists() and opened.read_text():
                break
            await asyncio.sleep(0.05)
        assert opened.read_text() == page
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
        async with asyncio.timeout(START_TIMEOUT_S):
            _, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    assert b"Traceback" not in err


async def test_a_port_that_is_no_port_is_refused_in_words() -> None:
    process = await asyncio.create_subprocess_exec(
        PEERWIRE, "inspect", "--port", "70000", stderr=asyncio.subprocess.PIPE
    )
    async with asyncio.timeout(START_TIMEOUT_S):
        _, err = await process.communicate()
    assert process.returncode == 2
    assert err.decode().strip() == "error: --port 70000 is not a port (0-65535)"
