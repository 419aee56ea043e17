"""``peerwire subscribe`` as a real subprocess, following a task until it is canceled.

A subprocess because the test must see the command's output while it runs: once it has
printed the task, its subscription is open, and only then is the task canceled.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
from pathlib import Path

import anyio
from anyio.streams.text import TextReceiveStream

from peerwire import Agent, Client, Task, TaskContext
from peerwire.testing import live_server

REPO = Path(__file__).resolve().parents[2]
PEERWIRE = str(Path(sys.executable).with_name("peerwire"))
TIMEOUT_S = 60

# Thinks until canceled: however late the subscriber's process starts on a loaded machine,
# the task is still working when it does (a task of fixed length could finish first).
agent = Agent("Thinker", default_input_modes=["text/plain"], default_output_modes=["text/plain"])


@agent.skill(description="Thinks until canceled, reporting progress")
async def slow(ctx: TaskContext) -> None:
    for step in itertools.count(1):
        await asyncio.sleep(0.5)
        await ctx.update(f"thinking ({step})")


async def test_subscribe_follows_a_task_to_canceled_and_exits_4() -> None:
    async with live_server(agent, shutdown_grace=1.0) as url, Client.connect(url) as client:
        task = await client.send("slow", return_immediately=True)
        assert isinstance(task, Task)
        with anyio.fail_after(TIMEOUT_S):
            async with await anyio.open_process(
                [PEERWIRE, "subscribe", url, task.id], cwd=REPO
            ) as process:
                assert process.stdout is not None and process.stderr is not None
                seen = ""
                async for text in TextReceiveStream(process.stdout):
                    seen += text
                    # Any progress line will do: on a loaded machine the subscriber may start
                    # after the first update, and its snapshot then shows a later one.
                    if "thinking (" in seen and "cancel sent" not in seen:
                        canceled = await client.cancel_task(task.id)
                        seen += "cancel sent"
                        assert canceled.status.state.value == "TASK_STATE_CANCELED"
                errors = "".join([text async for text in TextReceiveStream(process.stderr)])
                code = await process.wait()
    assert code == 4, (seen, errors)
    assert errors == ""
    assert f"Task {task.id}" in seen
    assert seen.index("thinking (") < seen.rindex("canceled")
