"""App state: ``Agent(lifespan=...)`` opens what skills share once per process and closes it
on shutdown (peerwire.server.app_state).

On real servers: peerwire's own and uvicorn (``live_server``), mounted in Starlette and
FastAPI on uvicorn, a ``peerwire serve`` subprocess stopped by SIGTERM, and a ``peerwire
worker`` beside a server that runs no tasks itself (PostgreSQL and Redis, a schema and prefix
of its own), each recording what its lifespan did to a file. A skill gets the state by
annotation (task and message skills) and an executor through ``ctx.app_state``; the state
is entered once however many tasks ran, exited after a handler raised, and a lifespan that
fails to start fails the start with ``LifespanStartError`` naming the agent and the cause.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from starlette.applications import Starlette
from starlette.routing import Mount

from peerwire import Agent, Client, Message, TaskContext, TaskState, create_app
from peerwire.errors import ServerBusyError
from peerwire.server import AppStateUnavailableError, LifespanStartError
from peerwire.testing import live_server
from peerwire.types import Part, Role

from .test_mounting import free_socket, on_uvicorn, url_of

WAIT_S = 20.0
PEERWIRE = str(Path(sys.executable).with_name("peerwire"))


class Pool:
    """Stands for a database pool: it knows whether it is open and how often it was."""

    def __init__(self) -> None:
        self.open = True
        self.queries = 0


class Journal:
    """What the lifespans of one test did."""

    def __init__(self) -> None:
        self.opened: list[Pool] = []
        self.closed: list[Pool] = []


def pooled(journal: Journal, *, fail_start: bool = False) -> Agent:
    @contextlib.asynccontextmanager
    async def lifespan(agent: Agent) -> AsyncIterator[Pool]:
        if fail_start:
            raise ConnectionRefusedError("database at 127.0.0.1:1 refused the connection")
        pool = Pool()
        journal.opened.append(pool)
        try:
            yield pool
        finally:
            pool.open = False
            journal.closed.append(pool)

    agent = Agent("Pooled", description="Answers from its pool", lifespan=lifespan)

    @agent.skill()
    async def query(text: str, pool: Pool) -> str:
        if text == "boom":
            raise RuntimeError("the query failed")
        pool.queries += 1
        return f"{text}: query {pool.queries} on an {'open' if pool.open else 'closed'} pool"

    @agent.skill()
    async def count(pool: Pool) -> Message:
        return Message(
            message_id="r", role=Role.AGENT, parts=[Part(text=f"{pool.queries} queries")]
        )

    @agent.skill()
    async def through_context(ctx: TaskContext) -> str:
        pool: Pool = ctx.app_state
        return f"context pool open: {pool.open}"

    return agent


async def exercise(url: str) -> list[str]:
    """Two tasks, a failing one, a message skill and the context's state: what each said."""
    async with Client.connect(url) as client:
        first = await client.send("a", skill="query")
        second = await client.send("b", skill="query")
        failed = await client.send("boom", skill="query")
        counted = await client.send("", skill="count")
        ctx = await client.send("", skill="through_context")
    assert failed.status.state is TaskState.FAILED
    assert isinstance(counted, Message)
    return [first.artifacts[0].text, second.artifacts[0].text, counted.text, ctx.artifacts[0].text]


EXPECTED = [
    "a: query 1 on an open pool",
    "b: query 2 on an open pool",
    "2 queries",
    "context pool open: True",
]


@pytest.mark.parametrize("http", ["peerwire", "uvicorn"])
async def test_the_state_is_opened_once_and_closed_on_shutdown(http: str) -> None:
    journal = Journal()
    agent = pooled(journal)
    async with live_server(agent, http=http) as url:  # type: ignore[arg-type]
        assert len(journal.opened) == 1 and not journal.closed
        assert await exercise(url) == EXPECTED
        assert len(journal.opened) == 1 and not journal.closed
    assert journal.closed == journal.opened  # closed after a handler raised, too
    assert not journal.opened[0].open
    with pytest.raises(AppStateUnavailableError, match="'Pooled'"):
        print(agent.app_state)


async def test_two_servers_of_one_agent_in_a_process_share_one_state() -> None:
    journal = Journal()
    agent = pooled(journal)
    async with live_server(agent) as one, live_server(agent) as two:
        async with Client.connect(one) as a, Client.connect(two) as b:
            await a.send("x", skill="query")
            task = await b.send("y", skill="query")
        assert task.artifacts[0].text == "y: query 2 on an open pool"
    assert len(journal.opened) == 1 and journal.closed == journal.opened


