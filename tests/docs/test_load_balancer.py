"""The recipe "Replicas behind a load balancer" (docs/howto/load-balancer.md) runs as written.

Its nginx.conf and replicas.sh (docs/examples/load_balancer/) run with only their port numbers
changed to free ones (other tests share the machine), the replicas on a PostgreSQL schema and a
Redis prefix of their own. Through nginx, peerwire's ``Client`` reads a card naming the
balancer (the replicas believe nginx's forwarded headers: ``--trusted-proxy``), and completes
a task, follows a stream (SSE through nginx with buffering off) and reads a task back on each
of JSON-RPC, HTTP+JSON and gRPC (``grpc_pass`` over HTTP/2); both replicas answered some of the
calls, and a replica reached directly names itself. Skipped when nginx is not installed.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from peerwire import Client, Task, TaskState
from peerwire.client import CardCache
from peerwire.types import Binding, TaskArtifactUpdateEvent, TaskStatusUpdateEvent
from tests.server._services import PG_DSN, REDIS_URL, delete_prefix, drop_schema, unique_name

RECIPE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "load_balancer"
EXAMPLES = RECIPE.parent
NGINX = shutil.which("nginx")
WAIT_S = 60.0
# The ports the recipe names, each replaced by a free one.
PORTS = ("8080", "50051", "8001", "8002", "50061", "50062")

pytestmark = pytest.mark.skipif(NGINX is None, reason="nginx is not installed")


def free_ports(count: int) -> list[int]:
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in socks]


def with_ports(text: str, ports: dict[str, int]) -> str:
    return re.sub(r"\b(" + "|".join(PORTS) + r")\b", lambda m: str(ports[m[1]]), text)


@contextlib.contextmanager
def started(command: list[str], cwd: Path, log: Path, env: dict[str, str]) -> Iterator[None]:
    """``command`` in a process group of its own, stopped (SIGTERM, then SIGKILL) on exit."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(WAIT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


async def until_ready(url: str) -> None:
    async with httpx.AsyncClient(trust_env=False, timeout=5) as http:
        with anyio.fail_after(WAIT_S):
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get(url)).status_code == 200:
                        return
                await anyio.sleep(0.2)


@pytest.fixture
async def deployment(tmp_path: Path) -> AsyncIterator[dict[str, int]]:
    """The recipe running: nginx and two replicas; yields the ports used."""
    ports = dict(zip(PORTS, free_ports(len(PORTS)), strict=True))
    (tmp_path / "tmp").mkdir()
    config = tmp_path / "nginx.conf"
    config.write_text(with_ports((RECIPE / "nginx.conf").read_text(), ports))
    script = tmp_path / "replicas.sh"
    script.write_text(with_ports((RECIPE / "replicas.sh").read_text(), ports))
    schema, prefix = unique_name("schema"), unique_name("bus")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        STORE=f"{PG_DSN}?schema={schema}",
        BUS=f"{REDIS_URL}/0?prefix={prefix}",
        PUBLIC_GRPC=f"127.0.0.1:{ports['50051']}",
    )
    replicas_log, nginx_log = tmp_path / "replicas.log", tmp_path / "nginx.log"
    nginx = [str(NGINX), "-p", str(tmp_path), "-c", str(config), "-g", "daemon off;"]
    try:
        with (
            started(["sh", str(script)], EXAMPLES, replicas_log, env),
            started(nginx, tmp_path, nginx_log, env),
        ):
            try:
                for port in ("8001", "8002"):
                    await until_ready(f"http://127.0.0.1:{ports[port]}/readyz")
                await until_ready(f"http://127.0.0.1:{ports['8080']}/healthz")
                yield ports
            except BaseException:
                print(replicas_log.read_text(errors="replace"), nginx_log.read_text())
                raise
    finally:
        await drop_schema(schema)
        await delete_prefix(prefix)


async def requests_answered(port: int) -> float:
    """How many A2A requests a replica answered, from its /metrics."""
    async with httpx.AsyncClient(trust_env=False, timeout=10) as http:
        page = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in page.splitlines()
        if line.startswith("peerwire_requests_total{")
    )


async def test_two_replicas_behind_nginx_on_every_binding(deployment: dict[str, int]) -> None:
    balancer = f"http://127.0.0.1:{deployment['8080']}"
    for binding in (Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC):
        async with Client.connect(balancer, bindings=[binding], card_cache=CardCache()) as client:
            urls = {i.protocol_binding: i.url for i in client.card.supported_interfaces}
            assert urls == {
                Binding.JSONRPC: f"{balancer}/",
                Binding.HTTP_JSON: f"{balancer}/rest",
                Binding.GRPC: f"127.0.0.1:{deployment['50051']}",
            }
            with anyio.fail_after(WAIT_S):
                for _ in range(2):  # round robin: each replica gets some
                    task = await client.send("the quick brown fox")
                    assert isinstance(task, Task)
                    assert task.artifacts[0].text == "4 words"
                    again = await client.get_task(task.id)  # maybe from the other replica
                    assert again.status.state is TaskState.COMPLETED
                events = [event async for event in client.stream("lb", skill="spell")]
            chunks = [e for e in events if isinstance(e, TaskArtifactUpdateEvent)]
            assert [c.artifact.text for c in chunks] == ["L", "B"]
            last = events[-1]
            assert isinstance(last, TaskStatusUpdateEvent)
            assert last.status.state is TaskState.COMPLETED
    answered = [await requests_answered(deployment[port]) for port in ("8001", "8002")]
    assert all(count > 0 for count in answered), answered
    # A replica reached directly (no proxy in between) names itself.
    async with Client.connect(f"http://127.0.0.1:{deployment['8001']}") as direct:
        assert direct.interface.url == f"http://127.0.0.1:{deployment['8001']}/"
