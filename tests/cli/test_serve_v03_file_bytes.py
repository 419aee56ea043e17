"""``peerwire serve --v03-file-bytes`` as a real process: an agent told that its 0.3 callers
send a2a-sdk's form (base64) reads base64 text that ``auto`` would also take, and refuses the
content form with InvalidParams; ``auto`` takes both."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import sys
import textwrap
from pathlib import Path

import httpx
import pytest

WAIT_S = 60.0
CONTENT = b"\x00\x01\xfe\xff peerwire \x80"  # not base64 text

AGENT = textwrap.dedent(
    """
    import base64

    from peerwire import Agent, Message

    agent = Agent("Sizes", description="Says what file it got")


    @agent.skill(input_modes=["*/*"])
    async def size(message: Message) -> str:
        [raw] = [p.raw for p in message.parts if p.raw is not None]
        return base64.b64encode(raw).decode()
    """
)


async def _serving(tmp_path: Path, *options: str) -> tuple[asyncio.subprocess.Process, str]:
    (tmp_path / "sizes_agent.py").write_text(AGENT)
    command = [
        str(Path(sys.executable).with_name("peerwire")),
        *("serve", "sizes_agent:agent", "--port", "0", "--no-grpc", "--log-format", "json"),
        *options,
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


def _send(proto_bytes: bytes) -> dict[str, object]:
    file = {"fileWithBytes": base64.b64encode(proto_bytes).decode()}
    return {"message": {"messageId": "m", "role": "ROLE_USER", "content": [{"file": file}]}}


@pytest.mark.parametrize("setting", ["auto", "base64"])
async def test_v03_file_bytes_on_the_command_line(tmp_path: Path, setting: str) -> None:
    process, url = await _serving(tmp_path, "--v03-file-bytes", setting)
    try:
        async with httpx.AsyncClient(base_url=url, trust_env=False, timeout=30) as web:
            sdk_form = await web.post(
                "/rest/v1/message:send", json=_send(base64.b64encode(CONTENT))
            )
            content_form = await web.post("/rest/v1/message:send", json=_send(CONTENT))
    finally:
        await _stop(process)
    assert sdk_form.status_code == 200, sdk_form.text
    [artifact] = sdk_form.json()["task"]["artifacts"]
    assert artifact["parts"][0]["text"] == base64.b64encode(CONTENT).decode()
    if setting == "auto":
        assert content_form.status_code == 200, content_form.text
    else:
        assert content_form.status_code == 400, content_form.text
        assert "must hold base64 text" in content_form.text
