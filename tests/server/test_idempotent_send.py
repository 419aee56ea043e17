"""Idempotent sends: a repeated messageId from the same caller gets the task it created.

Real servers on loopback, talked to with peerwire's client; each message is built with a
fixed ``messageId`` so the test can send it again as a retrying client would.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import anyio
import pytest

from peerwire import Agent, Client, Message, Part, Role, Task, TaskContext, TaskState
from peerwire.security import APIKeyVerifier, Principal
from peerwire.server import IDEMPOTENT_SEND_EXTENSION
from peerwire.server.stores import SQLiteTaskStore
from peerwire.server.stores.postgres import PostgresTaskStore
from peerwire.testing import live_server
from peerwire.types import APIKeySecurityScheme, SecurityRequirement, SecurityScheme, StringList

from ._services import PG_DSN, fresh_schema

WAIT_S = 10.0


class Bookings:
    """What the agent was asked to do: one entry per handler run."""

    def __init__(self) -> None:
        self.runs: list[str] = []
        self.release = asyncio.Event()


def _agent(bookings: Bookings, **options: object) -> Agent:
    agent = Agent("Bookings", description="Books slots, slowly if asked", **options)  # type: ignore[arg-type]

    @agent.skill()
    async def book(ctx: TaskContext, text: str) -> str:
        bookings.runs.append(ctx.task_id)
        if text == "slow":
            await bookings.release.wait()
        return f"booked {text}"

    @agent.skill()
    async def interview(ctx: TaskContext) -> str:
        bookings.runs.append(ctx.task_id)
        answer = await ctx.ask("which day?")
        return f"booked for {answer.text}"

    @agent.skill()
    async def quote(message: Message) -> Message:
        bookings.runs.append("quote")
        return Message(message_id="q", role=Role.AGENT, parts=[Part(text="42")])

    return agent


def _message(message_id: str, text: str, skill: str = "book", task_id: str = "") -> Message:
    return Message(
        message_id=message_id,
        role=Role.USER,
        parts=[Part(text=text)],
        task_id=task_id,
        metadata={"skill": skill},
    )


@pytest.fixture
async def served() -> AsyncIterator[tuple[Bookings, Client]]:
    bookings = Bookings()
    async with (
        live_server(_agent(bookings), shutdown_grace=1.0) as url,
        Client.connect(url) as client,
    ):
        yield bookings, client
        bookings.release.set()


async def test_the_card_advertises_the_extension(served: tuple[Bookings, Client]) -> None:
    _, client = served
    [extension] = [e for e in client.card.capabilities.extensions]
    assert extension.uri == IDEMPOTENT_SEND_EXTENSION
    assert extension.required is False
    assert extension.params == {"retentionSeconds": 24 * 3600}


async def test_a_repeated_blocking_send_returns_the_same_task(
    served: tuple[Bookings, Client],
) -> None:
    bookings, client = served
    first = await client.send(_message("m-1", "a room"))
    again = await client.send(_message("m-1", "a room"))
    assert isinstance(first, Task) and isinstance(again, Task)
    assert again.id == first.id
    assert again.status.state is TaskState.COMPLETED
    assert bookings.runs == [first.id], "the handler ran once"
    assert len(await client.list_tasks()) == 1


async def test_a_repeat_while_the_task_works_waits_like_the_first(
    served: tuple[Bookings, Client],
) -> None:
    bookings, client = served
    started = await client.send(_message("m-slow", "slow"), return_immediately=True)
    assert isinstance(started, Task)
    async with anyio.create_task_group() as group:
        answers: list[Task | Message] = []

        async def resend() -> None:
            answers.append(await client.send(_message("m-slow", "slow")))

        group.start_soon(resend)
        await anyio.sleep(0.2)
        assert not answers, "a blocking repeat waits for the task to settle"
        bookings.release.set()
    [answer] = answers
    assert isinstance(answer, Task)
    assert answer.id == started.id and answer.status.state is TaskState.COMPLETED
    assert bookings.runs == [started.id]


async def test_a_repeated_stream_resubscribes(served: tuple[Bookings, Client]) -> None:
    bookings, client = served
    started = await client.send(_message("m-stream", "slow"), return_immediately=True)
    assert isinstance(started, Task)
    events = client.stream(_message("m-stream", "slow"))
    first = await anext(events)
    assert isinstance(first, Task) and first.id == started.id, "the task's snapshot first"
    bookings.release.set()
    rest = [event async for event in events]
    assert rest, "then its updates"
    final = await client.get_task(started.id)
    assert final.status.state is TaskState.COMPLETED
    assert bookings.runs == [started.id]
    # Once the task is finished, a repeated stream is its snapshot alone.
    payloads = [p async for p in client.stream(_message("m-stream", "slow"))]
    assert [type(p) for p in payloads] == [Task]
    assert isinstance(payloads[0], Task) and payloads[0].status.state is TaskState.COMPLETED


async def test_twenty_duplicates_at_once_make_one_task(served: tuple[Bookings, Client]) -> None:
    bookings, client = served
    answers = await asyncio.gather(
        *(client.send(_message("m-burst", "slow"), return_immediately=True) for _ in range(20))
    )
    ids = {a.id for a in answers if isinstance(a, Task)}
    assert len(ids) == 1, ids
    bookings.release.set()
    with anyio.fail_after(WAIT_S):
        done = await client.send(_message("m-burst", "slow"))  # a blocking repeat: waits
    assert isinstance(done, Task) and done.id in ids
    assert done.status.state is TaskState.COMPLETED
    assert bookings.runs == list(ids), "one handler run for twenty sends"
    assert len(await client.list_tasks()) == 1


async def test_a_repeated_follow_up_is_not_appended_twice(
    served: tuple[Bookings, Client],
) -> None:
    _, client = served
    asked = await client.send(_message("m-ask", "", skill="interview"))
    assert isinstance(asked, Task) and asked.status.state is TaskState.INPUT_REQUIRED
    answer = _message("m-answer", "monday", skill="interview", task_id=asked.id)
    done = await client.send(answer)
    again = await client.send(answer)
    assert isinstance(done, Task) and isinstance(again, Task)
    assert again.id == done.id == asked.id
    assert again.status.state is TaskState.COMPLETED
    history_ids = [m.message_id for m in again.history]
    assert history_ids.count("m-answer") == 1, history_ids


async def test_a_repeat_with_other_content_still_gets_the_first_task(
    served: tuple[Bookings, Client],
) -> None:
    """The message id names the message: reusing it for another text is the caller's error,
    answered with the first task (documented), not a second booking."""
    bookings, client = served
    first = await client.send(_message("m-reused", "a room"))
    other = await client.send(_message("m-reused", "a car"))
    assert isinstance(first, Task) and isinstance(other, Task)
    assert other.id == first.id
    assert other.artifacts[0].parts[0].text == "booked a room"
    assert bookings.runs == [first.id]


async def test_message_skills_are_not_deduplicated(served: tuple[Bookings, Client]) -> None:
    bookings, client = served
    for _ in range(2):
        reply = await client.send(_message("m-quote", "?", skill="quote"))
        assert isinstance(reply, Message)
    assert bookings.runs == ["quote", "quote"], "an inline reply creates nothing to reuse"


async def test_after_the_retention_a_repeat_makes_a_new_task() -> None:
    bookings = Bookings()
    retention = timedelta(milliseconds=300)
    async with (
        live_server(_agent(bookings), shutdown_grace=1.0, message_retention=retention) as url,
        Client.connect(url) as client,
    ):
        first = await client.send(_message("m-late", "x"))
        await anyio.sleep(0.4)
        later = await client.send(_message("m-late", "x"))
        assert isinstance(first, Task) and isinstance(later, Task)
        assert later.id != first.id
        assert len(bookings.runs) == 2


async def test_turned_off_neither_advertised_nor_deduplicated() -> None:
    bookings = Bookings()
    async with (
        live_server(_agent(bookings), shutdown_grace=1.0, message_retention=None) as url,
        Client.connect(url) as client,
    ):
        assert not client.card.capabilities.extensions
        first = await client.send(_message("m-off", "x"))
        second = await client.send(_message("m-off", "x"))
        assert isinstance(first, Task) and isinstance(second, Task)
        assert first.id != second.id


KEYS = {"k-alice": Principal("alice"), "k-bob": Principal("bob")}


async def test_different_principals_get_different_tasks() -> None:
    bookings = Bookings()
    agent = _agent(
        bookings,
        security_schemes={
            "key": SecurityScheme(
                api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-API-Key")
            )
        },
        security_requirements=[SecurityRequirement(schemes={"key": StringList()})],
    )
    auth = {"key": APIKeyVerifier(KEYS)}
    async with live_server(agent, shutdown_grace=1.0, auth=auth) as url:
        tasks: dict[str, list[str]] = {}
        for key in KEYS:
            async with Client.connect(url, headers={"X-API-Key": key}) as client:
                for _ in range(2):
                    task = await client.send(_message("m-shared", "x"))
                    assert isinstance(task, Task)
                    tasks.setdefault(key, []).append(task.id)
    alice, bob = tasks["k-alice"], tasks["k-bob"]
    assert alice[0] == alice[1] and bob[0] == bob[1], "each caller's repeat is its own task"
    assert alice[0] != bob[0], "one caller's message id says nothing about another's"


async def _one_task_across(first_store: object, second_store: object, bookings: Bookings) -> None:
    """Twenty duplicates split across two replicas sharing one database: one task."""
    async with (
        live_server(_agent(bookings), store=first_store, shutdown_grace=1.0) as first_url,
        live_server(_agent(bookings), store=second_store, shutdown_grace=1.0) as second_url,
        Client.connect(first_url) as first,
        Client.connect(second_url) as second,
    ):
        answers = await asyncio.gather(
            *(
                (first if n % 2 else second).send(
                    _message("m-replicas", "x"), return_immediately=True
                )
                for n in range(20)
            )
        )
        ids = {a.id for a in answers if isinstance(a, Task)}
        assert len(ids) == 1, ids
        assert len(bookings.runs) == 1, bookings.runs
        assert len(await first.list_tasks()) == 1


async def test_replicas_sharing_sqlite_make_one_task(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    await _one_task_across(SQLiteTaskStore(path), SQLiteTaskStore(path), Bookings())


async def test_replicas_sharing_postgresql_make_one_task() -> None:
    async with fresh_schema() as schema:
        stores = [
            PostgresTaskStore(PG_DSN, schema=schema, min_size=0, max_size=4) for _ in range(2)
        ]
        await _one_task_across(stores[0], stores[1], Bookings())
