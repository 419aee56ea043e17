"""``create_app`` mounted in another application, as users do (docs/howto/mounting.md).

Each host (FastAPI, Starlette, Litestar) runs on a real uvicorn server in a thread of its own,
with its own event loop (``asyncio.run``), mounting the app under ``/a2a`` or at the root and
running no lifespan of it: the card is found under the prefix with its URLs under the prefix,
and JSON-RPC, REST and a stream each complete a task. The first request starts the store and
runner; when the server's loop ends, they stop, and the SQLite store's files are closed (its
``-wal`` file is gone) with nothing logged. Two agents share one host, each with its own
store; the CLI completes a task on each. ``uvicorn --root-path`` (behind a proxy that strips
the prefix) is honoured; so are a trailing slash, concurrent first requests, a host that does
run the lifespan, a store that cannot open (a typed refusal, then a retry), and interpreter
exit with the server still running in a daemon thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from litestar import Litestar, asgi
from litestar.types import Receive as LitestarReceive
from litestar.types import Scope as LitestarScope
from litestar.types import Send as LitestarSend
from starlette.applications import Starlette
from starlette.routing import Mount

from peerwire import Agent, Client, Task, TaskState, create_app
from peerwire.client import CardCache
from peerwire.errors import ServerBusyError, TaskNotFoundError
from peerwire.server import A2AApp
from peerwire.types import Binding, TaskStatusUpdateEvent

WAIT_S = 20.0
REPO = Path(__file__).resolve().parents[2]
PEERWIRE = str(Path(sys.executable).with_name("peerwire"))

ASGI = Callable[[Any, Any, Any], Any]


def answering(name: str) -> Agent:
    agent = Agent(name, description=f"Answers as {name}")

    @agent.skill()
    async def answer(text: str) -> str:
        return f"{name} got {text}"

    return agent


# -- hosts --------------------------------------------------------------------------------


def fastapi_host(mounts: dict[str, A2AApp], **options: Any) -> ASGI:
    host = FastAPI(**options)
    for prefix, app in mounts.items():
        host.mount(prefix or "/", app)
    return host


def starlette_host(mounts: dict[str, A2AApp]) -> ASGI:
    return Starlette(routes=[Mount(prefix or "/", app=app) for prefix, app in mounts.items()])


def litestar_host(mounts: dict[str, A2AApp]) -> ASGI:
    def mount(prefix: str, app: A2AApp) -> Any:
        @asgi(prefix or "/", is_mount=True, copy_scope=True)
        async def mounted(
            scope: LitestarScope, receive: LitestarReceive, send: LitestarSend
        ) -> None:
            await app(scope, receive, send)

        return mounted

    # logging_config=None: Litestar would otherwise configure the test process's logging.
    return Litestar(route_handlers=[mount(p, a) for p, a in mounts.items()], logging_config=None)


HOSTS = {"fastapi": fastapi_host, "starlette": starlette_host, "litestar": litestar_host}


# -- a real uvicorn server in a thread ----------------------------------------------------


def free_socket() -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


def url_of(sock: socket.socket) -> str:
    return f"http://127.0.0.1:{sock.getsockname()[1]}"


@contextlib.contextmanager
def on_uvicorn(app: ASGI, sock: socket.socket, **config: Any) -> Iterator[None]:
    """Serve ``app`` on ``sock`` from a thread running its own ``asyncio.run``; on exit stop
    the server and wait for the thread, so that its loop has ended (and closed what it ran)."""
    settings = uvicorn.Config(
        app, log_config=None, log_level="warning", timeout_graceful_shutdown=5, **config
    )
    server = uvicorn.Server(settings)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + WAIT_S
        while not server.started and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.started, "uvicorn did not start"
        yield
    finally:
        server.should_exit = True
        thread.join(WAIT_S)
        sock.close()
    assert not thread.is_alive(), "uvicorn did not stop"


@contextlib.asynccontextmanager
async def connected(url: str, binding: str = Binding.JSONRPC) -> AsyncIterator[Client]:
    async with Client.connect(url, bindings=[binding], card_cache=CardCache()) as client:
        yield client


async def completes_a_task(client: Client, text: str) -> Task:
    with anyio.fail_after(WAIT_S):
        task = await client.send(text)
    assert isinstance(task, Task)
    assert task.status.state is TaskState.COMPLETED
    return task


async def streams_a_task(client: Client, text: str) -> None:
    with anyio.fail_after(WAIT_S):
        events = [event async for event in client.stream(text)]
    assert isinstance(events[0], Task)
    last = events[-1]
    assert isinstance(last, TaskStatusUpdateEvent)
    assert last.status.state is TaskState.COMPLETED


def closed(database: Path) -> bool:
    """Whether every connection to the SQLite file is closed: the last one removes the log."""
    return database.exists() and not database.with_name(database.name + "-wal").exists()


@pytest.fixture
def quiet_shutdown(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Nothing logged at WARNING or above (no "Task was destroyed but it is pending", no
    failed stop) by any thread while the test runs, its servers' shutdowns included."""
    with caplog.at_level(logging.WARNING):
        yield
    assert [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and not _stale_grpc_poller(r)
    ] == []


