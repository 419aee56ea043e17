"""Without ``public_url``, the card's URLs name what the request reached.

Two agents mounted in FastAPI on a real uvicorn server on a free port (bound to port 0), built
without ``public_url``: peerwire's ``Client`` follows each card on every binding the mount
serves (JSON-RPC, HTTP+JSON, and gRPC for the agent that serves it) and completes a task;
another ``Host`` gets a card naming that host; its 0.3 members follow it. Forwarded headers
(``Forwarded``, ``X-Forwarded-*``) from a peer outside ``trusted_proxies`` are ignored and
from one inside honoured, along a chain of proxies too. A hostile ``Host`` (not a host, or
thousands of different ones) neither grows the card cache past its bound nor changes the
card anyone else gets. A signed card is signed again for each host and verifies there.
``peerwire serve --trusted-proxy`` believes its proxy; a bad address is a usage error.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from fastapi import FastAPI
from joserfc.jwk import ECKey

from peerwire import Agent, AgentCard, create_app
from peerwire.client import CardCache, Client
from peerwire.security import APIKeyVerifier, CardSigner, Principal, Trust, verify_card
from peerwire.server import A2AApp
from peerwire.server._origin import RequestOrigin, TrustedProxies, parse_host
from peerwire.types import (
    APIKeySecurityScheme,
    Binding,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

from . import test_mounting
from .test_mounting import (
    answering,
    completes_a_task,
    connected,
    free_socket,
    on_uvicorn,
    streams_a_task,
    url_of,
)

# Nothing logged at WARNING or above while a test's servers run and stop.
quiet_shutdown = test_mounting.quiet_shutdown
pytestmark = pytest.mark.usefixtures("quiet_shutdown")

CARD = "/.well-known/agent-card.json"
WAIT_S = 60.0


def fastapi_with(mounts: dict[str, A2AApp]) -> FastAPI:
    host = FastAPI()
    for prefix, app in mounts.items():
        host.mount(prefix, app)
    return host


def interfaces(card: dict[str, Any]) -> dict[str, str]:
    return {i["protocolBinding"]: i["url"] for i in card["supportedInterfaces"]}


async def card_of(url: str, **headers: str) -> httpx.Response:
    async with httpx.AsyncClient(trust_env=False, timeout=WAIT_S) as http:
        return await http.get(url + CARD, headers=headers)


# -- mounted in FastAPI on uvicorn, no public_url -----------------------------------------


async def test_two_mounted_agents_are_reached_on_every_binding_without_public_url() -> None:
    sock = free_socket()
    url = url_of(sock)
    glossary = create_app(answering("Glossary"), grpc_port=0)  # gRPC starts with the agent
    weather = create_app(answering("Weather"))
    with on_uvicorn(fastapi_with({"/a2a/glossary": glossary, "/a2a/weather": weather}), sock):
        served = {"glossary": (Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC)}
        served["weather"] = (Binding.JSONRPC, Binding.HTTP_JSON)
        for name, bindings in served.items():
            base = f"{url}/a2a/{name}"
            for binding in bindings:
                async with connected(base, binding) as client:
                    urls = {i.protocol_binding: i.url for i in client.card.supported_interfaces}
                    assert urls[Binding.JSONRPC] == f"{base}/"
                    assert urls[Binding.HTTP_JSON] == f"{base}/rest"
                    if name == "glossary":
                        assert urls[Binding.GRPC].startswith("127.0.0.1:")
                    assert client.interface.protocol_binding == binding
                    task = await completes_a_task(client, "hello")
                    assert task.artifacts[0].text == f"{name.title()} got hello"
                    await streams_a_task(client, "a stream")

        # Another name for the same server: the card names it, gRPC's host included.
        port = sock.getsockname()[1]
        other = await card_of(f"{url}/a2a/glossary", Host=f"agents.internal:{port}")
        document = other.json()
        urls = interfaces(document)
        assert urls["JSONRPC"] == f"http://agents.internal:{port}/a2a/glossary/"
        assert urls["HTTP+JSON"] == f"http://agents.internal:{port}/a2a/glossary/rest"
        assert urls["GRPC"].startswith("agents.internal:")
        # The A2A 0.3 members of the dual card follow the host as well.
        assert document["url"] == f"http://agents.internal:{port}/a2a/glossary/"
        assert {i["url"] for i in document["additionalInterfaces"]} >= {
            f"http://agents.internal:{port}/a2a/glossary/rest"
        }
        # Served without trusted proxies, the card varies by its URL and by the caller's
        # version (1.0 card or dual card), not by forwarded headers.
        assert other.headers.get_list("vary") == ["A2A-Version"]


# -- forwarded headers --------------------------------------------------------------------

FORWARDED = {"Forwarded": 'for=203.0.113.9;host=agents.example.com;proto="https"'}
X_FORWARDED = {
    "X-Forwarded-For": "203.0.113.9",
    "X-Forwarded-Host": "agents.example.com",
    "X-Forwarded-Proto": "https",
    "X-Forwarded-Port": "8443",
}


@pytest.mark.parametrize(
    ("headers", "public"),
    [
        (FORWARDED, "https://agents.example.com"),
        (X_FORWARDED, "https://agents.example.com:8443"),
    ],
    ids=["Forwarded", "X-Forwarded"],
)
async def test_forwarded_headers_count_only_from_trusted_proxies(
    headers: dict[str, str], public: str
) -> None:
    sock = free_socket()
    url = url_of(sock)
    mounts = {
        "/untrusted": create_app(answering("Untrusted"), trusted_proxies=["10.0.0.0/8"]),
        "/trusted": create_app(answering("Trusted"), trusted_proxies=["127.0.0.1/32", "::1"]),
        "/none": create_app(answering("None")),
    }
    # uvicorn applies X-Forwarded-For and -Proto itself for its --forwarded-allow-ips
    # (127.0.0.1 by default), replacing the client's address: off, the apps judge alone.
    with on_uvicorn(fastapi_with(mounts), sock, proxy_headers=False):
        # This test connects from 127.0.0.1: a proxy only to the second app.
        untrusted = await card_of(f"{url}/untrusted", **headers)
        assert interfaces(untrusted.json())["JSONRPC"] == f"{url}/untrusted/"
        assert interfaces((await card_of(f"{url}/none", **headers)).json()) == {
            "JSONRPC": f"{url}/none/",
            "HTTP+JSON": f"{url}/none/rest",
        }
        trusted = await card_of(f"{url}/trusted", **headers)
        assert interfaces(trusted.json()) == {
            "JSONRPC": f"{public}/trusted/",
            "HTTP+JSON": f"{public}/trusted/rest",
        }
        assert "x-forwarded-host" in trusted.headers["vary"].lower()
        # Without the headers, the trusted proxy's own request gets the card of its Host.
        direct = await card_of(f"{url}/trusted")
        assert interfaces(direct.json())["JSONRPC"] == f"{url}/trusted/"
        # And the agent answers where the proxy's request reached it.
        async with connected(f"{url}/trusted") as client:
            await completes_a_task(client, "through")


def scope(client: str, *headers: tuple[str, str], scheme: str = "http") -> dict[str, Any]:
    return {
        "type": "http",
        "scheme": scheme,
        "client": (client, 50000),
        "server": ("10.1.1.1", 8000),
        "headers": [(k.lower().encode(), v.encode("latin-1")) for k, v in headers],
    }


def test_a_chain_of_proxies_is_walked_back_to_the_first_untrusted_client() -> None:
    origin = RequestOrigin(TrustedProxies(["10.0.0.0/8"]))
    host = ("host", "replica-1:8000")
    # The edge (10.0.0.2) saw the client's request; the inner proxy (10.0.0.3) the edge's.
    chain = "for=198.51.100.7;host=agents.example.com;proto=https, for=10.0.0.2;host=inner"
    assert origin.of(scope("10.0.0.3", host, ("forwarded", chain))) == (
        "https://agents.example.com"
    )
    # The same headers sent by a client the proxies do not trust: the last one the
    # trusted proxy appended (for that client) is all that counts.
    forged = "for=10.0.0.9;host=forged.example, for=198.51.100.7;host=agents.example.com"
    assert origin.of(scope("10.0.0.3", host, ("forwarded", forged))) == (
        "http://agents.example.com"
    )
    # X-Forwarded-*: as many entries from the right as X-Forwarded-For shows proxies.
    listed = scope(
        "10.0.0.3",
        host,
        ("x-forwarded-for", "198.51.100.7, 10.0.0.2"),
        ("x-forwarded-host", "agents.example.com, inner"),
        ("x-forwarded-proto", "https, http"),
    )
    assert origin.of(listed) == "https://agents.example.com"
    # A Forwarded header that does not parse, or a forwarded host that is not a host:
    # believed in no part.
    assert origin.of(scope("10.0.0.3", host, ("forwarded", 'host="a'))) == "http://replica-1:8000"
    bad = scope("10.0.0.3", host, ("x-forwarded-host", "a b"))
    assert origin.of(bad) == "http://replica-1:8000"
    # IPv4 peers seen as IPv4-mapped IPv6 addresses are the same peers.
    assert origin.of(scope("::ffff:10.0.0.3", host, ("forwarded", "host=a.example"))) == (
        "http://a.example"
    )


def test_hosts_are_checked_and_spelled_once() -> None:
    assert parse_host("Agents.Example.COM", "http") == "agents.example.com"
    assert parse_host("agents.example.com:80", "http") == "agents.example.com"
    assert parse_host("agents.example.com:443", "https") == "agents.example.com"
    assert parse_host("agents.example.com:443", "http") == "agents.example.com:443"
    assert parse_host("[::1]:8000", "http") == "[::1]:8000"
    assert parse_host("my_service:8000", "http") == "my_service:8000"  # compose names
    for bad in (
        "",
        "a b",
        "evil.example/path",
        "evil.example@other",
        "evil.example:0",
        "evil.example:65536",
        "evil.example:",
        "[not-ipv6]",
        "a" * 64 + ".example",
        "x." * 200 + "example",
        'evil"',
        "évil.example",
    ):
        assert parse_host(bad, "http") is None, bad


def test_trusted_proxies_must_be_addresses_and_say_one_thing() -> None:
    with pytest.raises(ValueError, match=r"'proxy\.internal' is not an IP address or CIDR"):
        create_app(answering("A"), trusted_proxies=["proxy.internal"])
    with pytest.raises(ValueError, match="public_url= fixes"):
        create_app(answering("A"), public_url="https://a.example", trusted_proxies=["10.0.0.1"])
    assert "10.2.3.4" in TrustedProxies("10.0.0.0/8")  # one string is one entry
    assert "unknown" not in TrustedProxies(["10.0.0.0/8"])


# -- hostile hosts ------------------------------------------------------------------------


async def raw_card(port: int, host_line: bytes, path: bytes = b"/a2a" + CARD.encode()) -> Any:
    """GET the card with a Host line as given (httpx would refuse some of them)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(b"GET " + path + b" HTTP/1.1\r\n" + host_line + b"connection: close\r\n\r\n")
        await writer.drain()
        with anyio.fail_after(WAIT_S):
            response = await reader.read()
    finally:
        writer.close()
    head, _, body = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    return json.loads(body)


