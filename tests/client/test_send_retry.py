"""A send whose answer was lost on the way back is sent again with the same messageId, but
only to an agent whose card says it deduplicates messages: the peer ends with one task."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest

from peerwire import Agent, Client, Task, TaskState, create_app
from peerwire.errors import A2AConnectionError
from peerwire.testing import live_server

from ._dropping_proxy import dropping_proxy
from .conftest import SHUTDOWN_GRACE_S


def behind(agent: Agent, public_url: str, **options: Any) -> Callable[[str], Any]:
    """The agent's app, its card naming ``public_url`` (the proxy) as its address."""
    return lambda _: create_app(
        agent, public_url=public_url, shutdown_grace=SHUTDOWN_GRACE_S, **options
    )


async def test_a_lost_answer_is_sent_again_and_makes_one_task(agent: Agent) -> None:
    async with (
        dropping_proxy(b'"SendMessage"') as proxy,
        live_server(behind(agent, proxy.url)) as url,
    ):
        parts = urlsplit(url)
        proxy.upstream = (parts.hostname or "", parts.port or 0)
        async with Client.connect(proxy.url) as client:  # once the proxy knows its upstream
            assert client.deduplicates
            task = await client.send("hello", skill="echo")
            assert proxy.dropped == 1, "the first answer was lost"
            assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
            tasks = await client.list_tasks()
            assert [t.id for t in tasks] == [task.id], "one task at the peer"


async def test_without_the_extension_a_lost_answer_is_not_sent_again(agent: Agent) -> None:
    async with (
        dropping_proxy(b'"SendMessage"') as proxy,
        live_server(behind(agent, proxy.url, message_retention=None)) as url,
    ):
        parts = urlsplit(url)
        proxy.upstream = (parts.hostname or "", parts.port or 0)
        async with Client.connect(proxy.url) as client:  # once the proxy knows its upstream
            assert not client.deduplicates
            with pytest.raises(A2AConnectionError):
                await client.send("hello", skill="echo")
            assert proxy.dropped == 1
            tasks = await client.list_tasks()
            assert len(tasks) == 1, "the one send made its task; nothing sent it twice"