def _stale_grpc_poller(record: logging.LogRecord) -> bool:
    """grpc.aio's completion-queue poller is process-wide and posts to the event loop that was
    running when it started; when an earlier test of the same worker process left it running,
    it reports "Event loop is closed" for that dead loop during a later test, whose own
    servers are not involved."""
    return record.getMessage().startswith(
        "Exception in callback PollerCompletionQueue._handle_events"
    ) and "Event loop is closed" in (record.exc_text or str(record.exc_info and record.exc_info[1]))


# -- mounted by each host -----------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["/a2a", ""], ids=["under-a2a", "at-root"])
@pytest.mark.parametrize("host", sorted(HOSTS))
async def test_mounted_without_its_lifespan_serves_every_binding(
    host: str, prefix: str, tmp_path: Path, quiet_shutdown: None
) -> None:
    sock = free_socket()
    url = url_of(sock)
    database = tmp_path / "tasks.db"
    agent_app = create_app(answering("Mounted"), public_url=url, store=f"sqlite:{database}")
    with on_uvicorn(HOSTS[host]({prefix: agent_app}), sock):
        for binding in (Binding.JSONRPC, Binding.HTTP_JSON):
            async with connected(url + prefix, binding) as client:
                assert client.card.name == "Mounted"
                urls = {i.protocol_binding: i.url for i in client.card.supported_interfaces}
                assert urls == {
                    Binding.JSONRPC: f"{url}{prefix}/",
                    Binding.HTTP_JSON: f"{url}{prefix}/rest",
                }
                assert client.interface.protocol_binding == binding
                task = await completes_a_task(client, "hello")
                assert task.artifacts[0].text == "Mounted got hello"
                await streams_a_task(client, "a stream")
        assert not closed(database)
    assert closed(database), "the store closed when the server's event loop ended"


@pytest.mark.parametrize("host", sorted(HOSTS))
async def test_an_encoded_slash_in_an_id_survives_the_mount(host: str) -> None:
    # The id "a/b" is sent as a%2Fb: one path segment, whatever the host did to the path.
    sock = free_socket()
    url = url_of(sock)
    agent_app = create_app(answering("Ids"), public_url=url)
    headers = {"A2A-Version": "1.0"}
    with on_uvicorn(HOSTS[host]({"/a2a": agent_app}), sock):
        async with httpx.AsyncClient(trust_env=False, timeout=WAIT_S, headers=headers) as http:
            missing = await http.get(f"{url}/a2a/rest/tasks/a%2Fb")
    assert missing.status_code == 404
    error = missing.json()["error"]
    assert error["status"] == "NOT_FOUND", error  # GetTask of "a/b", not an unknown route
    assert "a/b" in error["message"]


