"""``/healthz`` and ``/readyz``: a real SQLite file that goes away and comes back, auth,
mounting, draining, and what ``Readiness`` promises (one check at a time, cached, bounded)."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from peerwire import Agent, Client, create_app
from peerwire.ops import HealthServer, Readiness
from peerwire.security import APIKeyVerifier
from peerwire.server.stores import SQLiteTaskStore
from peerwire.testing import live_server
from peerwire.types import (
    APIKeySecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

from ._readiness import wait_for_status

WAIT_S = 10.0


def _agent() -> Agent:
    agent = Agent("Steady", description="Answers")

    @agent.skill("echo", description="Echoes")
    async def echo(text: str) -> str:
        return text

    return agent


async def test_liveness_and_readiness_answer_get_and_head_and_refuse_other_methods() -> None:
    async with live_server(_agent()) as url, httpx.AsyncClient(base_url=url) as web:
        live = await web.get("/healthz")
        assert (live.status_code, live.json()) == (200, {"status": "ok"})
        ready = await web.get("/readyz")
        assert ready.status_code == 200
        assert ready.json() == {"status": "ready", "checks": {"store": "ok"}}
        head = await web.head("/readyz")
        assert head.status_code == 200 and head.content == b""
        posted = await web.post("/healthz")
        assert posted.status_code == 405 and posted.headers["allow"] == "GET, HEAD"


async def test_readiness_follows_a_sqlite_file_replaced_by_garbage_and_its_folder_removed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="peerwire.health")
    folder = tmp_path / "data"
    folder.mkdir()
    database = folder / "tasks.db"
    async with (
        live_server(_agent(), store=f"sqlite:{database}") as url,
        httpx.AsyncClient(base_url=url) as web,
        Client.connect(url) as client,
    ):
        await client.send("before")
        assert (await wait_for_status(web, 200, within=WAIT_S))["checks"] == {"store": "ok"}

        # The file is replaced by garbage: the store's open connections would not notice.
        os.rename(database, folder / "tasks.db.away")
        database.write_bytes(b"this is not a database\n" * 64)
        down = await wait_for_status(web, 503, within=WAIT_S)
        assert down == {"status": "unavailable", "checks": {"store": "down"}}
        assert (await web.get("/healthz")).status_code == 200  # alive all the same

        database.unlink()
        os.rename(folder / "tasks.db.away", database)
        await wait_for_status(web, 200, within=WAIT_S)

        # The whole folder goes away, and comes back.
        os.rename(folder, tmp_path / "data.away")
        await wait_for_status(web, 503, within=WAIT_S)
        os.rename(tmp_path / "data.away", folder)
        await wait_for_status(web, 200, within=WAIT_S)
        await client.send("after")  # and it still serves
    said = [r.getMessage() for r in caplog.records if r.name == "peerwire.health"]
    assert any(m.startswith("peerwire: not ready: store: ") for m in said), said
    assert "peerwire: ready again" in said


def _secured_agent() -> Agent:
    agent = Agent(
        "Guarded",
        description="Requires an API key",
        security_schemes={
            "key": SecurityScheme(
                api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-Key")
            )
        },
        security_requirements=[SecurityRequirement(schemes={"key": StringList()})],
    )

    @agent.skill("echo", description="Echoes")
    async def echo(text: str) -> str:
        return text

    return agent


@pytest.mark.parametrize("http", ["peerwire", "uvicorn"])
async def test_health_is_answered_without_credentials_on_a_secured_agent(http: str) -> None:
    auth = {"key": APIKeyVerifier({"key-1": "alice"})}
    async with (
        live_server(_secured_agent(), http=http, auth=auth) as url,  # type: ignore[arg-type]
        httpx.AsyncClient(base_url=url) as web,
    ):
        assert (await web.get("/healthz")).status_code == 200
        assert (await web.get("/readyz")).status_code == 200
        refused = await web.post(
            "/",
            headers={"A2A-Version": "1.0"},
            json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}},
        )
        assert refused.status_code == 401  # the A2A endpoints still require the key


async def test_health_lives_under_the_mount_prefix_and_readiness_starts_the_agent() -> None:
    a2a = create_app(_agent(), public_url="http://testserver/a2a")
    host = Starlette(routes=[Mount("/a2a", app=a2a)])  # its lifespan is not run: first use
    transport = httpx.ASGITransport(app=host)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as web:
        assert (await web.get("/a2a/healthz")).json() == {"status": "ok"}
        ready = await web.get("/a2a/readyz")
        assert ready.status_code == 200 and ready.json()["status"] == "ready"
        assert (await web.get("/healthz")).status_code == 404  # the host's, not the agent's


async def test_readiness_is_503_while_the_server_drains() -> None:
    app = create_app(_agent())
    transport = httpx.ASGITransport(app=app)
    async with (
        app.lifespan(),
        httpx.AsyncClient(transport=transport, base_url="http://testserver") as web,
    ):
        assert (await web.get("/readyz")).status_code == 200
        await app.dispatcher.runner.drain()
        draining = await web.get("/readyz")
        assert (draining.status_code, draining.json()) == (503, {"status": "draining"})
        assert (await web.get("/healthz")).status_code == 200


async def test_readiness_before_start_is_starting() -> None:
    readiness = Readiness({}, accepting=lambda: False)
    report = await readiness.report()
    assert (report.status, report.http_status) == ("starting", 503)


# -- Readiness itself ------------------------------------------------------------------------


async def test_a_probe_storm_runs_each_check_once_per_ttl() -> None:
    calls = 0

    async def check() -> None:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.01)

    readiness = Readiness({"store": check}, ttl=60.0)
    reports = await asyncio.gather(*(readiness.report() for _ in range(50)))
    assert {r.status for r in reports} == {"ready"}
    for _ in range(50):
        await readiness.report()
    assert calls == 1


async def test_a_check_slower_than_the_timeout_is_down_and_never_runs_twice_at_once() -> None:
    started = 0
    release = asyncio.Event()

    async def stuck() -> None:
        nonlocal started
        started += 1
        await release.wait()

    async def fine() -> None:
        return None

    readiness = Readiness({"store": stuck, "bus": fine}, ttl=0.0, timeout=0.05)
    first = await readiness.report()
    assert first.checks == {"store": "down", "bus": "ok"}
    assert first.reasons["store"] == "no answer within 0.05 s"
    assert first.body() == b'{"status":"unavailable","checks":{"store":"down","bus":"ok"}}'
    second = await readiness.report()
    assert second.status == "unavailable" and started == 1  # the same run, waited for again
    release.set()
    await asyncio.sleep(0.05)  # the stuck run ends...
    assert (await readiness.report()).ready  # ...and the next probe runs the check anew
    assert started == 2


async def test_a_check_that_raises_is_down_and_says_why_only_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="peerwire.health")

    async def broken() -> None:
        raise OSError("disk /var/lib/secret-path is gone")

    report = await Readiness({"store": broken}, ttl=0.0).report()
    assert report.http_status == 503
    assert b"secret-path" not in report.body()
    assert any("secret-path" in r.getMessage() for r in caplog.records)


async def test_health_server_serves_both_paths_on_a_port_of_its_own() -> None:
    healthy = True

    async def check() -> None:
        if not healthy:
            raise ConnectionError("Redis is away")

    async with (
        HealthServer(Readiness({"queue": check}, ttl=0.0), port=0) as server,
        httpx.AsyncClient(base_url=server.url) as web,
    ):
        assert server.port > 0
        assert (await web.get("/healthz")).json() == {"status": "ok"}
        assert (await web.get("/readyz?verbose=1")).status_code == 200
        healthy = False
        down = await web.get("/readyz")
        assert (down.status_code, down.json()["checks"]) == (503, {"queue": "down"})
        assert (await web.get("/metrics")).status_code == 404
        assert (await web.post("/healthz")).status_code == 405
        assert (await web.head("/healthz")).content == b""


async def test_the_sqlite_check_sees_its_file_overwritten_in_place_and_a_closed_store(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.db"
    store = SQLiteTaskStore(path)
    await store.open()
    try:
        await store.check_health()
        with path.open("r+b") as file:  # the same file (same inode), its header overwritten
            header = file.read(16)
            file.seek(0)
            file.write(b"garbage garbage!")
        with pytest.raises(OSError, match="no longer a SQLite database"):
            await store.check_health()
        with path.open("r+b") as file:
            file.write(header)
        await store.check_health()
    finally:
        await store.close()
    with pytest.raises(RuntimeError, match="not open"):
        await store.check_health()
