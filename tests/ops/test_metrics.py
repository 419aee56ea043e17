"""Prometheus metrics at /metrics: real agents on loopback, scraped over HTTP.

The active-stream gauge follows real streams on each binding (up as they open, back to zero
as they end, whether the task finished or the client left mid-stream); requests are counted
by operation, binding and outcome; the page is exempt from A2A authentication, can take a
token of its own, move to a port of its own, or be off; its label values stay bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from peerwire import Agent, Client, Message, TaskContext
from peerwire.errors import TaskNotFoundError
from peerwire.ops import Metrics
from peerwire.ops.metrics import OPERATIONS
from peerwire.security import APIKeyVerifier
from peerwire.testing import live_server
from peerwire.types import (
    APIKeySecurityScheme,
    Binding,
    SecurityRequirement,
    SecurityScheme,
    StringList,
    TaskState,
)

WAIT_S = 10.0
BINDINGS = {"jsonrpc": Binding.JSONRPC, "rest": Binding.HTTP_JSON, "grpc": Binding.GRPC}

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


class Gates:
    """Handlers of the ``hold`` skill wait here until the test opens the gate."""

    def __init__(self) -> None:
        self.open = asyncio.Event()
        self.started = 0


def workbench(gates: Gates, **agent_options: Any) -> Agent:
    agent = Agent("Metered Agent", **agent_options)

    @agent.router
    def route(message: Message) -> str:
        return str((message.metadata or {}).get("skill", "echo"))

    @agent.skill()
    async def echo(text: str) -> str:
        return text

    @agent.skill()
    async def hold(ctx: TaskContext) -> str:
        await ctx.start_work()
        gates.started += 1
        await gates.open.wait()
        return "released"

    @agent.skill()
    async def question(ctx: TaskContext) -> str:
        answer = await ctx.ask("Which one?")
        return answer.text

    return agent


async def scrape(base: str, path: str = "/metrics", **headers: str) -> Samples:
    """Every sample on the page, by (name, sorted labels)."""
    async with httpx.AsyncClient(timeout=WAIT_S) as http:
        response = await http.get(base + path, headers=headers)
    assert response.status_code == 200, response.text
    samples: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def peerwire_metrics_in(samples: Samples) -> bool:
    """Whether the page has peerwire's own metrics (its build info is there from the start)."""
    return any(name == "peerwire_build_info" for name, _ in samples)


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def eventually(
    base: str, check: Callable[[Samples], bool], what: str, path: str = "/metrics"
) -> Samples:
    """Scrape until ``check`` holds (bounded: ``WAIT_S``)."""
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while True:
        samples = await scrape(base, path)
        if check(samples):
            return samples
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"never saw {what}")
        await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def serving(agent: Agent, **options: Any) -> AsyncIterator[str]:
    async with live_server(agent, grpc_port=0, **options) as url:
        yield url


def hold(**fields: Any) -> dict[str, Any]:
    return {"metadata": {"skill": "hold"}, **fields}


# -- active streams ------------------------------------------------------------------------------


@pytest.mark.parametrize("binding", list(BINDINGS))
async def test_active_streams_rise_with_open_streams_and_fall_to_zero(binding: str) -> None:
    gates = Gates()
    async with serving(workbench(gates)) as url:
        async with Client.connect(url, bindings=[BINDINGS[binding]]) as client:
            streams = [client.stream("wait", **hold()) for _ in range(3)]
            for stream in streams:
                await anext(stream)  # the task: the stream is open
            samples = await scrape(url)
            assert value(samples, "peerwire_active_streams", binding=binding) == 3
            assert value(samples, "peerwire_task_subscribers") == 3
            assert value(samples, "peerwire_handlers_working") == 3
            gates.open.set()
            for stream in streams:
                async for _ in stream:
                    pass
        samples = await eventually(
            url,
            lambda s: value(s, "peerwire_active_streams", binding=binding) == 0,
            "the streams closed",
        )
        assert value(samples, "peerwire_task_subscribers") == 0
        assert value(samples, "peerwire_handlers_working") == 0
        assert value(samples, "peerwire_tasks_created_total", skill="hold") == 3
        assert value(samples, "peerwire_tasks_finished_total", state="completed", skill="hold") == 3
        operation = "SendStreamingMessage"
        ok = {"operation": operation, "binding": binding, "outcome": "ok"}
        assert value(samples, "peerwire_requests_total", **ok) == 3


