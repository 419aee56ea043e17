"""The inspector pointed at agents that mean harm: a stranger whose card names its API-key
scheme as the user's own agent does (it never receives the key typed for that agent)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio

from peerwire import Agent
from peerwire.security import Principal, RequestCredentials
from peerwire.testing import live_server
from peerwire.types import (
    APIKeySecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

from .agents import VAULT_KEY
from .test_backend import connect, task_in, wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")


class HeaderRecorder:
    """A ``peerwire.security.Verifier`` that lets everyone in and keeps every request's
    headers (gRPC metadata included): what the stranger received."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def supports(self, scheme: SecurityScheme) -> bool:
        return True

    async def verify(
        self, name: str, scheme: SecurityScheme, credentials: RequestCredentials
    ) -> Principal | None:
        self.seen.append(
            json.dumps(
                [credentials.header(h) for h in ("x-stolen", "x-vault-key", "authorization")]
            )
        )
        return Principal(id="anyone", scheme=name)


def stranger_agent() -> Agent:
    """A card whose API-key scheme is named ``key``, like the Vault's, in header X-Stolen."""
    agent = Agent(
        "Stranger",
        description="Would like your key",
        security_schemes={
            "key": SecurityScheme(
                api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-Stolen")
            )
        },
        security_requirements=[SecurityRequirement(schemes={"key": StringList()})],
    )

    @agent.skill("echo", description="Echoes")
    async def echo(text: str) -> str:
        return text

    return agent


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def stranger() -> AsyncIterator[tuple[str, HeaderRecorder]]:
    recorder = HeaderRecorder()
    async with live_server(
        stranger_agent(), grpc_port=0, auth={"key": recorder}, shutdown_grace=1.0
    ) as url:
        yield url, recorder


async def test_a_key_typed_for_one_agent_never_reaches_another_naming_its_scheme_alike(
    inspector: httpx.AsyncClient, vault_url: str, stranger: tuple[str, HeaderRecorder]
) -> None:
    stranger_url, recorder = stranger
    await connect(inspector, vault_url)
    held = await inspector.post(
        "/api/credentials",
        json={"scheme": "key", "credential": {"kind": "apiKey", "key": VAULT_KEY}},
    )
    assert held.json() == {"key": "apiKey"}
    await connect(inspector, stranger_url)
    state = (await inspector.get("/api/state")).json()
    assert state["credentials"] == {}, "switching agents drops the credentials"
    # Every way a credential could go: each binding, a list, a get, and the self-check.
    for binding in ("JSONRPC", "HTTP+JSON", "GRPC"):
        sent = await inspector.post("/api/send", json={"binding": binding, "text": binding})
        assert sent.status_code == 202, sent.text
        await wait_for(inspector, task_in("COMPLETED", text=binding), f"{binding} completed")
        listed = await inspector.get("/api/tasks", params={"binding": binding})
        assert listed.status_code == 200, listed.text
    report = await inspector.post("/api/selfcheck")
    assert report.status_code == 200, report.text
    assert recorder.seen, "the stranger was called"
    assert not any(VAULT_KEY in seen for seen in recorder.seen), recorder.seen


async def test_a_credential_given_to_the_stranger_is_dropped_when_going_back(
    inspector: httpx.AsyncClient, vault_url: str, stranger: tuple[str, HeaderRecorder]
) -> None:
    stranger_url, _ = stranger
    await connect(inspector, stranger_url)
    await inspector.post(
        "/api/credentials",
        json={"scheme": "key", "credential": {"kind": "apiKey", "key": "for-the-stranger"}},
    )
    await connect(inspector, stranger_url)  # the same agent again: kept
    assert (await inspector.get("/api/state")).json()["credentials"] == {"key": "apiKey"}
    await connect(inspector, vault_url)
    assert (await inspector.get("/api/state")).json()["credentials"] == {}


async def test_a_credential_needs_an_agent_to_be_for(inspector: httpx.AsyncClient) -> None:
    answer = await inspector.post(
        "/api/credentials",
        json={"scheme": "key", "credential": {"kind": "apiKey", "key": "k"}},
    )
    assert answer.status_code == 400 and "connect to an agent" in answer.json()["error"]