async def test_two_agents_under_two_prefixes_on_uvicorn_with_the_cli(
    tmp_path: Path, quiet_shutdown: None
) -> None:
    sock = free_socket()
    url = url_of(sock)
    databases = {name: tmp_path / f"{name}.db" for name in ("a2a1", "a2a2")}
    apps = {
        f"/{name}": create_app(answering(name.upper()), public_url=url, store=f"sqlite:{db}")
        for name, db in databases.items()
    }
    with on_uvicorn(fastapi_host(apps), sock):
        async with httpx.AsyncClient(trust_env=False, timeout=WAIT_S) as http:
            for name in databases:
                response = await http.get(f"{url}/{name}/.well-known/agent-card.json")
                assert response.status_code == 200
                card = response.json()
                assert card["name"] == name.upper()
                assert {i["url"] for i in card["supportedInterfaces"]} == {
                    f"{url}/{name}/",
                    f"{url}/{name}/rest",
                }
        for name in databases:
            with anyio.fail_after(WAIT_S):
                done = await anyio.run_process(
                    [PEERWIRE, "send", f"{url}/{name}", "hello"], cwd=REPO, check=False
                )
            assert done.returncode == 0, done.stderr.decode()
            assert f"{name.upper()} got hello" in done.stdout.decode()
        # Each agent has its own store: a task of one is unknown to the other.
        async with connected(f"{url}/a2a1") as first, connected(f"{url}/a2a2") as second:
            task = await completes_a_task(first, "mine")
            with pytest.raises(TaskNotFoundError):
                await second.get_task(task.id)
    assert all(closed(db) for db in databases.values())


@pytest.mark.parametrize("mounted", ["alone", "in-fastapi"])
async def test_the_root_path_uvicorn_is_given_is_honoured(
    mounted: str, quiet_shutdown: None
) -> None:
    # A reverse proxy serves the host at PROXY/x and strips /x; uvicorn is told so.
    proxy_sock, agent_sock = free_socket(), free_socket()
    public, behind = url_of(proxy_sock), url_of(agent_sock)
    agent_app = create_app(answering("Behind"), public_url=public)
    app, base = (
        (agent_app, "/x") if mounted == "alone" else (fastapi_host({"/a2a": agent_app}), "/x/a2a")
    )
    with (
        on_uvicorn(app, agent_sock, root_path="/x"),
        on_uvicorn(StrippingProxy("/x", behind), proxy_sock, lifespan="off"),
    ):
        for binding in (Binding.JSONRPC, Binding.HTTP_JSON):
            async with connected(public + base, binding) as client:
                urls = {i.url for i in client.card.supported_interfaces}
                assert urls == {f"{public}{base}/", f"{public}{base}/rest"}
                await completes_a_task(client, "hello")
                await streams_a_task(client, "a stream")


class StrippingProxy:
    """A reverse proxy (ASGI, on uvicorn) forwarding ``prefix``/... to ``target``/..."""

    def __init__(self, prefix: str, target: str) -> None:
        self.prefix, self.target = prefix, target

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        raw = scope["raw_path"].decode("latin-1")
        if not raw.startswith(self.prefix + "/"):
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        query = scope["query_string"].decode("latin-1")
        target = self.target + raw[len(self.prefix) :] + (f"?{query}" if query else "")
        headers = [(k, v) for k, v in scope["headers"] if k not in (b"host", b"content-length")]
        async with (
            httpx.AsyncClient(trust_env=False, timeout=WAIT_S) as http,
            http.stream(scope["method"], target, headers=headers, content=body) as response,
        ):
            passed = [
                (k, v)
                for k, v in response.headers.raw
                if k.lower() not in (b"content-length", b"transfer-encoding", b"connection")
            ]
            await send(
                {"type": "http.response.start", "status": response.status_code, "headers": passed}
            )
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


# -- starting on first use ----------------------------------------------------------------


