"""The operations of the server tests, over each binding with its own client transport.

Every test runs three times, once per binding (``peer``), and asserts the same typed outcome
each time: the same ``peerwire.types`` results, the same ``peerwire.errors`` classes. A refused
request must leave no trace: the stored task is exactly as it was (GetTask), or its context
holds no new task (ListTasks).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import msgspec
import pytest
import pytest_asyncio

from peerwire.errors import (
    InvalidParamsError,
    PushNotificationNotSupportedError,
    ServerBusyError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from peerwire.server.push import PushSettings
from peerwire.types import (
    AgentCard,
    GetExtendedAgentCardRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SendMessageResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)

from .._agents import Controls, workbench
from ._peers import BINDINGS, Peer, connecting, serving

pytestmark = pytest.mark.asyncio(loop_scope="module")

WAIT_S = 30.0


def context(peer: Peer, name: str) -> str:
    """A context id no other test (or binding run) uses."""
    return peer.key(f"{name}-{uuid.uuid4().hex[:8]}")


async def finished(peer: Peer, task_id: str) -> Task:
    """The task once it has settled, followed with SubscribeToTask (no polling)."""
    with anyio.fail_after(WAIT_S):
        try:
            async for _ in peer.client.subscribe(task_id):
                pass
        except UnsupportedOperationError:
            pass  # already terminal: nothing to follow
    return await peer.client.get_task(task_id)


async def send_task(peer: Peer, text: str, **options: Any) -> Task:
    answer = await peer.client.send(text, **options)
    assert isinstance(answer, Task), answer
    return answer


async def in_context(peer: Peer, context_id: str) -> list[Task]:
    return [task async for task in peer.client.list_tasks(context_id=context_id)]


# -- SendMessage ---------------------------------------------------------------------------


async def test_send_message_blocks_until_the_task_completes(peer: Peer) -> None:
    message = Message(
        message_id=f"m-{uuid.uuid4()}",
        role=Role.USER,
        parts=[Part(text="hello")],
        metadata={"skill": "echo"},
    )
    task = await send_task(peer, message)
    assert task.status.state is TaskState.COMPLETED
    assert task.id and task.context_id
    [artifact] = task.artifacts
    assert (artifact.name, artifact.text) == ("result", "hello")
    [sent] = task.history
    assert sent.message_id == message.message_id and sent.text == "hello"
    assert (sent.task_id, sent.context_id) == (task.id, task.context_id)
    assert task.status.timestamp is not None and task.status.timestamp.endswith("Z")


async def test_send_message_blocks_until_the_task_is_interrupted(peer: Peer) -> None:
    task = await send_task(peer, "", skill="ask")
    assert task.status.state is TaskState.INPUT_REQUIRED
    assert task.status.message is not None
    assert task.status.message.text == "first?" and task.status.message.role is Role.AGENT
    await peer.client.cancel_task(task.id)


async def test_send_message_returns_at_auth_required(peer: Peer, controls: Controls) -> None:
    gate = peer.key("auth")
    task = await send_task(peer, gate, skill="auth")
    assert task.status.state is TaskState.AUTH_REQUIRED
    assert task.status.message is not None
    assert task.status.message.text == "sign in at https://example.test/login"
    controls.release(gate)
    done = await finished(peer, task.id)
    assert done.status.state is TaskState.COMPLETED
    assert [a.text for a in done.artifacts] == ["the secret"]


async def test_return_immediately_answers_while_the_handler_works(
    peer: Peer, controls: Controls
) -> None:
    gate = peer.key("immediately")
    task = await send_task(peer, gate, skill="wait", return_immediately=True)
    assert task.status.state in (TaskState.SUBMITTED, TaskState.WORKING)
    await controls.started(gate)
    assert (await peer.client.get_task(task.id)).status.state is TaskState.WORKING
    controls.release(gate)
    done = await finished(peer, task.id)
    assert done.status.state is TaskState.COMPLETED
    assert [a.text for a in done.artifacts] == [f"released {gate}"]


async def test_history_length_trims_the_returned_task(peer: Peer) -> None:
    task = await send_task(peer, "x", skill="echo", history_length=0)
    assert task.history == []
    full = await peer.client.get_task(task.id)
    assert [m.text for m in full.history] == ["x"]
    trimmed = await peer.client.get_task(task.id, history_length=0)
    assert trimmed.history == [] and trimmed.artifacts == full.artifacts
    assert await peer.client.get_task(task.id, history_length=1) == full


async def test_a_message_skill_answers_with_a_message_and_creates_no_task(peer: Peer) -> None:
    context_id = context(peer, "reply")
    reply = await peer.client.send("hi", skill="reply", context_id=context_id)
    assert isinstance(reply, Message)
    assert reply.role is Role.AGENT
    assert reply.text == "re: hi"
    assert reply.context_id == context_id and reply.task_id == ""
    assert await in_context(peer, context_id) == []


async def test_an_unknown_context_id_is_adopted(peer: Peer) -> None:
    context_id = context(peer, "adopted")
    first = await send_task(peer, "x", skill="echo", context_id=context_id)
    again = await send_task(peer, "y", skill="echo", context_id=context_id)
    assert first.context_id == again.context_id == context_id and first.id != again.id


async def test_input_required_is_continued_on_the_same_task(peer: Peer) -> None:
    task = await send_task(peer, "", skill="ask")
    second = await send_task(peer, "a", task_id=task.id)
    assert (second.id, second.context_id) == (task.id, task.context_id)
    assert second.status.state is TaskState.INPUT_REQUIRED
    assert second.status.message is not None and second.status.message.text == "second?"
    done = await send_task(peer, "b", task_id=task.id)
    assert done.status.state is TaskState.COMPLETED
    assert [a.text for a in done.artifacts] == ["a + b"]
    assert all(m.context_id == task.context_id for m in done.history)
    assert [m.text for m in done.history if m.role is Role.USER] == ["", "a", "b"]


async def test_a_handler_failure_fails_the_task(peer: Peer) -> None:
    task = await send_task(peer, "x", skill="boom")
    assert task.status.state is TaskState.FAILED
    assert task.status.message is not None
    assert "the flux capacitor broke (x)" in task.status.message.text
    assert await peer.client.get_task(task.id) == task


# -- refusals of SendMessage ---------------------------------------------------------------


async def test_a_message_to_a_terminal_task_is_refused(peer: Peer) -> None:
    task = await send_task(peer, "done", skill="echo")
    with pytest.raises(UnsupportedOperationError) as refused:
        await peer.client.send("more", task_id=task.id)
    assert task.id in refused.value.message and "terminal" in refused.value.message
    with pytest.raises(UnsupportedOperationError):
        async for _ in peer.client.stream("more", task_id=task.id):
            raise AssertionError("a stream started")
    assert await peer.client.get_task(task.id) == task


async def test_a_message_to_an_unknown_task_is_refused(peer: Peer) -> None:
    context_id = context(peer, "ghost")
    with pytest.raises(TaskNotFoundError) as refused:
        await peer.client.send("x", task_id="no-such-task", context_id=context_id)
    assert refused.value.metadata == {"taskId": "no-such-task"}
    assert await in_context(peer, context_id) == []


async def test_a_task_id_with_another_context_id_is_refused(peer: Peer) -> None:
    task = await send_task(peer, "", skill="ask")
    with pytest.raises(InvalidParamsError) as refused:
        await peer.client.send("a", task_id=task.id, context_id="some-other-context")
    assert "some-other-context" in refused.value.message and task.id in refused.value.message
    assert await peer.client.get_task(task.id) == task
    await peer.client.cancel_task(task.id)


async def test_an_unknown_skill_is_invalid_params(peer: Peer) -> None:
    context_id = context(peer, "juggle")
    with pytest.raises(InvalidParamsError) as refused:
        await peer.client.send("x", skill="juggle", context_id=context_id)
    assert "'juggle'" in refused.value.message and "echo" in refused.value.message
    assert await in_context(peer, context_id) == []


async def test_an_agent_message_is_invalid_params(peer: Peer) -> None:
    context_id = context(peer, "agent-role")
    message = Message(
        message_id=f"m-{uuid.uuid4()}",
        role=Role.AGENT,
        parts=[Part(text="x")],
        context_id=context_id,
        metadata={"skill": "echo"},
    )
    with pytest.raises(InvalidParamsError, match="ROLE_USER"):
        await peer.client.send(message)
    assert await in_context(peer, context_id) == []


async def test_a_negative_history_length_is_invalid_params(peer: Peer) -> None:
    context_id = context(peer, "history")
    with pytest.raises(InvalidParamsError, match="historyLength"):
        await peer.client.send("x", skill="echo", context_id=context_id, history_length=-1)
    assert await in_context(peer, context_id) == []
    task = await send_task(peer, "x", skill="echo")
    with pytest.raises(InvalidParamsError, match="historyLength"):
        await peer.client.get_task(task.id, history_length=-1)


# -- GetTask / ListTasks -------------------------------------------------------------------


async def test_get_task(peer: Peer) -> None:
    task = await send_task(peer, "kept", skill="echo")
    assert await peer.client.get_task(task.id) == task


async def test_get_task_of_an_unknown_id(peer: Peer) -> None:
    with pytest.raises(TaskNotFoundError) as refused:
        await peer.client.get_task("ghost")
    assert "ghost" in refused.value.message and refused.value.metadata == {"taskId": "ghost"}


async def test_list_tasks_filters_and_omits_artifacts(peer: Peer) -> None:
    context_id = context(peer, "list")
    made = [await send_task(peer, f"n{i}", skill="echo", context_id=context_id) for i in range(3)]
    failed = await send_task(peer, "x", skill="boom", context_id=context_id)
    listed = await in_context(peer, context_id)
    assert sorted(t.id for t in listed) == sorted(t.id for t in [*made, failed])
    # Newest status first (A2A spec §3.1.4); artifacts only when asked for.
    stamps = [t.status.timestamp or "" for t in listed]
    assert stamps == sorted(stamps, reverse=True)
    assert all(t.artifacts == [] for t in listed)
    only_failed = [
        t.id async for t in peer.client.list_tasks(context_id=context_id, status=TaskState.FAILED)
    ]
    assert only_failed == [failed.id]
    with_artifacts = [
        t
        async for t in peer.client.list_tasks(
            context_id=context_id, status="TASK_STATE_COMPLETED", include_artifacts=True
        )
    ]
    assert sorted(t.id for t in with_artifacts) == sorted(t.id for t in made)
    assert all(t == made_task for made_task in made for t in with_artifacts if t.id == made_task.id)
    no_history = [t async for t in peer.client.list_tasks(context_id=context_id, history_length=0)]
    assert [t.id for t in no_history] == [t.id for t in listed]
    assert all(t.history == [] for t in no_history)


async def test_list_tasks_pages_through_every_task(peer: Peer) -> None:
    context_id = context(peer, "pages")
    made = [await send_task(peer, f"p{i}", skill="echo", context_id=context_id) for i in range(5)]
    pages: list[ListTasksResponse] = []
    query = ListTasksRequest(context_id=context_id, page_size=2)
    for _ in range(10):
        page = await peer.call("ListTasks", query, ListTasksResponse)
        pages.append(page)
        if not page.next_page_token:
            break
        query = msgspec.structs.replace(query, page_token=page.next_page_token)
    assert [len(p.tasks) for p in pages] == [2, 2, 1]
    assert all((p.page_size, p.total_size) == (2, 5) for p in pages)
    assert [p.next_page_token == "" for p in pages] == [False, False, True]
    paged = [t.id for p in pages for t in p.tasks]
    assert sorted(paged) == sorted(t.id for t in made)
    # The pages follow one another in the order of a single page holding them all.
    whole = await peer.call("ListTasks", ListTasksRequest(context_id=context_id), ListTasksResponse)
    assert paged == [t.id for t in whole.tasks]
    # The client's iterator walks the same pages.
    assert [t.id async for t in peer.client.list_tasks(context_id=context_id, page_size=2)] == (
        paged
    )


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"page_size": 0}, "pageSize"),
        ({"page_size": 101}, "pageSize"),
        ({"history_length": -1}, "historyLength"),
        ({"page_token": "not-a-token"}, "pageToken"),
    ],
)
async def test_list_tasks_refuses_bad_paging(
    peer: Peer, options: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidParamsError) as refused:
        await peer.call("ListTasks", ListTasksRequest(**options), ListTasksResponse)
    assert field in refused.value.message
    assert [v.field for v in refused.value.field_violations] == [field]


# -- CancelTask ----------------------------------------------------------------------------


async def test_cancel_a_working_task(peer: Peer, controls: Controls) -> None:
    gate = peer.key("cancel")
    task = await send_task(peer, gate, skill="wait", return_immediately=True)
    await controls.started(gate)
    canceled = await peer.client.cancel_task(task.id)
    assert canceled.status.state is TaskState.CANCELED
    assert task.id in controls.canceled, "the skill's on_cancel hook ran"
    assert await peer.client.get_task(task.id) == canceled
    # Canceling again is idempotent: the same task comes back (the spec leaves it open).
    assert await peer.client.cancel_task(task.id) == canceled


async def test_cancel_an_interrupted_task(peer: Peer, controls: Controls) -> None:
    task = await send_task(peer, "", skill="ask")
    assert task.status.state is TaskState.INPUT_REQUIRED
    canceled = await peer.client.cancel_task(task.id)
    assert canceled.status.state is TaskState.CANCELED
    assert task.id in controls.canceled
    with pytest.raises(UnsupportedOperationError):
        await peer.client.send("too late", task_id=task.id)


@pytest.mark.parametrize(("skill", "state"), [("echo", "COMPLETED"), ("boom", "FAILED")])
async def test_cancel_of_a_finished_task_is_refused(peer: Peer, skill: str, state: str) -> None:
    task = await send_task(peer, "x", skill=skill)
    assert task.status.state is TaskState(f"TASK_STATE_{state}")
    with pytest.raises(TaskNotCancelableError) as refused:
        await peer.client.cancel_task(task.id)
    assert task.id in refused.value.message and state in refused.value.message
    assert refused.value.metadata == {"taskId": task.id}
    assert await peer.client.get_task(task.id) == task


async def test_cancel_of_an_unknown_task(peer: Peer) -> None:
    with pytest.raises(TaskNotFoundError, match="ghost"):
        await peer.client.cancel_task("ghost")


# -- push configs and the extended card ----------------------------------------------------


async def test_push_config_operations_are_refused_when_not_offered(peer: Peer) -> None:
    assert not peer.client.card.capabilities.push_notifications
    task = await send_task(peer, "x", skill="echo")
    calls: list[Callable[[], Awaitable[Any]]] = [
        lambda: peer.client.create_push_config(task.id, "https://example.test/hook"),
        lambda: peer.client.get_push_config(task.id, "c1"),
        lambda: peer.client.list_push_configs(task.id),
        lambda: peer.client.delete_push_config(task.id, "c1"),
    ]
    for call in calls:
        with pytest.raises(PushNotificationNotSupportedError, match="push notifications"):
            await call()
    assert await peer.client.get_task(task.id) == task


async def test_an_inline_push_config_is_refused_when_not_offered(peer: Peer) -> None:
    context_id = context(peer, "inline-push")
    request = SendMessageRequest(
        message=Message(
            message_id=f"m-{uuid.uuid4()}",
            role=Role.USER,
            parts=[Part(text="x")],
            context_id=context_id,
            metadata={"skill": "echo"},
        ),
        configuration=SendMessageConfiguration(
            task_push_notification_config=TaskPushNotificationConfig(
                url="https://example.test/hook"
            )
        ),
    )
    with pytest.raises(PushNotificationNotSupportedError):
        await peer.call("SendMessage", request, SendMessageResponse)
    assert await in_context(peer, context_id) == []


async def test_the_extended_card_is_not_offered(peer: Peer) -> None:
    with pytest.raises(UnsupportedOperationError, match="extended agent card"):
        await peer.client.get_extended_card()
    with pytest.raises(UnsupportedOperationError):
        await peer.call("GetExtendedAgentCard", GetExtendedAgentCardRequest(), AgentCard)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def pushing(http_server: str) -> AsyncIterator[str]:
    """A server that offers push notifications (webhooks on loopback allowed)."""
    agent, _ = workbench()
    async with serving(agent, push=PushSettings(allow=("127.0.0.1",)), http=http_server) as url:
        yield url


@pytest.mark.parametrize("binding", BINDINGS)
async def test_push_config_operations_when_offered(pushing: str, binding: str) -> None:
    async with connecting(pushing, binding) as peer:
        assert peer.client.card.capabilities.push_notifications
        # A finished task: no event will ever be pushed to the (closed) port below.
        task = await send_task(peer, "x", skill="echo")
        hook = "http://127.0.0.1:9/hook"
        config = await peer.client.create_push_config(task.id, hook, token="tok-1")
        assert config.id and (config.task_id, config.url, config.token) == (task.id, hook, "tok-1")
        assert await peer.client.get_push_config(task.id, config.id) == config
        named = await peer.client.create_push_config(task.id, hook, config_id="mine")
        assert named.id == "mine"
        assert sorted(c.id for c in await peer.client.list_push_configs(task.id)) == sorted(
            [config.id, "mine"]
        )
        await peer.client.delete_push_config(task.id, config.id)
        await peer.client.delete_push_config(task.id, config.id)  # idempotent
        assert await peer.client.list_push_configs(task.id) == [named]
        with pytest.raises(TaskNotFoundError):
            await peer.client.get_push_config(task.id, config.id)
        with pytest.raises(TaskNotFoundError):
            await peer.client.create_push_config("ghost", hook)
        with pytest.raises(InvalidParamsError, match="url"):
            await peer.client.create_push_config(task.id, "ftp://example.test/hook")
        assert await peer.client.list_push_configs(task.id) == [named]
        await peer.client.delete_push_config(task.id, named.id)


# -- the working cap -----------------------------------------------------------------------


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def capped(http_server: str) -> AsyncIterator[tuple[str, Controls]]:
    """A second server that runs at most one task at a time."""
    agent, controls = workbench()
    async with serving(agent, max_working=1, http=http_server) as url:
        yield url, controls


@pytest.mark.parametrize("binding", BINDINGS)
async def test_the_working_cap_answers_server_busy(
    capped: tuple[str, Controls], binding: str
) -> None:
    url, controls = capped
    async with connecting(url, binding) as peer:
        gate = peer.key("cap")
        held = await send_task(peer, gate, skill="wait", return_immediately=True)
        await controls.started(gate)
        context_id = context(peer, "busy")
        with pytest.raises(ServerBusyError, match="limit of 1 working task"):
            await peer.client.send("x", skill="echo", context_id=context_id)
        with pytest.raises(ServerBusyError):
            async for _ in peer.client.stream("x", skill="echo", context_id=context_id):
                raise AssertionError("a stream started")
        assert await in_context(peer, context_id) == []
        controls.release(gate)
        assert (await finished(peer, held.id)).status.state is TaskState.COMPLETED
        # The slot is free again.
        assert (await send_task(peer, "x", skill="echo")).status.state is TaskState.COMPLETED
