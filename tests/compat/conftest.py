"""Fixtures for the A2A 0.3 compatibility tests: an agent served for real, and a 0.3-only card.

``served`` runs the agent (push offered to loopback webhooks) with ``live_server`` and yields
its base URL; ``served_v03_only`` does the same behind ``V03CardOnly``, which serves the card
as a 0.3 agent would (``compat.v03.card.card_to_v03``: no ``supportedInterfaces``), so a
peerwire client talking to it speaks 0.3 end to end. Everything else passes to the app.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
from collections.abc import AsyncIterator, Callable, Collection
from typing import Any

import anyio
import httpx
import pytest

from peerwire import Agent, Message, TaskContext, create_app
from peerwire.bindings.sse import SSEParser
from peerwire.client import CardCache, Client
from peerwire.compat.v03.card import card_to_v03
from peerwire.compat.v03.jsonrpc import is_v03_method
from peerwire.server import PushSettings
from peerwire.server.card import CARD_PATH
from peerwire.testing import live_server
from peerwire.types import Binding, encode

TIMEOUT_S = 30.0
WEBHOOK = "http://127.0.0.1:9/hook"  # never called: configs go on finished tasks
_ids = itertools.count(1)


class Gate:
    """What the ``slow`` skill waits on: it has started; the test lets it finish."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()


def build_agent(gate: Gate, **options: Any) -> Agent:
    """The test agent; ``options`` go to ``Agent`` (security schemes, say)."""
    agent = Agent("Compat Agent", description="Skills for the 0.3 compatibility tests", **options)

    @agent.skill()
    async def echo(text: str) -> str:
        """Completes with the text as its artifact."""
        return text

    @agent.skill(input_modes=["*/*"])  # takes files of any type
    async def inspect(message: Message) -> dict[str, Any]:
        """Completes with a data artifact describing the parts it received."""
        return {
            "parts": [
                {
                    "kind": p.kind,
                    "mediaType": p.media_type,
                    "filename": p.filename,
                    "raw": base64.b64encode(p.raw).decode() if p.raw is not None else None,
                    "url": p.url,
                    "data": None if p.kind != "data" else p.data,
                    "text": p.text,
                }
                for p in message.parts
            ]
        }

    @agent.skill()
    async def ask(ctx: TaskContext) -> str:
        """Asks for a term (INPUT_REQUIRED), then defines it."""
        answer = await ctx.ask("Which term?")
        return f"defined {answer.text}"

    @agent.skill()
    async def slow(ctx: TaskContext) -> str:
        """Works until released (or canceled)."""
        gate.started.set()
        await gate.release.wait()
        return "released"

    return agent


def app_options(**options: Any) -> dict[str, Any]:
    return {"push": PushSettings(allow=("127.0.0.1",)), "shutdown_grace": 1.0, **options}


