"""peerwire.testing: ``live_server`` and ``in_process``, as a user's tests would use them.

``live_server``'s tests run on both HTTP servers it offers (``http=``)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from peerwire import Agent, create_app
from peerwire.protocol import list_query
from peerwire.server import A2AApp
from peerwire.server.stores import MemoryTaskStore
from peerwire.testing import in_process, live_server
from peerwire.types import ListTasksRequest

CARD = "/.well-known/agent-card.json"
HEADERS = {"A2A-Version": "1.0"}
HTTP_SERVERS = pytest.mark.parametrize("server", ["peerwire", "uvicorn"])


def echo() -> Agent:
    agent = Agent("Echo")

    @agent.skill()
    async def repeat(text: str) -> str:
        return text

    return agent


def send_body(text: str) -> dict[str, Any]:
    message = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": text}]}
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}


@pytest.fixture(params=["peerwire", "uvicorn"])
async def fixture_server(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    # pytest-asyncio runs this setup and its teardown in different tasks.
    async with live_server(echo(), http=request.param) as url:
        yield url


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def accepts_connections(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@HTTP_SERVERS
async def test_live_server_serves_the_agent_at_its_real_address(server: str) -> None:
    async with live_server(echo(), http=server) as url, httpx.AsyncClient(trust_env=False) as http:
        assert url.startswith("http://127.0.0.1:") and port_of(url) > 0
        card = (await http.get(url + CARD)).json()
        assert card["supportedInterfaces"][0]["url"] == url + "/"
        answer = (await http.post(url + "/", json=send_body("hi"), headers=HEADERS)).json()
        assert answer["result"]["task"]["artifacts"][0]["parts"] == [{"text": "hi"}]
    assert not accepts_connections(port_of(url)), "the port is released on exit"


async def test_live_server_works_in_an_async_fixture(fixture_server: str) -> None:
    async with httpx.AsyncClient(trust_env=False) as http:
        assert (await http.get(fixture_server + CARD)).status_code == 200


@HTTP_SERVERS
async def test_live_server_passes_options_to_create_app(server: str) -> None:
    store = MemoryTaskStore()
    async with (
        live_server(echo(), store=store, card_max_age=7, http=server) as url,
        httpx.AsyncClient(trust_env=False) as http,
    ):
        response = await http.get(url + CARD)
        assert response.headers["cache-control"] == "public, max-age=7"
        await http.post(url + "/", json=send_body("kept"), headers=HEADERS)
    assert len(await store.unfinished()) == 0
    query = list_query(ListTasksRequest(include_artifacts=True))
    listed, _, total = await store.list_tasks(query, tenant="", owner=None)
    assert total == 1 and listed[0].artifacts[0].text == "kept"


@HTTP_SERVERS
async def test_live_server_builds_an_app_from_a_factory_with_the_real_url(server: str) -> None:
    seen: list[str] = []

    def factory(public_url: str) -> A2AApp:
        seen.append(public_url)
        return create_app(echo(), public_url=public_url, rpc_path="/rpc")

    async with (
        live_server(factory, http=server) as url,
        httpx.AsyncClient(trust_env=False) as http,
    ):
        assert seen == [url]
        card = (await http.get(url + CARD)).json()
        assert card["supportedInterfaces"][0]["url"] == url + "/rpc"
        answer = (await http.post(url + "/rpc", json=send_body("x"), headers=HEADERS)).json()
        assert "result" in answer


async def test_live_server_serves_a_ready_app_as_it_is() -> None:
    app = create_app(echo(), public_url="http://agent.example")
    async with live_server(app) as url, httpx.AsyncClient(trust_env=False) as http:
        card = (await http.get(url + CARD)).json()
        assert card["supportedInterfaces"][0]["url"] == "http://agent.example/"
    with pytest.raises(TypeError, match="only to an Agent"):
        async with live_server(app, lenient_version=True):
            pass


@pytest.mark.parametrize(
    ("server", "error"),
    # peerwire's server raises the startup error itself; uvicorn gets only its message.
    [("peerwire", OSError), ("uvicorn", RuntimeError)],
)
async def test_live_server_reports_an_app_that_cannot_start(
    server: str, error: type[Exception]
) -> None:
    class BrokenStore(MemoryTaskStore):
        async def open(self) -> None:
            raise OSError("the disk is on fire")

    with pytest.raises(error, match="the disk is on fire"):
        async with live_server(echo(), store=BrokenStore(), http=server):
            pytest.fail("the body must not run")


async def test_two_live_servers_at_once_get_different_ports() -> None:
    async with live_server(echo()) as first, live_server(echo(), http="uvicorn") as second:
        assert port_of(first) != port_of(second)


async def test_in_process_calls_the_app_with_its_lifespan_entered() -> None:
    async with in_process(echo()) as http:
        answer = (await http.post("/", json=send_body("inside"), headers=HEADERS)).json()
        assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        card = (await http.get(CARD)).json()
        assert card["supportedInterfaces"][0]["url"] == "http://testserver/"


@pytest.fixture
async def fixture_client() -> AsyncIterator[httpx.AsyncClient]:
    async with in_process(echo()) as http:
        yield http


async def test_in_process_works_in_an_async_fixture(fixture_client: httpx.AsyncClient) -> None:
    answer = (await fixture_client.post("/", json=send_body("x"), headers=HEADERS)).json()
    assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_in_process_reports_an_app_that_cannot_start() -> None:
    class BrokenStore(MemoryTaskStore):
        async def open(self) -> None:
            raise OSError("the disk is on fire")

    with pytest.raises(OSError, match="the disk is on fire"):
        async with in_process(echo(), store=BrokenStore()):
            pytest.fail("the body must not run")


async def test_in_process_takes_a_ready_app() -> None:
    app = create_app(echo(), lenient_version=True)
    async with in_process(app) as http:
        answer = (await http.post("/", json=send_body("no header"))).json()
        assert answer["result"]["task"]["artifacts"][0]["parts"] == [{"text": "no header"}]