async def test_a_hostile_host_neither_grows_the_cache_nor_changes_anyone_elses_card() -> None:
    sock = free_socket()
    url = url_of(sock)
    port = sock.getsockname()[1]
    key = ECKey.generate_key("P-256", parameters={"kid": "ec-1"})
    signer = CardSigner(key)
    trust = Trust(signer.public_jwks())
    agent_app = create_app(answering("Guarded"), signing_key=signer)
    with on_uvicorn(fastapi_with({"/a2a": agent_app}), sock):
        mine = (await card_of(f"{url}/a2a")).json()
        assert interfaces(mine)["JSONRPC"] == f"{url}/a2a/"
        verify_card(mine, trust)
        # Not a host: the card names the address the server accepted the request on.
        for line in (b"host: evil.example/../x\r\n", b"host: a b\r\n", b""):
            hostile = await raw_card(port, line)
            assert interfaces(hostile)["JSONRPC"] == f"{url}/a2a/"
        # Many hosts: each gets its own card, signed for it; the cache stays bounded.
        for i in range(150):
            card = await raw_card(port, b"host: h%d.example\r\n" % i)
            assert interfaces(card)["JSONRPC"] == f"http://h{i}.example/a2a/"
            if i % 50 == 0:
                verify_card(card, trust)
        assert len(agent_app._mounted_cards) <= 64
        # Nobody else's card changed (signed again once the flood pushed it out: ECDSA
        # signatures differ each time, what they sign does not).
        again = (await card_of(f"{url}/a2a")).json()
        verify_card(again, trust)
        assert {**again, "signatures": []} == {**mine, "signatures": []}
        with pytest.raises(Exception, match="does not match"):
            verify_card({**mine, "url": "http://h1.example/a2a/"}, trust)


