"""``peerwire send``: one message, blocking or streamed, over each binding of the card."""

from __future__ import annotations

from pathlib import Path

import pytest

from peerwire.cli._options import BindingName
from peerwire.cli._session import connect
from peerwire.types import SendMessageResponse, StreamResponse, TaskState, decode

from .conftest import CLI_TIMEOUT, assert_one_error_line, invoke

pytestmark = pytest.mark.asyncio(loop_scope="module")

RECORD = "A record is a final class that is a transparent carrier for its components."
CHUNKS = ["A record is a final class that is a transparent", " carrier for its components."]
QUESTION = "Which term should I define?"


async def test_a_completed_task_exits_0_and_shows_its_artifact(glossary_url: str) -> None:
    ran = await invoke("send", glossary_url, "record", "--timeout", CLI_TIMEOUT)
    assert ran.code == 0, ran.err
    assert "completed" in ran.out
    assert f"definition: {RECORD}" in ran.out
    assert ran.err == ""


async def test_json_is_the_send_message_response_not_the_envelope(glossary_url: str) -> None:
    ran = await invoke("send", glossary_url, "sealed class", "--json")
    assert ran.code == 0, ran.err
    assert '"jsonrpc"' not in ran.out
    response = decode(ran.out, SendMessageResponse)
    assert response.task is not None
    assert response.task.status.state is TaskState.COMPLETED
    assert response.task.artifacts[0].text.startswith("A sealed class restricts")


async def test_a_question_exits_3_and_the_answer_continues_the_same_task(
    glossary_url: str,
) -> None:
    asked = await invoke("send", glossary_url, "")
    assert asked.code == 3, asked.err
    assert "input-required" in asked.out
    assert f"question: {QUESTION}" in asked.out
    task_id = asked.out.split()[1]  # "Task <id>  input-required"
    assert f"--task {task_id}" in asked.out, "says how to answer"

    answered = await invoke("send", glossary_url, "sealed class", "--task", task_id, "--json")
    assert answered.code == 0, answered.err
    task = decode(answered.out, SendMessageResponse).task
    assert task is not None and task.id == task_id
    assert task.status.state is TaskState.COMPLETED


async def test_a_failed_task_exits_4_with_its_reason(glossary_url: str) -> None:
    ran = await invoke("send", glossary_url, "monad")
    assert ran.code == 4, ran.err
    assert "failed" in ran.out
    assert "reason: I do not know the term 'monad'." in ran.out


async def test_stream_shows_each_state_and_both_chunks_in_order(glossary_url: str) -> None:
    ran = await invoke("send", glossary_url, "record", "--stream")
    assert ran.code == 0, ran.err
    expected = ["submitted", "working", f'"{CHUNKS[0]}"', f'"{CHUNKS[1]}"', "completed", RECORD]
    positions = [ran.out.find(piece) for piece in expected]
    assert -1 not in positions, ran.out
    assert positions == sorted(positions), ran.out
    assert "append, last chunk" in ran.out


async def test_stream_json_is_one_stream_response_a_line(glossary_url: str) -> None:
    ran = await invoke("send", glossary_url, "record", "--stream", "--json")
    assert ran.code == 0, ran.err
    events = [decode(line, StreamResponse) for line in ran.out.splitlines()]
    kinds = [type(event.payload).__name__ for event in events]
    assert kinds == [
        "Task",
        "TaskStatusUpdateEvent",
        "TaskArtifactUpdateEvent",
        "TaskArtifactUpdateEvent",
        "TaskStatusUpdateEvent",
    ]
    assert [e.artifact_update.artifact.text for e in events if e.artifact_update] == CHUNKS
    last = events[-1].status_update
    assert last is not None and last.status.state is TaskState.COMPLETED


async def test_stream_of_a_question_exits_3(glossary_url: str) -> None:
    ran = await invoke("send", glossary_url, "", "--stream")
    assert ran.code == 3, ran.err
    assert QUESTION in ran.out


async def test_stream_of_a_failure_exits_4(glossary_url: str) -> None:
    ran = await invoke("send", glossary_url, "monad", "--stream", "--json")
    assert ran.code == 4, ran.err
    last = decode(ran.out.splitlines()[-1], StreamResponse).status_update
    assert last is not None and last.status.state is TaskState.FAILED


@pytest.mark.parametrize(
    ("name", "binding"), [("jsonrpc", "JSONRPC"), ("rest", "HTTP+JSON"), ("grpc", "GRPC")]
)
async def test_each_binding_of_the_card(glossary_url: str, name: str, binding: str) -> None:
    async with connect(glossary_url, BindingName(name), 30.0) as client:
        assert client.interface.protocol_binding == binding
    ran = await invoke("send", glossary_url, "record", "--binding", name)
    assert ran.code == 0, ran.err
    assert RECORD in ran.out
    streamed = await invoke("send", glossary_url, "record", "--stream", "--binding", name)
    assert streamed.code == 0, streamed.err
    assert "submitted" in streamed.out and "completed" in streamed.out


async def test_a_binding_the_card_lacks_is_an_error(parts_url: str) -> None:
    ran = await invoke("send", parts_url, "hello", "--binding", "grpc")
    assert_one_error_line(ran, "offers no GRPC interface", "JSONRPC, HTTP+JSON")


async def test_an_unknown_binding_is_a_usage_error(glossary_url: str) -> None:
    ran = await invoke("send", glossary_url, "record", "--binding", "carrier-pigeon")
    assert ran.code == 2


async def test_a_message_reply_exits_0(parts_url: str, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    ran = await invoke(
        "send",
        parts_url,
        "look",
        "--data",
        '{"n": 1}',
        "--file",
        str(notes),
        "--skill",
        "describe",
    )
    assert ran.code == 0, ran.err
    assert "agent: text=look; data={'n': 1}; file=notes.txt|text/plain|5; skill=describe" in ran.out


async def test_a_message_reply_as_json(parts_url: str) -> None:
    ran = await invoke("send", parts_url, "hi", "--json")
    assert ran.code == 0, ran.err
    response = decode(ran.out, SendMessageResponse)
    assert response.message is not None
    assert response.message.text == "text=hi; skill="


async def test_stream_to_an_agent_that_does_not_stream_is_an_error(parts_url: str) -> None:
    ran = await invoke("send", parts_url, "hi", "--stream")
    assert_one_error_line(ran, "Parts Agent does not stream")


async def test_bad_data_is_a_usage_error(glossary_url: str) -> None:
    ran = await invoke("send", glossary_url, "record", "--data", "{not json")
    assert ran.code == 2
    assert "--data" in ran.err


async def test_a_missing_file_is_a_usage_error(glossary_url: str, tmp_path: Path) -> None:
    ran = await invoke("send", glossary_url, "record", "--file", str(tmp_path / "absent.txt"))
    assert ran.code == 2


async def test_continuing_an_unknown_task_is_one_error_line(glossary_url: str) -> None:
    ran = await invoke("send", glossary_url, "record", "--task", "no-such-task")
    assert_one_error_line(ran, "no-such-task", "TaskNotFoundError")


async def test_an_unreachable_agent_is_one_error_line() -> None:
    ran = await invoke("send", "http://127.0.0.1:9", "record", "--stream", "--timeout", "5")
    assert_one_error_line(ran, "http://127.0.0.1:9")
