"""The card in the form each caller reads (docs/COMPATIBILITY.md, "The card"): a request whose
``A2A-Version`` names 1.x (header or query parameter) gets the 1.0 card, valid against the
A2A 1.0 JSON Schema (tests/vectors/schema); any other, which the spec reads as 0.3 (no version
at all included), gets the dual document with the 0.3 members the 0.3 SDKs need, valid against
the 0.3 JSON Schema. Each form is signed as served, and caches keep them apart (``Vary``, an
ETag each)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from joserfc.jwk import ECKey
from jsonschema import Draft7Validator, Draft202012Validator
from referencing import Registry, Resource

from peerwire import Agent
from peerwire.security import APIKeyVerifier, Trust
from peerwire.security.signing import CardSigner, verify_card
from peerwire.server.card import CARD_PATH
from peerwire.types import APIKeySecurityScheme, SecurityRequirement, SecurityScheme, StringList

from .conftest import TIMEOUT_S, Gate, build_agent, serving
from .test_card import check_v03_card

SCHEMAS = Path(__file__).resolve().parents[1] / "vectors" / "schema"
SCHEMA = SCHEMAS / "a2a-1.0.json"
_BASE = "https://schema.invalid/"  # the bundle's $refs are relative names: resolved under this
_V03_MEMBERS = {
    "url",
    "preferredTransport",
    "additionalInterfaces",
    "protocolVersion",
    "supportsAuthenticatedExtendedCard",
    "security",
}


def card_validator() -> Draft202012Validator:
    """A validator of the bundle's "Agent Card", its ``$ref``s (``lf.a2a.v1.AgentSkill.
    jsonschema.json``) resolved to the bundle's definitions (keyed ``Agent Skill``)."""
    bundle = json.loads(SCHEMA.read_text(encoding="utf-8"))
    resources = []
    for name, definition in bundle["definitions"].items():
        joined = name.replace(" ", "")
        package = "google.protobuf" if joined in ("Struct", "Timestamp", "Value") else "lf.a2a.v1"
        uri = f"{_BASE}{package}.{joined}.jsonschema.json"
        resources.append((uri, Resource.from_contents({**definition, "$id": uri})))
    registry: Registry[Any] = Registry().with_resources(resources)
    root = registry.contents(f"{_BASE}lf.a2a.v1.AgentCard.jsonschema.json")
    return Draft202012Validator(root, registry=registry)


VALIDATOR = card_validator()
# 0.3's schema, with "#/definitions/..." references: its AgentCard allows other members.
_V03 = json.loads((SCHEMAS / "a2a-0.3.json").read_text(encoding="utf-8"))
V03_VALIDATOR = Draft7Validator({**_V03, "$ref": "#/definitions/AgentCard"})


def schema_errors(card: dict[str, Any]) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '(card)'}: {e.message}"
        for e in VALIDATOR.iter_errors(card)
    ]


def secured_agent(gate: Gate) -> Agent:
    """With what takes 0.3 members: security (the card's and a skill's), the extended card."""
    scheme = SecurityScheme(
        api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-API-Key")
    )
    return build_agent(
        gate,
        security_schemes={"key": scheme},
        security_requirements=[SecurityRequirement(schemes={"key": StringList()})],
    )


SIGNER = CardSigner(ECKey.generate_key("P-256", parameters={"kid": "card-1"}))
OPTIONS: dict[str, Any] = {
    "auth": {"key": APIKeyVerifier({"k-1": "alice"})},
    "extended_card": lambda principal, card: card,
    "signing_key": SIGNER,
    "grpc_port": 0,
}


async def get(url: str, **headers: str) -> httpx.Response:
    async with httpx.AsyncClient(trust_env=False, timeout=TIMEOUT_S) as http:
        return await http.get(url + CARD_PATH, headers=headers)


def test_the_schema_refuses_what_the_1_0_card_must_not_carry() -> None:
    # So that a card passing below passes for its content, not for a lax validator.
    card: dict[str, Any] = {"name": "n", "description": "d", "version": "1"}
    assert schema_errors(card) == []
    assert any("'url'" in error for error in schema_errors({**card, "url": "http://x/"}))
    scheme = {"apiKeySecurityScheme": {"location": "header", "name": "k"}}
    assert schema_errors({**card, "securitySchemes": {"key": scheme}}) == []
    both = {"key": {**scheme, "type": "apiKey"}}  # the 0.3 form beside the 1.0 member
    assert any("'type'" in error for error in schema_errors({**card, "securitySchemes": both}))


