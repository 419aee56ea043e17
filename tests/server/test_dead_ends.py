"""Dead ends of the public API, each now done with the public API only.

Every one of these once forced a private import or a workaround on agents written against
peerwire: push settings and the resolver types, a message skill choosing its error, a bare
"still working" update, ``on_cancel`` on the time limit, deriving the extended card from the
public one, awaiting ``list_tasks``, and a clear word when gRPC's port is taken. Validators
(refusing before a task exists) are in test_dead_ends_validation.py. Nothing here imports
from a private module.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
import textwrap
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
import pytest
import pytest_asyncio

from peerwire import (
    Agent,
    AgentCard,
    Message,
    Part,
    PushSettings,
    Role,
    Task,
    TaskContext,
    TaskState,
    TaskStatusUpdateEvent,
)
from peerwire.client import CardCache, Client, TaskListing
from peerwire.errors import (
    ContentTypeNotSupportedError,
    InternalError,
    InvalidParamsError,
    TaskNotCancelableError,
)
from peerwire.httpd import CannotListenError
from peerwire.security import APIKeyVerifier, Principal
from peerwire.server import (
    Resolver,
    UnresolvableHost,
    WebhookGuard,
    WebhookRefused,
    system_resolver,
)
from peerwire.testing import live_server
from peerwire.types import (
    AgentSkill,
    APIKeySecurityScheme,
    Binding,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

from ._webhook import Receiver, receiving

pytestmark = pytest.mark.asyncio(loop_scope="module")

BINDINGS = pytest.mark.parametrize(
    "binding", [Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC], ids=["jsonrpc", "rest", "grpc"]
)
WAIT_S = 20.0
TIME_LIMIT_S = 0.5


def connect(url: str, binding: str = Binding.JSONRPC) -> Any:
    """A client held to ``binding``, with a card cache of its own (cards die with servers):
    ``async with connect(...) as client``."""
    return Client.connect(url, bindings=[binding], card_cache=CardCache())


def reply(text: str) -> Message:
    return Message(message_id=str(uuid.uuid4()), role=Role.AGENT, parts=[Part(text=text)])


# -- the agents --------------------------------------------------------------------------------


def workbench() -> Agent:
    agent = Agent("Dead Ends")

    @agent.skill()
    async def refuse(text: str) -> Message:
        raise InvalidParamsError(f"no such term: {text}")

    @agent.skill()
    async def picky(text: str) -> Message:
        raise ContentTypeNotSupportedError("only text/x-glossary is understood")

    @agent.skill()
    async def crash(text: str) -> Message:
        raise RuntimeError("the key file /srv/secret.pem is unreadable")

    @agent.skill()
    async def heartbeat(ctx: TaskContext) -> str:
        await ctx.update()
        await ctx.update()
        await ctx.update("half way")
        return "done"

    @agent.skill()
    async def noop(text: str) -> str:
        return text

    @agent.skill()
    async def ask(ctx: TaskContext) -> str:
        answer = await ctx.ask("more?")
        return answer.text

    return agent


@dataclass
class Hooks:
    """What the time-limited agent's on_cancel hooks saw."""

    calls: list[str] = field(default_factory=list)
    started: asyncio.Event = field(default_factory=asyncio.Event)
    gate: asyncio.Event = field(default_factory=asyncio.Event)
    finished: list[str] = field(default_factory=list)


def time_limited(hooks: Hooks) -> Agent:
    agent = Agent("Slow", task_timeout=TIME_LIMIT_S)

    @agent.skill()
    async def stuck(ctx: TaskContext) -> None:
        await anyio.sleep_forever()

    @agent.on_cancel("stuck")
    async def stuck_cleanup(ctx: TaskContext) -> None:
        hooks.calls.append(ctx.task_id)

    @agent.skill()
    async def gated(ctx: TaskContext) -> None:
        await anyio.sleep_forever()

    @agent.on_cancel("gated")
    async def gated_cleanup(ctx: TaskContext) -> None:
        hooks.calls.append(ctx.task_id)
        hooks.started.set()
        await hooks.gate.wait()  # bounded: a hook gets 5 s
        hooks.finished.append(ctx.task_id)

    @agent.skill()
    async def slow_reply(text: str) -> Message:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    return agent


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def url() -> AsyncIterator[str]:
    async with live_server(workbench(), grpc_port=0, shutdown_grace=1.0) as base:
        yield base


# -- 2. a message skill chooses its error ------------------------------------------------------


@BINDINGS
async def test_a_message_skill_answers_with_the_a2a_error_it_raises(url: str, binding: str) -> None:
    async with connect(url, binding) as client:
        with pytest.raises(InvalidParamsError, match="no such term: recrod"):
            await client.send("recrod", skill="refuse")
        with pytest.raises(ContentTypeNotSupportedError, match="only text/x-glossary"):
            await client.send("x", skill="picky")
        assert await client.list_tasks(context_id="none-were-made") == []


