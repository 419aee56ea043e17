"""Resident memory as completed tasks accumulate, in one process (no HTTP, no load tool).

    .venv/bin/python bench/rss_curve.py --store memory --steps 3 --per-step 10000
    .venv/bin/python bench/rss_curve.py --store sqlite --steps 4 --per-step 10000

Calls the echo agent's ASGI app directly (blocking SendMessage, 32 at a time), collects
garbage as ``peerwire serve`` does, and prints RSS after a warm-up and after every step with
the growth per task since the warm-up. The harness's scenario (d) measures one step over
HTTP; this shows the curve: per-task growth for the memory store, a plateau for SQLite (its
page cache fills, then the tasks live on disk only).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.echo_agent import agent
from peerwire.server import create_app

_BATCH = 32
_BODY = (
    b'{"jsonrpc":"2.0","id":%d,"method":"SendMessage","params":{"message":{"messageId":'
    b'"rss-%d","role":"ROLE_USER","parts":[{"text":"hello bench"}]}}}'
)


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def measure(store: str, steps: int, per_step: int, warmup: int) -> list[tuple[int, int]]:
    """``[(tasks sent, RSS bytes)]``: after the warm-up, then after each step."""
    with tempfile.TemporaryDirectory() as folder:
        spec = f"sqlite:{folder}/rss.db" if store == "sqlite" else store
        app = create_app(agent, store=spec, rest_path=None)
        headers = [(b"content-type", b"application/json"), (b"a2a-version", b"1.0")]
        sent = 0
        failures = 0

        async def one() -> None:
            nonlocal sent, failures
            sent += 1
            body = _BODY % (sent, sent)
            answer: list[bytes] = []

            async def receive() -> dict[str, Any]:
                return {"type": "http.request", "body": body, "more_body": False}

            async def send(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.body":
                    answer.append(message["body"])

            scope = {"type": "http", "method": "POST", "path": "/", "headers": headers}
            await app(scope, receive, send)
            if b"TASK_STATE_COMPLETED" not in b"".join(answer):
                failures += 1

        points = []
        async with app.lifespan():
            gc.freeze()  # as peerwire serve does (server/app.py _tune_gc)
            gc.set_threshold(10_000, 20, 20)
            for _ in range(warmup):
                await one()
            gc.collect()
            points.append((sent, rss_bytes()))
            for _ in range(steps):
                for _ in range(max(1, per_step // _BATCH)):
                    await asyncio.gather(*(one() for _ in range(_BATCH)))
                gc.collect()
                points.append((sent, rss_bytes()))
        if failures:
            raise SystemExit(f"{failures} sends did not complete")
        return points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", default="memory", help="memory | sqlite")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--per-step", type=int, default=10_000)
    parser.add_argument("--warmup", type=int, default=300)
    options = parser.parse_args()
    points = asyncio.run(measure(options.store, options.steps, options.per_step, options.warmup))
    (base_tasks, base_rss), *rest = points
    print(f"store={options.store} warm-up {base_tasks} tasks: RSS {base_rss / 2**20:.1f} MiB")
    for tasks, rss in rest:
        growth = (rss - base_rss) / (tasks - base_tasks)
        print(
            f"{tasks:8d} tasks: RSS {rss / 2**20:6.1f} MiB, {growth:6.0f} bytes/task since warm-up"
        )


if __name__ == "__main__":
    main()
