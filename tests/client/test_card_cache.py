"""Agent-card caching (A2A spec §8.6): freshness, ETag revalidation, 304, no-store."""

from __future__ import annotations

from typing import Any

import httpx
import msgspec
import pytest

from peerwire import Agent, Client
from peerwire.client import CardCache
from peerwire.client._inprocess import StreamingASGITransport
from peerwire.errors import InvalidAgentCardError
from peerwire.server.card import CARD_PATH
from peerwire.types import AgentInterface, encode

from .conftest import CardServer, Recorder, app_factory, serve


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def recorded(agent: Agent, **card_server: Any) -> tuple[list[Recorder], Any]:
    """An app factory whose apps record requests; with ``card_server``, a CardServer inside."""
    recorders: list[Recorder] = []

    def build(url: str) -> Any:
        app = app_factory(agent, card_max_age=60)(url)
        if card_server:
            app = CardServer(app, app.dispatcher.card(), **card_server)
        recorders.append(Recorder(app))
        return recorders[-1]

    return recorders, build


async def test_a_fresh_card_is_not_fetched_again(agent: Agent) -> None:
    recorders, build = recorded(agent)
    cache = CardCache()
    async with serve(build) as url:
        for _ in range(3):
            async with Client.connect(url, card_cache=cache) as client:
                assert client.card.name == "Test Agent"
    [recorder] = recorders
    assert [s.status for s in recorder.card_requests()] == [200]


async def test_expired_card_is_revalidated_with_its_etag(agent: Agent) -> None:
    recorders, build = recorded(agent)
    clock = Clock()
    cache = CardCache(clock=clock)
    async with serve(build) as url:
        first = await Client.connect(url, card_cache=cache)
        await first.aclose()
        clock.now += 59
        async with Client.connect(url, card_cache=cache):
            pass
        clock.now += 2  # past max-age=60
        second = await Client.connect(url, card_cache=cache)
        await second.aclose()
        assert second.card is first.card, "304 keeps the cached card"
        async with Client.connect(url, card_cache=cache):
            pass  # fresh again for another max-age
    [recorder] = recorders
    requests = recorder.card_requests()
    assert [s.status for s in requests] == [200, 304]
    assert "if-none-match" not in requests[0].headers
    assert requests[1].headers["if-none-match"].startswith('"')


async def test_a_changed_card_replaces_the_cached_one(agent: Agent) -> None:
    recorders, build = recorded(agent, cache_control="max-age=30")
    clock = Clock()
    cache = CardCache(clock=clock)
    async with serve(build) as url:
        async with Client.connect(url, card_cache=cache) as client:
            assert client.card.version == "1.0.0"
        card_server = recorders[0].inner
        card_server.card = msgspec.structs.replace(card_server.card, version="2.0.0")
        clock.now += 31
        async with Client.connect(url, card_cache=cache) as client:
            assert client.card.version == "2.0.0"
    assert [s.status for s in recorders[0].card_requests()] == [200, 200]


@pytest.mark.parametrize("cache_control", ["no-store", "no-cache", "max-age=0"])
async def test_cards_that_must_not_be_reused(agent: Agent, cache_control: str) -> None:
    recorders, build = recorded(agent, cache_control=cache_control)
    cache = CardCache()
    async with serve(build) as url:
        for _ in range(2):
            async with Client.connect(url, card_cache=cache):
                pass
    statuses = [s.status for s in recorders[0].card_requests()]
    assert statuses == ([200, 200] if cache_control == "no-store" else [200, 304])
    assert len(cache) == (0 if cache_control == "no-store" else 1)


class StaticCard:
    """An ASGI app answering every request with one card and fixed headers; counts requests."""

    def __init__(self, agent: Agent, headers: dict[str, str]) -> None:
        self.body = encode(_card_of(agent))
        self.headers = [(k.encode(), v.encode()) for k, v in headers.items()]
        self.served = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.served += 1
        await send({"type": "http.response.start", "status": 200, "headers": self.headers})
        await send({"type": "http.response.body", "body": self.body})


async def fetch(cache: CardCache, app: StaticCard) -> None:
    async with httpx.AsyncClient(transport=StreamingASGITransport(app)) as http:
        await cache.fetch(http, "http://agent" + CARD_PATH)


async def test_age_counts_against_max_age(agent: Agent) -> None:
    clock = Clock()
    cache = CardCache(clock=clock)
    app = StaticCard(agent, {"cache-control": "public, max-age=100", "age": "90"})
    await fetch(cache, app)
    clock.now += 9
    await fetch(cache, app)
    assert app.served == 1
    clock.now += 2
    await fetch(cache, app)
    assert app.served == 2


async def test_expires_when_there_is_no_max_age(agent: Agent) -> None:
    cache = CardCache()
    stale = StaticCard(agent, {"expires": "Thu, 01 Jan 1970 00:00:00 GMT"})
    await fetch(cache, stale)
    await fetch(cache, stale)
    assert stale.served == 2
    later = StaticCard(
        agent,
        {"date": "Mon, 30 Nov 2026 10:00:00 GMT", "expires": "Mon, 30 Nov 2026 10:05:00 GMT"},
    )
    cache = CardCache()
    await fetch(cache, later)
    await fetch(cache, later)
    assert later.served == 1


async def test_without_caching_headers_the_default_lifetime_applies(agent: Agent) -> None:
    clock = Clock()
    cache = CardCache(clock=clock, default_max_age=10)
    app = StaticCard(agent, {})
    await fetch(cache, app)
    clock.now += 9.9
    await fetch(cache, app)
    clock.now += 0.2
    await fetch(cache, app)
    assert app.served == 2


async def test_the_cache_is_bounded(agent: Agent) -> None:
    cache = CardCache(max_entries=2)
    app = StaticCard(agent, {})
    async with httpx.AsyncClient(transport=StreamingASGITransport(app)) as http:
        for host in ("a", "b", "c", "a"):
            await cache.fetch(http, f"http://{host}{CARD_PATH}")
    assert len(cache) == 2
    assert app.served == 4, "a was evicted by c"


@pytest.mark.parametrize(
    ("body", "status", "expected"),
    [
        (b"<html>not json</html>", 200, "not a valid A2A 1.0 AgentCard"),
        (b'{"name": "x"}', 200, "missing required field `description` (at card)"),
        (
            b'{"name": "old", "url": "http://x", "preferredTransport": "JSONRPC", '
            b'"protocolVersion": "0.3.0"}',
            200,
            "not a valid A2A 0.3 AgentCard: card.capabilities must be an object",
        ),
        (b"Not Found", 404, "HTTP 404"),
        (b"", 401, "pass credentials in headers="),
    ],
)
async def test_invalid_cards_say_what_is_wrong(body: bytes, status: int, expected: str) -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": body})

    with pytest.raises(InvalidAgentCardError) as caught:
        await Client.connect("http://agent", app=app)
    assert expected in caught.value.message
    assert caught.value.url == "http://agent" + CARD_PATH


def _card_of(agent: Agent) -> Any:
    return agent.card(
        [AgentInterface(url="http://agent/", protocol_binding="JSONRPC", protocol_version="1.0")]
    )
