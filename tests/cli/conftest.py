"""Fixtures for the command-line tests: real agents on loopback, and the CLI run in process.

The agents run with ``live_server`` in the test module's event loop. A command runs its own
event loop (``anyio.run``), so ``invoke`` runs it in a worker thread through typer's
``CliRunner`` while the servers keep serving; ``peerwire`` as a real subprocess is tested
separately (test_demo.py, test_subscribe.py).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass

import anyio
import pytest_asyncio
from typer.testing import CliRunner

from peerwire import Agent, Message, Role
from peerwire.cli import app
from peerwire.samples.glossary import agent as glossary_agent
from peerwire.testing import live_server
from peerwire.types import Part

from ._secured import ledger_agent, ledger_auth, vault_agent, vault_auth, vault_extended_card

SHUTDOWN_GRACE_S = 1.0
CLI_TIMEOUT = "30"


@dataclass(frozen=True)
class Ran:
    """What a command did: its exit code and what it wrote."""

    code: int
    out: str
    err: str


# The variables the commands read: unset in every test unless it sets them, so that a
# developer's own do not leak in.
PEERWIRE_VARIABLES = ("PEERWIRE_BEARER", "PEERWIRE_API_KEY", "PEERWIRE_HEADERS", "PEERWIRE_DEBUG")


async def invoke(*args: str, env: Mapping[str, str] | None = None) -> Ran:
    """Run ``peerwire ARGS`` in process (in a worker thread, see the module docstring), with
    the environment variables ``env`` set."""
    runner = CliRunner()
    environment: dict[str, str | None] = dict.fromkeys(PEERWIRE_VARIABLES)
    environment.update(env or {})
    result = await anyio.to_thread.run_sync(
        functools.partial(runner.invoke, app, list(args), env=environment, catch_exceptions=True)
    )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"peerwire {' '.join(args)} raised") from result.exception
    return Ran(code=result.exit_code, out=result.stdout, err=result.stderr)


def assert_one_error_line(ran: Ran, *fragments: str) -> None:
    """Exit 1, and stderr is one line starting 'error:' that says what went wrong."""
    assert ran.code == 1, (ran.out, ran.err)
    lines = ran.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), ran.err
    assert "Traceback" not in ran.err + ran.out
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def build_parts_agent() -> Agent:
    """An agent that does not stream and answers with a message describing what it got."""
    agent = Agent("Parts Agent", description="Describes the parts it receives", streaming=False)

    @agent.skill()
    async def describe(message: Message) -> Message:
        described = []
        for part in message.parts:
            if part.text is not None:
                described.append(f"text={part.text}")
            elif part.raw is not None:
                described.append(f"file={part.filename}|{part.media_type}|{len(part.raw)}")
            else:
                described.append(f"data={part.data}")
        skill = (message.metadata or {}).get("skill", "")
        return Message(
            message_id=f"reply-{message.message_id}",
            role=Role.AGENT,
            parts=[Part(text="; ".join(described) + f"; skill={skill}")],
        )

    return agent


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def glossary_url() -> AsyncIterator[str]:
    """The Glossary Agent, with all three bindings in its card (JSON-RPC, REST, gRPC)."""
    async with live_server(glossary_agent, grpc_port=0, shutdown_grace=SHUTDOWN_GRACE_S) as url:
        yield url


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def parts_url() -> AsyncIterator[str]:
    """The Parts Agent, over JSON-RPC and REST only (no gRPC in its card)."""
    async with live_server(build_parts_agent(), shutdown_grace=SHUTDOWN_GRACE_S) as url:
        yield url


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def vault_url() -> AsyncIterator[str]:
    """The Vault Agent (bearer token or API key; see _secured.py), on all three bindings."""
    async with live_server(
        vault_agent(),
        grpc_port=0,
        auth=vault_auth(),
        extended_card=vault_extended_card,
        shutdown_grace=SHUTDOWN_GRACE_S,
    ) as url:
        yield url


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def ledger_url() -> AsyncIterator[str]:
    """The Ledger Agent: an API key in the query string, no streaming (see _secured.py)."""
    async with live_server(
        ledger_agent(), auth=ledger_auth(), shutdown_grace=SHUTDOWN_GRACE_S
    ) as url:
        yield url
