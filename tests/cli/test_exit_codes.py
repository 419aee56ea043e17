"""The exit codes: one table in the code, the same in README and ``--help``, and each code
reached the way the table says (0, 3 and 4 by sends in test_send.py, 1 by the error tests)."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
import pytest_asyncio
from anyio.streams.text import TextReceiveStream

from peerwire import Agent, Client, Task, TaskContext
from peerwire.cli._exits import EXIT_CODES, exit_code, exit_codes_markdown
from peerwire.testing import live_server
from peerwire.types import SendMessageResponse, TaskState, decode

from .conftest import SHUTDOWN_GRACE_S, invoke

pytestmark = pytest.mark.asyncio(loop_scope="module")

REPO = Path(__file__).resolve().parents[2]
PEERWIRE = str(Path(sys.executable).with_name("peerwire"))
SUBPROCESS_TIMEOUT_S = 60
# Runs a command with Ctrl-C's default behaviour, whatever this process inherited: a shell
# starts a background job (a CI run, say) with SIGINT ignored, and an ignored signal stays
# ignored across exec, so the command would never hear the test's Ctrl-C.
WITH_DEFAULT_SIGINT = [
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.argv[1], sys.argv[1:])",
]


# Works until it is canceled: a task still running however long a loaded machine takes to
# start the command that follows it (the glossary's "slow" ends after 5 s).
waiting_agent = Agent("Waiting Agent")


@waiting_agent.skill("wait")
async def wait_until_canceled(ctx: TaskContext) -> None:
    await ctx.update("waiting")
    await asyncio.Event().wait()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def waiting_url() -> AsyncIterator[str]:
    async with live_server(waiting_agent, shutdown_grace=SHUTDOWN_GRACE_S) as url:
        yield url


def flat(text: str) -> str:
    return " ".join(text.split())


async def test_readme_shows_the_table_of_the_code() -> None:
    assert exit_codes_markdown() in (REPO / "README.md").read_text()


@pytest.mark.parametrize("command", [(), ("send",), ("get",), ("subscribe",), ("cancel",)])
async def test_help_shows_the_same_table(command: tuple[str, ...]) -> None:
    ran = await invoke(*command, "--help", env={"COLUMNS": "200"})
    assert ran.code == 0, ran.err
    shown = flat(ran.out)
    for row in EXIT_CODES:
        assert flat(f"{row.code} {row.meaning}") in shown, row


async def test_every_state_has_its_code() -> None:
    table = {row.code: row.states for row in EXIT_CODES}
    covered = set().union(*table.values())
    assert covered == set(TaskState) - {TaskState.UNSPECIFIED}
    assert {s: exit_code(s) for s in (TaskState.WORKING, TaskState.AUTH_REQUIRED)} == {
        TaskState.WORKING: 5,
        TaskState.AUTH_REQUIRED: 3,
    }
    assert exit_code(TaskState.UNSPECIFIED) == 1


async def test_no_wait_prints_the_task_at_once_and_exits_5(glossary_url: str) -> None:
    ran = await invoke("send", glossary_url, "slow", "--no-wait")
    assert ran.code == 5, ran.err
    task_id = ran.out.split()[1]  # "Task <id>  submitted"
    assert ran.out.split()[2] in ("submitted", "working")
    assert f"follow with: peerwire subscribe {glossary_url} {task_id}" in ran.out
    as_json = await invoke("send", glossary_url, "slow", "--no-wait", "--json")
    assert as_json.code == 5, as_json.err
    task = decode(as_json.out, SendMessageResponse).task
    assert task is not None and task.status.state in (TaskState.SUBMITTED, TaskState.WORKING)


async def test_get_of_a_running_task_exits_5(glossary_url: str) -> None:
    async with Client.connect(glossary_url) as client:
        task = await client.send("slow", return_immediately=True)
    assert isinstance(task, Task)
    ran = await invoke("get", glossary_url, task.id)
    assert ran.code == 5, ran.err
    assert f"follow with: peerwire subscribe {glossary_url} {task.id}" in ran.out


async def test_no_wait_and_stream_together_are_a_usage_error(glossary_url: str) -> None:
    ran = await invoke("send", glossary_url, "slow", "--no-wait", "--stream")
    assert ran.code == 2
    assert "--no-wait" in ran.err


async def test_ctrl_c_exits_130(waiting_url: str) -> None:
    async with Client.connect(waiting_url) as client:
        task = await client.send("wait", return_immediately=True)
        assert isinstance(task, Task)
        with anyio.fail_after(SUBPROCESS_TIMEOUT_S):
            async with await anyio.open_process(
                [*WITH_DEFAULT_SIGINT, PEERWIRE, "subscribe", waiting_url, task.id], cwd=REPO
            ) as process:
                assert process.stdout is not None and process.stderr is not None
                seen = ""
                async for text in TextReceiveStream(process.stdout):
                    seen += text
                    if f"Task {task.id}" in seen:
                        break  # subscribed: interrupt it as a user would
                process.send_signal(signal.SIGINT)
                errors = "".join([text async for text in TextReceiveStream(process.stderr)])
                code = await process.wait()
        await client.cancel_task(task.id)
    assert code == 130, (seen, errors)
    assert errors.strip() == "error: interrupted"
