"""The HTTP+JSON (REST) binding over a real server: every route and verb, tenants, SSE, headers,
and every kind of bad input.

Requests are raw httpx calls, so what a test asserts is what went over the wire. A refused
request is checked for its HTTP status, its google.rpc.Status body (ErrorInfo reason, BadRequest
field violations) and for leaving no trace (the task count is unchanged).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
import msgspec
import pytest
import pytest_asyncio

from peerwire import Agent, Message, Part, Role, TaskContext, create_app
from peerwire.bindings.sse import SSEParser
from peerwire.server import A2AApp, Dispatcher
from peerwire.testing import in_process, live_server
from peerwire.types import AgentExtension

pytestmark = pytest.mark.asyncio(loop_scope="module")

HEADERS = {"A2A-Version": "1.0"}
A2A_JSON = "application/a2a+json"
BODY_LIMIT = 64 * 1024
KEEPALIVE_S = 0.2
SHUTDOWN_GRACE_S = 1.0
TIMEOUT_S = 30.0
OPTIONAL_EXTENSION = "https://example.com/ext/trace/v1"
REQUIRED_EXTENSION = "https://example.com/ext/must/v1"
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"


@dataclass
class Gates:
    """Events the ``wait`` skill waits on, one per name (the message text)."""

    events: dict[str, asyncio.Event] = field(default_factory=dict)

    def __getitem__(self, name: str) -> asyncio.Event:
        return self.events.setdefault(name, asyncio.Event())

    def release_all(self) -> None:
        for event in self.events.values():
            event.set()


def probe_agent(gates: Gates) -> Agent:
    agent = Agent("REST Probe", description="Skills for the REST binding tests")

    @agent.router
    def by_skill(message: Message) -> str:
        return str((message.metadata or {}).get("skill", "echo"))

    @agent.skill()
    async def echo(text: str) -> str:
        return text

    @agent.skill()
    async def reply(text: str) -> Message:
        return Message(message_id="r-1", role=Role.AGENT, parts=[Part(text=f"re: {text}")])

    @agent.skill()
    async def wait(text: str, ctx: TaskContext) -> str:
        await ctx.start_work("waiting")
        await gates[text].wait()
        return "released"

    return agent


def build_app(
    gates: Gates,
    public_url: str,
    *,
    extensions: tuple[AgentExtension, ...] = (AgentExtension(uri=OPTIONAL_EXTENSION),),
    **app_options: Any,
) -> A2AApp:
    """``create_app``'s components, with a card declaring ``extensions`` (create_app has no
    option for them) and the app options the tests need (keep-alive period, limits)."""
    base = create_app(probe_agent(gates), public_url=public_url, shutdown_grace=SHUTDOWN_GRACE_S)
    parts = base.dispatcher
    card = parts.card()
    card = msgspec.structs.replace(
        card,
        capabilities=msgspec.structs.replace(card.capabilities, extensions=list(extensions)),
    )
    dispatcher = Dispatcher(parts.agent, parts.store, parts.bus, parts.runner, lambda: card)
    options: dict[str, Any] = {
        "max_body_bytes": BODY_LIMIT,
        "keepalive_seconds": KEEPALIVE_S,
        **app_options,
    }
    return A2AApp(dispatcher, lifespan=base.lifespan, **options)


@dataclass
class Server:
    http: httpx.AsyncClient
    url: str
    app: A2AApp
    gates: Gates

    @property
    def rest(self) -> str:
        return self.url + "/rest"

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        headers: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> httpx.Response:
        sent = dict(HEADERS if headers is None else headers)
        if body is not None:
            kwargs["content"] = json.dumps(body).encode()
            sent.setdefault("Content-Type", A2A_JSON)
        return await self.http.request(method, self.rest + path, headers=sent, **kwargs)

    async def ok(self, method: str, path: str, **kwargs: Any) -> Any:
        response = await self.request(method, path, **kwargs)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == A2A_JSON
        return response.json()

    async def send(
        self, text: str = "hello", *, skill: str = "echo", tenant: str = "", **configuration: Any
    ) -> dict[str, Any]:
        """SendMessage; the Task it answers with."""
        body: dict[str, Any] = {"message": user_message(text, skill=skill)}
        if configuration:
            body["configuration"] = configuration
        prefix = f"/{tenant}" if tenant else ""
        result = await self.ok("POST", f"{prefix}/message:send", body=body)
        assert set(result) == {"task"}, result
        return result["task"]  # type: ignore[no-any-return]

    async def task_count(self, tenant: str = "") -> int:
        prefix = f"/{tenant}" if tenant else ""
        listed = await self.ok("GET", f"{prefix}/tasks", params={"pageSize": 100})
        return int(listed["totalSize"])

    def followers(self, task_id: str) -> int:
        """Streams following ``task_id``. MemoryBus offers no public count: its subscriber
        table is the only witness that a stream let go of its task."""
        bus: Any = self.app.dispatcher.bus
        return len(bus._subscribers.get(task_id, ()))


_message_ids = iter(range(1, 1_000_000))


def user_message(text: str, *, skill: str = "echo") -> dict[str, Any]:
    return {
        "messageId": f"m-{next(_message_ids)}",
        "role": "ROLE_USER",
        "parts": [{"text": text}],
        "metadata": {"skill": skill},
    }


@contextlib.asynccontextmanager
async def serving(build: Callable[[str], A2AApp], gates: Gates) -> AsyncIterator[Server]:
    built: list[A2AApp] = []

    def factory(public_url: str) -> A2AApp:
        built.append(build(public_url))
        return built[0]

    async with (
        live_server(factory) as url,
        httpx.AsyncClient(trust_env=False, timeout=TIMEOUT_S) as http,
    ):
        try:
            yield Server(http, url, built[0], gates)
        finally:
            gates.release_all()  # no handler may keep the shutdown waiting


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server() -> AsyncIterator[Server]:
    gates = Gates()
    async with serving(lambda url: build_app(gates, url), gates) as running:
        yield running


def refused(
    response: httpx.Response, status: int, reason: str, *words: str, grpc_status: str | None = None
) -> dict[str, Any]:
    """Assert ``response`` is a google.rpc.Status error; return its ``error`` member."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == A2A_JSON
    document = response.json()
    assert set(document) == {"error"}, document
    error = document["error"]
    assert error["code"] == status
    if grpc_status is not None:
        assert error["status"] == grpc_status
    [info] = [d for d in error["details"] if d["@type"] == ERROR_INFO]
    assert info["reason"] == reason, error
    assert info["domain"] == "a2a-protocol.org"
    for word in words:
        assert word.lower() in error["message"].lower(), error
    return error  # type: ignore[no-any-return]


