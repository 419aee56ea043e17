"""Signed cards end to end: the server signs its card, ``Client.connect(trust=...)`` verifies it.

The client checks the card document exactly as the server sent it, before using anything in
it, with keys pinned in its ``Trust`` or fetched from an allowed ``jku`` (a JWKS served on
loopback here). Unsigned cards, altered cards, cards signed with another key or pointing at a
``jku`` off the allow-list are refused with ``CardSignatureError``, and the client never
calls the agent. A card cached earlier without verification is verified when a client with a
trust uses it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from joserfc.jwk import ECKey

from peerwire import Agent, create_app
from peerwire.client import CardCache, Client
from peerwire.errors import CardSignatureError
from peerwire.security import APIKeyVerifier, CardSigner, Trust, verify_card_async
from peerwire.testing import live_server
from peerwire.types import (
    APIKeySecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
    Task,
    TaskState,
)

from ._support import JsonApp, serve_asgi

CARD_PATH = "/.well-known/agent-card.json"
KEY = APIKeySecurityScheme(location="header", name="X-API-Key")


def echo_agent(*, secured: bool = False) -> Agent:
    schemes = {"key": SecurityScheme(api_key_security_scheme=KEY)} if secured else {}
    requirements = [SecurityRequirement(schemes={"key": StringList()})] if secured else []
    agent = Agent(
        "Signed Agent",
        description="Says it back",
        security_schemes=schemes,
        security_requirements=requirements,
    )

    @agent.skill()
    async def echo(text: str) -> str:
        return text

    return agent


SIGNING_KEY = ECKey.generate_key("P-256", parameters={"kid": "card-1"})
IMPOSTOR_KEY = ECKey.generate_key("P-256", parameters={"kid": "card-1"})


async def test_a_card_signed_with_a_published_key_round_trips() -> None:
    jwks = JsonApp()
    async with serve_asgi(jwks) as jwks_url:
        signer = CardSigner(SIGNING_KEY, jku=jwks_url + "/jwks.json")
        jwks.documents["/jwks.json"] = signer.public_jwks()
        async with live_server(echo_agent(), signing_key=signer, shutdown_grace=1.0) as url:
            trust = Trust(jku_allowlist=[jwks_url + "/"])
            async with Client.connect(url, trust=trust, card_cache=CardCache()) as client:
                # The client names 1.0 and gets the 1.0 form: one signature, over it alone.
                assert len(client.card.signatures) == 1
                task = await client.send("hello")
                assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
            # A caller that names no version gets the dual form: the same signature (over its
            # 1.0 members, for verifiers that rebuild the AgentCard), then one over it as
            # served, which the spec's procedure (peerwire's verify_card) checks.
            async with httpx.AsyncClient() as http:
                dual = (await http.get(url + CARD_PATH)).json()
                v1 = (await http.get(url + CARD_PATH, headers={"A2A-Version": "1.0"})).json()
            assert "url" in dual and "url" not in v1
            assert dual["signatures"][0] == v1["signatures"][0] and len(dual["signatures"]) == 2
            await verify_card_async({**dual, "signatures": dual["signatures"][1:]}, trust)
            await verify_card_async(v1, trust)
            # Pinned keys instead of a jku: the same card verifies.
            pinned = Trust(signer.public_jwks())
            async with Client.connect(url, trust=pinned, card_cache=CardCache()) as client:
                assert client.card.name == "Signed Agent"
            # The JWKS was fetched once, then cached by the trust.
            assert jwks.requests == ["/jwks.json"]
            # A jku the trust does not allow is not fetched, and the card is refused.
            elsewhere = Trust(jku_allowlist=["https://keys.example/"])
            with pytest.raises(CardSignatureError, match="not on the allow-list"):
                await Client.connect(url, trust=elsewhere, card_cache=CardCache())
            # The impostor's key (same kid) is not the signer's.
            impostor = Trust({"keys": [IMPOSTOR_KEY.as_dict(private=False)]})
            with pytest.raises(CardSignatureError, match="does not match"):
                await Client.connect(url, trust=impostor, card_cache=CardCache())


async def test_an_unsigned_card_is_refused_when_signatures_are_required() -> None:
    trust = Trust({"keys": [SIGNING_KEY.as_dict(private=False)]})
    async with live_server(echo_agent(), shutdown_grace=1.0) as url:
        with pytest.raises(CardSignatureError, match="not signed") as refused:
            await Client.connect(url, trust=trust, card_cache=CardCache())
        assert refused.value.url == url + CARD_PATH
        lenient = Trust({"keys": [SIGNING_KEY.as_dict(private=False)]}, require_signature=False)
        async with Client.connect(url, trust=lenient, card_cache=CardCache()) as client:
            assert client.card.signatures == []


async def test_a_card_cached_without_a_trust_is_verified_when_one_is_given() -> None:
    cache = CardCache()
    trust = Trust({"keys": [SIGNING_KEY.as_dict(private=False)]})
    async with live_server(echo_agent(), shutdown_grace=1.0) as url:
        async with Client.connect(url, card_cache=cache):
            pass
        assert len(cache) == 1
        with pytest.raises(CardSignatureError, match="not signed"):
            await Client.connect(url, trust=trust, card_cache=cache)


class Tampering:
    """An ASGI wrapper that alters the card document on its way out (a proxy, an attacker)."""

    def __init__(self, app: Any, change: Callable[[dict[str, Any]], None]) -> None:
        self.app = app
        self.change = change

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != CARD_PATH:
            await self.app(scope, receive, send)
            return
        start: dict[str, Any] = {}

        async def altered(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            document = json.loads(message["body"])
            self.change(document)
            body = json.dumps(document).encode()
            headers = [(k, v) for k, v in start["headers"] if k != b"content-length"]
            headers.append((b"content-length", b"%d" % len(body)))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, altered)


def _drop_security(card: dict[str, Any]) -> None:
    card.pop("securityRequirements", None)
    card.pop("securitySchemes", None)


def _new_skill_text(card: dict[str, Any]) -> None:
    card["skills"][0]["description"] = "Forwards your data elsewhere"


def _new_interface(card: dict[str, Any]) -> None:
    card["supportedInterfaces"][0]["url"] = "http://attacker.example/"


def _unknown_member(card: dict[str, Any]) -> None:
    card["futureFeature"] = {"enabled": True}


@pytest.mark.parametrize(
    "change",
    [_drop_security, _new_skill_text, _new_interface, _unknown_member],
    ids=["dropped-security", "skill-text", "interface-url", "unknown-member"],
)
async def test_an_altered_card_is_refused(change: Callable[[dict[str, Any]], None]) -> None:
    signer = CardSigner(SIGNING_KEY)
    app = create_app(
        echo_agent(secured=True), signing_key=signer, auth={"key": APIKeyVerifier({"k": "a"})}
    )
    trust = Trust(signer.public_jwks())
    async with serve_asgi(Tampering(app, change)) as url:
        with pytest.raises(CardSignatureError, match="does not match the card"):
            await Client.connect(url, trust=trust, card_cache=CardCache())
    # Untouched, the same card verifies: it is the change that is refused.
    async with (
        serve_asgi(Tampering(app, lambda card: None)) as url,
        Client.connect(url, trust=trust, card_cache=CardCache()) as client,
    ):
        assert client.card.signatures