@BINDINGS
async def test_any_other_exception_of_a_message_skill_is_internal_and_hidden(
    url: str, binding: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="peerwire"):
        async with connect(url, binding) as client:
            with pytest.raises(InternalError) as raised:
                await client.send("x", skill="crash")
    assert "secret" not in str(raised.value)
    assert "'crash' failed" in str(raised.value)
    assert "secret.pem" in caplog.text, "the server's log keeps what the caller is not told"


async def test_the_wire_rows_of_a_message_skill_error(url: str) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=WAIT_S, trust_env=False) as http:

        async def call(skill: str) -> dict[str, object]:
            message = {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_USER",
                "parts": [{"text": "x"}],
                "metadata": {"skill": skill},
            }
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": {"message": message},
            }
            response = await http.post("/", json=body, headers={"A2A-Version": "1.0"})
            error = response.json()["error"]
            assert isinstance(error, dict)
            return error

        refused = await call("refuse")
        assert refused["code"] == -32602 and refused["message"] == "no such term: x"
        assert (await call("picky"))["code"] == -32005
        crashed = await call("crash")
        assert crashed["code"] == -32603 and "secret" not in str(crashed)


# -- 3. a bare "still working" -----------------------------------------------------------------


@BINDINGS
async def test_update_without_a_message_is_a_heartbeat(url: str, binding: str) -> None:
    async with connect(url, binding) as client:
        events = [event async for event in client.stream("go", skill="heartbeat")]
    statuses = [e.status for e in events if isinstance(e, TaskStatusUpdateEvent)]
    bare = [s for s in statuses if s.state is TaskState.WORKING and s.message is None]
    # start_work's WORKING (before the skill runs), then the skill's two heartbeats.
    assert len(bare) == 3
    said = [s.message.text for s in statuses if s.message is not None]
    assert said == ["half way"]
    assert statuses[-1].state is TaskState.COMPLETED


# -- 7. await list_tasks -----------------------------------------------------------------------


async def test_list_tasks_can_be_awaited_or_iterated(url: str) -> None:
    context = f"listing-{uuid.uuid4()}"
    async with connect(url) as client:
        sent = [await client.send(f"t{i}", skill="noop", context_id=context) for i in range(5)]
        listing = client.list_tasks(context_id=context, page_size=2)
        assert isinstance(listing, TaskListing)
        everything = await listing
        assert isinstance(everything, list) and len(everything) == 5  # three pages walked
        assert {t.id for t in everything} == {t.id for t in sent if isinstance(t, Task)}
        assert await listing == everything, "awaiting again walks the pages again"
        iterated = [task.id async for task in client.list_tasks(context_id=context, page_size=2)]
        assert iterated == [t.id for t in everything]
        async for first in client.list_tasks(context_id=context, page_size=2):
            assert first.id == everything[0].id
            break


# -- 5. on_cancel runs when the time limit fires -----------------------------------------------


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def slow() -> AsyncIterator[tuple[str, Hooks]]:
    hooks = Hooks()
    async with live_server(time_limited(hooks), shutdown_grace=1.0) as base:
        yield base, hooks


async def test_the_time_limit_runs_on_cancel_once(slow: tuple[str, Hooks]) -> None:
    url, hooks = slow
    async with connect(url) as client:
        task = await client.send("x", skill="stuck")
    assert isinstance(task, Task)
    assert task.status.state is TaskState.FAILED
    assert task.status.message is not None and "time limit" in task.status.message.text
    assert hooks.calls.count(task.id) == 1


async def test_a_cancel_during_the_time_limits_hook_waits_for_it(slow: tuple[str, Hooks]) -> None:
    url, hooks = slow
    async with connect(url) as client:
        task = await client.send("x", skill="gated", return_immediately=True)
        assert isinstance(task, Task)
        with anyio.fail_after(WAIT_S):
            await hooks.started.wait()  # the time limit struck; the hook holds on
        canceling = asyncio.ensure_future(client.cancel_task(task.id))
        await asyncio.sleep(0.1)  # let the cancel reach the runner (either order ends alike)
        hooks.gate.set()
        with pytest.raises(TaskNotCancelableError, match="is TASK_STATE_FAILED"):
            await canceling
        final = await client.get_task(task.id)
    assert final.status.state is TaskState.FAILED
    assert hooks.calls.count(task.id) == 1
    assert hooks.finished == [task.id], "the hook was not cut short by the cancel"


async def test_a_message_skill_past_the_time_limit_says_so(slow: tuple[str, Hooks]) -> None:
    url, _ = slow
    async with connect(url) as client:
        with pytest.raises(InternalError, match=f"time limit of {TIME_LIMIT_S:g} s"):
            await client.send("x", skill="slow_reply")


async def test_on_cancel_is_refused_for_a_message_skill() -> None:
    agent = Agent("A")

    @agent.skill()
    async def answer(text: str) -> Message:
        return reply(text)

    async def cleanup(ctx: TaskContext) -> None:
        raise AssertionError("never runs")

    with pytest.raises(ValueError, match="message skill; it creates no task"):
        agent.on_cancel("answer")(cleanup)


