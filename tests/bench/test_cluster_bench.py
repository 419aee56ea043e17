"""A smoke run of bench/cluster_bench.py: tiny, nothing timed, its numbers not looked at.

Two replicas and two workers of this tree on the machine's PostgreSQL (a fresh schema, dropped
after) and a redis-server the tool starts on a free port and stops, 20 checked SendMessage
calls: the tool works end to end and reports what it measured. The benchmark itself is run
on demand (docs/PERFORMANCE.md, "A cluster").
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 120

pytestmark = pytest.mark.services


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server")
def test_a_tiny_cluster_run_completes_and_reports(tmp_path: Path) -> None:
    out = tmp_path / "cluster.json"
    done = subprocess.run(
        [
            sys.executable,
            ROOT / "bench" / "cluster_bench.py",
            *("--tasks", "20", "--warmup", "4", "--concurrency", "2"),
            *("--stats-wait", "0", "--json", str(out)),
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [(label, [run])] = json.loads(out.read_text()).items()
    assert label == "peerwire (tree)"
    assert run["bad"] == 0 and run["tasks_per_s"] > 0
    assert {"replicas", "workers", "redis", "postgres"} <= set(run["cpu_pct"])
    assert run["redis_per_task"].get("xadd", 0) > 0, "its own redis-server saw the work"
    assert "End-to-end tasks/s" in done.stdout


def test_nothing_to_run_is_refused() -> None:
    done = subprocess.run(
        [sys.executable, ROOT / "bench" / "cluster_bench.py", "--no-tree"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert done.returncode == 2 and "nothing to run" in done.stderr