@pytest.mark.parametrize("http", ["peerwire", "uvicorn"])
async def test_a_lifespan_that_fails_to_start_fails_the_start(http: str) -> None:
    journal = Journal()
    with pytest.raises(Exception) as failed:
        async with live_server(pooled(journal, fail_start=True), http=http):  # type: ignore[arg-type]
            pytest.fail("the server started")
    text = str(failed.value)
    assert "agent 'Pooled': its lifespan failed to start" in text
    assert "ConnectionRefusedError: database at 127.0.0.1:1 refused the connection" in text
    if http == "peerwire":
        assert isinstance(failed.value, LifespanStartError)


@pytest.mark.parametrize("host", ["starlette", "fastapi"])
async def test_mounted_the_state_opens_with_the_first_request(host: str) -> None:
    journal = Journal()
    sock = free_socket()
    base = url_of(sock)
    app = create_app(pooled(journal), public_url=f"{base}/a2a")
    mounted = Starlette(routes=[Mount("/a2a", app=app)]) if host == "starlette" else FastAPI()
    if isinstance(mounted, FastAPI):
        mounted.mount("/a2a", app)
    with on_uvicorn(mounted, sock):
        said = await exercise(f"{base}/a2a")
        assert len(journal.opened) == 1 and not journal.closed
    assert said == EXPECTED
    assert journal.closed == journal.opened


async def test_mounted_a_failing_start_is_refused_typed_then_tried_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    failing = Journal()
    sock = free_socket()
    base = url_of(sock)
    agent = pooled(failing, fail_start=True)
    with on_uvicorn(Starlette(routes=[Mount("/a2a", app=create_app(agent))]), sock):
        async with Client.connect(f"{base}/a2a") as client:
            with pytest.raises(ServerBusyError, match="could not start"):
                await client.send("a", skill="query")
        causes = [r.exc_info[1] for r in caplog.records if r.exc_info and r.exc_info[1]]
        assert any(isinstance(cause, LifespanStartError) for cause in causes), "logged"
        assert not failing.opened
    # A lifespan that starts on a later try: a later request starts it (one state, closed).
    journal = Journal()
    attempts: list[int] = []

    @contextlib.asynccontextmanager
    async def flaky(agent: Agent) -> AsyncIterator[Pool]:
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionRefusedError("not yet")
        pool = Pool()
        journal.opened.append(pool)
        yield pool
        journal.closed.append(pool)

    later = Agent("Later", lifespan=flaky)

    @later.skill()
    async def query(text: str, pool: Pool) -> str:
        return f"{text} on pool {journal.opened.index(pool)}"

    sock = free_socket()
    base = url_of(sock)
    with on_uvicorn(Starlette(routes=[Mount("/a2a", app=create_app(later))]), sock):
        async with Client.connect(f"{base}/a2a") as client:
            # Refused while it fails (ServerBusyError, which the client retries): started then.
            assert (await client.send("b")).artifacts[0].text == "b on pool 0"
    assert len(attempts) == 2 and journal.closed == journal.opened


def test_a_skill_parameter_of_another_type_is_refused_at_decoration() -> None:
    @contextlib.asynccontextmanager
    async def lifespan(agent: Agent) -> AsyncIterator[Pool]:
        yield Pool()

    agent = Agent("Pooled", lifespan=lifespan)
    with pytest.raises(
        TypeError,
        match=r"str, dict, Message, TaskContext, Pool \(the app state\), or a typed input",
    ):

        @agent.skill()
        async def wrong(pool: Journal) -> str:
            return ""

    unannotated = Agent("Bare", lifespan=lambda agent: contextlib.nullcontext(Pool()))  # type: ignore[arg-type, return-value]
    assert unannotated.lifespan is not None and unannotated.lifespan.state_type is None


# -- under peerwire serve ---------------------------------------------------------------

AGENT = textwrap.dedent(
    """
    import contextlib
    import os
    from collections.abc import AsyncIterator

    from peerwire import Agent

    JOURNAL = os.environ["JOURNAL"]


    def note(line: str) -> None:
        with open(JOURNAL, "a") as journal:
            journal.write(line + "\\n")


    class Pool:
        pass


    @contextlib.asynccontextmanager
    async def lifespan(agent: Agent) -> AsyncIterator[Pool]:
        note(f"opened {os.getpid()}")
        try:
            yield Pool()
        finally:
            note(f"closed {os.getpid()}")


    agent = Agent("Pooled", lifespan=lifespan)


    @agent.skill()
    async def query(text: str, pool: Pool) -> str:
        note(f"query {text} {id(pool)}")
        return text
    """
)