async def test_concurrent_first_requests_start_the_app_once(quiet_shutdown: None) -> None:
    sock = free_socket()
    url = url_of(sock)
    starts: list[str] = []
    agent_app = create_app(
        answering("Once"), public_url=url, on_started=lambda card: starts.append(card.name)
    )

    async def send(http: httpx.AsyncClient, i: int) -> str:
        message = {"role": "ROLE_USER", "messageId": f"m{i}", "parts": [{"text": f"call {i}"}]}
        answer = await http.post(f"{url}/a2a/rest/message:send", json={"message": message})
        return str(answer.json()["task"]["status"]["state"])

    with on_uvicorn(fastapi_host({"/a2a": agent_app}), sock):
        assert starts == []
        headers = {"A2A-Version": "1.0"}
        async with httpx.AsyncClient(trust_env=False, timeout=WAIT_S, headers=headers) as http:
            with anyio.fail_after(WAIT_S):
                states = await asyncio.gather(*(send(http, i) for i in range(20)))
    assert states == ["TASK_STATE_COMPLETED"] * 20
    assert starts == ["Once"]


async def test_a_host_that_runs_the_lifespan_starts_and_drains_it(
    tmp_path: Path, quiet_shutdown: None
) -> None:
    sock = free_socket()
    url = url_of(sock)
    database = tmp_path / "tasks.db"
    starts: list[str] = []
    agent_app = create_app(
        answering("Wired"),
        public_url=url,
        store=f"sqlite:{database}",
        on_started=lambda card: starts.append(card.name),
    )
    host = fastapi_host({"/a2a": agent_app}, lifespan=agent_app.lifespan)
    with on_uvicorn(host, sock, lifespan="on"):
        assert starts == ["Wired"], "started by the host's lifespan, before any request"
        async with connected(f"{url}/a2a") as client:
            await completes_a_task(client, "hello")
    assert starts == ["Wired"]
    assert closed(database)


async def test_a_store_that_cannot_open_is_refused_then_tried_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sock = free_socket()
    url = url_of(sock)
    folder = tmp_path / "not-yet"
    agent_app = create_app(answering("Later"), public_url=url, store=f"sqlite:{folder / 'db'}")
    with on_uvicorn(fastapi_host({"/a2a": agent_app}), sock):
        for binding in (Binding.JSONRPC, Binding.HTTP_JSON):
            # The card needs no store: it is served, and the calls are refused, typed.
            async with connected(f"{url}/a2a", binding) as client:
                with pytest.raises(ServerBusyError, match="could not start"):
                    await client.send("hello")
        failures = [r for r in caplog.records if "could not start" in r.getMessage()]
        assert failures and failures[0].exc_info is not None, "the log says why"
        folder.mkdir()
        async with connected(f"{url}/a2a") as client:
            await completes_a_task(client, "hello")


