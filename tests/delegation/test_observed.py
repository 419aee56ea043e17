"""Delegations are counted in the server's metrics and appear as child spans in its traces."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import httpx

from peerwire import Agent, Client, TaskContext
from peerwire.testing import live_server

from ._peers import PeerAgent

REPO = Path(__file__).resolve().parents[2]


async def test_delegation_events_are_counted() -> None:
    peer = PeerAgent()
    async with live_server(peer.agent) as peer_url:
        orchestrator = Agent("Orchestrator")

        @orchestrator.skill()
        async def order(ctx: TaskContext) -> str:
            done = await ctx.delegate(peer_url, "book m1", key="book")
            await done.result()
            stalled = await ctx.delegate(peer_url, "ask m2", key="ask")
            await stalled.result()
            await stalled.cancel()
            return "ok"

        async with live_server(orchestrator) as url:
            async with Client.connect(url) as client:
                await client.send("go")
            async with httpx.AsyncClient(trust_env=False) as http:
                page = (await http.get(url + "/metrics")).text
    counted = {
        line.split('event="')[1].split('"')[0]: float(line.rsplit(" ", 1)[1])
        for line in page.splitlines()
        if line.startswith("peerwire_delegation_events_total{")
    }
    assert counted["sent"] == 2
    assert counted["completed"] == 1
    assert counted["stalled"] == 1
    assert counted["canceled"] == 1


async def test_delegation_spans_are_children_of_the_handler_span() -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.delegation._traced",
        cwd=REPO,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    output, errors = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, errors.decode()
    spans = json.loads(output.decode().strip().splitlines()[-1])
    by_id = {span["id"]: span for span in spans}
    (send,) = [span for span in spans if span["name"] == "delegation.send"]
    # Up from the delegation's span: the orchestrator's handling of the request (its
    # server span, or the handler's own invoke_agent span), up to the test's client call.
    chain = []
    parent = send["parent"]
    while parent in by_id:
        chain.append(by_id[parent])
        parent = by_id[parent]["parent"]
    assert chain and chain[-1]["parent"] is None, "one trace, from the caller's call down"
    assert chain[-1]["name"] == "SendMessage"

    # Down from it: the peer's side of the call nests under the delegation's span.
    def descends_from(span: dict[str, object], ancestor: object) -> bool:
        parent = span["parent"]
        while parent in by_id:
            if parent == ancestor:
                return True
            parent = by_id[parent]["parent"]
        return False

    peer_side = [span for span in spans if span["name"] == "invoke_agent Peer"]
    assert peer_side and all(descends_from(span, send["id"]) for span in peer_side)


async def test_following_a_task_that_already_ended_records_no_error_on_either_side() -> None:
    # The ledger subscribes to a remote task that has finished; the agent refuses (A2A spec
    # §3.1.6: UnsupportedOperationError) and the ledger reads it with GetTask. That is the
    # happy path: no ERROR span and no error outcome, on the agent or on the delegating side.
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.delegation._traced_finished",
        cwd=REPO,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    output, errors = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, errors.decode()
    ran = json.loads(output.decode().strip().splitlines()[-1])
    assert ran["state"] == "TASK_STATE_COMPLETED"
    spans = ran["spans"]
    assert [s for s in spans if s["status"] == "ERROR"] == []
    subscribed = {s["kind"]: s for s in spans if s["name"] == "SubscribeToTask"}
    assert set(subscribed) == {"SERVER", "CLIENT"}, "the ledger subscribed to the ended task"
    for span in subscribed.values():
        assert span["status"] == "UNSET" and "error.type" not in span["attributes"]
        assert span["attributes"]["a2a.task.finished"] is True
        assert span["attributes"]["a2a.task.state"] == "TASK_STATE_COMPLETED"
    assert any(s["name"] == "GetTask" and s["kind"] == "CLIENT" for s in spans)

    peer, orchestrator = ran["metrics"]["peer"], ran["metrics"]["orchestrator"]
    finished = (
        'peerwire_requests_total{binding="jsonrpc",operation="SubscribeToTask",'
        'outcome="task_finished"}'
    )
    assert peer[finished] == 1
    for counters in (peer, orchestrator):
        outcomes = {k.split('outcome="')[1].split('"')[0] for k in counters if "outcome=" in k}
        assert outcomes <= {"ok", "task_finished"}, counters
    assert orchestrator['peerwire_delegation_events_total{event="completed"}'] == 1
    assert not [k for k in orchestrator if 'event="failed"' in k]
