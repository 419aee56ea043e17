"""Connecting: fetching the card, choosing the interface, and what every request carries."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
import pytest

from peerwire import Agent, Client, Task
from peerwire.client import (
    IDEMPOTENT_SEND_EXTENSION,
    CardCache,
    TransportSettings,
    available_bindings,
    register_transport,
)
from peerwire.client.transports.jsonrpc import JsonRpcTransport
from peerwire.errors import (
    A2AConnectionError,
    InvalidAgentCardError,
    PushNotificationNotSupportedError,
    UnsupportedOperationError,
)
from peerwire.server.card import CARD_PATH
from peerwire.types import AgentCard, AgentInterface

from .conftest import TIMEOUT_S, CardServer, Gates, Recorder, app_factory, connected, serve

MODES = pytest.mark.parametrize("mode", ["live", "inprocess"])


def with_interfaces(app: Any, interfaces: list[AgentInterface]) -> AgentCard:
    card = app.dispatcher.card()
    return msgspec.structs.replace(card, supported_interfaces=interfaces)


def rpc_url(app: Any) -> str:
    return str(app.dispatcher.card().supported_interfaces[0].url)


@MODES
async def test_the_first_usable_interface_wins(mode: str, agent: Agent) -> None:
    def wrap(app: Any) -> Any:
        url = rpc_url(app)
        interfaces = [
            AgentInterface(
                url=url + "pigeon", protocol_binding="urn:example:pigeon", protocol_version="1.0"
            ),
            AgentInterface(url=url + "old", protocol_binding="JSONRPC", protocol_version="0.2"),
            AgentInterface(
                url=url + "unversioned", protocol_binding="JSONRPC", protocol_version=""
            ),
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0.2"),
            AgentInterface(url=url + "later", protocol_binding="JSONRPC", protocol_version="1.0"),
        ]
        return CardServer(app, with_interfaces(app, interfaces))

    async with connected(mode, agent, wrap) as client:
        assert client.interface.protocol_version == "1.0.2", "a patch number is ignored"
        assert client.interface is client.card.supported_interfaces[3]
        task = await client.send("hi", skill="echo")
        assert isinstance(task, Task) and task.artifacts[0].text == "hi"


async def test_no_usable_interface_is_an_invalid_card(agent: Agent) -> None:
    def wrap(app: Any) -> Any:
        interfaces = [
            AgentInterface(
                url="http://x/", protocol_binding="urn:example:pigeon", protocol_version="1.0"
            ),
            AgentInterface(url=rpc_url(app), protocol_binding="JSONRPC", protocol_version="0.2"),
        ]
        return CardServer(app, with_interfaces(app, interfaces))

    with pytest.raises(InvalidAgentCardError) as caught:
        async with connected("inprocess", agent, wrap):
            pass
    message = caught.value.message
    assert "urn:example:pigeon 1.0 at http://x/" in message
    assert "JSONRPC 0.2" in message
    assert "JSONRPC" in message.split("this client speaks")[1]


async def test_bindings_restrict_the_choice(agent: Agent) -> None:
    with pytest.raises(InvalidAgentCardError):
        async with connected("inprocess", agent, bindings=("GRPC",)):
            pass
    assert "JSONRPC" in available_bindings()


@pytest.mark.parametrize("name", ["rest", "REST", "http+json", "HTTP+JSON"])
async def test_bindings_take_the_cli_names_too(agent: Agent, name: str) -> None:
    async with connected("live", agent, bindings=[name]) as client:
        assert client.interface.protocol_binding == "HTTP+JSON"
        task = await client.send("hi", skill="echo")
        assert isinstance(task, Task) and task.artifacts[0].text == "hi"


async def test_an_unknown_binding_name_lists_the_valid_ones(agent: Agent) -> None:
    with pytest.raises(ValueError, match="unknown binding 'soap'") as caught:
        async with connected("inprocess", agent, bindings=["soap"]):
            pass
    assert "rest" in str(caught.value) and "HTTP+JSON" in str(caught.value)


async def test_registered_transports_plug_in(agent: Agent) -> None:
    binding = "urn:example:jsonrpc-twin"
    built: list[TransportSettings] = []

    class Twin(JsonRpcTransport):
        binding = "urn:example:jsonrpc-twin"

    def factory(interface: AgentInterface, settings: TransportSettings) -> Twin:
        built.append(settings)
        return Twin(interface.url.removesuffix("twin"), settings.http)

    register_transport(binding, factory)

    def wrap(app: Any) -> Any:
        url = rpc_url(app)
        interfaces = [
            AgentInterface(url=url + "twin", protocol_binding=binding, protocol_version="1.0"),
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0"),
        ]
        return CardServer(app, with_interfaces(app, interfaces))

    async with connected("inprocess", agent, wrap, bindings=(binding, "JSONRPC")) as client:
        assert client.interface.protocol_binding == binding
        assert built[0].in_process
        task = await client.send("twin", skill="echo")
        assert isinstance(task, Task) and task.artifacts[0].text == "twin"
    async with connected("inprocess", agent, wrap) as client:
        assert client.interface.protocol_binding == "JSONRPC", "not asked for: not used"


async def test_a_factory_may_decline_an_interface(agent: Agent) -> None:
    binding = "urn:example:network-only"
    declined: list[str] = []

    def network_only(interface: AgentInterface, settings: TransportSettings) -> Any:
        if settings.in_process:
            declined.append(interface.url)
            return None
        return JsonRpcTransport(interface.url, settings.http)

    register_transport(binding, network_only)

    def wrap(app: Any) -> Any:
        url = rpc_url(app)
        interfaces = [
            AgentInterface(url=url, protocol_binding=binding, protocol_version="1.0"),
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0"),
        ]
        return CardServer(app, with_interfaces(app, interfaces))

    async with connected("inprocess", agent, wrap, bindings=(binding, "JSONRPC")) as client:
        assert client.interface.protocol_binding == "JSONRPC"
    assert len(declined) == 1
    async with connected("live", agent, wrap, bindings=(binding, "JSONRPC")) as client:
        assert client.interface.protocol_binding == binding


async def test_a_given_transport_is_used_with_its_interface_tenant(agent: Agent) -> None:
    recorder: Recorder | None = None

    def wrap(app: Any) -> Any:
        nonlocal recorder
        url = rpc_url(app)
        interfaces = [
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0", tenant="t1")
        ]
        recorder = Recorder(CardServer(app, with_interfaces(app, interfaces)))
        return recorder

    async with serve(lambda url: wrap(app_factory(agent)(url))) as url:
        import httpx

        async with httpx.AsyncClient() as http:
            transport = JsonRpcTransport(url + "/", http)
            async with Client.connect(url, transport=transport) as client:
                assert client.interface.tenant == "t1"
                await client.send("x", skill="echo")
    assert recorder is not None
    [call] = recorder.calls("SendMessage")
    assert call.rpc["params"]["tenant"] == "t1"


@MODES
async def test_every_request_echoes_the_tenant(mode: str, agent: Agent, gates: Gates) -> None:
    recorder: Recorder | None = None

    def wrap(app: Any) -> Any:
        nonlocal recorder
        interfaces = [
            AgentInterface(
                url=rpc_url(app), protocol_binding="JSONRPC", protocol_version="1.0", tenant="acme"
            )
        ]
        recorder = Recorder(CardServer(app, with_interfaces(app, interfaces)))
        return recorder

    async with connected(mode, agent, wrap) as client:
        await exercise_every_operation(client, gates)
    assert recorder is not None
    calls = recorder.calls()
    assert {c.rpc["method"] for c in calls} == ALL_METHODS
    assert all(c.rpc["params"]["tenant"] == "acme" for c in calls), [c.rpc for c in calls]


@MODES
async def test_without_a_tenant_none_is_sent(mode: str, agent: Agent, gates: Gates) -> None:
    recorder: Recorder | None = None

    def wrap(app: Any) -> Any:
        nonlocal recorder
        recorder = Recorder(app)
        return recorder

    async with connected(
        mode,
        agent,
        wrap,
        headers={"Authorization": "Bearer xyz"},
        extensions=["urn:x:a", "urn:x:b"],
    ) as client:
        await exercise_every_operation(client, gates)
    assert recorder is not None
    calls = recorder.calls()
    assert {c.rpc["method"] for c in calls} == ALL_METHODS
    for call in calls:
        assert "tenant" not in call.rpc.get("params", {})
        assert call.headers["a2a-version"] == "1.0"
        assert call.headers["authorization"] == "Bearer xyz"
        # The caller's, then idempotent sends, which the agent's card offers.
        assert call.headers["a2a-extensions"] == f"urn:x:a,urn:x:b,{IDEMPOTENT_SEND_EXTENSION}"
        assert call.headers["content-type"] == "application/json"
    streams = [c for c in calls if c.rpc["method"] in ("SendStreamingMessage", "SubscribeToTask")]
    assert streams and all(c.headers["accept"] == "text/event-stream" for c in streams)
    [card] = recorder.card_requests()
    assert card.headers["authorization"] == "Bearer xyz", "the card fetch carries credentials"


ALL_METHODS = {
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "ListTasks",
    "CancelTask",
    "SubscribeToTask",
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
    "GetExtendedAgentCard",
}


async def exercise_every_operation(client: Client, gates: Gates) -> None:
    task = await client.send("hi", skill="echo")
    assert isinstance(task, Task)
    assert [e async for e in client.stream("hi", skill="echo")]
    assert (await client.get_task(task.id)).id == task.id
    assert [t.id async for t in client.list_tasks()]
    running = await client.send("", skill="steps", return_immediately=True)
    assert isinstance(running, Task)
    with anyio.fail_after(TIMEOUT_S):
        async for event in client.subscribe(running.id):
            if isinstance(event, Task):
                gates.release.set()
                gates.finish.set()
    slow = await client.send("", skill="slow", return_immediately=True)
    assert isinstance(slow, Task)
    await client.cancel_task(slow.id)
    for call in (
        client.create_push_config(task.id, "https://hooks.example/"),
        client.get_push_config(task.id, "c"),
        client.list_push_configs(task.id),
        client.delete_push_config(task.id, "c"),
    ):
        with pytest.raises(PushNotificationNotSupportedError):
            await call
    with pytest.raises(UnsupportedOperationError):
        await client.get_extended_card()


async def test_url_forms(agent: Agent) -> None:
    async with serve(app_factory(agent)) as url:
        for form in (url, url + "/", url + CARD_PATH):
            async with Client.connect(form, card_cache=CardCache()) as client:
                assert client.card.name == "Test Agent"


async def test_awaited_connect_and_aclose(agent: Agent) -> None:
    async with serve(app_factory(agent)) as url:
        client = await Client.connect(url)
        try:
            assert client.card.name == "Test Agent"
        finally:
            await client.aclose()
        async with client:
            pass  # a client is its own context manager too


async def test_unreachable_agent(agent: Agent) -> None:
    with pytest.raises(A2AConnectionError) as caught:
        await Client.connect("http://127.0.0.1:9", timeout=TIMEOUT_S)
    assert "127.0.0.1:9" in caught.value.message
    assert isinstance(caught.value, ConnectionError)


async def test_app_and_http_client_exclude_each_other(agent: Agent) -> None:
    import httpx

    async with httpx.AsyncClient() as http:
        with pytest.raises(ValueError):
            await Client.connect("http://x", app=object(), http_client=http)  # type: ignore[arg-type]


async def test_a_given_http_client_is_used_and_left_open(agent: Agent) -> None:
    import httpx

    async with serve(app_factory(agent)) as url, httpx.AsyncClient() as http:
        async with Client.connect(url, http_client=http) as client:
            await client.send("x", skill="echo")
        assert not http.is_closed
        response = await http.get(url + CARD_PATH)
        assert response.status_code == 200