async def test_under_peerwire_serve_it_opens_once_and_closes_on_sigterm(tmp_path: Path) -> None:
    (tmp_path / "pooled_agent.py").write_text(AGENT)
    journal = tmp_path / "journal.txt"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"JOURNAL": str(journal)}
    process = await asyncio.create_subprocess_exec(
        *[PEERWIRE, "serve", "pooled_agent:agent", "--port", "0", "--log-format", "json"],
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    try:
        async with asyncio.timeout(WAIT_S):
            while True:
                raw = await process.stderr.readline()
                assert raw, "peerwire serve ended early"
                if b"peerwire: serving '" in raw:
                    url = raw.split(b'"url": "')[1].split(b'"')[0].decode()
                    break
        async with Client.connect(url) as client:
            for text in ("a", "b"):
                assert (await client.send(text)).artifacts[0].text == text
    finally:
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(WAIT_S):
            await process.wait()
    lines = journal.read_text().splitlines()
    pid = process.pid
    assert lines[0] == f"opened {pid}" and lines[-1] == f"closed {pid}"
    queries = [line.split() for line in lines[1:-1]]
    assert [q[1] for q in queries] == ["a", "b"] and queries[0][2] == queries[1][2]
    assert process.returncode == 0


async def test_under_peerwire_serve_a_failing_lifespan_is_one_line_and_exit_1(
    tmp_path: Path,
) -> None:
    (tmp_path / "pooled_agent.py").write_text(AGENT)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["JOURNAL"] = str(tmp_path / "missing" / "journal.txt")  # open() fails in the lifespan
    process = await asyncio.create_subprocess_exec(
        *[PEERWIRE, "serve", "pooled_agent:agent", "--port", "0"],
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(WAIT_S):
        _, stderr = await process.communicate()
    assert process.returncode == 1
    assert stderr.decode().strip().splitlines()[-1] == (
        "peerwire: agent 'Pooled': its lifespan failed to start: FileNotFoundError: "
        f"[Errno 2] No such file or directory: '{tmp_path / 'missing' / 'journal.txt'}'"
    )


# -- in a peerwire worker -----------------------------------------------------------------

PG_DSN = "postgresql://postgres@127.0.0.1:5432/test"
REDIS_URL = "redis://127.0.0.1:6379"


async def test_a_peerwire_worker_opens_its_own_state_and_closes_it_on_sigterm(
    tmp_path: Path,
) -> None:
    import asyncpg
    from redis.asyncio import Redis

    (tmp_path / "pooled_agent.py").write_text(AGENT)
    journal = tmp_path / "journal.txt"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"JOURNAL": str(journal)}
    name = f"pwtest_as_{secrets.token_hex(6)}"
    shared = ("--store", f"{PG_DSN}?schema={name}", "--bus", f"{REDIS_URL}?prefix={name}")

    async def start(*command: str) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            PEERWIRE,
            *command,
            *shared,
            "--log-format",
            "json",
            cwd=tmp_path,
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )

    server = await start("serve", "pooled_agent:agent", "--port", "0", "--no-local-workers")
    worker = await start("worker", "pooled_agent:agent", "--shutdown-grace", "1")
    try:
        assert server.stderr is not None
        async with asyncio.timeout(WAIT_S):
            while True:
                raw = await server.stderr.readline()
                assert raw, "peerwire serve ended early"
                if b"peerwire: serving '" in raw:
                    url = raw.split(b'"url": "')[1].split(b'"')[0].decode()
                    break
        async with Client.connect(url) as client:
            for text in ("a", "b"):
                assert (await client.send(text)).artifacts[0].text == text
    finally:
        for process in (worker, server):
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(WAIT_S):
            await asyncio.gather(worker.communicate(), server.communicate())
        connection = await asyncpg.connect(PG_DSN)
        try:
            await connection.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
        finally:
            await connection.close()
        redis = Redis.from_url(REDIS_URL)
        try:
            keys = [key async for key in redis.scan_iter(match=f"{name}:*", count=1000)]
            if keys:
                await redis.delete(*keys)
        finally:
            await redis.aclose()
    lines = journal.read_text().splitlines()
    mine = str(worker.pid)
    by_worker = [line for line in lines if line.split()[-1] == mine or line.startswith("query ")]
    # The worker ran both tasks on the one state it opened, and closed it on SIGTERM.
    assert by_worker[0] == f"opened {worker.pid}" and by_worker[-1] == f"closed {worker.pid}"
    queries = [line.split() for line in by_worker[1:-1]]
    assert [q[1] for q in queries] == ["a", "b"] and queries[0][2] == queries[1][2]
    assert lines.count(f"opened {server.pid}") == lines.count(f"closed {server.pid}") == 1
    assert (worker.returncode, server.returncode) == (0, 0)
