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