def violations(error: dict[str, Any]) -> dict[str, str]:
    [bad_request] = [d for d in error["details"] if d["@type"] == BAD_REQUEST]
    return {v["field"]: v["description"] for v in bad_request["fieldViolations"]}


class Events:
    """An open SSE response, read as it arrives: the data of each event, and the raw bytes."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.raw = b""
        self._parser = SSEParser()
        self._pending: list[bytes] = []
        self._chunks = response.aiter_raw()

    async def next(self, timeout: float = TIMEOUT_S) -> dict[str, Any] | None:
        """The next event's JSON, or ``None`` once the server has closed the stream."""
        with anyio.fail_after(timeout):
            while not self._pending:
                try:
                    chunk = await self._chunks.__anext__()
                except StopAsyncIteration:
                    return None
                self.raw += chunk
                self._pending.extend(self._parser.feed(chunk))
        return json.loads(self._pending.pop(0))  # type: ignore[no-any-return]

    async def rest(self, timeout: float = TIMEOUT_S) -> list[dict[str, Any]]:
        events = []
        with anyio.fail_after(timeout):
            for _ in range(1_000):
                event = await self.next()
                if event is None:
                    return events
                events.append(event)
        raise AssertionError("the stream did not end")

    async def raw_until(self, marker: bytes, timeout: float = TIMEOUT_S) -> None:
        with anyio.fail_after(timeout):
            while marker not in self.raw:
                chunk = await self._chunks.__anext__()
                self.raw += chunk
                self._pending.extend(self._parser.feed(chunk))


