"""The client's side of a stream the server ends early: ``StreamEndedError`` by default, or,
with ``resume_for``, the task followed on across the server's restart."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio

from peerwire import Agent, Client, Task, TaskContext, TaskState, TaskStatusUpdateEvent
from peerwire.errors import A2AConnectionError, ServerBusyError, StreamEndedError
from peerwire.httpd import HTTPServer
from peerwire.server import A2AApp, create_app

WAIT_S = 30.0


def restartable_agent() -> Agent:
    agent = Agent("Restartable", description="A task that waits for input across restarts")

    @agent.skill()
    async def question(ctx: TaskContext) -> None:
        """Asks once; the answer (to this process or the next) completes the task."""
        if ctx.latest_message is ctx.message:
            await ctx.require_input("which?")
        else:
            await ctx.complete(f"got {ctx.latest_message.text}")

    return agent


def listening_socket(port: int = 0) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    return sock


@contextlib.asynccontextmanager
async def running(app: A2AApp, sock: socket.socket) -> AsyncIterator[HTTPServer]:
    server = HTTPServer(app)
    serving = asyncio.get_running_loop().create_task(server.serve(sock=sock))
    try:
        with anyio.fail_after(WAIT_S):
            await asyncio.wait(
                {serving, asyncio.ensure_future(server.started.wait())},
                return_when=asyncio.FIRST_COMPLETED,
            )
        assert not serving.done(), serving
        yield server
    finally:
        server.request_exit()
        with anyio.CancelScope(shield=True), anyio.fail_after(WAIT_S):
            await asyncio.wait({serving})
        sock.close()
        serving.result()


def app_on(sock: socket.socket, store: str) -> A2AApp:
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    return create_app(restartable_agent(), public_url=url, store=store, shutdown_grace=1.0)


async def waiting_task(client: Client) -> Task:
    task = await client.send("", skill="question")
    assert isinstance(task, Task) and task.status.state is TaskState.INPUT_REQUIRED
    return task


async def test_resume_for_follows_the_task_across_a_restart(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'tasks.db'}"
    first = listening_socket()
    port = first.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    seen: list[Any] = []

    async def follow(events: AsyncIterator[Any]) -> None:
        async for event in events:
            seen.append(event)

    async with contextlib.AsyncExitStack() as stack:
        async with running(app_on(first, store), first):
            client = await stack.enter_async_context(Client.connect(url))
            task = await waiting_task(client)
            events = client.subscribe(task.id, resume_for=WAIT_S)
            seen.append(await anext(events))
            following = asyncio.ensure_future(follow(events))
            stack.callback(following.cancel)
        # The first server is gone (it ended the stream on its way out); the same port,
        # the same store, a new process as far as the client can tell.
        assert not following.done(), following
        second = listening_socket(port)
        app = app_on(second, store)
        async with running(app, second):
            streams = app.dispatcher._streams  # internals on purpose: has it resubscribed?
            for _ in range(int(WAIT_S / 0.02)):  # polled: the server says nothing of it
                if streams or following.done():
                    break
                await asyncio.sleep(0.02)
            assert not following.done(), following
            done = await client.send("this one", task_id=task.id)
            assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED
            with anyio.fail_after(WAIT_S):
                await following
    assert isinstance(seen[0], Task) and seen[0].id == task.id
    states = [e.status.state for e in seen if isinstance(e, TaskStatusUpdateEvent)]
    # The resumed snapshot added nothing new (still waiting); then the task moved on.
    assert states == [TaskState.WORKING, TaskState.COMPLETED]


async def test_resume_for_gives_up_with_the_typed_error_when_the_server_stays_away(
    tmp_path: Path,
) -> None:
    sock = listening_socket()
    async with (
        running(app_on(sock, "memory"), sock) as server,
        Client.connect(f"http://127.0.0.1:{sock.getsockname()[1]}") as client,
    ):
        task = await waiting_task(client)
        events = client.subscribe(task.id, resume_for=1.0)
        await anext(events)
        server.request_exit()
        with anyio.fail_after(WAIT_S):
            try:
                async for _ in events:
                    pass
            except StreamEndedError as error:
                ended = error
            else:
                raise AssertionError("the iteration ended without StreamEndedError")
    assert (ended.task_id, ended.cause) == (task.id, "shutdown")
    # Why resuming failed: the server was shutting down, then gone.
    assert isinstance(ended.__cause__, ServerBusyError | A2AConnectionError), ended.__cause__


async def test_an_app_in_process_ends_its_streams_when_its_lifespan_ends() -> None:
    app = create_app(restartable_agent(), public_url="http://agent.test", shutdown_grace=1.0)
    async with app.lifespan():
        client = await Client.connect("http://agent.test", app=app)
        task = await waiting_task(client)
        events = client.subscribe(task.id)
        await anext(events)
    # The lifespan ended, as an ASGI server's shutdown ends it: the stream said so.
    try:
        with anyio.fail_after(WAIT_S):
            try:
                await anext(events)
            except StreamEndedError as error:
                assert (error.task_id, error.cause) == (task.id, "shutdown")
            else:
                raise AssertionError("the stream went on after the shutdown")
    finally:
        await client.aclose()