async def test_a_client_that_leaves_mid_stream_takes_its_stream_off_the_gauge() -> None:
    gates = Gates()
    async with serving(workbench(gates)) as url:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendStreamingMessage",
            "params": {
                "message": {
                    "messageId": str(uuid.uuid4()),
                    "role": "ROLE_USER",
                    "parts": [{"text": "wait"}],
                    "metadata": {"skill": "hold"},
                }
            },
        }
        async with httpx.AsyncClient(timeout=WAIT_S) as http:
            headers = {"A2A-Version": "1.0"}
            async with http.stream("POST", url + "/", json=body, headers=headers) as response:
                assert response.status_code == 200
                async for line in response.aiter_lines():
                    if line.startswith("data:"):
                        break  # the task: the stream is open
                samples = await scrape(url)
                assert value(samples, "peerwire_active_streams", binding="jsonrpc") == 1
            # The response is closed here, mid-stream: the client went away.
        await eventually(
            url,
            lambda s: (
                value(s, "peerwire_active_streams", binding="jsonrpc") == 0
                and value(s, "peerwire_task_subscribers") == 0
            ),
            "the abandoned stream leave the gauges",
        )
        # Its task still runs: only the stream ended.
        assert value(await scrape(url), "peerwire_handlers_working") == 1
        gates.open.set()


async def test_a_grpc_client_that_leaves_mid_stream_takes_its_stream_off_the_gauge() -> None:
    gates = Gates()
    async with serving(workbench(gates)) as url:
        async with Client.connect(url, bindings=[Binding.GRPC]) as client:
            stream = client.stream("wait", **hold())
            await anext(stream)
            assert value(await scrape(url), "peerwire_active_streams", binding="grpc") == 1
            await stream.aclose()  # left mid-stream
            await eventually(
                url,
                lambda s: value(s, "peerwire_active_streams", binding="grpc") == 0,
                "the abandoned gRPC stream leave the gauge",
            )
        gates.open.set()


# -- requests ------------------------------------------------------------------------------------


@pytest.mark.parametrize("binding", list(BINDINGS))
async def test_requests_are_counted_by_operation_binding_and_outcome(binding: str) -> None:
    async with serving(workbench(Gates())) as url:
        async with Client.connect(url, bindings=[BINDINGS[binding]]) as client:
            for _ in range(2):
                task = await client.send("hi")
                assert task.status.state is TaskState.COMPLETED  # type: ignore[union-attr]
            await client.get_task(task.id)  # type: ignore[union-attr]
            with pytest.raises(TaskNotFoundError):
                await client.get_task(str(uuid.uuid4()))
        samples = await scrape(url)

    def requests(operation: str, outcome: str) -> float:
        labels = {"operation": operation, "binding": binding, "outcome": outcome}
        return value(samples, "peerwire_requests_total", **labels)

    assert requests("SendMessage", "ok") == 2
    assert requests("GetTask", "ok") == 1
    assert requests("GetTask", "TASK_NOT_FOUND") == 1
    histogram = {"operation": "SendMessage", "binding": binding, "outcome": "ok"}
    assert value(samples, "peerwire_request_duration_seconds_count", **histogram) == 2
    assert value(samples, "peerwire_request_duration_seconds_sum", **histogram) > 0
    assert value(samples, "peerwire_tasks_finished_total", state="completed", skill="echo") == 2


