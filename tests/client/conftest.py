"""Fixtures for the client tests: a test agent, served for real and in process, and ASGI wrappers.

The agent's skills are named by ``metadata["skill"]`` (``client.send(..., skill=...)``). The
ones that wait do so on asyncio events the test holds (``Gates``), so a test decides exactly
when the agent moves on; uvicorn runs in the test's event loop (``live_server``), which makes
that possible against a real server too.

The wrappers are plain ASGI middleware around a real peerwire app: they record what crosses
the wire, serve a different card, or cut a stream after a number of events, the way a proxy or
a broken network would. Everything else they pass through to the app unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from peerwire import Agent, Message, Role, TaskContext, create_app
from peerwire.client import Client, default_card_cache
from peerwire.server.card import CARD_PATH, EncodedCard
from peerwire.testing import live_server
from peerwire.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part

TIMEOUT_S = 30.0
SHUTDOWN_GRACE_S = 1.0


@dataclass
class Gates:
    """Events the test agent's waiting skills wait on, or set to say how far they got."""

    release: asyncio.Event = field(default_factory=asyncio.Event)
    emitted: asyncio.Event = field(default_factory=asyncio.Event)
    finish: asyncio.Event = field(default_factory=asyncio.Event)
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    started: asyncio.Event = field(default_factory=asyncio.Event)


def build_agent(gates: Gates) -> Agent:
    agent = Agent("Test Agent", description="Skills for the client tests")

    @agent.skill()
    async def echo(text: str) -> str:
        """Completes with the text as its artifact."""
        return text

    @agent.skill()
    async def data(payload: dict) -> dict:  # type: ignore[type-arg]
        """Completes with its data part, keys sorted, as a data artifact."""
        return {"got": dict(sorted(payload.items()))}

    @agent.skill(input_modes=["*/*"])  # files of any type
    async def files(message: Message) -> str:
        """Completes with a description of the file parts it received."""
        return ";".join(
            f"{p.filename}|{p.media_type}|{len(p.raw or b'')}|{p.url or ''}"
            for p in message.parts
            if p.raw is not None or p.url is not None
        )

    @agent.skill()
    async def fail(text: str) -> str:
        """Fails its task."""
        raise RuntimeError(f"cannot do {text!r}")

    @agent.skill()
    async def reply(message: Message) -> Message:
        """Answers with a direct message and creates no task."""
        return Message(
            message_id="reply-1", role=Role.AGENT, parts=[Part(text=f"re: {message.text}")]
        )

    @agent.skill()
    async def ask(ctx: TaskContext) -> str:
        """Asks for a term, then defines it."""
        answer = await ctx.ask("Which term?")
        return f"defined {answer.text}"

    @agent.skill()
    async def slow(ctx: TaskContext) -> None:
        """Works until canceled."""
        gates.started.set()
        await anyio.sleep_forever()

    @agent.skill()
    async def steps(ctx: TaskContext) -> None:
        """Streams "one", " two"; waits for ``release``; emits " three" (then ``emitted``);
        waits for ``finish``; completes (then ``finished``)."""
        await ctx.add_artifact("one", artifact_id="doc", name="doc")
        await ctx.add_artifact(" two", artifact_id="doc", append=True)
        await gates.release.wait()
        await ctx.add_artifact(" three", artifact_id="doc", append=True, last_chunk=True)
        gates.emitted.set()
        await gates.finish.wait()
        await ctx.complete("done")
        gates.finished.set()

    return agent


@pytest.fixture(autouse=True)
def _fresh_card_cache() -> None:
    # Servers of different tests may get the same port; a card must not outlive its server.
    default_card_cache.clear()


@pytest.fixture
def gates() -> Gates:
    return Gates()


@pytest.fixture
def agent(gates: Gates) -> Agent:
    return build_agent(gates)


def app_factory(agent: Agent, **options: Any) -> Callable[[str], Any]:
    def build(public_url: str) -> Any:
        return create_app(agent, public_url=public_url, shutdown_grace=SHUTDOWN_GRACE_S, **options)

    return build


