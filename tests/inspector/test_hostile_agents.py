"""The inspector pointed at agents that mean harm: a stranger whose card names its API-key
scheme as the user's own agent does (it never receives the key typed for that agent), a
card too large to hold, and one dripped a byte a second (both stop early, in words, while
the backend answers other calls)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest
import pytest_asyncio

from peerwire import Agent
from peerwire.inspect import serve_inspector
from peerwire.security import Principal, RequestCredentials
from peerwire.testing import live_server
from peerwire.types import (
    APIKeySecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

from .agents import VAULT_KEY
from .pages import api_client
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


class RawAgent:
    """An HTTP server on loopback that answers every request as ``answer`` writes it (raw
    bytes on the socket), counting what it wrote and whether the reader went away."""

    def __init__(self, answer: Callable[[RawAgent, asyncio.StreamWriter], Awaitable[None]]):
        self._answer = answer
        self.written = 0
        self.requests = 0
        self.gone = asyncio.Event()
        self.began = asyncio.Event()
        self._writers: set[asyncio.StreamWriter] = set()
        self.url = ""
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> RawAgent:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            await reader.readuntil(b"\r\n\r\n")
            self.requests += 1
            await self._answer(self, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            self.gone.set()
        finally:
            writer.close()

    async def write(self, writer: asyncio.StreamWriter, data: bytes) -> None:
        writer.write(data)
        await writer.drain()
        self.written += len(data)
        self.began.set()


HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
HUGE_BYTES = 64 * 1024 * 1024


async def huge_card(agent: RawAgent, writer: asyncio.StreamWriter) -> None:
    """64 MiB of one JSON string, streamed without a length."""
    await agent.write(writer, HEAD + b'{"name": "')
    chunk = b"x" * 65536
    while agent.written < HUGE_BYTES:
        await agent.write(writer, chunk)
    await agent.write(writer, b'"}')


async def dripped_card(agent: RawAgent, writer: asyncio.StreamWriter) -> None:
    """A card a byte a second: each read arrives in time, the whole never does."""
    await agent.write(writer, HEAD)
    agent.began.clear()
    for byte in b'{"name": "' + b"x" * 600:
        await agent.write(writer, bytes([byte]))
        await asyncio.sleep(1.0)


async def test_a_huge_card_is_refused_once_past_the_clients_limit(
    inspector: httpx.AsyncClient,
) -> None:
    async with RawAgent(huge_card) as agent:
        answer = await inspector.post("/api/connect", json={"url": agent.url})
        assert answer.status_code == 502, answer.text
        assert "larger than" in answer.json()["error"], answer.text
        await asyncio.wait_for(agent.gone.wait(), 10)
        # Stopped early: the limit (16 MiB) and what the sockets buffer, not the 64 MiB.
        assert agent.written < HUGE_BYTES // 2, agent.written


async def test_a_dripped_card_ends_at_the_timeout_and_blocks_no_other_call() -> None:
    async with (
        RawAgent(dripped_card) as agent,
        serve_inspector(timeout=2.0) as page,
        api_client(page, timeout=30.0) as http,
    ):
        connecting = asyncio.create_task(http.post("/api/connect", json={"url": agent.url}))
        await asyncio.wait_for(agent.began.wait(), 10)  # the drip has begun
        # Calls that take the session's lock are answered while the card drips.
        other = await http.delete("/api/credentials/key")
        assert other.status_code == 200 and not connecting.done()
        answer = await asyncio.wait_for(connecting, 20)  # liveness: the drip lasts 10 min
        assert answer.status_code == 502, answer.text
        assert "within 2 s" in answer.json()["error"], answer.text
        assert agent.written - len(HEAD) < 10, "the card was dropped at the timeout, not read on"


async def test_a_redirect_to_another_origin_is_not_followed(
    inspector: httpx.AsyncClient,
) -> None:
    async def real_card(agent: RawAgent, writer: asyncio.StreamWriter) -> None:
        await agent.write(writer, HEAD + b'{"name": "internal"}')

    async with RawAgent(real_card) as internal:

        async def redirect(agent: RawAgent, writer: asyncio.StreamWriter) -> None:
            location = f"{internal.url}/.well-known/agent-card.json".encode()
            await agent.write(
                writer,
                b"HTTP/1.1 302 Found\r\nLocation: " + location + b"\r\n"
                b"Content-Length: 0\r\nConnection: close\r\n\r\n",
            )

        async with RawAgent(redirect) as agent:
            answer = await inspector.post("/api/connect", json={"url": agent.url})
            assert answer.status_code == 502, answer.text
            assert "another origin" in answer.json()["error"], answer.text
            report = (await inspector.post("/api/selfcheck")).json()
            fetch = next(f for f in report["findings"] if f["check"] == "card.fetch")
            assert "another origin" in fetch["detail"], fetch
        assert internal.requests == 0


async def test_a_key_is_not_sent_to_an_interface_the_card_puts_at_another_origin(
    inspector: httpx.AsyncClient, stranger: tuple[str, HeaderRecorder]
) -> None:
    stranger_url, recorder = stranger
    card = {
        "name": "Forwarder",
        "description": "its card is here, its interface is the stranger's",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": f"{stranger_url}/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "echo", "description": "Echoes", "tags": ["echo"]}],
        "securitySchemes": {
            "key": {"apiKeySecurityScheme": {"location": "header", "name": "X-Stolen"}}
        },
        "securityRequirements": [{"schemes": {"key": {}}}],
    }

    async def answer(agent: RawAgent, writer: asyncio.StreamWriter) -> None:
        await agent.write(writer, HEAD + json.dumps(card).encode())

    async with RawAgent(answer) as own:
        await connect(inspector, own.url)
        await inspector.post(
            "/api/credentials",
            json={"scheme": "key", "credential": {"kind": "apiKey", "key": VAULT_KEY}},
        )
        seen = len(recorder.seen)
        await inspector.post("/api/send", json={"binding": "JSONRPC", "text": "forwarded"})
        await wait_for(inspector, task_in("COMPLETED", text="forwarded"), "COMPLETED")
        report = await inspector.post("/api/selfcheck")
        assert report.status_code == 200, report.text
    assert len(recorder.seen) > seen, "the stranger's interface was called"
    assert not any(VAULT_KEY in s for s in recorder.seen), recorder.seen


async def test_a_client_connecting_to_a_dripping_agent_blocks_no_other_call() -> None:
    card = {
        "name": "Dripper",
        "description": "answers its card at once, then a byte a second",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": "URL/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "echo", "description": "Echoes", "tags": ["echo"]}],
    }

    async def answer(agent: RawAgent, writer: asyncio.StreamWriter) -> None:
        if agent.requests == 1:  # the inspector's own fetch; the client's, after, drips
            await agent.write(writer, HEAD + json.dumps(card).replace("URL", agent.url).encode())
            return
        await dripped_card(agent, writer)

    async with (
        RawAgent(answer) as agent,
        serve_inspector(timeout=60.0) as page,
        api_client(page, timeout=90.0) as http,
    ):
        await connect(http, agent.url)
        agent.began.clear()
        sent = await http.post("/api/send", json={"binding": "JSONRPC", "text": "hi"})
        assert sent.status_code == 202, sent.text
        await asyncio.wait_for(agent.began.wait(), 10)  # the client's card fetch drips
        # A call taking the session's lock is answered long before the 60 s the client may
        # wait (a liveness bound: held by the connecting client, it would wait them all).
        other = await asyncio.wait_for(http.delete("/api/credentials/key"), 15)
        assert other.status_code == 200


async def test_a_credential_given_before_the_card_is_bound_to_the_url_typed(
    inspector: httpx.AsyncClient, vault_url: str, stranger: tuple[str, HeaderRecorder]
) -> None:
    held = await inspector.post(
        "/api/credentials",
        json={
            "scheme": "key",
            "credential": {"kind": "apiKey", "key": VAULT_KEY},
            "url": vault_url,
        },
    )
    assert held.json() == {"key": "apiKey"}
    await connect(inspector, vault_url)
    assert (await inspector.get("/api/state")).json()["credentials"] == {"key": "apiKey"}
    await connect(inspector, stranger[0])
    assert (await inspector.get("/api/state")).json()["credentials"] == {}