async def test_label_sets_stay_bounded_whatever_ids_and_methods_callers_send() -> None:
    async with serving(workbench(Gates())) as url:
        async with Client.connect(url, bindings=[Binding.JSONRPC]) as client:
            with pytest.raises(TaskNotFoundError):
                await client.get_task(str(uuid.uuid4()))
            before = await scrape(url)
            for _ in range(100):
                with pytest.raises(TaskNotFoundError):
                    await client.get_task(str(uuid.uuid4()))
        async with httpx.AsyncClient(timeout=WAIT_S) as http:
            for n in range(20):  # unknown methods: never a label value of their own
                envelope = {"jsonrpc": "2.0", "id": n, "method": f"Nope{n}", "params": {}}
                await http.post(url + "/", json=envelope, headers={"A2A-Version": "1.0"})
        after = await scrape(url)
    series = [key for key in after if key[0] == "peerwire_requests_total"]
    assert len(series) == len([k for k in before if k[0] == "peerwire_requests_total"]) + 1
    not_found = {"operation": "GetTask", "binding": "jsonrpc", "outcome": "TASK_NOT_FOUND"}
    assert value(after, "peerwire_requests_total", **not_found) == 101
    unknown = {"operation": "unknown", "binding": "jsonrpc", "outcome": "METHOD_NOT_FOUND"}
    assert value(after, "peerwire_requests_total", **unknown) == 20
    # Every label value is one of a fixed few: never an id or a caller's text.
    for name, labels in series:
        found = dict(labels)
        assert found["operation"] in (*OPERATIONS, "unknown"), name
        assert found["binding"] in BINDINGS
        assert found["outcome"] == "ok" or found["outcome"].isupper()


# -- handlers ------------------------------------------------------------------------------------


async def test_handlers_waiting_in_ask_are_counted_until_answered() -> None:
    async with serving(workbench(Gates())) as url:
        async with Client.connect(url, bindings=[Binding.JSONRPC]) as client:
            task = await client.send("go", metadata={"skill": "question"})
            assert task.status.state is TaskState.INPUT_REQUIRED  # type: ignore[union-attr]
            samples = await scrape(url)
            assert value(samples, "peerwire_handlers_waiting") == 1
            assert value(samples, "peerwire_handlers_working") == 0
            done = await client.send("this one", task_id=task.id)  # type: ignore[union-attr]
            assert done.status.state is TaskState.COMPLETED  # type: ignore[union-attr]
        samples = await scrape(url)
        assert value(samples, "peerwire_handlers_waiting") == 0
        assert value(samples, "peerwire_tasks_created_total", skill="question") == 1


# -- the page ------------------------------------------------------------------------------------


async def test_metrics_are_exempt_from_the_agents_authentication() -> None:
    scheme = SecurityScheme(
        api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-API-Key")
    )
    agent = workbench(
        Gates(),
        security_schemes={"key": scheme},
        security_requirements=[SecurityRequirement(schemes={"key": StringList()})],
    )
    async with serving(agent, auth={"key": APIKeyVerifier({"k1": "alice"})}) as url:
        async with httpx.AsyncClient(timeout=WAIT_S) as http:
            envelope = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
            refused = await http.post(url + "/", json=envelope, headers={"A2A-Version": "1.0"})
            assert refused.status_code == 401
        samples = await scrape(url)  # no credentials
    unauthenticated = {"operation": "GetTask", "binding": "jsonrpc", "outcome": "UNAUTHENTICATED"}
    assert value(samples, "peerwire_requests_total", **unauthenticated) == 1


async def test_a_token_protects_the_page() -> None:
    async with serving(workbench(Gates()), metrics_token="s3cret") as url:
        async with httpx.AsyncClient(timeout=WAIT_S) as http:
            missing = await http.get(url + "/metrics")
            wrong = await http.get(url + "/metrics", headers={"Authorization": "Bearer nope"})
        assert missing.status_code == wrong.status_code == 401
        assert missing.headers["www-authenticate"].startswith("Bearer")
        samples = await scrape(url, Authorization="Bearer s3cret")
        assert peerwire_metrics_in(samples)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_the_page_can_move_to_a_port_of_its_own() -> None:
    port = _free_port()
    async with serving(workbench(Gates()), metrics_port=port) as url:
        async with Client.connect(url, bindings=[Binding.JSONRPC]) as client:
            await client.send("hi")
        async with httpx.AsyncClient(timeout=WAIT_S) as http:
            assert (await http.get(url + "/metrics")).status_code == 404
        samples = await scrape(f"http://127.0.0.1:{port}")
        ok = {"operation": "SendMessage", "binding": "jsonrpc", "outcome": "ok"}
        assert value(samples, "peerwire_requests_total", **ok) == 1
    with pytest.raises(httpx.ConnectError):  # stopped with the app
        async with httpx.AsyncClient(timeout=WAIT_S) as http:
            await http.get(f"http://127.0.0.1:{port}/metrics")