# -- peerwire serve --trusted-proxy --------------------------------------------------------

AGENT = textwrap.dedent(
    """
    from peerwire import Agent

    agent = Agent("Echo", description="Repeats what it is told")


    @agent.skill()
    async def echo(text: str) -> str:
        return text
    """
)
PEERWIRE = str(Path(sys.executable).with_name("peerwire"))


async def serving(tmp_path: Path, *options: str) -> tuple[asyncio.subprocess.Process, str]:
    (tmp_path / "echo_agent.py").write_text(AGENT)
    command = [PEERWIRE, "serve", "echo_agent:agent", "--port", "0", "--log-format", "json"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    process = await asyncio.create_subprocess_exec(
        *command,
        *options,
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    async with asyncio.timeout(WAIT_S):
        while True:
            raw = await process.stderr.readline()
            assert raw, "peerwire serve ended early"
            if b"peerwire: serving '" in raw:
                return process, json.loads(raw)["url"]


async def stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(WAIT_S):
            await process.wait()


async def test_peerwire_serve_believes_the_proxy_it_is_told_to(tmp_path: Path) -> None:
    grpc_port = free_port()
    process, url = await serving(
        tmp_path, "--trusted-proxy", "127.0.0.1", "--grpc-port", str(grpc_port)
    )
    try:
        forwarded = (await card_of(url, **X_FORWARDED)).json()
        direct = (await card_of(url, Host="replica.internal:9")).json()
    finally:
        await stop(process)
    assert interfaces(forwarded) == {
        "JSONRPC": "https://agents.example.com:8443/",
        "HTTP+JSON": "https://agents.example.com:8443/rest",
        "GRPC": f"agents.example.com:{grpc_port}",
    }
    assert interfaces(direct)["JSONRPC"] == "http://replica.internal:9/"


async def test_peerwire_serve_lists_the_grpc_address_it_is_given(tmp_path: Path) -> None:
    process, url = await serving(tmp_path, "--grpc-public-address", "grpc.example.com:443")
    try:
        card = (await card_of(url)).json()
    finally:
        await stop(process)
    assert interfaces(card)["GRPC"] == "grpc.example.com:443"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--trusted-proxy", "proxy.internal"], "not an IP address or CIDR"),
        (["--trusted-proxy", "10.0.0.1", "--public-url", "https://a.example"], "fixes"),
    ],
)
async def test_a_bad_trusted_proxy_is_a_usage_error(
    tmp_path: Path, options: list[str], message: str
) -> None:
    (tmp_path / "echo_agent.py").write_text(AGENT)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with anyio.fail_after(WAIT_S):
        done = await anyio.run_process(
            [PEERWIRE, "serve", "echo_agent:agent", "--port", "0", *options],
            cwd=tmp_path,
            env={**env, "COLUMNS": "200"},
            check=False,
        )
    assert done.returncode == 2, done.stderr.decode()
    assert message in done.stderr.decode()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# -- the extended card ----------------------------------------------------------------------