@contextlib.asynccontextmanager
async def serve(app: Callable[[str], Any]) -> AsyncIterator[str]:
    """``live_server`` for an app built from its public URL (wrappers included)."""
    async with live_server(app) as url:
        yield url


@contextlib.asynccontextmanager
async def connected(
    mode: str, agent: Agent, wrap: Callable[[Any], Any] = lambda app: app, **connect: Any
) -> AsyncIterator[Client]:
    """A client of ``agent``: over a real server (``live``) or in process (``inprocess``)."""
    build = app_factory(agent)
    if mode == "live":
        async with (
            serve(lambda url: wrap(build(url))) as url,
            Client.connect(url, **connect) as client,
        ):
            yield client
    else:
        app = wrap(build("http://testserver"))
        async with running(app), Client.connect("http://testserver", app=app, **connect) as client:
            yield client


@contextlib.asynccontextmanager
async def running(app: Any) -> AsyncIterator[None]:
    """The app's lifespan, held by a task of its own.

    pytest-asyncio runs a fixture's setup and teardown in different tasks, and the runner's
    task group must be left in the task that entered it.
    """
    started, stop = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with app.lifespan():
            started.set()
            await stop.wait()

    holder = asyncio.get_running_loop().create_task(hold())
    try:
        waiting = asyncio.ensure_future(started.wait())
        try:
            with anyio.fail_after(TIMEOUT_S):
                await asyncio.wait({holder, waiting}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiting.cancel()
        if holder.done():
            holder.result()
        yield
    finally:
        stop.set()
        with anyio.CancelScope(shield=True), anyio.move_on_after(TIMEOUT_S):
            await asyncio.wait({holder})
        if holder.done() and not holder.cancelled():
            holder.result()


@pytest.fixture(params=["live", "inprocess"])
async def client(request: pytest.FixtureRequest, agent: Agent) -> AsyncIterator[Client]:
    async with connected(request.param, agent) as c:
        yield c


# -- ASGI wrappers -------------------------------------------------------------------------


class Wrapper:
    """Passes everything to ``inner``; attributes (``dispatcher``, ``lifespan``) too."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.inner(scope, receive, send)


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    status: int = 0

    @property
    def rpc(self) -> dict[str, Any]:
        return json.loads(self.body)  # type: ignore[no-any-return]


class Recorder(Wrapper):
    """Records every HTTP request (and the status answered) before passing it on."""

    def __init__(self, inner: Any, on_request: Callable[[Seen], Awaitable[None]] | None = None):
        super().__init__(inner)
        self.seen: list[Seen] = []
        self._on_request = on_request

    def calls(self, method: str | None = None) -> list[Seen]:
        """The JSON-RPC requests, optionally of one method."""
        rpc = [s for s in self.seen if s.method == "POST" and s.path == "/"]
        return [s for s in rpc if method is None or s.rpc.get("method") == method]

    def card_requests(self) -> list[Seen]:
        return [s for s in self.seen if s.path == CARD_PATH]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        seen = Seen(
            scope["method"],
            scope["path"],
            {k.decode().lower(): v.decode() for k, v in scope["headers"]},
            b"".join(chunks),
        )
        self.seen.append(seen)
        if self._on_request is not None:
            await self._on_request(seen)
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": seen.body, "more_body": False}
            return await receive()

        async def record(message: Any) -> None:
            if message["type"] == "http.response.start":
                seen.status = message["status"]
            await send(message)

        await self.inner(scope, replay, record)


class CardServer(Wrapper):
    """Serves ``card`` (mutable) at the well-known path, with ETag and Cache-Control."""

    def __init__(self, inner: Any, card: AgentCard, cache_control: str | None = None) -> None:
        super().__init__(inner)
        self.card = card
        self.cache_control = cache_control

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != CARD_PATH:
            await self.inner(scope, receive, send)
            return
        encoded = EncodedCard.of(self.card, max_age=60)
        headers = encoded.headers()
        if self.cache_control is not None:
            headers = [(k, v) for k, v in headers if k != b"cache-control"]
            headers.append((b"cache-control", self.cache_control.encode()))
        if_none_match = dict(scope["headers"]).get(b"if-none-match")
        if encoded.matches(if_none_match):
            await send({"type": "http.response.start", "status": 304, "headers": headers[1:]})
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": encoded.body})


class _Cut(Exception):
    """Unwinds the wrapped app after its stream was cut."""


class StreamCutter(Wrapper):
    """Cuts SSE responses after ``after`` events: the first ``streams`` of them (0: all).

    ``before_cut`` runs first (the agent may move on meanwhile; nothing more reaches this
    client on this connection). ``abrupt`` drops the connection without ending the response,
    as a network failure would; otherwise the response ends early but properly.
    ``on_later_stream`` runs once the first event of a stream that is not cut has been sent.
    """

    def __init__(
        self,
        inner: Any,
        after: int,
        *,
        streams: int = 1,
        abrupt: bool = False,
        before_cut: Callable[[], Awaitable[None]] | None = None,
        on_later_stream: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        super().__init__(inner)
        self.after = after
        self.streams = streams
        self.abrupt = abrupt
        self.before_cut = before_cut
        self.on_later_stream = on_later_stream
        self.cuts = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        if self.streams and self.cuts >= self.streams:
            await self.inner(scope, receive, self._watching(send))
            return
        events = 0
        cut = False

        async def cutting(message: Any) -> None:
            nonlocal events, cut
            if cut:
                raise _Cut
            await send(message)
            if _is_event(message):
                events += 1
                if events == self.after:
                    cut = True
                    self.cuts += 1
                    if self.before_cut is not None:
                        await self.before_cut()
                    if not self.abrupt:
                        await send({"type": "http.response.body", "body": b"", "more_body": False})
                    raise _Cut

        try:
            await self.inner(scope, receive, cutting)
        except _Cut:
            if self.abrupt:
                raise RuntimeError("connection dropped by the test") from None

    def _watching(self, send: Any) -> Any:
        told = False

        async def watching(message: Any) -> None:
            nonlocal told
            await send(message)
            if not told and _is_event(message) and self.on_later_stream is not None:
                told = True
                await self.on_later_stream()

        return watching


def _is_event(message: Any) -> bool:
    return message["type"] == "http.response.body" and message.get("body", b"").startswith(b"data:")


# -- a scripted peer -------------------------------------------------------------------------


class ScriptedPeer:
    """A stand-in for a remote agent that answers exactly what a test scripts.

    For what no conforming server would send (garbage, wrong ids, odd statuses) and for
    operations the peerwire server does not offer yet (push configs, the extended card).
    ``card`` is served at the well-known path; each JSON-RPC POST is answered by
    ``answer(request) -> (status, headers, body chunks)``.
    """

    def __init__(
        self,
        card: AgentCard,
        answer: Callable[[dict[str, Any]], tuple[int, list[tuple[bytes, bytes]], list[bytes]]],
    ) -> None:
        self.card = card
        self.answer = answer
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope["path"] == CARD_PATH:
            encoded = EncodedCard.of(self.card)
            await send({"type": "http.response.start", "status": 200, "headers": encoded.headers()})
            await send({"type": "http.response.body", "body": encoded.body})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        request = json.loads(body)
        self.requests.append(request)
        self.headers.append({k.decode().lower(): v.decode() for k, v in scope["headers"]})
        status, headers, chunks = self.answer(request)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


JSON = [(b"content-type", b"application/json")]
SSE = [(b"content-type", b"text/event-stream")]


def result(request: dict[str, Any], value: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": value}).encode()


def error(request: dict[str, Any], code: int, message: str, **extra: Any) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": request["id"],
            "error": {"code": code, "message": message, **extra},
        }
    ).encode()


def peer_card(url: str = "http://peer/", **capabilities: Any) -> AgentCard:
    """A minimal card with one JSON-RPC interface at ``url``."""
    return AgentCard(
        name="Scripted peer",
        description="Answers what the test scripts",
        version="1",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(**capabilities),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="s", name="s", description="s", tags=["t"])],
    )
