"""Each official SDK client fetches a peerwire agent's card, reads it and uses it.

What they send for the card (measured, and checked here on every run): a2a-sdk 1.3.0 and
0.3.26 send the same request (no ``A2A-Version``, ``Accept: */*``), @a2a-js/sdk 1.3.0 sends
``A2A-Version: 1.0``, @a2a-js/sdk 0.3 sends none; all four GET /.well-known/agent-card.json.
So the 1.0 card goes to a caller naming 1.x, and the dual card, which all three others read
(a2a-sdk 1.x reads its 1.0 members and talks 1.0), to the rest (docs/COMPATIBILITY.md, "The
card"). Each form's signature holds for the SDKs' verifiers of the form they get: a2a-sdk
1.x's (either form), @a2a-js 1.x's (the 1.0 card).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import httpx
import pytest
from joserfc.jwk import ECKey

from peerwire import create_app
from peerwire.samples.glossary import agent
from peerwire.security import CardSigner
from peerwire.server.card import CARD_PATH
from peerwire.testing import live_server

from . import v03_harness as v03
from .js_env import js_peer_ready, node
from .sdk_harness import SDK_PEER_DIR, _peer_env, run_sdk_client

pytestmark = pytest.mark.interop

TIMEOUT_S = 60
KEY = ECKey.generate_key("P-256", parameters={"kid": "card-1"})
COMPLETED = ("TASK_STATE_COMPLETED", "completed")


class Seen(NamedTuple):
    version: str | None  # the A2A-Version header of a card request
    accept: str | None


class CardRequests:
    """ASGI middleware noting the headers of every card request before the app answers it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[Seen] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == CARD_PATH:
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            self.seen.append(Seen(headers.get("a2a-version"), headers.get("accept")))
        await self.app(scope, receive, send)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.app, name)  # what live_server reads of the app (its dispatcher)


class Peerwire(NamedTuple):
    url: str
    requests: CardRequests


@pytest.fixture
async def peerwire() -> AsyncIterator[Peerwire]:
    wrapped: list[CardRequests] = []

    def build(url: str) -> Any:
        app = create_app(agent, public_url=url, signing_key=CardSigner(KEY), grpc_port=0)
        wrapped.append(CardRequests(app))
        return wrapped[-1]

    async with live_server(build) as url:
        yield Peerwire(url, wrapped[0])


def js1_client(url: str, binding: str, scenario: str, *extra: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [node(), "client.js", "--url", url, "--binding", binding, "--scenario", scenario, *extra],
        cwd=js_peer_ready(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=_peer_env(),
    )
    assert done.stdout.strip(), done.stderr[-4000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def run(client: str, url: str, binding: str, scenario: str) -> list[dict[str, Any]]:
    if client == "a2a-sdk 1.x":
        return run_sdk_client(url, binding, scenario)
    if client == "@a2a-js 1.x":
        return js1_client(url, binding, scenario)
    sdk = "a2a-sdk" if client == "a2a-sdk 0.3" else "a2a-js"
    return v03.run_client(sdk, url, binding, scenario)


def the(lines: list[dict[str, Any]], op: str) -> dict[str, Any]:
    errors = [line["error"] for line in lines if "error" in line]
    assert not errors, errors
    [line] = [line for line in lines if line.get("op") == op]
    return line


def state_of(sent: dict[str, Any]) -> str:
    result = sent.get("result", sent.get("response"))
    assert isinstance(result, dict), sent
    task = result.get("task", result)
    return str(task["status"]["state"])


CLIENTS = {
    # client: (the A2A-Version it sends for the card, the protocol version it then talks)
    "a2a-sdk 1.x": (None, "1.0"),
    "a2a-sdk 0.3": (None, "0.3"),
    "@a2a-js 1.x": ("1.0", "1.0"),
    "@a2a-js 0.3": (None, "0.3"),
}


@pytest.mark.parametrize("client", list(CLIENTS))
async def test_their_client_reads_and_uses_our_card(client: str, peerwire: Peerwire) -> None:
    version, talks = CLIENTS[client]
    lines = await anyio.to_thread.run_sync(lambda: run(client, peerwire.url, "jsonrpc", "card"))
    card = the(lines, "card")["card"]
    assert card["name"] == "Glossary Agent"
    if talks == "1.0":
        versions = {i["protocolBinding"]: i["protocolVersion"] for i in card["supportedInterfaces"]}
        assert versions == {"JSONRPC": "1.0", "HTTP+JSON": "1.0", "GRPC": "1.0"}
    else:
        assert card["protocolVersion"] == "0.3.0" and card["url"] == peerwire.url + "/"
    sent = await anyio.to_thread.run_sync(lambda: run(client, peerwire.url, "jsonrpc", "send"))
    assert state_of(the(sent, "send")) in COMPLETED
    assert {seen.version for seen in peerwire.requests.seen} == {version}


@pytest.mark.parametrize("binding", ["rest", "grpc"])
async def test_the_js_1_x_client_uses_the_1_0_card_on_every_binding(
    binding: str, peerwire: Peerwire
) -> None:
    sent = await anyio.to_thread.run_sync(lambda: js1_client(peerwire.url, binding, "send"))
    assert state_of(the(sent, "send")) in COMPLETED


def sdk_verifies(python: Path, card: dict[str, Any]) -> dict[str, Any]:
    request = {
        "op": "verify",
        "card": card,
        "jwks": {"keys": [KEY.as_dict(private=False)]},
        "algorithms": ["ES256"],
    }
    done = subprocess.run(
        [str(python), str(SDK_PEER_DIR / "sdk_card_signing.py")],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=_peer_env(),
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout)  # type: ignore[no-any-return]


async def test_a2a_sdk_verifies_each_form_it_may_get(sdk_python: Path, peerwire: Peerwire) -> None:
    async with httpx.AsyncClient(trust_env=False) as http:
        dual = (await http.get(peerwire.url + CARD_PATH)).json()
        v1 = (await http.get(peerwire.url + CARD_PATH, headers={"A2A-Version": "1.0"})).json()
    assert "url" in dual and "url" not in v1
    verdicts = [
        await anyio.to_thread.run_sync(sdk_verifies, sdk_python, card) for card in (dual, v1)
    ]
    assert verdicts == [{"ok": True}, {"ok": True}]


async def test_the_js_1_x_client_verifies_the_1_0_card(peerwire: Peerwire) -> None:
    jwk = json.dumps(KEY.as_dict(private=False))
    lines = await anyio.to_thread.run_sync(
        lambda: js1_client(peerwire.url, "jsonrpc", "verify", "--jwk", jwk)
    )
    assert the(lines, "verify")["ok"] is True
    assert {seen.version for seen in peerwire.requests.seen} == {"1.0"}
