"""``peerwire get``, ``list``, ``cancel`` and ``subscribe`` on tasks made with the client."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from peerwire import Client, Task
from peerwire.types import ListTasksResponse, StreamResponse, TaskState, decode

from .conftest import assert_one_error_line, invoke

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def client(glossary_url: str) -> AsyncIterator[Client]:
    async with Client.connect(glossary_url) as client:
        yield client


async def _task(client: Client, text: str, **options: object) -> Task:
    task = await client.send(text, **options)  # type: ignore[arg-type]
    assert isinstance(task, Task)
    return task


async def test_get_shows_state_artifacts_and_history(glossary_url: str, client: Client) -> None:
    task = await _task(client, "record")
    ran = await invoke("get", glossary_url, task.id)
    assert ran.code == 0, ran.err
    assert f"Task {task.id}  completed" in ran.out
    assert "definition: A record is a final class" in ran.out
    assert "user   record" in ran.out


@pytest.mark.parametrize(("text", "code"), [("", 3), ("monad", 4), ("lambda", 0)])
async def test_get_exits_as_the_task_stands(
    glossary_url: str, client: Client, text: str, code: int
) -> None:
    task = await _task(client, text)
    ran = await invoke("get", glossary_url, task.id)
    assert ran.code == code, (ran.out, ran.err)


async def test_get_json_is_the_task_with_history_trimmed(glossary_url: str, client: Client) -> None:
    asked = await _task(client, "")
    await _task(client, "record", task_id=asked.id)
    ran = await invoke("get", glossary_url, asked.id, "--json", "--history", "1")
    assert ran.code == 0, ran.err
    task = decode(ran.out, Task)
    assert task.id == asked.id and task.status.state is TaskState.COMPLETED
    assert [m.text for m in task.history] == ["record"]


async def test_get_of_an_unknown_task_is_one_error_line(glossary_url: str) -> None:
    ran = await invoke("get", glossary_url, "no-such-task", "--binding", "rest")
    assert_one_error_line(ran, "no-such-task", "TaskNotFoundError")


async def test_list_fetches_every_page_of_a_context(glossary_url: str, client: Client) -> None:
    context = f"cli-list-{uuid.uuid4()}"
    made = [await _task(client, term, context_id=context) for term in ("record", "monad", "lambda")]
    ran = await invoke("list", glossary_url, "--context", context, "--page-size", "1", "--json")
    assert ran.code == 0, ran.err
    listed = decode(ran.out, ListTasksResponse)
    assert sorted(t.id for t in listed.tasks) == sorted(t.id for t in made)
    assert (listed.next_page_token, listed.total_size) == ("", 3)

    human = await invoke("list", glossary_url, "--context", context, "--page-size", "2")
    assert human.code == 0, human.err
    assert "3 tasks" in human.out
    for task in made:
        assert task.id in human.out
    assert human.out.count("completed") == 2 and human.out.count("failed") == 1


async def test_list_filters_by_state(glossary_url: str, client: Client) -> None:
    context = f"cli-state-{uuid.uuid4()}"
    await _task(client, "record", context_id=context)
    failed = await _task(client, "monad", context_id=context)
    for spelling in ("failed", "FAILED", "TASK_STATE_FAILED"):
        ran = await invoke(
            "list", glossary_url, "--context", context, "--state", spelling, "--json"
        )
        assert ran.code == 0, ran.err
        assert [t.id for t in decode(ran.out, ListTasksResponse).tasks] == [failed.id]


async def test_list_of_an_unknown_state_is_a_usage_error(glossary_url: str) -> None:
    ran = await invoke("list", glossary_url, "--state", "sleeping")
    assert ran.code == 2
    assert "sleeping" in ran.err


async def test_cancel_a_working_task(glossary_url: str, client: Client) -> None:
    task = await _task(client, "slow", return_immediately=True)
    ran = await invoke("cancel", glossary_url, task.id)
    assert ran.code == 0, ran.err
    assert f"Task {task.id}  canceled" in ran.out
    again = await invoke("cancel", glossary_url, task.id, "--json")
    assert again.code == 0, "canceling a canceled task is idempotent"
    assert decode(again.out, Task).status.state is TaskState.CANCELED


async def test_cancel_a_finished_task_is_one_error_line(glossary_url: str, client: Client) -> None:
    task = await _task(client, "record")
    ran = await invoke("cancel", glossary_url, task.id)
    assert_one_error_line(ran, task.id, "TaskNotCancelableError")


async def test_subscribe_to_a_question_exits_3(glossary_url: str, client: Client) -> None:
    asked = await _task(client, "")
    ran = await invoke("subscribe", glossary_url, asked.id)
    assert ran.code == 3, ran.err
    assert "input-required" in ran.out and "Which term should I define?" in ran.out
    as_json = await invoke("subscribe", glossary_url, asked.id, "--json")
    assert as_json.code == 3, as_json.err
    first = decode(as_json.out.splitlines()[0], StreamResponse)
    assert first.task is not None and first.task.id == asked.id


async def test_subscribe_to_a_finished_task_points_to_get(
    glossary_url: str, client: Client
) -> None:
    task = await _task(client, "record")
    ran = await invoke("subscribe", glossary_url, task.id)
    assert_one_error_line(
        ran, "UnsupportedOperationError", f"peerwire get {glossary_url} {task.id}"
    )