@contextlib.asynccontextmanager
async def open_stream(
    server: Server, method: str, path: str, body: Any = None
) -> AsyncIterator[Events]:
    headers = {**HEADERS, "Accept": "text/event-stream"}
    content = None
    if body is not None:
        content = json.dumps(body).encode()
        headers["Content-Type"] = A2A_JSON
    async with server.http.stream(
        method, server.rest + path, content=content, headers=headers
    ) as response:
        assert response.status_code == 200
        if response.headers["content-type"] != "text/event-stream":
            await response.aread()
            raise AssertionError(f"{path} answered {response.status_code}: {response.text}")
        yield Events(response)


def state(task_or_event: dict[str, Any]) -> str:
    return str(task_or_event["status"]["state"])


async def wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    with anyio.fail_after(timeout):
        # The server side offers nothing to await here; poll, bounded by the timeout.
        while not condition():  # noqa: ASYNC110
            await anyio.sleep(0.01)


# -- the card --------------------------------------------------------------------------------


async def test_the_card_lists_the_rest_interface_after_json_rpc() -> None:
    gates = Gates()
    async with (
        live_server(probe_agent(gates)) as url,
        httpx.AsyncClient(trust_env=False, timeout=TIMEOUT_S) as http,
    ):
        card = (await http.get(url + "/.well-known/agent-card.json")).json()
    assert [(i["protocolBinding"], i["url"]) for i in card["supportedInterfaces"]] == [
        ("JSONRPC", url + "/"),
        ("HTTP+JSON", url + "/rest"),
    ]


# -- the eleven operations -------------------------------------------------------------------


