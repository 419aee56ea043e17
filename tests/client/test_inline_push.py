"""``send``/``stream`` with ``push=``: the webhook is registered with the task itself, so even
a task that finishes at once has every notification delivered (no race with a config
registered afterwards). A real webhook receiver on loopback, on all three bindings."""

from __future__ import annotations

import pytest
from server._webhook import Receiver, receiving

from peerwire import Agent, Client, Task, TaskState
from peerwire.client import PushConfig
from peerwire.server import PushSettings
from peerwire.server.stores import MemoryTaskStore
from peerwire.testing import live_server
from peerwire.types import Binding

from .conftest import SHUTDOWN_GRACE_S

BINDINGS = [Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC]
PUSH = PushSettings(allow=("127.0.0.1",), retry_delay=0.05, poll_interval=0.2)


async def _all_delivered(store: MemoryTaskStore, receiver: Receiver, task_id: str) -> None:
    """Every notification the task queued reached the receiver, once, in order."""

    rows: list[str] = []

    async def check() -> bool:
        rows[:] = [r.id for r in await store.outbox(task_id)]
        return bool(rows)

    assert await check(), "the task queued notifications for its inline config"
    await receiver.until(lambda r: len(r.accepted) >= len(rows))
    assert [n.notification_id for n in receiver.accepted] == rows
    final = receiver.accepted[-1]
    assert final.kind == "statusUpdate"
    assert final.event["status"]["state"] == "TASK_STATE_COMPLETED"
    assert all(n.headers["x-a2a-notification-token"] == "tok" for n in receiver.accepted)


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_short_tasks_notifications_all_arrive(agent: Agent, binding: str) -> None:
    store = MemoryTaskStore()
    async with (
        receiving(Receiver()) as receiver,
        live_server(
            agent, store=store, push=PUSH, grpc_port=0, shutdown_grace=SHUTDOWN_GRACE_S
        ) as url,
        Client.connect(url, bindings=[binding]) as client,
    ):
        hook = PushConfig(url=f"{receiver.url}/hook", token="tok")
        task = await client.send("hello", skill="echo", push=hook)
        assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
        [config] = await client.list_push_configs(task.id)
        assert (config.url, config.token) == (hook.url, "tok")
        await _all_delivered(store, receiver, task.id)


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_streamed_task_registers_its_webhook_too(agent: Agent, binding: str) -> None:
    store = MemoryTaskStore()
    async with (
        receiving(Receiver()) as receiver,
        live_server(
            agent, store=store, push=PUSH, grpc_port=0, shutdown_grace=SHUTDOWN_GRACE_S
        ) as url,
        Client.connect(url, bindings=[binding]) as client,
    ):
        hook = f"{receiver.url}/hook"
        payloads = [p async for p in client.stream("hello", skill="echo", push=hook)]
        assert isinstance(payloads[0], Task)
        [config] = await client.list_push_configs(payloads[0].id)
        assert config.url == hook
        # A bare URL carries no token: the receiver sees none.
        await receiver.until(
            lambda r: any(
                n.kind == "statusUpdate" and n.event["status"]["state"] == "TASK_STATE_COMPLETED"
                for n in r.accepted
            )
        )
        assert all("x-a2a-notification-token" not in n.headers for n in receiver.accepted)
