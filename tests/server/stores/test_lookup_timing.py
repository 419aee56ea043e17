"""Another principal's task and an id never issued take the same time to be not found.

Bob asks a real server on loopback (peerwire's HTTP server, JSON-RPC ``GetTask``, one
keep-alive connection) for Alice's tasks (working, waiting for input, finished: cached,
expanded or compacted, depending on the store) and for ids nobody was given, in random order
within each round, so whatever load the machine has falls on both kinds alike. Bob asks for
each of a fixed set of unknown ids as often as for each of Alice's: asking again for the same
id costs a little differently from asking for a fresh one, on its own. A Mann-Whitney U test
then compares the two samples; a control compares two such sets of unknown ids with each
other. Both must show no difference at a strict alpha. Before the fix, the SQLite store
answered for a cached task of another principal without reading the file: z around -30 here
(much faster), where the alpha allows about 3.9.

The answers are checked too: the same error, for both kinds.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from peerwire import Agent, TaskContext
from peerwire.security import APIKeyVerifier
from peerwire.server.stores import MemoryTaskStore, SQLiteTaskStore, TaskStore
from peerwire.server.stores.postgres import PostgresTaskStore
from peerwire.testing import live_server
from peerwire.types import APIKeySecurityScheme, SecurityRequirement, SecurityScheme, StringList

from .._services import PG_DSN, fresh_schema

ALPHA = 1e-4
ROUNDS = 1500
MIN_ROUNDS = 300
BUDGET_S = 30.0  # a give-up bound for a loaded machine (four test workers), not a target
"""Measuring stops after this long even if fewer than ``ROUNDS`` rounds ran (a slow machine)."""
KEYS = {"k-alice": "alice", "k-bob": "bob"}
HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}


def _agent(release: asyncio.Event) -> Agent:
    agent = Agent(
        "Timing",
        security_schemes={
            "key": SecurityScheme(
                api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-API-Key")
            )
        },
        security_requirements=[SecurityRequirement(schemes={"key": StringList()})],
    )

    @agent.skill()
    async def work(ctx: TaskContext) -> str:
        text = ctx.message.text
        if text == "ask":
            await ctx.ask("and then?")
        elif text == "hold":
            await ctx.start_work()
            await release.wait()
        return text

    return agent


def mann_whitney(first: list[int], second: list[int]) -> tuple[float, float]:
    """The two-sided Mann-Whitney U test (normal approximation, ties corrected): (z, p)."""
    n1, n2 = len(first), len(second)
    pooled = sorted([(value, 0) for value in first] + [(value, 1) for value in second])
    rank_sum = 0.0
    ties = 0.0
    i = 0
    while i < len(pooled):
        j = i
        while j < len(pooled) and pooled[j][0] == pooled[i][0]:
            j += 1
        rank = (i + 1 + j) / 2  # the average of ranks i+1 .. j
        rank_sum += rank * sum(1 for _, group in pooled[i:j] if group == 0)
        ties += (j - i) ** 3 - (j - i)
        i = j
    u = rank_sum - n1 * (n1 + 1) / 2
    n = n1 + n2
    variance = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    z = (u - n1 * n2 / 2) / math.sqrt(variance)
    return z, math.erfc(abs(z) / math.sqrt(2))


def test_mann_whitney_finds_a_shift_and_not_noise() -> None:
    """The test statistic itself: a real shift is found, two draws of one distribution not."""
    draw = random.Random(7)
    same = [int(draw.gauss(100, 10)) for _ in range(2000)]
    other = [int(draw.gauss(100, 10)) for _ in range(2000)]
    shifted = [int(draw.gauss(103, 10)) for _ in range(2000)]
    assert mann_whitney(same, other)[1] > ALPHA
    z, p = mann_whitney(same, shifted)
    assert p < ALPHA and z < 0


async def _rpc(http: httpx.AsyncClient, key: str, method: str, params: dict[str, Any]) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    answer = (await http.post("/", json=body, headers={**HEADERS, "X-API-Key": key})).json()
    return answer


async def _alices_tasks(http: httpx.AsyncClient) -> list[str]:
    """Alice's tasks in every state a store keeps differently: finished (more than the memory
    store keeps expanded), waiting for input, and working."""
    ids = []
    for text in ["done"] * 24 + ["ask"] * 4 + ["hold"] * 4:
        message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
        config = {"returnImmediately": text == "hold"}
        answer = await _rpc(
            http, "k-alice", "SendMessage", {"message": message, "configuration": config}
        )
        ids.append(answer["result"]["task"]["id"])
    return ids


async def _measure(url: str) -> dict[str, list[int]]:
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    async with httpx.AsyncClient(base_url=url, limits=limits, trust_env=False) as http:
        alices = await _alices_tasks(http)
        draw = random.Random()

        async def get_task(task_id: str) -> int:
            body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}
            headers = {**HEADERS, "X-API-Key": "k-bob"}
            started = time.perf_counter_ns()
            response = await http.post("/", json=body, headers=headers)
            elapsed = time.perf_counter_ns() - started
            error = response.json()["error"]
            assert error["code"] == -32001 and error["message"] == f"Task {task_id} was not found"
            return elapsed

        # As many ids never issued as Alice has tasks, each asked for as often as hers: an id
        # asked for again and a fresh one differ a little in cost on their own (caches), which
        # must not pass for a difference between existing and missing.
        kinds = {
            "alices": alices,
            "unknown": [str(uuid.uuid4()) for _ in alices],
            "control": [str(uuid.uuid4()) for _ in alices],
        }
        # The whole schedule drawn before anything is timed: drawing must not change what the
        # next request's timing sees (a garbage collection, say).
        schedule = []
        for _ in range(ROUNDS):
            order = list(kinds)
            draw.shuffle(order)
            schedule.extend((kind, draw.choice(kinds[kind])) for kind in order)
        for _, task_id in schedule[:150]:  # warm up: connection, caches, code paths
            await get_task(task_id)
        samples: dict[str, list[int]] = {kind: [] for kind in kinds}
        give_up = time.monotonic() + BUDGET_S
        for index, (kind, task_id) in enumerate(schedule):
            if index % len(kinds) == 0 and time.monotonic() > give_up:
                break
            samples[kind].append(await get_task(task_id))
    assert len(samples["alices"]) >= MIN_ROUNDS, "the machine is too slow to measure anything"
    return samples


@contextlib.asynccontextmanager
async def _store(kind: str, tmp_path: Path) -> AsyncIterator[TaskStore]:
    if kind == "memory":
        yield MemoryTaskStore(expanded_finished=8)  # most finished tasks compacted
    elif kind == "sqlite":
        yield SQLiteTaskStore(tmp_path / "tasks.db")
    else:
        async with fresh_schema() as schema:
            yield PostgresTaskStore(PG_DSN, schema=schema, min_size=1, max_size=4)


@pytest.mark.parametrize(
    "kind", ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.services)]
)
async def test_another_principals_task_is_not_found_as_fast_as_an_unknown_id(
    kind: str, tmp_path: Path
) -> None:
    release = asyncio.Event()
    async with _store(kind, tmp_path) as store:
        auth = {"key": APIKeyVerifier(KEYS)}
        async with live_server(
            _agent(release), store=store, auth=auth, rest_path=None, shutdown_grace=1.0
        ) as url:
            try:
                with anyio.fail_after(60):
                    samples = await _measure(url)
            finally:
                release.set()
    z, p = mann_whitney(samples["alices"], samples["unknown"])
    control_z, control_p = mann_whitney(samples["control"], samples["unknown"])
    medians = {k: sorted(v)[len(v) // 2] / 1000 for k, v in samples.items()}
    summary = (
        f"{kind}: {len(samples['alices'])} rounds; medians (us) {medians}; "
        f"Alice's vs unknown z={z:.2f} p={p:.3g}; control z={control_z:.2f} p={control_p:.3g}"
    )
    print(summary)
    assert p > ALPHA, summary
    assert control_p > ALPHA, summary