async def test_metrics_off_means_no_route() -> None:
    async with serving(workbench(Gates()), metrics=False) as url:
        async with httpx.AsyncClient(timeout=WAIT_S) as http:
            assert (await http.get(url + "/metrics")).status_code == 404
        async with Client.connect(url, bindings=[Binding.JSONRPC]) as client:
            assert (await client.send("still works")).status.state is TaskState.COMPLETED  # type: ignore[union-attr]


async def test_a_metrics_object_of_your_own_brings_its_registry() -> None:
    from prometheus_client import CollectorRegistry, Counter

    registry = CollectorRegistry()
    mine = Counter("my_agent_things_total", "Things my agent did", registry=registry)
    mine.inc(7)
    async with serving(workbench(Gates()), metrics=Metrics(registry=registry)) as url:
        samples = await scrape(url)
    assert value(samples, "my_agent_things_total") == 7
    assert peerwire_metrics_in(samples)


async def test_under_a_mount_prefix_the_page_is_under_it_too() -> None:
    from starlette.applications import Starlette
    from starlette.routing import Mount

    from peerwire import create_app
    from peerwire.testing import in_process

    a2a = create_app(workbench(Gates()), public_url="http://testserver/a2a")
    host = Starlette(routes=[Mount("/a2a", app=a2a)])
    async with in_process(a2a):
        transport = httpx.ASGITransport(app=host)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            mounted = await http.get("/a2a/metrics")
            assert (await http.get("/metrics")).status_code == 404
    assert mounted.status_code == 200
    assert "peerwire_active_streams" in mounted.text


async def test_head_and_other_methods() -> None:
    async with serving(workbench(Gates())) as url, httpx.AsyncClient(timeout=WAIT_S) as http:
        head = await http.head(url + "/metrics")
        post = await http.post(url + "/metrics")
    assert head.status_code == 200 and head.content == b""
    assert post.status_code == 405


async def test_a2a_03_requests_are_counted_under_their_operation() -> None:
    async with serving(workbench(Gates())) as url:
        envelope = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "message/send",
            "params": {
                "message": {
                    "kind": "message",
                    "messageId": str(uuid.uuid4()),
                    "role": "user",
                    "parts": [{"kind": "text", "text": "hi"}],
                }
            },
        }
        async with httpx.AsyncClient(timeout=WAIT_S) as http:
            answer = await http.post(url + "/", json=envelope)
            missing = await http.post(
                url + "/",
                json={"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": "x"}},
            )
        assert answer.json()["result"]["status"]["state"] == "completed"
        assert "error" in missing.json()
        samples = await scrape(url)
    ok = {"operation": "SendMessage", "binding": "jsonrpc", "outcome": "ok"}
    assert value(samples, "peerwire_requests_total", **ok) == 1
    not_found = {"operation": "GetTask", "binding": "jsonrpc", "outcome": "TASK_NOT_FOUND"}
    assert value(samples, "peerwire_requests_total", **not_found) == 1


async def test_latency_buckets_are_cumulative_up_to_the_count() -> None:
    async with serving(workbench(Gates())) as url:
        async with Client.connect(url, bindings=[Binding.JSONRPC]) as client:
            for _ in range(5):
                await client.send("hi")
        samples = await scrape(url)
    labels = {"operation": "SendMessage", "binding": "jsonrpc", "outcome": "ok"}
    buckets = sorted(
        (float(dict(key)["le"]), count)
        for (name, key), count in samples.items()
        if name == "peerwire_request_duration_seconds_bucket"
        and {k: v for k, v in key if k != "le"} == labels
    )
    counts = [count for _, count in buckets]
    assert len(buckets) == 17  # 16 bounds and +Inf
    assert counts == sorted(counts)  # cumulative
    assert counts[-1] == 5 == value(samples, "peerwire_request_duration_seconds_count", **labels)
