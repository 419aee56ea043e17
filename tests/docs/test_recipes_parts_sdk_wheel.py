"""The recipes on files and data parts, on calling peerwire from the official a2a-sdk client,
and on building and installing the wheel run as their pages give them (docs/howto/files.md,
docs/howto/a2a-sdk-client.md, docs/howto/wheel.md): each example against a real loopback
server, its printed lines checked against the page, the shell lines through the commands.
"""

from __future__ import annotations

import asyncio
import re
import shlex
import sys
from pathlib import Path

import pytest

from peerwire.testing import live_server

from .test_examples import EXAMPLES, Load, example, printed

__all__ = ["example"]  # the fixture, imported for these tests

DOCS = EXAMPLES.parent
PEERWIRE = Path(sys.executable).with_name("peerwire")


def page_block(page: str, after: str, language: str = "text") -> list[str]:
    """The lines of the first ``language`` code block after the line ``after`` on a page."""
    text = (DOCS / page).read_text()
    start = text.index(after)
    found = re.search(rf"```{language}\n(.*?)```", text[start:], re.DOTALL)
    assert found is not None, f"no {language} block after {after!r} in {page}"
    return found.group(1).splitlines()


def shell_line(page: str, starts: str) -> list[str]:
    """The words of the page's inline command (in backticks) that starts with ``starts``."""
    text = " ".join((DOCS / page).read_text().split())
    found = re.search(rf"`({re.escape(starts)}[^`]*)`", text)
    assert found is not None, f"no `{starts}...` on {page}"
    return shlex.split(found.group(1))


async def command(*words: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        *words, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    output, _ = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, output.decode()


async def test_files_and_data_parts(example: Load, capsys: pytest.CaptureFixture[str]) -> None:
    from peerwire import Client

    module = example("files_example")
    async with live_server(module.agent) as url:
        await module.main(url)
        async with Client.connect(url) as client:
            listed = await client.list_tasks()
        # The page's shell line as written, on the sales.csv main() wrote in this folder.
        words = shell_line("howto/files.md", "peerwire send URL")
        code, said = await command(str(PEERWIRE), *[url if w == "URL" else w for w in words[1:]])
    assert len(listed) == 1  # the refused message made no task
    assert printed(capsys) == page_block("howto/files.md", "It prints:")
    assert code == 0, said
    assert "totals: [totals.csv: text/csv, 36 bytes]" in said
    assert 'summary: {"currency":"EUR","rows":3,"regions":2}' in said


@pytest.mark.interop
async def test_the_official_sdk_client_calls_a_peerwire_agent() -> None:
    """The example runs in the a2a-sdk's own venv (tests/interop/sdk_env.py), never in this
    process, against the Glossary sample on all three bindings."""
    from interop.sdk_env import sdk_python

    from peerwire.samples.glossary import agent

    python = await asyncio.to_thread(sdk_python)  # built on first use
    async with live_server(agent, grpc_port=0) as url:
        code, said = await command(str(python), str(EXAMPLES / "sdk_client_example.py"), url)
    assert code == 0, said
    assert said.splitlines() == page_block("howto/a2a-sdk-client.md", "It prints:")
    setup = page_block("howto/a2a-sdk-client.md", "## Two environments", "sh")
    assert setup[-1].split()[1:3] == ["sdk_client_example.py", "http://127.0.0.1:8000"]