@pytest.mark.parametrize("content_type", [A2A_JSON, "application/json; charset=utf-8"])
async def test_send_message_answers_the_task(server: Server, content_type: str) -> None:
    response = await server.request(
        "POST",
        "/message:send",
        body={"message": user_message("ping")},
        headers={**HEADERS, "Content-Type": content_type},
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == A2A_JSON
    task = response.json()["task"]
    assert state(task) == "TASK_STATE_COMPLETED"
    assert [p["text"] for a in task["artifacts"] for p in a["parts"]] == ["ping"]


async def test_a_message_skill_answers_with_a_message(server: Server) -> None:
    result = await server.ok(
        "POST", "/message:send", body={"message": user_message("x", skill="reply")}
    )
    assert set(result) == {"message"}
    assert result["message"]["parts"] == [{"text": "re: x"}]
    assert result["message"]["role"] == "ROLE_AGENT"


async def test_get_task_takes_history_length_from_the_query(server: Server) -> None:
    task = await server.send("history")
    full = await server.ok("GET", f"/tasks/{task['id']}")
    assert full["id"] == task["id"]
    assert len(full["history"]) == 1
    trimmed = await server.ok("GET", f"/tasks/{task['id']}", params={"historyLength": "0"})
    assert "history" not in trimmed
    assert trimmed["artifacts"] == full["artifacts"]


async def test_list_tasks_filters_and_pages_with_query_parameters(server: Server) -> None:
    first = await server.send("one", tenant="lister")
    await server.send("two", tenant="lister")
    page = await server.ok(
        "GET",
        "/lister/tasks",
        params={"pageSize": "1", "status": "TASK_STATE_COMPLETED", "includeArtifacts": "true"},
    )
    assert (page["pageSize"], page["totalSize"], len(page["tasks"])) == (1, 2, 1)
    assert "artifacts" in page["tasks"][0]
    last = await server.ok(
        "GET", "/lister/tasks", params={"pageSize": "1", "pageToken": page["nextPageToken"]}
    )
    assert last["nextPageToken"] == ""
    assert "artifacts" not in last["tasks"][0]
    assert {page["tasks"][0]["id"], last["tasks"][0]["id"]} == {
        first["id"],
        (await server.ok("GET", "/lister/tasks"))["tasks"][0]["id"],
    }
    by_context = await server.ok(
        "GET", "/lister/tasks", params={"contextId": first["contextId"], "status": "3"}
    )
    assert [t["id"] for t in by_context["tasks"]] == [first["id"]]


async def test_cancel_task(server: Server) -> None:
    task = await server.send("cancel-me", skill="wait", returnImmediately=True)
    canceled = await server.ok("POST", f"/tasks/{task['id']}:cancel", body={})
    assert canceled["id"] == task["id"]
    assert state(canceled) == "TASK_STATE_CANCELED"
    # The body may be left out, or repeat the id as the reference SDK's client does.
    done = await server.send("done")
    response = await server.request("POST", f"/tasks/{done['id']}:cancel", body={"id": done["id"]})
    refused(response, 400, "TASK_NOT_CANCELABLE", grpc_status="FAILED_PRECONDITION")
    response = await server.request("POST", "/tasks/no-such-task:cancel")
    refused(response, 404, "TASK_NOT_FOUND", "no-such-task", grpc_status="NOT_FOUND")


@pytest.mark.parametrize("verb", ["GET", "POST"])
async def test_subscribe_streams_bare_stream_responses(server: Server, verb: str) -> None:
    gate = f"subscribe-{verb}"
    task = await server.send(gate, skill="wait", returnImmediately=True)
    async with open_stream(server, verb, f"/tasks/{task['id']}:subscribe") as events:
        first = await events.next()
        assert first is not None and set(first) == {"task"}
        assert first["task"]["id"] == task["id"]
        server.gates[gate].set()
        rest = await events.rest()
    assert rest[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    artifacts = [e["artifactUpdate"]["artifact"] for e in rest if "artifactUpdate" in e]
    assert [p["text"] for a in artifacts for p in a["parts"]] == ["released"]
    # Each data line is one StreamResponse: no JSON-RPC envelope, no other member.
    for event in [first, *rest]:
        assert len(event) == 1 and next(iter(event)) in {"task", "statusUpdate", "artifactUpdate"}
    assert b"jsonrpc" not in events.raw


async def test_send_streaming_message(server: Server) -> None:
    body = {"message": user_message("streamed")}
    async with open_stream(server, "POST", "/message:stream", body) as events:
        all_events = await events.rest()
    assert set(all_events[0]) == {"task"}
    assert state(all_events[0]["task"]) == "TASK_STATE_SUBMITTED"
    assert all_events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert any("artifactUpdate" in e for e in all_events)


async def test_a_streamed_message_reply_is_a_single_event(server: Server) -> None:
    body = {"message": user_message("y", skill="reply")}
    async with open_stream(server, "POST", "/acme/message:stream", body) as events:
        [only] = await events.rest()
    assert set(only) == {"message"}
    assert only["message"]["parts"] == [{"text": "re: y"}]


async def test_subscribing_to_a_finished_task_is_an_ordinary_error(server: Server) -> None:
    task = await server.send("finished")
    for verb in ("GET", "POST"):
        response = await server.request(verb, f"/tasks/{task['id']}:subscribe")
        refused(response, 400, "UNSUPPORTED_OPERATION", "finished")


async def test_idle_streams_get_keep_alive_comments(server: Server) -> None:
    task = await server.send("idle", skill="wait", returnImmediately=True)
    async with open_stream(server, "GET", f"/tasks/{task['id']}:subscribe") as events:
        assert await events.next() is not None
        await events.raw_until(b": keep-alive\n\n", timeout=10 * KEEPALIVE_S + 5)
        server.gates["idle"].set()
        rest = await events.rest()
    assert rest[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_a_client_that_leaves_releases_its_stream(server: Server) -> None:
    task = await server.send("leaver", skill="wait", returnImmediately=True)
    async with open_stream(server, "POST", f"/tasks/{task['id']}:subscribe") as events:
        assert await events.next() is not None
        await wait_until(lambda: server.followers(task["id"]) == 1)
    # The response is closed: the server notices and stops following the task.
    await wait_until(lambda: server.followers(task["id"]) == 0)
    server.gates["leaver"].set()
    finished = await server.ok("GET", f"/tasks/{task['id']}")
    assert state(finished) in ("TASK_STATE_WORKING", "TASK_STATE_COMPLETED")


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/tasks/{id}/pushNotificationConfigs", {"url": "https://hook.example/"}),
        ("GET", "/tasks/{id}/pushNotificationConfigs/c-1", None),
        ("GET", "/tasks/{id}/pushNotificationConfigs", None),
        ("DELETE", "/tasks/{id}/pushNotificationConfigs/c-1", None),
        ("DELETE", "/acme/tasks/{id}/pushNotificationConfigs/c-1", None),
    ],
)
async def test_push_config_routes_reach_the_dispatcher(
    server: Server, method: str, path: str, body: Any
) -> None:
    # This agent offers no push notifications: every push route reaches the dispatcher and
    # answers its typed error (A2A spec §3.3.4).
    response = await server.request(method, path.format(id="t-1"), body=body)
    refused(response, 400, "PUSH_NOTIFICATION_NOT_SUPPORTED", grpc_status="FAILED_PRECONDITION")


async def test_the_extended_card_needs_the_capability(server: Server) -> None:
    for path in ("/extendedAgentCard", "/acme/extendedAgentCard"):
        refused(await server.request("GET", path), 400, "UNSUPPORTED_OPERATION", "extended")


# -- tenants ---------------------------------------------------------------------------------


async def test_tenant_routes_keep_tasks_apart(server: Server) -> None:
    task = await server.send("mine", tenant="tenant-a")
    task_id = task["id"]
    assert (await server.ok("GET", f"/tenant-a/tasks/{task_id}"))["id"] == task_id
    for path in (f"/tasks/{task_id}", f"/tenant-b/tasks/{task_id}"):
        refused(await server.request("GET", path), 404, "TASK_NOT_FOUND")
    listed = await server.ok("GET", "/tenant-a/tasks")
    assert [t["id"] for t in listed["tasks"]] == [task_id]
    assert task_id not in [t["id"] for t in (await server.ok("GET", "/tasks"))["tasks"]]
    waiting = await server.send(
        "tenant-wait", skill="wait", tenant="tenant-a", returnImmediately=True
    )
    async with open_stream(server, "GET", f"/tenant-a/tasks/{waiting['id']}:subscribe") as events:
        first = await events.next()
        assert first is not None and first["task"]["id"] == waiting["id"]
        refused(
            await server.request("POST", f"/tenant-b/tasks/{waiting['id']}:cancel"),
            404,
            "TASK_NOT_FOUND",
        )
        canceled = await server.ok("POST", f"/tenant-a/tasks/{waiting['id']}:cancel")
        assert state(canceled) == "TASK_STATE_CANCELED"
        rest = await events.rest()
    assert rest[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"


async def test_a_tenant_may_carry_an_encoded_slash(server: Server) -> None:
    task = await server.send("slashed", tenant="org%2Fteam")
    assert (await server.ok("GET", f"/org%2Fteam/tasks/{task['id']}"))["id"] == task["id"]
    refused(await server.request("GET", f"/org/team/tasks/{task['id']}"), 404, "METHOD_NOT_FOUND")


async def test_a_conflicting_tenant_in_the_body_is_refused(server: Server) -> None:
    before = await server.task_count("acme")
    body = {"tenant": "other", "message": user_message("x")}
    error = refused(
        await server.request("POST", "/acme/message:send", body=body), 400, "INVALID_PARAMS"
    )
    assert "tenant" in violations(error)
    assert await server.task_count("acme") == before


# -- versions and extensions -----------------------------------------------------------------


async def test_a_missing_version_is_refused_and_the_query_form_accepted(server: Server) -> None:
    before = await server.task_count()
    body = {"message": user_message("v")}
    response = await server.request("POST", "/message:send", body=body, headers={})
    refused(
        response, 400, "VERSION_NOT_SUPPORTED", "A2A-Version", grpc_status="FAILED_PRECONDITION"
    )
    response = await server.request(
        "POST", "/message:send", body=body, headers={"A2A-Version": "0.3"}
    )
    refused(response, 400, "VERSION_NOT_SUPPORTED", "0.3")
    assert await server.task_count() == before
    for params in ({"A2A-Version": "1.0"}, {"a2a-version": "1.0.2"}):
        response = await server.request("GET", "/tasks", headers={}, params=params)
        assert response.status_code == 200, response.text
    response = await server.request("GET", "/tasks", headers={"A2A-Version": "1.0.7"})
    assert response.status_code == 200


async def test_activated_extensions_are_echoed(server: Server) -> None:
    headers = {**HEADERS, "A2A-Extensions": f"https://unknown.example/x, {OPTIONAL_EXTENSION}"}
    response = await server.request("GET", "/tasks", headers=headers)
    assert response.status_code == 200
    assert response.headers["a2a-extensions"] == OPTIONAL_EXTENSION
    # Also on an error the dispatcher reports, and on a stream.
    response = await server.request("GET", "/tasks/missing", headers=headers)
    refused(response, 404, "TASK_NOT_FOUND")
    assert response.headers["a2a-extensions"] == OPTIONAL_EXTENSION
    async with server.http.stream(
        "POST",
        server.rest + "/message:stream",
        json={"message": user_message("e")},
        headers={**headers, "Accept": "text/event-stream"},
    ) as streamed:
        assert streamed.headers["a2a-extensions"] == OPTIONAL_EXTENSION
        await streamed.aread()
    response = await server.request("GET", "/tasks")
    assert "a2a-extensions" not in response.headers


async def test_a_required_extension_must_be_requested() -> None:
    gates = Gates()
    required = (AgentExtension(uri=REQUIRED_EXTENSION, required=True),)
    app = build_app(gates, "http://testserver", extensions=required)
    async with in_process(app) as http:
        body = {"message": user_message("x")}
        response = await http.post("/rest/message:send", json=body, headers=HEADERS)
        refused(response, 400, "EXTENSION_SUPPORT_REQUIRED", REQUIRED_EXTENSION)
        listed = await http.get(
            "/rest/tasks", headers={**HEADERS, "A2A-Extensions": REQUIRED_EXTENSION}
        )
        assert listed.json()["totalSize"] == 0
        response = await http.post(
            "/rest/message:send",
            json=body,
            headers={**HEADERS, "A2A-Extensions": REQUIRED_EXTENSION},
        )
        assert response.status_code == 200
        assert response.headers["a2a-extensions"] == REQUIRED_EXTENSION


async def test_the_lenient_option_takes_a_missing_version_as_1_0() -> None:
    app = build_app(Gates(), "http://testserver", lenient_version=True)
    async with in_process(app) as http:
        response = await http.get("/rest/tasks")
        assert response.status_code == 200
        response = await http.get("/rest/tasks", headers={"A2A-Version": "2.0"})
        refused(response, 400, "VERSION_NOT_SUPPORTED")


async def test_the_rest_prefix_is_configurable() -> None:
    app = build_app(Gates(), "http://testserver", rest_path="/api/v1/")
    async with in_process(app) as http:
        response = await http.get("/api/v1/tasks", headers=HEADERS)
        assert response.status_code == 200
        refused(await http.get("/api/v1", headers=HEADERS), 404, "METHOD_NOT_FOUND")
        assert (await http.get("/rest/tasks", headers=HEADERS)).status_code == 404
    app = build_app(Gates(), "http://testserver", rest_path=None)
    async with in_process(app) as http:
        response = await http.get("/rest/tasks", headers=HEADERS)
        assert response.status_code == 404
        assert response.headers["content-type"].startswith("text/plain")
    app = build_app(Gates(), "http://testserver", rest_path="")
    async with in_process(app) as http:
        assert (await http.get("/tasks", headers=HEADERS)).status_code == 200
        card = await http.get("/.well-known/agent-card.json")
        assert card.status_code == 200  # the card's exact path still wins over REST


# -- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("DELETE", "/tasks/t-1", "GET"),
        ("PUT", "/tasks", "GET"),
        ("GET", "/message:send", "POST"),
        ("GET", "/acme/message:stream", "POST"),
        ("GET", "/tasks/t-1:cancel", "POST"),
        ("DELETE", "/tasks/t-1:subscribe", "GET, POST"),
        ("PATCH", "/tasks/t-1/pushNotificationConfigs", "POST, GET"),
        ("POST", "/tasks/t-1/pushNotificationConfigs/c", "GET, DELETE"),
        ("POST", "/extendedAgentCard", "GET"),
        ("OPTIONS", "/acme/tasks", "GET"),
    ],
)
async def test_a_wrong_verb_is_405_with_allow(
    server: Server, method: str, path: str, allow: str
) -> None:
    before = await server.task_count()
    response = await server.request(method, path)
    assert response.headers["allow"] == allow
    refused(response, 405, "METHOD_NOT_FOUND", method, grpc_status="UNIMPLEMENTED")
    assert await server.task_count() == before