# -- 6. the extended card, derived from the public one -----------------------------------------


async def test_every_a2a_type_has_a_copy_with() -> None:
    part = Part(text="a")
    assert part.replace(text="b") == Part(text="b")
    assert part.text == "a", "the original is unchanged"
    with pytest.raises(TypeError, match="no field 'nope'"):
        part.replace(nope=1)
    with pytest.raises(ValueError, match="exactly one of"):
        part.replace(url="https://example.com/x")  # checked as the constructor checks


@BINDINGS
async def test_the_extended_card_callback_gets_the_public_card(binding: str) -> None:
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

    admin = AgentSkill(id="rotate", name="rotate", description="Rotate the keys", tags=["admin"])

    def extended(principal: Principal, card: AgentCard) -> AgentCard:
        return card.replace(description=f"for {principal.id}", skills=[*card.skills, admin])

    verifier = APIKeyVerifier({"k": "alice"})
    async with (
        live_server(agent, grpc_port=0, auth={"key": verifier}, extended_card=extended) as base,
        Client.connect(
            base, bindings=[binding], card_cache=CardCache(), headers={"X-Key": "k"}
        ) as client,
    ):
        public = client.card
        mine = await client.get_extended_card()
    assert mine.description == "for alice"
    assert [s.id for s in mine.skills] == ["read", "rotate"]
    # The card as served: its interfaces carry the bound ports, gRPC's included.
    assert mine.supported_interfaces == public.supported_interfaces
    assert any(i.protocol_binding == Binding.GRPC for i in mine.supported_interfaces)


# -- 1. push settings and the resolver types ---------------------------------------------------


def completes(event: dict[str, Any]) -> bool:
    return bool(event.get("status", {}).get("state") == "TASK_STATE_COMPLETED")


async def test_push_with_a_resolver_of_your_own() -> None:
    async def resolve(host: str, port: int) -> list[str]:
        if host == "hooks.test":
            return ["127.0.0.1"]
        if host == "internal.test":
            return ["10.0.0.5"]
        if host == "nowhere.test":
            raise UnresolvableHost(f"{host} is not known here")
        return await system_resolver(host, port)

    resolver: Resolver = resolve
    settings = PushSettings(allow=("127.0.0.1",), resolver=resolver, retry_delay=0.05)
    async with (
        receiving(Receiver()) as receiver,
        live_server(workbench(), push=settings, shutdown_grace=1.0) as base,
        connect(base) as client,
    ):
        task = await client.send("x", skill="ask")
        assert isinstance(task, Task) and task.status.state is TaskState.INPUT_REQUIRED
        port = receiver.url.rsplit(":", 1)[1]
        with pytest.raises(InvalidParamsError, match=r"resolves to 10\.0\.0\.5"):
            await client.create_push_config(task.id, "http://internal.test/hook")
        with pytest.raises(InvalidParamsError, match=r"cannot be reached: nowhere\.test"):
            await client.create_push_config(task.id, "http://nowhere.test/hook")
        await client.create_push_config(task.id, f"http://hooks.test:{port}/hook")
        done = await client.send("answer", task_id=task.id)
        assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED
        await receiver.until(lambda r: any(completes(x.event) for x in r.accepted))
    hosts = {x.headers["host"] for x in receiver.accepted}
    assert hosts == {f"hooks.test:{port}"}, "delivered to the checked address, named as configured"


async def test_the_webhook_guard_on_its_own() -> None:
    async def resolve(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    with pytest.raises(WebhookRefused, match=r"127\.0\.0\.1, a loopback"):
        await WebhookGuard(resolver=resolve).resolve("http://hooks.test/x")
    target = await WebhookGuard(["127.0.0.1"], resolver=resolve).resolve("http://hooks.test/x")
    assert target.address == "127.0.0.1"
    with pytest.raises(WebhookRefused, match="scheme"):
        WebhookGuard().check_url("ftp://example.com/x")


# -- 8. gRPC's port taken ----------------------------------------------------------------------


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


async def test_a_taken_grpc_port_is_a_cannot_listen_error(taken_port: int) -> None:
    expected = f"cannot listen for gRPC on 127.0.0.1:{taken_port}: .*in use"
    with pytest.raises(CannotListenError, match=expected):
        async with live_server(workbench(), grpc_port=taken_port):
            pass


async def test_serve_says_in_one_line_that_grpc_cannot_listen(taken_port: int) -> None:
    program = textwrap.dedent(
        f"""
        from peerwire import Agent, serve
        agent = Agent("Echo")

        @agent.skill()
        async def echo(text: str) -> str:
            return text

        serve(agent, port=0, grpc_port={taken_port}, store="memory")
        """
    )
    with anyio.fail_after(60):
        done = await anyio.run_process([sys.executable, "-c", program], check=False)
    assert done.returncode == 1
    (line,) = done.stderr.decode().strip().splitlines()  # one line, no traceback
    assert line.startswith(f"peerwire: cannot listen for gRPC on 127.0.0.1:{taken_port}: ")
    assert "in use" in line
