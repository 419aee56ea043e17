"""docs/howto/authentication.md's command-line block as written: ``peerwire serve
auth_bearer:agent --auth auth_bearer:verifiers --tracing console`` (a real process, the
verifiers' factory called by the CLI), ``peerwire send --bearer`` with a token the example
mints, and a send without one refused; the console's spans hold the authenticated request."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
PAGE = Path(__file__).resolve().parents[2] / "docs" / "howto" / "authentication.md"
PEERWIRE = str(Path(sys.executable).with_name("peerwire"))
WAIT_S = 60.0


def _env() -> dict[str, str]:
    # The example is imported from docs/examples; the key it makes lands in the test's folder.
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return {**env, "PYTHONPATH": str(EXAMPLES)}


async def _run(*args: str, cwd: Path) -> tuple[int, str, str]:
    done = await asyncio.create_subprocess_exec(
        *args, cwd=cwd, env=_env(), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    async with asyncio.timeout(WAIT_S):
        out, err = await done.communicate()
    assert done.returncode is not None
    return done.returncode, out.decode(), err.decode()


@contextlib.asynccontextmanager
async def _serving(cwd: Path) -> AsyncIterator[tuple[str, Any]]:
    process = await asyncio.create_subprocess_exec(
        *(PEERWIRE, "serve", "auth_bearer:agent", "--auth", "auth_bearer:verifiers"),
        *("--store", "memory", "--port", "0", "--no-grpc", "--tracing", "console"),
        *("--log-format", "json"),
        cwd=cwd,
        env=_env(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stderr is not None
        async with asyncio.timeout(WAIT_S):
            while True:
                line = await process.stderr.readline()
                assert line, "peerwire serve ended before serving"
                if b"serving 'Ledger'" in line:
                    break
        yield json.loads(line)["url"], process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def test_the_page_says_it() -> None:
    page = PAGE.read_text()
    assert (
        "peerwire serve auth_bearer:agent --auth auth_bearer:verifiers --port 8000 "
        "--tracing console &"
    ) in page
    assert (
        'peerwire send http://127.0.0.1:8000 "who am I?" --bearer "$(python auth_bearer.py token)"'
        in page
    )


async def test_a_jwt_protected_agent_served_and_traced_from_the_cli(tmp_path: Path) -> None:
    async with _serving(tmp_path) as (url, process):
        code, token, err = await _run(
            sys.executable, str(EXAMPLES / "auth_bearer.py"), "token", cwd=tmp_path
        )
        assert code == 0, err
        code, said, err = await _run(
            PEERWIRE, "send", url, "who am I?", "--bearer", token.strip(), cwd=tmp_path
        )
        assert code == 0, err
        assert "You are alice, with scopes ['ledger.read']" in said
        code, said, err = await _run(PEERWIRE, "send", url, "who am I?", cwd=tmp_path)
        assert code != 0 and "Authentication required" in err, (code, said, err)
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(WAIT_S):
            out, _ = await process.communicate()
    assert process.returncode == 0
    decoder, spans, at = json.JSONDecoder(), [], 0
    text = out.decode()
    while at < len(text):
        if text[at].isspace():
            at += 1
            continue
        span, at = decoder.raw_decode(text, at)
        spans.append(span)
    servers = [s for s in spans if s["kind"] == "SpanKind.SERVER"]
    assert any(
        s["name"] == "SendStreamingMessage" and s["status"]["status_code"] == "UNSET"
        for s in servers
    ), servers