@pytest.mark.parametrize(
    "path", ["", "/", "/nope", "/message", "/v1/x/message:send", "/tasks/a/b", "/message:frob"]
)
async def test_an_unknown_route_is_404_with_a_status_body(server: Server, path: str) -> None:
    response = await server.request("POST", path, body={})
    refused(response, 404, "METHOD_NOT_FOUND", "route")


@pytest.mark.parametrize(
    ("method", "path", "field"),
    [
        ("GET", "/tasks/", "id"),
        ("POST", "/tasks/:cancel", "id"),
        ("GET", "/tasks/%zz", "id"),
        ("GET", "/tasks/%C3%28", "id"),
        ("GET", "//tasks", "tenant"),
        ("DELETE", "/tasks/t-1/pushNotificationConfigs/%", "id"),
    ],
)
async def test_a_malformed_path_id_is_400(
    server: Server, method: str, path: str, field: str
) -> None:
    error = refused(await server.request(method, path), 400, "INVALID_PARAMS")
    assert field in violations(error)


@pytest.mark.parametrize("raw", [b"{", b"{bad json}", b'{"message": }', b"\xff\xfe", b"nul\x00"])
async def test_invalid_json_is_400(server: Server, raw: bytes) -> None:
    before = await server.task_count()
    response = await server.request(
        "POST", "/message:send", content=raw, headers={**HEADERS, "Content-Type": A2A_JSON}
    )
    refused(response, 400, "PARSE_ERROR", grpc_status="INVALID_ARGUMENT")
    assert await server.task_count() == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "$"),  # "Object missing required field `message`"
        ([], "$"),
        ({"message": {"role": "ROLE_USER", "parts": []}}, "$.message"),
        ({"message": {**user_message("x"), "role": "ROLE_NOBODY"}}, "$.message.role"),
        (
            {"message": user_message("x"), "configuration": {"historyLength": -1}},
            "configuration.historyLength",
        ),
    ],
)
async def test_an_invalid_request_body_is_400_naming_the_field(
    server: Server, body: Any, field: str
) -> None:
    before = await server.task_count()
    error = refused(await server.request("POST", "/message:send", body=body), 400, "INVALID_PARAMS")
    assert any(f.startswith(field) for f in violations(error)), violations(error)
    assert await server.task_count() == before


