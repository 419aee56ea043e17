"""The recipes on files and data parts, on calling peerwire from the official a2a-sdk client,
and on building and installing the wheel run as their pages give them (docs/howto/files.md,
docs/howto/a2a-sdk-client.md, docs/howto/wheel.md): each example against a real loopback
server, its printed lines checked against the page, the shell lines through the commands.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import peerwire
from peerwire.testing import live_server

from .test_examples import EXAMPLES, Load, example, printed

__all__ = ["example"]  # the fixture, imported for these tests

DOCS = EXAMPLES.parent
REPO = DOCS.parent
VERSION = peerwire.__version__
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


def sh_blocks(page: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", (DOCS / page).read_text(), re.DOTALL)


def run_block(block: str, *, cwd: Path, path: Path, env: dict[str, str]) -> str:
    """One ``sh`` block of the page, as a reader's shell runs it (stopping at a failure),
    with ``path`` first on PATH: the environment the page's commands speak of."""
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block],
        cwd=cwd,
        env={**env, "PATH": f"{path}{os.pathsep}{env.get('PATH', '')}"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"{block}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    return done.stdout


@pytest.mark.packaging
@pytest.mark.timeout(1200)
def test_building_and_installing_the_wheel(tmp_path: Path) -> None:
    """The page's blocks in order, in a copy of the clone: build, install into a fresh venv,
    gather a wheelhouse, then install from it alone with pip's indexes and config off."""
    repo = tmp_path / "clone"
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, files):
        source = REPO / name.decode()
        if source.is_file():
            (repo / name.decode()).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, repo / name.decode())
    base = getattr(sys, "_base_executable", None) or sys.executable
    # The reader's python3: a venv of the machine's Python (pip installs into it, not into
    # the machine's own).
    tools = tmp_path / "tools"
    subprocess.run([base, "-m", "venv", str(tools)], check=True, timeout=120)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON") and k != "VIRTUAL_ENV"}
    build, install, gather, offline = sh_blocks("howto/wheel.md")
    counted = run_block(build, cwd=repo, path=tools / "bin", env=env)
    assert int(counted.split()[-1]) > 100  # the package's files are in the wheel
    wheels = sorted(p.name for p in (repo / "dist").iterdir())
    assert wheels == [f"peerwire-{VERSION}-py3-none-any.whl", f"peerwire-{VERSION}.tar.gz"]
    said = run_block(install, cwd=repo, path=tools / "bin", env=env)
    assert said.strip().splitlines()[-1] == f"peerwire {VERSION}"
    run_block(gather, cwd=repo, path=tools / "bin", env=env)
    assert any(p.name.startswith("typer-") for p in (repo / "wheelhouse").iterdir())
    # The target machine: a fresh venv, no index, no pip configuration (no find-links).
    target = tmp_path / "target"
    subprocess.run([base, "-m", "venv", str(target)], check=True, timeout=120)
    offline_env = {k: v for k, v in env.items() if not k.startswith("PIP_")}
    offline_env["PIP_CONFIG_FILE"] = os.devnull
    said = run_block(offline, cwd=repo, path=target / "bin", env=offline_env)
    assert said.strip().splitlines()[-1] == f"peerwire {VERSION}"