async def test_a_trailing_slash_is_the_same_path(quiet_shutdown: None) -> None:
    sock = free_socket()
    url = url_of(sock)
    agent_app = create_app(
        answering("Slash"), public_url=url, rpc_path="/jsonrpc", rest_path="/rest/"
    )

    def message(message_id: str) -> dict[str, Any]:
        return {"role": "ROLE_USER", "messageId": message_id, "parts": [{"text": "hi"}]}

    headers = {"A2A-Version": "1.0"}
    with on_uvicorn(fastapi_host({"/a2a": agent_app}), sock):
        async with httpx.AsyncClient(trust_env=False, timeout=WAIT_S, headers=headers) as http:
            for path in ("/a2a/.well-known/agent-card.json", "/a2a/.well-known/agent-card.json/"):
                card = (await http.get(url + path)).json()
                urls = [i["url"] for i in card["supportedInterfaces"]]
                assert urls == [f"{url}/a2a/jsonrpc", f"{url}/a2a/rest"], path
            for path in ("/a2a/jsonrpc", "/a2a/jsonrpc/"):
                send = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage"}
                send["params"] = {"message": message(path)}
                answer = (await http.post(url + path, json=send)).json()
                assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", path
            sent = await http.post(url + "/a2a/rest/message:send", json={"message": message("r")})
            assert sent.json()["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
            # Below the REST prefix a trailing slash means something: an empty last segment.
            no_id = await http.get(url + "/a2a/rest/tasks/")
            assert (no_id.status_code, no_id.json()["error"]["status"]) == (
                400,
                "INVALID_ARGUMENT",
            )
            no_route = await http.post(url + "/a2a/rest/", json={"message": message("n")})
            assert (no_route.status_code, no_route.json()["error"]["status"]) == (
                404,
                "UNIMPLEMENTED",  # no such method
            )


async def test_a_public_url_that_names_the_prefix_is_not_repeated(quiet_shutdown: None) -> None:
    sock = free_socket()
    url = url_of(sock)
    agent_app = create_app(answering("Named"), public_url=f"{url}/a2a/")
    with on_uvicorn(starlette_host({"/a2a": agent_app}), sock):
        async with connected(f"{url}/a2a") as client:
            assert {i.url for i in client.card.supported_interfaces} == {
                f"{url}/a2a/",
                f"{url}/a2a/rest",
            }
            await completes_a_task(client, "hello")


# -- interpreter exit ---------------------------------------------------------------------

CHILD = """
import socket, sys, threading, time, httpx, uvicorn
from fastapi import FastAPI
from peerwire import Agent, create_app

agent = Agent("Exit")

@agent.skill()
async def answer(text: str) -> str:
    return text

url, database, listening = sys.argv[1], sys.argv[2], socket.socket(fileno=int(sys.argv[3]))
host = FastAPI()
host.mount("/a2a", create_app(agent, public_url=url, store="sqlite:" + database))
server = uvicorn.Server(uvicorn.Config(host, log_config=None))
threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True).start()
for _ in range(500):
    if server.started:
        break
    time.sleep(0.01)
message = {"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "bye"}]}
answer = httpx.post(url + "/a2a/rest/message:send", json={"message": message},
                    headers={"A2A-Version": "1.0"}, timeout=10, trust_env=False)
print(answer.json()["task"]["status"]["state"], flush=True)
# The main thread ends here, the server still running in its daemon thread.
"""


async def test_interpreter_exit_stops_what_the_first_request_started(tmp_path: Path) -> None:
    database = tmp_path / "tasks.db"
    with free_socket() as sock, anyio.fail_after(WAIT_S):
        done = await anyio.run_process(
            [sys.executable, "-c", CHILD, url_of(sock), str(database), str(sock.fileno())],
            cwd=REPO,
            check=False,
            pass_fds=[sock.fileno()],
        )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().split() == ["TASK_STATE_COMPLETED"]
    assert b"Task was destroyed" not in done.stderr, done.stderr.decode()
    assert closed(database), "the store closed at interpreter exit"


def test_the_card_of_an_agent_under_a_prefix_is_below_it() -> None:
    from peerwire.client._card import card_url  # what Client.connect and the CLI fetch

    assert card_url("http://h:1/a2a") == "http://h:1/a2a/.well-known/agent-card.json"
    assert card_url("http://h:1/a2a/") == "http://h:1/a2a/.well-known/agent-card.json"
    assert card_url("http://h/a2a?k=v") == "http://h/a2a/.well-known/agent-card.json?k=v"
    assert card_url("http://h/a2a/agent-card.json?k") == "http://h/a2a/agent-card.json?k"


def test_a_public_url_and_a_mount_prefix_say_shared_segments_once() -> None:
    from peerwire.server._mount import join_paths, under_prefix

    assert join_paths("", "/a2a") == "/a2a"
    assert join_paths("/a2a", "") == "/a2a"
    assert join_paths("/x", "/x/a2a") == "/x/a2a"  # root_path, then the raw path
    assert join_paths("/agents/a2a", "/a2a") == "/agents/a2a"
    assert join_paths("/api", "/a2a") == "/api/a2a"
    assert under_prefix("https://example.com/", "/a2a") == "https://example.com/a2a"
    assert under_prefix("https://example.com/a2a/", "/a2a") == "https://example.com/a2a"
    assert under_prefix("https://example.com/a2a", "") == "https://example.com/a2a"
