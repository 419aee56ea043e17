"""The one card document 0.3 and 1.0 clients both accept, its signature, and the extended card
over 0.3 with the card's security enforced on 0.3 requests."""

from __future__ import annotations

import json
from typing import Any

import httpx
from joserfc.jwk import ECKey

from peerwire import Agent
from peerwire.client import CardCache, Client
from peerwire.compat.v03.card import card_from_v03, card_to_v03
from peerwire.security import APIKeyVerifier, Trust
from peerwire.security.signing import CardSigner, verify_card
from peerwire.server.card import CARD_PATH
from peerwire.types import (
    AgentCard,
    APIKeySecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
    decode,
)

from .conftest import TIMEOUT_S, Gate, build_agent, rpc, serving, v03_message

_TRANSPORTS = {"JSONRPC", "GRPC", "HTTP+JSON"}


def check_v03_card(card: dict[str, Any]) -> None:
    """What 0.3's JSON schema requires of an AgentCard (and of its parts), with their types."""
    for name in ("description", "name", "protocolVersion", "url", "version"):
        assert isinstance(card[name], str), name
    for name in ("defaultInputModes", "defaultOutputModes"):
        assert all(isinstance(mode, str) for mode in card[name]), name
    assert isinstance(card["capabilities"], dict)
    for flag in ("streaming", "pushNotifications"):
        assert isinstance(card["capabilities"].get(flag, False), bool)
    assert card.get("preferredTransport", "JSONRPC") in _TRANSPORTS
    for interface in card.get("additionalInterfaces", ()):
        assert isinstance(interface["url"], str) and interface["transport"] in _TRANSPORTS
    for skill in card["skills"]:
        for name in ("description", "id", "name"):
            assert isinstance(skill[name], str), name
        assert all(isinstance(tag, str) for tag in skill["tags"])
    for scheme in card.get("securitySchemes", {}).values():
        assert scheme["type"] in ("apiKey", "http", "oauth2", "openIdConnect", "mutualTLS")
        if scheme["type"] == "apiKey":
            assert scheme["in"] in ("header", "query", "cookie") and isinstance(scheme["name"], str)
    for requirement in card.get("security", ()):
        assert all(isinstance(scopes, list) for scopes in requirement.values())


async def fetch_card(url: str) -> dict[str, Any]:
    async with httpx.AsyncClient(trust_env=False, timeout=TIMEOUT_S) as http:
        response = await http.get(url + CARD_PATH)
    assert response.status_code == 200
    card: dict[str, Any] = response.json()
    return card


async def test_the_served_card_is_a_0_3_card_and_a_1_0_card(agent: Agent) -> None:
    async with serving(agent) as url:
        card = await fetch_card(url)
        async with Client.connect(url, card_cache=CardCache()) as client:
            assert client.interface.protocol_version == "1.0"
            assert client.interface.url == url + "/"
    check_v03_card(card)
    assert card["protocolVersion"] == "0.3.0"
    assert (card["url"], card["preferredTransport"]) == (url + "/", "JSONRPC")
    assert card["additionalInterfaces"] == [
        {"url": url + "/", "transport": "JSONRPC"},
        {"url": url + "/rest", "transport": "HTTP+JSON"},
    ]
    assert card["capabilities"]["pushNotifications"] is True
    assert "supportsAuthenticatedExtendedCard" not in card
    one_zero = decode(json.dumps(card), AgentCard)
    assert [(i.protocol_binding, i.protocol_version) for i in one_zero.supported_interfaces] == [
        ("JSONRPC", "1.0"),
        ("HTTP+JSON", "1.0"),
    ], "1.0 clients see the interfaces they saw"


async def test_without_0_3_the_card_is_1_0_only(agent: Agent) -> None:
    async with serving(agent, serve_v03=False) as url:
        card = await fetch_card(url)
    assert not {"url", "preferredTransport", "additionalInterfaces", "protocolVersion"} & set(card)


async def test_a_signed_card_verifies_as_served(agent: Agent) -> None:
    key = ECKey.generate_key("P-256")
    signer = CardSigner(key)
    async with serving(agent, signing_key=signer) as url:
        card = await fetch_card(url)
    assert "url" in card and card["signatures"]
    verify_card(card, Trust(signer.public_jwks()))  # the 0.3 members are covered too


def secured_agent(gate: Gate) -> Agent:
    scheme = SecurityScheme(
        api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-API-Key")
    )
    return build_agent(
        gate,
        security_schemes={"key": scheme},
        security_requirements=[SecurityRequirement(schemes={"key": StringList()})],
    )


async def test_0_3_requests_are_authenticated_and_get_the_extended_card(gate: Gate) -> None:
    agent = secured_agent(gate)
    async with serving(
        agent, auth={"key": APIKeyVerifier({"k-1": "alice"})}, extended_card=lambda p, card: card
    ) as url:
        card = await fetch_card(url)
        async with httpx.AsyncClient(trust_env=False, timeout=TIMEOUT_S) as http:
            message = v03_message(metadata={"skill": "echo"})
            refused = await http.post(url + "/", json=rpc("message/send", {"message": message}))
            allowed = await http.post(
                url + "/",
                json=rpc("message/send", {"message": message}),
                headers={"X-API-Key": "k-1"},
            )
            extended = await http.post(
                url + "/",
                json=rpc("agent/getAuthenticatedExtendedCard"),
                headers={"X-API-Key": "k-1"},
            )
            proto_card = await http.get(url + "/rest/v1/card", headers={"X-API-Key": "k-1"})
    check_v03_card(card)
    assert card["security"] == [{"key": []}]
    scheme = card["securitySchemes"]["key"]
    assert scheme["type"] == "apiKey" and scheme["in"] == "header" and scheme["name"] == "X-API-Key"
    assert scheme["apiKeySecurityScheme"] == {"location": "header", "name": "X-API-Key"}
    assert card["supportsAuthenticatedExtendedCard"] is True
    assert refused.status_code == 401 and "www-authenticate" in refused.headers
    assert refused.json()["error"]["code"] == -32000
    assert refused.json()["error"]["data"]["reason"] == "UNAUTHENTICATED"
    assert allowed.json()["result"]["status"]["state"] == "completed"
    check_v03_card(extended.json()["result"])
    body = proto_card.json()
    assert body["securitySchemes"] == {
        "key": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}}
    }
    assert body["security"] == [{"schemes": {"key": {}}}]
    assert body["supportsAuthenticatedExtendedCard"] is True


def test_a_0_3_card_reads_back_as_the_1_0_card(gate: Gate) -> None:
    card = secured_agent(gate).card([])
    document = {
        **card_to_v03(card),
        "url": "http://agent/",
        "preferredTransport": "JSONRPC",
        "additionalInterfaces": [
            {"url": "http://agent/", "transport": "JSONRPC"},
            {"url": "http://agent/rest", "transport": "HTTP+JSON"},
        ],
    }
    check_v03_card(document)
    back = card_from_v03(json.loads(json.dumps(document)))
    assert [(i.url, i.protocol_binding, i.protocol_version) for i in back.supported_interfaces] == [
        ("http://agent/", "JSONRPC", "0.3"),
        ("http://agent/rest", "HTTP+JSON", "0.3"),
    ]
    assert back.security_schemes == card.security_schemes
    assert back.security_requirements == card.security_requirements
    assert back.skills == card.skills
    assert (back.name, back.version) == (card.name, card.version)
    assert back.description == card.description
