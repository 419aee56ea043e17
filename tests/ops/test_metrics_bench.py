"""The metrics' bench pieces run: the target without metrics, and the in-process micro bench."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.harness.catalog import Catalog

ROOT = Path(__file__).parents[2]


def test_the_metrics_off_target_is_peerwire_with_no_metrics() -> None:
    catalog = Catalog(peerwire_bin=Path(sys.executable).with_name("peerwire"), build=False)
    on, off = catalog.target("peerwire"), catalog.target("peerwire-metrics-off")
    assert "--no-metrics" in off.command
    assert "--no-metrics" not in on.command
    assert off.command.replace(" --no-metrics", "") == on.command


def test_the_micro_bench_times_both_kinds_of_instrument() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.micro_metrics", "--calls", "1000", "--rounds", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "lock-free" in done.stdout and "prometheus-client" in done.stdout