@pytest.mark.parametrize(
    "content_type", [None, "text/plain", "application/x-www-form-urlencoded", "application/jsonx"]
)
async def test_a_wrong_content_type_is_refused(server: Server, content_type: str | None) -> None:
    before = await server.task_count()
    headers = dict(HEADERS)
    if content_type is not None:
        headers["Content-Type"] = content_type
    raw = json.dumps({"message": user_message("x")}).encode()
    response = await server.request("POST", "/message:send", content=raw, headers=headers)
    refused(
        response,
        400,
        "CONTENT_TYPE_NOT_SUPPORTED",
        "application/a2a+json",
        grpc_status="INVALID_ARGUMENT",
    )
    assert await server.task_count() == before


async def test_a_body_over_the_limit_is_413(server: Server) -> None:
    before = await server.task_count()
    body = {"message": user_message("x" * (BODY_LIMIT + 1))}
    error = refused(
        await server.request("POST", "/message:send", body=body), 413, "INVALID_REQUEST"
    )
    assert str(BODY_LIMIT) in error["message"]

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"message":'
        for _ in range(BODY_LIMIT // 1024 + 1):
            yield b" " * 1024

    response = await server.request(
        "POST", "/message:send", content=chunks(), headers={**HEADERS, "Content-Type": A2A_JSON}
    )
    refused(response, 413, "INVALID_REQUEST")
    assert await server.task_count() == before


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/tasks", {"pageSize": "ten"}, "pageSize"),
        ("/tasks", {"pageSize": "500"}, "pageSize"),  # in int32, refused by the ListTasks rule
        ("/tasks", {"historyLength": "-5"}, "historyLength"),
        ("/tasks", {"status": "TASK_STATE_DONE"}, "status"),
        ("/tasks", {"includeArtifacts": "maybe"}, "includeArtifacts"),
        ("/tasks", {"statusTimestampAfter": "yesterday"}, "statusTimestampAfter"),
        ("/tasks", {"pageToken": "not-a-token"}, "pageToken"),
        ("/tasks/t-1", {"historyLength": "1e3"}, "historyLength"),
        ("/acme/tasks", {"tenant": "other"}, "tenant"),
    ],
)
async def test_bad_query_values_are_400_with_field_violations(
    server: Server, path: str, params: dict[str, str], field: str
) -> None:
    error = refused(
        await server.request("GET", path, params=params),
        400,
        "INVALID_PARAMS",
        grpc_status="INVALID_ARGUMENT",
    )
    assert field in violations(error)


async def test_garbage_never_gets_a_500(server: Server) -> None:
    before = await server.task_count()
    cases: list[tuple[str, str, bytes]] = [
        ("POST", "/message:send", b'{"message": {"parts": [{"raw": "!!"}]}}'),
        ("POST", "/message:send", b'{"message": 7, "metadata": []}'),
        ("POST", "/tasks/%00:cancel", b'{"metadata": 1}'),
        ("POST", "/tasks/x/pushNotificationConfigs", b'{"authentication": {}}'),
        ("GET", "/tasks?status=%ff&pageSize=%00", b""),
        ("POST", "/%FF/message:stream", b"{}"),
        ("POST", "/tasks/x:subscribe", b"[[[[[[]]]]]]"),
    ]
    for method, target, raw in cases:
        response = await server.http.request(
            method,
            server.rest + target,
            content=raw or None,
            headers={**HEADERS, "Content-Type": A2A_JSON},
        )
        assert 400 <= response.status_code < 500, (target, response.text)
        assert set(response.json()) == {"error"}
    assert await server.task_count() == before
