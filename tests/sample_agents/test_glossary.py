"""The Glossary Agent sample (peerwire.samples.glossary) over a live server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from server._rpc import Rpc, serving, state_of, status_text, user_message

from peerwire.samples.glossary import agent

pytestmark = pytest.mark.asyncio(loop_scope="module")

CHUNKS = ["A record is a final class that is a transparent", " carrier for its components."]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def rpc() -> AsyncIterator[Rpc]:
    async with serving(agent) as rpc:
        yield rpc


async def test_record_completes_with_one_artifact_streamed_in_two_chunks(rpc: Rpc) -> None:
    async with rpc.send_stream("record") as stream:
        events = [await stream.next(), *await stream.rest()]
    chunks = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    assert [c["artifact"]["parts"] for c in chunks] == [[{"text": c}] for c in CHUNKS]
    assert [(c.get("append", False), c.get("lastChunk", False)) for c in chunks] == [
        (False, False),
        (True, True),
    ]
    task = await rpc.get(events[0]["task"]["id"])
    assert state_of(task) == "TASK_STATE_COMPLETED"
    assert task["artifacts"] == [
        {"artifactId": "definition", "name": "definition", "parts": [{"text": c} for c in CHUNKS]}
    ]


@pytest.mark.parametrize("term", ["sealed class", "Sealed Class", "  sealed class  "])
async def test_sealed_class(rpc: Rpc, term: str) -> None:
    task = await rpc.send(term)
    assert state_of(task) == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [
        {"text": "A sealed class restricts which other classes may extend it."}
    ]


@pytest.mark.parametrize("term", ["interface", "lambda", "generic", "stream", "optional"])
async def test_more_java_terms(rpc: Rpc, term: str) -> None:
    task = await rpc.send(term)
    assert state_of(task) == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["artifactId"] == "definition"


async def test_an_unknown_term_fails(rpc: Rpc) -> None:
    task = await rpc.send("monad")
    assert state_of(task) == "TASK_STATE_FAILED"
    assert status_text(task) == "I do not know the term 'monad'."


async def test_an_empty_message_asks_and_the_answer_completes_the_task(rpc: Rpc) -> None:
    asked = await rpc.send("")
    assert state_of(asked) == "TASK_STATE_INPUT_REQUIRED"
    assert status_text(asked) == "Which term should I define?"
    again = await rpc.send(user_message("  ", taskId=asked["id"]))
    assert state_of(again) == "TASK_STATE_INPUT_REQUIRED", "a blank answer is asked again"
    done = await rpc.send(user_message("sealed class", taskId=asked["id"]))
    assert (done["id"], state_of(done)) == (asked["id"], "TASK_STATE_COMPLETED")


async def test_slow_reports_progress_and_can_be_canceled(rpc: Rpc) -> None:
    for message in (user_message("slow"), user_message("x", metadata={"skill": "slow"})):
        task = await rpc.send(message, returnImmediately=True)
        async with rpc.subscribe(task["id"]) as stream:
            await stream.next()
            update = (await stream.next())["statusUpdate"]
            assert state_of(update) == "TASK_STATE_WORKING"
            assert status_text(update) == "thinking (1/10)"
            canceled = await rpc.result("CancelTask", {"id": task["id"]})
            events = await stream.rest()
        assert state_of(canceled) == "TASK_STATE_CANCELED"
        assert state_of(events[-1]["statusUpdate"]) == "TASK_STATE_CANCELED"


async def test_the_card(rpc: Rpc) -> None:
    card = (await rpc.http.get(rpc.url + "/.well-known/agent-card.json")).json()
    assert card["name"] == "Glossary Agent"
    skills = {s["id"]: s for s in card["skills"]}
    assert set(skills) == {"define", "slow"}
    assert skills["slow"]["tags"] == ["wait", "cancel"] and skills["slow"]["examples"] == ["slow"]
    assert card["defaultInputModes"] == ["text/plain"]
