"""Transport equivalence: one scripted scenario over each binding gives equal results.

The scenario touches every operation (blocking and streamed sends, a message reply, a
multi-turn task, chunked artifacts, get, list, cancel, subscribe) and a few refusals. Its
results are ``peerwire.types`` objects; after ``normalised`` (ids and timestamps replaced by
placeholders in order of appearance) the three runs must be equal, object for object.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from peerwire.client import Payload
from peerwire.errors import A2AError
from peerwire.types import Binding, Task

from ._peers import BINDINGS, Bench, Peer, connecting, dumped, normalised

pytestmark = pytest.mark.asyncio(loop_scope="module")

WAIT_S = 30.0


async def collect(events: AsyncIterator[Payload]) -> list[Payload]:
    seen: list[Payload] = []
    with anyio.fail_after(WAIT_S):
        async with contextlib.aclosing(events):  # type: ignore[type-var]
            async for event in events:
                seen.append(event)
                assert len(seen) <= 100
    return seen


async def refusal(call: Any) -> tuple[str, list[str]]:
    """The class of the error a call is refused with, and its metadata keys."""
    try:
        await call
    except A2AError as error:
        return type(error).__name__, sorted(error.metadata)
    raise AssertionError("the call was not refused")


async def scenario(peer: Peer) -> tuple[list[Any], list[Task], list[Any]]:
    """The results of the script in order, the tasks it listed, and the refusals it met."""
    client = peer.client
    context_id = peer.key("equivalence")
    results: list[Any] = []

    done = await client.send("hello", skill="echo", context_id=context_id)
    assert isinstance(done, Task)
    results.append(done)
    results.append(await client.send("hi", skill="reply", context_id=context_id))

    asked = await client.send("", skill="ask", context_id=context_id, history_length=5)
    assert isinstance(asked, Task)
    results.append(asked)
    results.append(await client.send("a", task_id=asked.id))
    results += await collect(client.stream("b", task_id=asked.id))
    results.append(await client.get_task(asked.id, history_length=2))

    results += await collect(client.stream("", skill="chunks", context_id=context_id))

    waiting = await client.send("", skill="ask", context_id=context_id)
    assert isinstance(waiting, Task)
    followed = client.subscribe(waiting.id)
    try:
        with anyio.fail_after(WAIT_S):
            results.append(await anext(followed))
        results.append(await client.cancel_task(waiting.id))
        results += await collect(followed)
    finally:
        await followed.aclose()  # type: ignore[attr-defined]
    results.append(await client.cancel_task(waiting.id))

    listed = [t async for t in client.list_tasks(context_id=context_id, include_artifacts=True)]
    refusals = [
        await refusal(client.send("more", task_id=done.id)),
        await refusal(client.send("x", task_id="ghost")),
        await refusal(client.send("x", task_id=asked.id, context_id="elsewhere")),
        await refusal(client.get_task("ghost")),
        await refusal(client.cancel_task(done.id)),
        await refusal(client.get_task(done.id, history_length=-1)),
        await refusal(collect(client.subscribe(done.id))),
        await refusal(client.get_extended_card()),
    ]
    return results, listed, refusals


async def test_one_scenario_gives_equal_results_on_every_binding(bench: Bench) -> None:
    outcomes: dict[str, tuple[list[Any], list[Any]]] = {}
    for binding in BINDINGS:
        async with connecting(bench.url, binding) as peer:
            results, listed, refusals = await scenario(peer)
        # One normalisation for both, so a listed task gets the placeholders it had above.
        typed = normalised([*results, *listed])
        # Tasks made within one millisecond share a status time, and so a place in the list:
        # compare the listed ones in the order of their placeholders, which all runs share.
        head, tail = typed[: len(results)], typed[len(results) :]
        outcomes[binding] = ([*head, *sorted(tail, key=lambda t: t.id)], refusals)
    reference = outcomes[Binding.JSONRPC]
    assert len(reference[0]) > 20
    for binding in (Binding.HTTP_JSON, Binding.GRPC):
        results, refusals = outcomes[binding]
        assert refusals == reference[1], binding
        assert len(results) == len(reference[0]), binding
        for index, (got, want) in enumerate(zip(results, reference[0], strict=True)):
            assert got == want, f"{binding}, result {index}:\n{dumped(got)}\n!=\n{dumped(want)}"
