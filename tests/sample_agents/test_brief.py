"""The Brief Agent (peerwire.samples.brief) calling a Glossary Agent, both on live servers."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from peerwire import Agent, Client, Task, TaskContext, TaskState, TaskStatusUpdateEvent
from peerwire.cli.serve import load_agent
from peerwire.samples import brief as brief_sample
from peerwire.samples.brief import make_agent, split_terms
from peerwire.samples.glossary import agent as glossary_agent
from peerwire.testing import live_server

TIMEOUT_S = 30.0
BRIEF_SOURCE = Path(brief_sample.__file__)
RECORD = "A record is a final class that is a transparent carrier for its components."
SEALED = "A sealed class restricts which other classes may extend it."


@dataclass
class Gates:
    """How far the test Glossary's handlers got; events live in the test's event loop."""

    expected: int = 0
    arrived: int = 0
    all_arrived: asyncio.Event = field(default_factory=asyncio.Event)
    holding: asyncio.Event = field(default_factory=asyncio.Event)
    hold_canceled: asyncio.Event = field(default_factory=asyncio.Event)


def gated_glossary(gates: Gates) -> Agent:
    """A Glossary Agent whose definitions wait until every expected call has arrived (so
    calls made one after another would never finish), and whose "hold" never finishes."""
    agent = Agent("Glossary Agent", description="Test glossary with gates")

    @agent.router
    def route(message: Any) -> str:
        return "hold" if message.text == "hold" else "define"

    @agent.skill()
    async def define(text: str) -> str:
        gates.arrived += 1
        if gates.arrived >= gates.expected:
            gates.all_arrived.set()
        await gates.all_arrived.wait()
        return f"{text} defined"

    @agent.skill()
    async def hold(ctx: TaskContext) -> None:
        gates.holding.set()
        await anyio.sleep_forever()

    @agent.on_cancel("hold")
    async def released(ctx: TaskContext) -> None:
        gates.hold_canceled.set()

    return agent


@pytest.fixture
async def glossary_url() -> AsyncIterator[str]:
    async with live_server(glossary_agent, shutdown_grace=1.0) as url:
        yield url


async def _brief(url: str, text: str, **options: Any) -> Task:
    async with Client.connect(url, timeout=TIMEOUT_S) as client:
        task = await client.send(text, **options)
    assert isinstance(task, Task)
    return task


def _artifact(task: Task, name: str) -> str:
    return next(a.text for a in task.artifacts if a.name == name)


def _calls(task: Task) -> list[dict[str, Any]]:
    artifact = next(a for a in task.artifacts if a.name == "calls")
    assert artifact.metadata is not None
    return list(artifact.metadata["calls"])


async def test_a_brief_lists_each_definition_and_the_calls_it_made(glossary_url: str) -> None:
    async with live_server(make_agent(glossary_url), shutdown_grace=1.0) as brief_url:
        task = await _brief(brief_url, "record, sealed class")
    assert task.status.state is TaskState.COMPLETED
    assert _artifact(task, "brief") == f"- record: {RECORD}\n- sealed class: {SEALED}"
    assert _artifact(task, "calls").splitlines() == [
        f'SendStreamingMessage "record" -> COMPLETED "{RECORD}"',
        f'SendStreamingMessage "sealed class" -> COMPLETED "{SEALED}"',
    ]
    calls = _calls(task)
    assert [(c["term"], c["state"]) for c in calls] == [
        ("record", "TASK_STATE_COMPLETED"),
        ("sealed class", "TASK_STATE_COMPLETED"),
    ]
    async with Client.connect(glossary_url) as glossary:
        for call in calls:
            made = await glossary.get_task(call["taskId"])
            assert made.history[0].text == call["term"], "one Glossary task per term"


async def test_a_failed_call_fails_the_brief_naming_the_glossary_agent(glossary_url: str) -> None:
    async with live_server(make_agent(glossary_url), shutdown_grace=1.0) as brief_url:
        task = await _brief(brief_url, "record, monad")
    assert task.status.state is TaskState.FAILED
    assert task.status.message is not None
    assert task.status.message.text == (
        "Glossary Agent could not help with \"monad\": I do not know the term 'monad'."
    )
    assert [a.name for a in task.artifacts] == ["calls"], "no brief, but the calls it made"
    assert [(c["term"], c["state"]) for c in _calls(task)] == [
        ("record", "TASK_STATE_COMPLETED"),
        ("monad", "TASK_STATE_FAILED"),
    ]


async def test_the_calls_are_made_concurrently() -> None:
    terms = ["a", "b", "c", "d"]
    gates = Gates(expected=len(terms))
    async with (
        live_server(gated_glossary(gates), shutdown_grace=1.0) as glossary_url,
        live_server(make_agent(glossary_url, timeout=TIMEOUT_S), shutdown_grace=1.0) as url,
    ):
        task = await _brief(url, ", ".join(terms))
    # Each definition waits until all four calls have arrived: one at a time would time out.
    assert task.status.state is TaskState.COMPLETED, task.status
    assert _artifact(task, "brief").splitlines() == [f"- {t}: {t} defined" for t in terms]


async def test_canceling_the_brief_cancels_its_outstanding_calls() -> None:
    gates = Gates()
    async with (
        live_server(gated_glossary(gates), shutdown_grace=1.0) as glossary_url,
        live_server(make_agent(glossary_url), shutdown_grace=1.0) as brief_url,
        Client.connect(brief_url, timeout=TIMEOUT_S) as brief,
        Client.connect(glossary_url, timeout=TIMEOUT_S) as glossary,
    ):
        glossary_task_id = ""
        with anyio.fail_after(TIMEOUT_S):
            async for event in brief.stream("record, hold"):
                if isinstance(event, Task):
                    brief_task_id = event.id
                if isinstance(event, TaskStatusUpdateEvent) and event.status.message:
                    said = event.status.message.text
                    if said.startswith('Asked Glossary Agent about "hold"'):
                        glossary_task_id = said.rsplit(" ", 1)[-1]
                        await gates.holding.wait()
                        canceled = await brief.cancel_task(brief_task_id)
                        assert canceled.status.state is TaskState.CANCELED
        assert glossary_task_id
        # The brief's task ends only after its cleanup: the Glossary task is canceled by now.
        assert gates.hold_canceled.is_set()
        held = await glossary.get_task(glossary_task_id)
        assert held.status.state is TaskState.CANCELED


async def test_a_slow_glossary_runs_out_the_time_and_is_canceled() -> None:
    gates = Gates()
    async with (
        live_server(gated_glossary(gates), shutdown_grace=1.0) as glossary_url,
        live_server(make_agent(glossary_url, timeout=1.0), shutdown_grace=1.0) as brief_url,
    ):
        task = await _brief(brief_url, "hold")
        assert task.status.state is TaskState.FAILED
        assert task.status.message is not None
        assert task.status.message.text == "Glossary Agent did not answer within 1 s"
        [call] = _calls(task)
        assert call["state"] == "TASK_STATE_CANCELED"
        assert gates.hold_canceled.is_set()


async def test_an_unreachable_glossary_fails_the_brief() -> None:
    async with live_server(make_agent("http://127.0.0.1:9", timeout=5), shutdown_grace=1.0) as url:
        task = await _brief(url, "record")
    assert task.status.state is TaskState.FAILED
    assert task.status.message is not None
    assert task.status.message.text.startswith(
        "the Glossary Agent at http://127.0.0.1:9 could not be reached:"
    )


async def test_no_terms_asks_which_then_continues(glossary_url: str) -> None:
    async with live_server(make_agent(glossary_url), shutdown_grace=1.0) as brief_url:
        asked = await _brief(brief_url, " , ")
        assert asked.status.state is TaskState.INPUT_REQUIRED
        assert asked.status.message is not None
        assert asked.status.message.text == "Which terms should I brief?"
        done = await _brief(brief_url, "record", task_id=asked.id)
    assert (done.id, done.status.state) == (asked.id, TaskState.COMPLETED)
    assert _artifact(done, "brief") == f"- record: {RECORD}"


@pytest.mark.parametrize(
    ("text", "terms"),
    [("record, sealed class", ["record", "sealed class"]), (" a ,, b ,", ["a", "b"]), ("", [])],
)
def test_split_terms(text: str, terms: list[str]) -> None:
    assert split_terms(text) == terms


async def test_the_served_agent_asks_the_glossary_named_by_the_environment(
    glossary_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GLOSSARY_URL", glossary_url)
    path = BRIEF_SOURCE
    spec = importlib.util.spec_from_file_location("brief_from_environment", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)  # a fresh copy: the env var is read at import
    async with live_server(module.agent, shutdown_grace=1.0) as brief_url:
        task = await _brief(brief_url, "record")
    assert task.status.state is TaskState.COMPLETED
    assert load_agent("peerwire.samples.brief:agent").name == "Brief Agent"
