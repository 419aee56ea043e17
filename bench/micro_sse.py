"""sse-starlette against our own SSE framing, for the same stream of the same agent.

    python3 bench/micro_sse.py              # scenario c (N=20 chunks: 23 events); ~2 min
    python3 bench/micro_sse.py --repeat 3   # any further harness option

Runs the bench harness's stream scenario (wrk counting events, then 200 streams validated
with httpx) on four variants of micro_servers.py, all the same peerwire dispatcher behind
uvicorn: ``raw`` (our framing in raw ASGI), ``starlette`` (our frames in Starlette's
StreamingResponse), ``sse-starlette`` (EventSourceResponse, as the a2a-sdk streams) and
``peerwire`` (A2AApp as shipped). The servers run in the bench venv (see _bench_env.py).
"""

from __future__ import annotations

from _bench_env import run_harness

if __name__ == "__main__":
    run_harness(
        ["raw", "starlette", "sse-starlette", "peerwire"], ["--baseline", "raw", "--scenarios", "c"]
    )