def vault() -> tuple[Agent, dict[str, APIKeyVerifier]]:
    agent = Agent(
        "Vault",
        security_schemes={
            "key": SecurityScheme(
                api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-Key")
            )
        },
        security_requirements=[SecurityRequirement(schemes={"key": StringList()})],
    )

    @agent.skill()
    async def read(text: str) -> str:
        return text

    return agent, {"key": APIKeyVerifier({"k": "alice"})}


async def test_an_extended_card_built_from_the_public_one_names_what_the_request_reached() -> None:
    agent, auth = vault()

    def extended(principal: Principal, card: AgentCard) -> AgentCard:
        return card.replace(description=f"for {principal.id}")

    app = create_app(agent, auth=auth, extended_card=extended)
    sock = free_socket()
    with on_uvicorn(fastapi_with({"/a2a/vault": app}), sock):
        port = sock.getsockname()[1]
        base = f"{url_of(sock)}/a2a/vault"
        named = f"http://agents.internal:{port}/a2a/vault"
        headers = {"X-Key": "k", "A2A-Version": "1.0", "Host": f"agents.internal:{port}"}
        async with httpx.AsyncClient(trust_env=False, timeout=WAIT_S) as http:
            rpc = await http.post(
                base + "/",
                json={"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard", "params": {}},
                headers=headers,
            )
            rest = await http.get(base + "/rest/extendedAgentCard", headers=headers)
        for card in (rpc.json()["result"], rest.json()):
            assert card["description"] == "for alice", card
            assert interfaces(card) == {"JSONRPC": f"{named}/", "HTTP+JSON": f"{named}/rest"}
        # peerwire's Client gets the URLs it reached the server on.
        async with Client.connect(
            base, bindings=[Binding.HTTP_JSON], card_cache=CardCache(), headers={"X-Key": "k"}
        ) as client:
            card = await client.get_extended_card()
            assert {i.url for i in card.supported_interfaces} == {f"{base}/", f"{base}/rest"}