class V03CardOnly:
    """Serves the app's card as a 0.3 agent would (its endpoint among ``bindings``), and
    records what each request asked for: ``(path, JSON-RPC method or "", A2A-Version)``."""

    def __init__(self, inner: Any, bindings: Collection[str] | None) -> None:
        self.inner = inner
        self.bindings = bindings
        self.seen: list[tuple[str, str, str]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != CARD_PATH:
            if scope["type"] == "http":
                receive = await self._record(scope, receive)
            await self.inner(scope, receive, send)
            return
        body = encode(card_to_v03(self.inner.dispatcher.card(), self.bindings))
        headers = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _record(self, scope: Any, receive: Any) -> Any:
        messages = [await receive()]
        while messages[-1].get("more_body", False):
            messages.append(await receive())
        body = b"".join(m.get("body", b"") for m in messages)
        method = ""
        if scope["path"] == "/" and body:
            method = str(json.loads(body).get("method", ""))
        version = dict(scope["headers"]).get(b"a2a-version", b"").decode()
        self.seen.append((scope["path"], method, version))
        replay = iter(messages)

        async def replayed() -> Any:
            return next(replay, None) or await receive()

        return replayed


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
def agent(gate: Gate) -> Agent:
    return build_agent(gate)


@contextlib.asynccontextmanager
async def serving(
    agent: Agent,
    *,
    v03_card: Collection[str] | None = None,
    apps: list[Any] | None = None,
    wrap: Callable[[Any], Any] = lambda app: app,
    **options: Any,
) -> AsyncIterator[str]:
    """The agent on loopback; ``v03_card``: serve a 0.3-only card naming these bindings
    (the ``V03CardOnly`` wrapper is appended to ``apps``); ``wrap`` puts ASGI middleware
    around the app (inside that wrapper)."""

    def build(url: str) -> Any:
        app = wrap(create_app(agent, public_url=url, **app_options(**options)))
        if v03_card is None:
            return app
        wrapped = V03CardOnly(app, v03_card)
        if apps is not None:
            apps.append(wrapped)
        return wrapped

    async with live_server(build) as url:
        yield url


@contextlib.asynccontextmanager
async def client_v03(
    agent: Agent, binding: str, wrap: Callable[[Any], Any] = lambda app: app
) -> AsyncIterator[Client]:
    """A peerwire client speaking 0.3 over ``binding`` to a peerwire server (``wrap``ped);
    on exit, every request it sent is checked to have been a 0.3 one."""
    apps: list[V03CardOnly] = []
    async with (
        serving(agent, v03_card=(binding,), apps=apps, wrap=wrap) as url,
        Client.connect(url, card_cache=CardCache()) as client,
    ):
        assert client.interface.protocol_version == "0.3"
        assert client.interface.protocol_binding == binding
        yield client
    [app] = apps
    assert app.seen, "the client sent nothing"
    for path, method, version in app.seen:
        assert version == "0.3", (path, method, version)
        if binding == Binding.JSONRPC:
            assert path == "/" and is_v03_method(method), (path, method)
        else:
            assert path.startswith("/rest/v1/"), path


BINDINGS = pytest.mark.parametrize("binding", [Binding.JSONRPC, Binding.HTTP_JSON])


# -- raw 0.3 wire ----------------------------------------------------------------------------


def v03_message(text: str = "hello", **fields: Any) -> dict[str, Any]:
    """A 0.3 user message as the official 0.3 SDKs send it over JSON-RPC."""
    message: dict[str, Any] = {
        "kind": "message",
        "messageId": f"m03-{next(_ids)}",
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
    }
    message.update(fields)
    return message


def proto_message(text: str = "hello", **fields: Any) -> dict[str, Any]:
    """A 0.3 user message as the 0.3 SDKs send it over HTTP+JSON (the 0.3 proto's JSON)."""
    message: dict[str, Any] = {
        "messageId": f"p03-{next(_ids)}",
        "role": "ROLE_USER",
        "content": [{"text": text}],
    }
    message.update(fields)
    return message


def rpc(method: str, params: Any = None, request_id: Any = 1) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        body["params"] = params
    return body


class Wire:
    """Raw HTTP to one server: what a test asserts is exactly what crossed the wire."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url

    async def call(self, method: str, params: Any = None, **headers: str) -> dict[str, Any]:
        response = await self.http.post(self.url + "/", json=rpc(method, params), headers=headers)
        assert response.headers["content-type"] == "application/json"
        answer: dict[str, Any] = response.json()
        assert answer["jsonrpc"] == "2.0" and answer["id"] == 1
        return answer

    async def result(self, method: str, params: Any = None) -> Any:
        answer = await self.call(method, params)
        assert "error" not in answer, answer
        return answer["result"]

    async def events(self, method: str, params: Any, *, limit: int = 20) -> list[dict[str, Any]]:
        """The results of a 0.3 JSON-RPC stream, to its end."""
        body = rpc(method, params)
        found: list[dict[str, Any]] = []
        for data in await self.sse("POST", "/", json=body, limit=limit):
            envelope = json.loads(data)
            assert envelope["id"] == 1
            found.append(envelope.get("result", envelope))
        return found

    async def sse(self, verb: str, path: str, *, limit: int = 20, **kwargs: Any) -> list[bytes]:
        """The ``data`` of each event of an SSE response, to its end (at most ``limit``)."""
        parser = SSEParser()
        found: list[bytes] = []
        with anyio.fail_after(TIMEOUT_S):
            async with self.http.stream(verb, self.url + path, **kwargs) as response:
                assert response.status_code == 200, await response.aread()
                assert response.headers["content-type"] == "text/event-stream"
                async for chunk in response.aiter_raw():
                    found.extend(parser.feed(chunk))
                    assert len(found) <= limit
        return found


@contextlib.asynccontextmanager
async def wire(agent: Agent, **options: Any) -> AsyncIterator[Wire]:
    async with (
        serving(agent, **options) as url,
        httpx.AsyncClient(trust_env=False, timeout=TIMEOUT_S) as http,
    ):
        yield Wire(http, url)
