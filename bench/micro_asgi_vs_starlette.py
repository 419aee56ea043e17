"""Starlette routing against our raw ASGI dispatch, for the same JSON-RPC handler.

    python3 bench/micro_asgi_vs_starlette.py              # scenarios a, l, b; ~3 min
    python3 bench/micro_asgi_vs_starlette.py --repeat 3   # any further harness option

Runs the bench harness (bench/run.sh: pinning, validation, noise column) on three variants of
micro_servers.py, all the same peerwire dispatcher behind uvicorn: ``raw`` (minimal raw ASGI),
``starlette`` (Starlette Route, Request and Response) and ``peerwire`` (A2AApp as shipped).
The ratios starlette/raw are what Starlette would cost per request. The servers run in the
bench venv (see _bench_env.py).
"""

from __future__ import annotations

from _bench_env import run_harness

if __name__ == "__main__":
    run_harness(["raw", "starlette", "peerwire"], ["--baseline", "raw", "--scenarios", "a,l,b"])
