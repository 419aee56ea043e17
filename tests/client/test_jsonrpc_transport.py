"""The JSON-RPC transport: answers a server should not give, timeouts, and how streams end."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from peerwire import Agent, Client, Task, TaskState
from peerwire.errors import (
    A2AConnectionError,
    A2ATimeoutError,
    AuthenticationError,
    ClientError,
    InternalError,
    InvalidAgentResponseError,
    InvalidParamsError,
    InvalidResponseError,
    MethodNotFoundError,
    PermissionDeniedError,
    TaskNotFoundError,
    UnknownA2AError,
)
from peerwire.types import (
    AuthenticationInfo,
    TaskArtifactUpdateEvent,
    TaskStatusUpdateEvent,
    to_builtins,
)

from .conftest import (
    JSON,
    SSE,
    TIMEOUT_S,
    Gates,
    ScriptedPeer,
    app_factory,
    connected,
    error,
    peer_card,
    result,
    serve,
)

Answer = Callable[[dict[str, Any]], tuple[int, list[tuple[bytes, bytes]], list[bytes]]]

TASK = {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}


async def peer_client(answer: Answer, **capabilities: Any) -> tuple[Client, ScriptedPeer]:
    peer = ScriptedPeer(peer_card(**capabilities), answer)
    return await Client.connect("http://peer", app=peer), peer


def sse(request: dict[str, Any], *results: Any) -> list[bytes]:
    return [b"data: " + result(request, r) + b"\n\n" for r in results]


# -- answers no conforming server gives --------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "headers", "body", "expected"),
    [
        (200, JSON, b"<html>oops</html>", InvalidResponseError),
        (200, JSON, b'{"jsonrpc": "2.0", "id": 999, "result": {}}', InvalidResponseError),
        (200, JSON, b'{"jsonrpc": "1.0", "id": 1, "result": {}}', InvalidResponseError),
        (200, JSON, b'{"jsonrpc": "2.0", "id": 1}', InvalidResponseError),
        (200, JSON, b'{"jsonrpc": "2.0", "id": 1, "result": {"id": ""}}', InvalidResponseError),
        (401, [], b"", AuthenticationError),
        (403, [], b"forbidden", PermissionDeniedError),
        (404, [], b"Not Found", MethodNotFoundError),
        (502, [], b"Bad Gateway", InvalidAgentResponseError),
        (503, [], b"Service Unavailable", UnknownA2AError),
        (500, [], b"", InternalError),
    ],
)
async def test_bad_answers_are_typed_errors(
    status: int, headers: list[tuple[bytes, bytes]], body: bytes, expected: type[Exception]
) -> None:
    client, _ = await peer_client(lambda request: (status, headers, [body]))
    async with client:
        with pytest.raises(expected) as caught:
            await client.get_task("t1")
    if expected is InvalidResponseError:
        assert isinstance(caught.value, ClientError)
        assert "GetTask" in str(caught.value)


async def test_a2a_errors_keep_their_details() -> None:
    data = [
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "TASK_NOT_FOUND",
            "domain": "a2a-protocol.org",
            "metadata": {"taskId": "t9"},
        }
    ]
    client, _ = await peer_client(lambda r: (200, JSON, [error(r, -32001, "no t9", data=data)]))
    async with client:
        with pytest.raises(TaskNotFoundError) as caught:
            await client.get_task("t9")
    assert caught.value.message == "no t9"
    assert caught.value.metadata == {"taskId": "t9"}


async def test_an_error_answered_with_a_non_200_status_is_still_decoded() -> None:
    client, _ = await peer_client(lambda r: (413, JSON, [error(r, -32600, "too large")]))
    async with client:
        with pytest.raises(Exception) as caught:
            await client.send("x" * 10)
    assert type(caught.value).__name__ == "InvalidRequestError"


async def test_push_configs_and_extended_card_on_a_peer_that_has_them() -> None:
    config = {
        "id": "cfg-1",
        "taskId": "t1",
        "url": "https://hooks.example/a2a",
        "token": "tok",
        "authentication": {"scheme": "Bearer", "credentials": "secret"},
    }
    extended = to_builtins(peer_card(extended_agent_card=True))
    extended["description"] = "the extended card"

    def answer(request: dict[str, Any]) -> tuple[int, list[tuple[bytes, bytes]], list[bytes]]:
        method, params = request["method"], request["params"]
        if method == "CreateTaskPushNotificationConfig":
            return 200, JSON, [result(request, {**config, "id": params.get("id") or "cfg-1"})]
        if method == "GetTaskPushNotificationConfig":
            return 200, JSON, [result(request, config)]
        if method == "ListTaskPushNotificationConfigs":
            if not params.get("pageToken"):
                return 200, JSON, [result(request, {"configs": [config], "nextPageToken": "p2"})]
            second = {**config, "id": "cfg-2"}
            return 200, JSON, [result(request, {"configs": [second]})]
        if method == "DeleteTaskPushNotificationConfig":
            return 200, JSON, [result(request, None if params["id"] == "cfg-1" else {})]
        if method == "GetExtendedAgentCard":
            return 200, JSON, [result(request, extended)]
        return 200, JSON, [error(request, -32601, "no")]

    client, peer = await peer_client(answer, push_notifications=True, extended_agent_card=True)
    async with client:
        auth = AuthenticationInfo(scheme="Bearer", credentials="secret")
        created = await client.create_push_config(
            "t1", "https://hooks.example/a2a", token="tok", authentication=auth
        )
        assert (created.id, created.task_id, created.authentication) == ("cfg-1", "t1", auth)
        assert (await client.get_push_config("t1", "cfg-1")).url == "https://hooks.example/a2a"
        assert [c.id for c in await client.list_push_configs("t1")] == ["cfg-1", "cfg-2"]
        await client.delete_push_config("t1", "cfg-1")  # result null
        await client.delete_push_config("t1", "cfg-2")  # result {}
        card = await client.get_extended_card()
        assert card.description == "the extended card"
        assert client.card is card
    params = [r["params"] for r in peer.requests]
    assert params[0] == {
        "taskId": "t1",
        "url": "https://hooks.example/a2a",
        "token": "tok",
        "authentication": {"scheme": "Bearer", "credentials": "secret"},
    }
    assert params[1] == {"taskId": "t1", "id": "cfg-1"}
    assert params[3] == {"taskId": "t1", "pageToken": "p2"}
    assert [r["method"] for r in peer.requests].count("ListTaskPushNotificationConfigs") == 2


async def test_list_tasks_stops_a_pagination_loop() -> None:
    def answer(request: dict[str, Any]) -> tuple[int, list[tuple[bytes, bytes]], list[bytes]]:
        page = {"tasks": [TASK], "nextPageToken": "same", "pageSize": 1, "totalSize": 9}
        return 200, JSON, [result(request, page)]

    client, peer = await peer_client(answer)
    async with client:
        seen = []
        with pytest.raises(InvalidResponseError, match="twice"):
            async for task in client.list_tasks():
                seen.append(task)
    assert len(seen) == 2 and len(peer.requests) == 2


# -- streams from a scripted peer ---------------------------------------------------------------


async def test_an_error_before_the_stream_starts_is_a_json_answer() -> None:
    client, _ = await peer_client(lambda r: (200, JSON, [error(r, -32001, "no such task")]))
    async with client:
        with pytest.raises(TaskNotFoundError):
            [e async for e in client.subscribe("t1")]


async def test_an_error_event_inside_the_stream() -> None:
    def answer(request: dict[str, Any]) -> tuple[int, list[tuple[bytes, bytes]], list[bytes]]:
        oops = b"data: " + error(request, -32603, "agent crashed") + b"\n\n"
        return 200, SSE, [*sse(request, {"task": TASK}), oops]

    client, _ = await peer_client(answer)
    async with client:
        seen = []
        with pytest.raises(InternalError, match="agent crashed"):
            async for event in client.subscribe("t1"):
                seen.append(event)
    assert [type(e) for e in seen] == [Task]


async def test_sse_framing_comments_and_split_chunks() -> None:
    completed = {"taskId": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}

    def answer(request: dict[str, Any]) -> tuple[int, list[tuple[bytes, bytes]], list[bytes]]:
        whole = b"".join(sse(request, {"task": TASK}, {"statusUpdate": completed}))
        # Keep-alive comments, CRLF line ends, and events split across chunks anywhere.
        text = b": keep-alive\r\n\r\n" + whole.replace(b"\n", b"\r\n")
        return (
            200,
            [(b"content-type", b"text/event-stream; charset=utf-8")],
            [text[i : i + 7] for i in range(0, len(text), 7)],
        )

    client, _ = await peer_client(answer)
    async with client:
        events = [e async for e in client.subscribe("t1")]
    assert [type(e) for e in events] == [Task, TaskStatusUpdateEvent]


@pytest.mark.parametrize(
    ("first", "problem"),
    [
        (
            {
                "statusUpdate": {
                    "taskId": "t1",
                    "contextId": "c1",
                    "status": {"state": "TASK_STATE_WORKING"},
                }
            },
            "began with",
        ),
        (
            {
                "task": TASK,
                "message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "x"}]},
            },
            "not a valid StreamResponse",
        ),
        ({"nonsense": True}, "not a valid StreamResponse"),
    ],
)
async def test_malformed_streams(first: Any, problem: str) -> None:
    client, _ = await peer_client(lambda r: (200, SSE, sse(r, first)))
    async with client:
        with pytest.raises(InvalidResponseError, match=problem):
            [e async for e in client.subscribe("t1")]


async def test_a_stream_that_breaks_the_task_rules() -> None:
    done = {"taskId": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}
    back = {"taskId": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}
    client, _ = await peer_client(
        lambda r: (200, SSE, sse(r, {"task": TASK}, {"statusUpdate": done}, {"statusUpdate": back}))
    )
    async with client:
        with pytest.raises(InvalidResponseError, match="terminal"):
            [e async for e in client.subscribe("t1")]


async def test_a_single_result_where_a_stream_was_asked_for() -> None:
    client, _ = await peer_client(lambda r: (200, JSON, [result(r, {"task": TASK})]))
    async with client:
        with pytest.raises(InvalidResponseError, match="instead of an event stream"):
            [e async for e in client.stream("x")]


async def test_a_message_only_stream_ends_after_the_message() -> None:
    message = {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}
    more = {"task": TASK}  # never read: a message-only stream is over after its message
    client, _ = await peer_client(lambda r: (200, SSE, sse(r, {"message": message}, more)))
    async with client:
        events = [e async for e in client.stream("x")]
    assert len(events) == 1 and events[0].text == "hi"  # type: ignore[union-attr]


# -- timeouts -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["live", "inprocess"])
async def test_a_slow_answer_times_out(mode: str, agent: Agent) -> None:
    async with connected(mode, agent, timeout=0.3) as client:
        with pytest.raises(A2ATimeoutError) as caught:
            await client.send("", skill="slow")  # blocking: never settles
        async for task in client.list_tasks(status=TaskState.WORKING):
            await client.cancel_task(task.id)  # so the server need not wait for it to stop
    assert isinstance(caught.value, TimeoutError)
    assert "SendMessage" in caught.value.message


@pytest.mark.parametrize("mode", ["live", "inprocess"])
async def test_a_silent_stream_times_out_but_not_before_its_idle_timeout(
    mode: str, agent: Agent, gates: Gates
) -> None:
    async with connected(mode, agent, timeout=0.2, stream_idle_timeout=0.5) as client:
        client._follower.attempts = 1  # one resubscription, then give up
        events = []
        with pytest.raises(A2ATimeoutError):
            async for event in client.stream("", skill="steps"):
                events.append(event)
        gates.release.set()
        gates.finish.set()
    # The unary timeout (0.2 s) did not end the stream; the idle timeout did, twice.
    texts = [e.artifact.text for e in events if isinstance(e, TaskArtifactUpdateEvent)]
    assert texts == ["one", " two"]


async def test_keep_alives_hold_an_idle_stream_open(agent: Agent, gates: Gates) -> None:
    def build(url: str) -> Any:
        app = app_factory(agent)(url)
        app.keepalive_seconds = 0.05
        return app

    async with serve(build) as url, Client.connect(url, stream_idle_timeout=1.0) as client:
        events = []
        with anyio.fail_after(TIMEOUT_S):
            async for event in client.stream("", skill="steps"):
                events.append(event)
                if isinstance(event, TaskArtifactUpdateEvent) and event.artifact.text == " two":
                    # Quiet for longer than the idle timeout: only keep-alives flow meanwhile.
                    await anyio.sleep(1.5)
                    gates.release.set()
                    gates.finish.set()
    assert isinstance(events[-1], TaskStatusUpdateEvent)
    assert events[-1].status.state is TaskState.COMPLETED


async def test_connection_refused_mid_session(agent: Agent) -> None:
    async with serve(app_factory(agent)) as url:
        client = await Client.connect(url)
    async with client:
        with pytest.raises(A2AConnectionError) as caught:
            await client.get_task("t1")
        assert url in caught.value.message
        with pytest.raises(A2AConnectionError):
            [e async for e in client.subscribe("t1")]


# -- how streams end ---------------------------------------------------------------------------


async def test_many_short_streams_end_cleanly(agent: Agent) -> None:
    """The end-of-stream race: the server closes right after the final event, every time."""
    outcomes: list[TaskState] = []

    async with serve(app_factory(agent)) as url, Client.connect(url) as client:

        async def worker(n: int) -> None:
            for i in range(10):
                last = None
                async for event in client.stream(f"{n}-{i}", skill="echo"):
                    last = event
                assert isinstance(last, TaskStatusUpdateEvent)
                outcomes.append(last.status.state)

        with anyio.fail_after(TIMEOUT_S * 2):
            async with anyio.create_task_group() as group:
                for n in range(10):
                    group.start_soon(worker, n)
    assert outcomes == [TaskState.COMPLETED] * 100


@pytest.mark.parametrize("mode", ["live", "inprocess"])
@pytest.mark.parametrize("how", ["break", "aclose"])
async def test_stopping_early_is_not_an_error_and_leaves_the_task_running(
    mode: str, how: str, agent: Agent, gates: Gates
) -> None:
    async with connected(mode, agent) as client:
        with anyio.fail_after(TIMEOUT_S):
            if how == "break":
                # No aclose: the abandoned generator is finalized by the event loop.
                async for event in client.stream("", skill="steps"):
                    first = event
                    break
            else:
                events = client.stream("", skill="steps")
                first = await anext(events)
                await events.aclose()
        assert isinstance(first, Task)
        gates.release.set()
        gates.finish.set()
        with anyio.fail_after(TIMEOUT_S):
            await gates.finished.wait()
        task = await client.get_task(first.id)
        assert task.status.state is TaskState.COMPLETED
        assert task.artifacts[0].text == "one two three"


async def test_invalid_params_from_a_stream_request(agent: Agent) -> None:
    async with connected("live", agent) as client:
        with pytest.raises(InvalidParamsError):
            [e async for e in client.stream("x", skill="nope")]
