"""The client's card over time: read again after its time to live, read again at once after
a call failed because the agent moved (its card changed mid-flight), and a configured
fallback (a card, or another URL) when the card cannot be fetched. Real servers on loopback.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from peerwire import Agent, Client, Task, TaskState, create_app
from peerwire.errors import A2AConnectionError
from peerwire.server.stores import SQLiteTaskStore
from peerwire.testing import live_server
from peerwire.types import AgentCard

from .conftest import SHUTDOWN_GRACE_S, CardServer, Gates, Recorder, StreamCutter, app_factory

DEAD_URL = "http://127.0.0.1:9"  # the discard port: nothing listens on loopback


@contextlib.asynccontextmanager
async def agent_at(agent: Agent) -> AsyncIterator[tuple[str, AgentCard]]:
    async with (
        live_server(agent, shutdown_grace=SHUTDOWN_GRACE_S) as url,
        Client.connect(url, card_ttl=None) as probe,
    ):
        yield url, probe.card


@contextlib.asynccontextmanager
async def card_host(agent: Agent, card: AgentCard | None = None) -> AsyncIterator[Any]:
    """An agent whose served card can be swapped: ``(url, CardServer, Recorder)``."""
    servers: list[CardServer] = []
    recorders: list[Recorder] = []

    def build(url: str) -> Any:
        app = app_factory(agent)(url)
        servers.append(CardServer(app, card or app.dispatcher.card()))
        recorders.append(Recorder(servers[-1]))
        return recorders[-1]

    async with live_server(build) as url:
        yield url, servers[0], recorders[0]


def moved_to(card: AgentCard, url: str) -> AgentCard:
    """``card`` with its JSON-RPC interface (the first) at ``url``."""
    first, *rest = card.supported_interfaces
    return msgspec.structs.replace(
        card, supported_interfaces=[msgspec.structs.replace(first, url=url), *rest]
    )


async def test_the_card_is_read_again_after_its_ttl(agent: Agent) -> None:
    async with (
        agent_at(agent) as (other_url, other_card),
        card_host(agent) as (url, server, recorder),
        Client.connect(url, card_ttl=0.3) as client,
        Client.connect(other_url) as other,
    ):
        assert client.interface.url.rstrip("/") == url
        first = await client.send("one", skill="echo")
        server.card = other_card  # the agent now lives elsewhere
        await anyio.sleep(0.4)
        second = await client.send("two", skill="echo")
        assert client.interface.url == other_card.supported_interfaces[0].url
        assert isinstance(first, Task) and isinstance(second, Task)
        assert [t.id for t in await other.list_tasks()] == [second.id], "the new address"
        assert len(recorder.card_requests()) == 2


async def test_within_its_ttl_the_card_is_not_read_again(agent: Agent) -> None:
    async with card_host(agent) as (url, _, recorder), Client.connect(url) as client:
        for text in ("one", "two", "three"):
            await client.send(text, skill="echo")
        assert len(recorder.card_requests()) == 1


async def test_a_moved_agent_is_found_again_when_a_call_fails(agent: Agent) -> None:
    """The card changes mid-flight: the old interface stops answering; the next call fails,
    the card is read again at once (no TTL wait) and the call goes to the new address."""
    async with (
        card_host(agent) as (host_url, server, _),
        agent_at(agent) as (new_url, new_card),
    ):
        old_server = agent_at(agent)
        _, old_card = await old_server.__aenter__()
        try:
            server.card = old_card
            async with Client.connect(host_url) as client:
                assert client.interface.url == old_card.supported_interfaces[0].url
                assert isinstance(await client.send("before", skill="echo"), Task)
                server.card = new_card
                stopping, old_server = old_server, None
                await stopping.__aexit__(None, None, None)  # nothing answers there now
                task = await client.send("after", skill="echo")
                assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
                assert client.interface.url == new_card.supported_interfaces[0].url
        finally:
            if old_server is not None:
                await old_server.__aexit__(None, None, None)
        async with Client.connect(new_url) as observer:
            assert [t.id for t in await observer.list_tasks()] == [task.id]


async def test_an_interface_that_is_gone_refreshes_the_card(agent: Agent) -> None:
    """The card names a path with no A2A route (404): the card is read again and the call
    (a read: safe to repeat) goes to the interface it names now."""
    async with card_host(agent) as (url, server, _):
        real = server.card
        server.card = moved_to(real, f"{url}/gone")
        async with Client.connect(url) as client:
            assert client.interface.url.endswith("/gone")
            server.card = real
            tasks = await client.list_tasks()
            assert tasks == []
            assert not client.interface.url.endswith("/gone")


async def test_a_fallback_card_stands_in_for_one_that_cannot_be_fetched(agent: Agent) -> None:
    async with agent_at(agent) as (_, card), Client.connect(DEAD_URL, fallback=card) as client:
        task = await client.send("hi", skill="echo")
        assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED


async def test_a_fallback_url_is_fetched_when_the_card_cannot_be(agent: Agent) -> None:
    async with agent_at(agent) as (url, card), Client.connect(DEAD_URL, fallback=url) as client:
        assert client.card == card
        task = await client.send("hi", skill="echo")
        assert isinstance(task, Task)


async def test_without_a_fallback_an_unreachable_card_fails() -> None:
    with pytest.raises(A2AConnectionError):
        await Client.connect(DEAD_URL)


async def test_a_fallback_that_fails_too_raises_the_cards_own_error() -> None:
    with pytest.raises(A2AConnectionError) as raised:
        await Client.connect(DEAD_URL, fallback="http://127.0.0.1:7")
    assert "127.0.0.1:9" in raised.value.message


async def test_a_stream_whose_agent_moved_is_followed_at_the_new_address(
    agent: Agent, gates: Gates, tmp_path: Path
) -> None:
    """Two replicas share one SQLite file; the card host names the first. Mid-stream the
    card moves to the second and the first's stream drops: the client reads the card again
    before it resubscribes, and gets the task's outcome from the second."""
    path = tmp_path / "tasks.db"
    host: list[CardServer] = []
    moved: list[AgentCard] = []

    async def agent_moves_and_finishes() -> None:
        host[0].card = moved[0]
        gates.release.set()
        gates.finish.set()
        await gates.finished.wait()

    def first(url: str) -> Any:
        app = create_app(
            agent, public_url=url, store=SQLiteTaskStore(path), shutdown_grace=SHUTDOWN_GRACE_S
        )
        return StreamCutter(app, after=2, abrupt=True, before_cut=agent_moves_and_finishes)

    second_agent = Agent("Test Agent", description="The same agent, elsewhere")
    async with (
        live_server(first) as first_url,
        live_server(second_agent, store=SQLiteTaskStore(path)) as second_url,
        Client.connect(first_url, card_ttl=None) as probe_first,
        Client.connect(second_url, card_ttl=None) as probe_second,
        card_host(agent, probe_first.card) as (host_url, server, _),
    ):
        host.append(server)
        moved.append(probe_second.card)
        async with Client.connect(host_url) as client:
            assert client.interface.url == probe_first.card.supported_interfaces[0].url
            events = [event async for event in client.stream("", skill="steps")]
            assert client.interface.url == probe_second.card.supported_interfaces[0].url
    last = events[-1]
    assert isinstance(last, Task) and last.status.state is TaskState.COMPLETED
    assert last.artifacts[0].text == "one two three"