@pytest.mark.parametrize("how", ["header", "query", "patch"])
async def test_a_1_0_caller_gets_a_card_the_1_0_schema_accepts(gate: Gate, how: str) -> None:
    async with serving(secured_agent(gate), **OPTIONS) as url:
        if how == "query":
            async with httpx.AsyncClient(trust_env=False, timeout=TIMEOUT_S) as http:
                answer = await http.get(url + CARD_PATH + "?A2A-Version=1.0")
        else:
            answer = await get(url, **{"A2A-Version": "1.0.1" if how == "patch" else "1.0"})
    card = answer.json()
    assert schema_errors(card) == []
    assert not V03_VALIDATOR.is_valid(card)  # no url: what the 0.3 SDKs cannot read
    assert not _V03_MEMBERS & set(card)
    assert {i["protocolBinding"] for i in card["supportedInterfaces"]} == {
        "JSONRPC",
        "HTTP+JSON",
        "GRPC",
    }
    assert card["capabilities"]["extendedAgentCard"] is True
    assert answer.headers["vary"] == "A2A-Version"
    assert len(card["signatures"]) == 1
    verify_card(card, Trust(SIGNER.public_jwks()))


@pytest.mark.parametrize("version", [None, "0.3"])
async def test_a_0_3_caller_gets_the_dual_card(gate: Gate, version: str | None) -> None:
    async with serving(secured_agent(gate), **OPTIONS) as url:
        answer = await get(url, **({} if version is None else {"A2A-Version": version}))
        v1 = (await get(url, **{"A2A-Version": "1.0"})).json()
    card = answer.json()
    check_v03_card(card)
    assert [e.message for e in V03_VALIDATOR.iter_errors(card)] == []
    assert set(card) >= _V03_MEMBERS
    assert card["securitySchemes"]["key"]["type"] == "apiKey"
    assert answer.headers["vary"] == "A2A-Version"
    # Its 1.0 members are the 1.0 card's; the 0.3 ones are what the 1.0 schema refuses.
    assert {k: v for k, v in card.items() if k not in _V03_MEMBERS | {"securitySchemes"}} == {
        k: v for k, v in v1.items() if k not in ("securitySchemes", "signatures")
    } | {"signatures": card["signatures"]}
    assert schema_errors(card)
    # The 1.0 card's signature (for verifiers that rebuild the AgentCard message), then one
    # over the document as served (the spec's procedure, peerwire's verify_card).
    assert card["signatures"][0] == v1["signatures"][0]
    verify_card({**card, "signatures": card["signatures"][1:]}, Trust(SIGNER.public_jwks()))


async def test_each_form_has_its_own_etag(gate: Gate) -> None:
    async with serving(secured_agent(gate), **OPTIONS) as url:
        dual = await get(url)
        v1 = await get(url, **{"A2A-Version": "1.0"})
        assert dual.headers["etag"] != v1.headers["etag"]
        same = await get(url, **{"A2A-Version": "1.0", "If-None-Match": v1.headers["etag"]})
        other = await get(url, **{"If-None-Match": v1.headers["etag"]})
    assert same.status_code == 304 and same.headers["vary"] == "A2A-Version"
    assert other.status_code == 200 and other.json() == dual.json()


async def test_without_0_3_every_caller_gets_the_1_0_card(gate: Gate) -> None:
    async with serving(secured_agent(gate), serve_v03=False, **OPTIONS) as url:
        answer = await get(url)
    assert schema_errors(answer.json()) == []
    assert "vary" not in answer.headers


async def test_lenient_version_takes_a_card_request_without_it_as_1_0(gate: Gate) -> None:
    async with serving(secured_agent(gate), lenient_version=True, **OPTIONS) as url:
        lenient = await get(url)
        named = await get(url, **{"A2A-Version": "0.3"})
    assert schema_errors(lenient.json()) == []
    assert "url" in named.json()  # a caller naming 0.3 still gets the 0.3 members
