"""``peerwire serve --message-retention HOURS`` as a real process: the card advertises the
idempotent-send extension with that window, a repeated messageId from a caller that activates
it gets the same task, and
``--message-retention 0`` turns both off."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest

from peerwire.client import IDEMPOTENT_SEND_EXTENSION

WAIT_S = 60.0

AGENT = textwrap.dedent(
    """
    from peerwire import Agent

    agent = Agent("Echo", description="Repeats what it is told")


    @agent.skill()
    async def echo(text: str) -> str:
        return text
    """
)


def _send(message_id: str) -> dict[str, Any]:
    message = {"role": "ROLE_USER", "messageId": message_id, "parts": [{"text": "hi"}]}
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}


async def _serving(tmp_path: Path, *options: str) -> tuple[asyncio.subprocess.Process, str]:
    (tmp_path / "echo_agent.py").write_text(AGENT)
    command = [
        str(Path(sys.executable).with_name("peerwire")),
        *("serve", "echo_agent:agent", "--port", "0", "--log-format", "json", *options),
    ]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    process = await asyncio.create_subprocess_exec(
        *command,
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    async with asyncio.timeout(WAIT_S):
        while True:
            raw = await process.stderr.readline()
            assert raw, "peerwire serve ended early"
            if b"peerwire: serving '" in raw:
                return process, json.loads(raw)["url"]


async def _stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(WAIT_S):
                await process.wait()
        except TimeoutError:
            process.kill()
            await process.wait()


@pytest.mark.parametrize(("hours", "window"), [("0.5", 1800), ("0", None)])
async def test_message_retention_on_the_command_line(
    tmp_path: Path, hours: str, window: int | None
) -> None:
    process, url = await _serving(tmp_path, "--message-retention", hours)
    try:
        async with httpx.AsyncClient(base_url=url, trust_env=False, timeout=30) as web:
            card = (await web.get("/.well-known/agent-card.json")).json()
            extensions = card["capabilities"].get("extensions", [])
            tasks = []
            for _ in range(2):
                answer = await web.post(
                    "/",
                    json=_send("m-1"),
                    headers={"A2A-Version": "1.0", "A2A-Extensions": IDEMPOTENT_SEND_EXTENSION},
                )
                tasks.append(answer.json()["result"]["task"]["id"])
    finally:
        await _stop(process)
    if window is None:
        assert extensions == []
        assert tasks[0] != tasks[1], "off: each send makes its own task"
    else:
        [extension] = extensions
        assert extension["uri"] == IDEMPOTENT_SEND_EXTENSION
        assert extension["params"] == {"retentionSeconds": window}
        assert tasks[0] == tasks[1], "a repeated messageId gets the task it made"
