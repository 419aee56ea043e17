"""State names: read in every spelling wherever a state is taken, printed hyphenated."""

from __future__ import annotations

import uuid

import pytest

from peerwire import Client, Task
from peerwire.cli._states import STATE_NAMES, parse_state, state_name
from peerwire.types import ListTasksResponse, TaskState, decode

from .conftest import invoke

pytestmark = pytest.mark.asyncio(loop_scope="module")

REAL_STATES = [s for s in TaskState if s is not TaskState.UNSPECIFIED]


@pytest.mark.parametrize("state", REAL_STATES, ids=lambda s: s.value)
async def test_every_spelling_of_every_state(state: TaskState) -> None:
    wire = state.value  # TASK_STATE_INPUT_REQUIRED
    bare = wire.removeprefix("TASK_STATE_")  # INPUT_REQUIRED
    spellings = {
        state_name(state),
        bare,
        bare.lower(),
        bare.lower().replace("_", "-"),
        bare.title().replace("_", "-"),
        wire,
        wire.lower(),
        wire.lower().replace("_", "-"),
        f"  {bare.lower()} ",
    }
    for spelling in spellings:
        assert parse_state(spelling) is state, spelling


async def test_printed_names_are_lowercase_and_hyphenated() -> None:
    assert state_name(TaskState.INPUT_REQUIRED) == "input-required"
    assert state_name(TaskState.AUTH_REQUIRED) == "auth-required"
    assert set(STATE_NAMES) == {state_name(s) for s in REAL_STATES}
    assert all(name == name.lower() and "_" not in name for name in STATE_NAMES)


@pytest.mark.parametrize(
    "name", ["", "unspecified", "TASK_STATE_UNSPECIFIED", "input required", "inputrequired"]
)
async def test_names_of_no_state(name: str) -> None:
    assert parse_state(name) is None


async def test_list_takes_each_spelling_and_prints_hyphenated(glossary_url: str) -> None:
    context = f"cli-states-{uuid.uuid4()}"
    async with Client.connect(glossary_url) as client:
        asked = await client.send("", context_id=context)
        await client.send("record", context_id=context)
    assert isinstance(asked, Task)
    for spelling in (
        "input-required",
        "input_required",
        "INPUT_REQUIRED",
        "TASK_STATE_INPUT_REQUIRED",
    ):
        ran = await invoke(
            "list", glossary_url, "--context", context, "--state", spelling, "--json"
        )
        assert ran.code == 0, (spelling, ran.err)
        assert [t.id for t in decode(ran.out, ListTasksResponse).tasks] == [asked.id], spelling
    human = await invoke("list", glossary_url, "--context", context)
    assert f"{asked.id}  input-required " in human.out
    assert "INPUT_REQUIRED" not in human.out and "COMPLETED" not in human.out
    got = await invoke("get", glossary_url, asked.id)
    assert f"Task {asked.id}  input-required" in got.out


async def test_a_stream_prints_hyphenated_names(glossary_url: str) -> None:
    ran = await invoke("send", glossary_url, "", "--stream")
    assert ran.code == 3, ran.err
    assert "  input-required  question: Which term should I define?" in ran.out
    assert "INPUT_REQUIRED" not in ran.out


async def test_an_unknown_state_lists_the_names(glossary_url: str) -> None:
    ran = await invoke("list", glossary_url, "--state", "sleeping")
    assert ran.code == 2
    shown = " ".join(ran.err.replace("│", " ").split())
    assert "unknown state 'sleeping'" in shown and "input-required" in shown
