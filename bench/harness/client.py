"""The harness's httpx client: exact-count SendMessage and validated streams.

    python -m bench.harness.client send URL --count 10000 --concurrency 32
    python -m bench.harness.client stream URL --count 200 --concurrency 8 --chunks 20

Run as a subprocess of the harness, pinned to the client CPUs, with any Python that has
httpx (``--client-python``; the project's venv by default). Prints one JSON object.

``send`` makes exactly ``count`` blocking SendMessage calls (scenario d fills the task store
with them) and checks each reply is a completed task echoing the text. ``stream`` opens
``count`` SendStreamingMessage streams with ``chunks`` artifact chunks and checks each one
whole: HTTP 200, ``chunks + 3`` events (the task, working, the chunks, completed), every
event a JSON-RPC result for the request's id, the first a task, the last completed; it
times the first event and the whole stream.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from .loopback import NotLoopback, loopback_only

TEXT = "hello bench"
HEADERS = {"content-type": "application/json", "a2a-version": "1.0"}
TIMEOUT_S = 30.0
COMPLETED = "TASK_STATE_COMPLETED"


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (nan for no values)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = round(pct / 100 * (len(ordered) - 1))
    return ordered[min(len(ordered) - 1, max(0, rank))]


def request_body(method: str, request_id: int, tag: str, chunks: int) -> bytes:
    message: dict[str, Any] = {
        "messageId": f"bench-{tag}-{request_id}",
        "role": "ROLE_USER",
        "parts": [{"text": TEXT}],
    }
    if chunks > 0:
        message["metadata"] = {"chunks": chunks}
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {"message": message}}
    return json.dumps(body, separators=(",", ":")).encode()


class Invalid(Exception):
    """A reply that breaks the bench contract; the message is its kind, for the counts."""


def task_state(result: Any) -> str | None:
    """The state of a ``{"task": ...}`` or ``{"statusUpdate": ...}`` result."""
    if not isinstance(result, dict):
        return None
    held = result.get("task") or result.get("statusUpdate") or {}
    status = held.get("status") if isinstance(held, dict) else None
    return status.get("state") if isinstance(status, dict) else None


def check_send_reply(status: int, payload: Any) -> str:
    """The task id of a valid SendMessage reply, else Invalid."""
    if status != 200:
        raise Invalid(f"HTTP {status}")
    if not isinstance(payload, dict):
        raise Invalid("not a JSON object")
    if "error" in payload:
        raise Invalid(f"error {str(payload['error'])[:80]}")
    result = payload.get("result")
    if task_state(result) != COMPLETED or "task" not in result:
        raise Invalid(f"not a completed task: {str(result)[:80]}")
    task = result["task"]
    texts = [p.get("text", "") for a in task.get("artifacts") or [] for p in a.get("parts") or []]
    if "".join(texts) != TEXT:
        raise Invalid(f"artifact {''.join(texts)[:40]!r} does not echo the text")
    return str(task.get("id", ""))


def check_stream(status: int, events: list[Any], request_id: int, expected: int) -> None:
    if status != 200:
        raise Invalid(f"HTTP {status}")
    if len(events) != expected:
        raise Invalid(f"{len(events)} events, not {expected}")
    for event in events:
        if not isinstance(event, dict) or "result" not in event or "error" in event:
            raise Invalid(f"not a result: {str(event)[:80]}")
        if event.get("id") != request_id:
            raise Invalid("an event for another request id")
    if "task" not in events[0]["result"]:
        raise Invalid("the first event is not the task")
    if task_state(events[-1]["result"]) != COMPLETED:
        raise Invalid("the last event is not completed")


async def _workers(concurrency: int, count: int, work: Callable[[int], Awaitable[None]]) -> float:
    issued = 0

    async def worker() -> None:
        nonlocal issued
        while issued < count:
            issued += 1
            await work(issued)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started


def _client(concurrency: int) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    return httpx.AsyncClient(limits=limits, timeout=TIMEOUT_S)


async def send(url: str, concurrency: int, count: int) -> dict[str, Any]:
    ok = 0
    errors: Counter[str] = Counter()
    task_ids: set[str] = set()
    tag = f"send{time.monotonic_ns() % 10**9}"
    async with _client(concurrency) as http:

        async def one(request_id: int) -> None:
            nonlocal ok
            body = request_body("SendMessage", request_id, tag, 0)
            try:
                reply = await http.post(url, content=body, headers=HEADERS)
                task_ids.add(check_send_reply(reply.status_code, reply.json()))
                ok += 1
            except Invalid as exc:
                errors[str(exc)] += 1
            except (httpx.HTTPError, ValueError) as exc:
                errors[type(exc).__name__] += 1

        elapsed = await _workers(concurrency, count, one)
    sent = ok + sum(errors.values())
    return {
        "sent": sent,
        "ok": ok,
        "bad": sent - ok,
        "distinct_task_ids": len(task_ids),
        "elapsed_s": elapsed,
        "rps": sent / elapsed if elapsed else 0.0,
        "errors": dict(errors),
    }


async def stream(url: str, concurrency: int, count: int, chunks: int) -> dict[str, Any]:
    expected = chunks + 3 if chunks > 0 else 4
    ok = events_seen = 0
    errors: Counter[str] = Counter()
    first_event: list[float] = []
    whole: list[float] = []
    tag = f"stream{time.monotonic_ns() % 10**9}"
    headers = {**HEADERS, "accept": "text/event-stream"}
    async with _client(concurrency) as http:

        async def one(request_id: int) -> None:
            nonlocal ok, events_seen
            body = request_body("SendStreamingMessage", request_id, tag, chunks)
            started = time.perf_counter()
            first: float | None = None
            events: list[Any] = []
            data: list[str] = []
            try:
                async with http.stream("POST", url, content=body, headers=headers) as reply:
                    async for line in reply.aiter_lines():
                        if line.startswith("data:"):
                            if first is None:
                                first = time.perf_counter() - started
                            data.append(line[5:].removeprefix(" "))
                        elif not line and data:  # a blank line ends an event
                            events.append(json.loads("\n".join(data)))
                            data = []
                    if data:
                        events.append(json.loads("\n".join(data)))
                    status = reply.status_code
                elapsed = time.perf_counter() - started
                events_seen += len(events)
                check_stream(status, events, request_id, expected)
            except Invalid as exc:
                errors[str(exc)] += 1
                return
            except (httpx.HTTPError, ValueError) as exc:
                errors[type(exc).__name__] += 1
                return
            ok += 1
            whole.append(elapsed)
            if first is not None:
                first_event.append(first)

        elapsed = await _workers(concurrency, count, one)
    streams = ok + sum(errors.values())
    return {
        "streams": streams,
        "ok": ok,
        "bad": streams - ok,
        "events": events_seen,
        "expected_events_per_stream": expected,
        "elapsed_s": elapsed,
        "streams_per_s": ok / elapsed if elapsed else 0.0,
        "ttfe_p50_ms": percentile(first_event, 50) * 1e3,
        "ttfe_p99_ms": percentile(first_event, 99) * 1e3,
        "stream_p50_ms": percentile(whole, 50) * 1e3,
        "stream_p99_ms": percentile(whole, 99) * 1e3,
        "errors": dict(errors),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("mode", choices=["send", "stream"])
    ap.add_argument("url", help="the JSON-RPC URL (loopback only)")
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--chunks", type=int, default=20, help="stream: artifact chunks asked for")
    a = ap.parse_args(argv)
    try:
        loopback_only(a.url)
    except NotLoopback as exc:
        ap.error(str(exc))
    if a.count < 1 or a.concurrency < 1:
        ap.error("need --count >= 1 and --concurrency >= 1")
    if a.mode == "send":
        report = asyncio.run(send(a.url, a.concurrency, a.count))
    else:
        report = asyncio.run(stream(a.url, a.concurrency, a.count, a.chunks))
    json.dump(report, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
