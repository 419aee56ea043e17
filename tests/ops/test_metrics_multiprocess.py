"""prometheus-client's multiprocess mode: several processes on one host, one page.

With ``PROMETHEUS_MULTIPROC_DIR`` set, each process writes its values to that directory and
a scrape of any of them adds them up. The processes here are real (``_metrics_process.py``),
since the mode is chosen when prometheus-client is first imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

HERE = Path(__file__).parent
SCRIPT = HERE / "_metrics_process.py"


def run(directory: Path, *args: str) -> str:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(directory)}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=HERE.parents[1],
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def sample(page: str, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(page):
        for found in family.samples:
            if found.name == name and found.labels == labels:
                return found.value
    return 0.0


def test_the_values_of_every_process_add_up(tmp_path: Path) -> None:
    run(tmp_path, "serve", "3")
    run(tmp_path, "serve", "4")
    page = run(tmp_path, "scrape")
    ok = {"operation": "SendMessage", "binding": "jsonrpc", "outcome": "ok"}
    assert sample(page, "peerwire_requests_total", **ok) == 7
    assert sample(page, "peerwire_request_duration_seconds_count", **ok) == 7
    assert sample(page, "peerwire_tasks_created_total", skill="echo") == 7
    assert sample(page, "peerwire_tasks_finished_total", state="completed", skill="echo") == 7
    assert any(name.endswith(".db") for name in os.listdir(tmp_path))


def test_a_process_that_set_the_directory_too_late_is_told(tmp_path: Path) -> None:
    code = (
        "import os, prometheus_client\n"
        f"os.environ['PROMETHEUS_MULTIPROC_DIR'] = {str(tmp_path)!r}\n"
        "from peerwire.ops import Metrics\n"
        "try:\n"
        "    Metrics()\n"
        "except RuntimeError as exc:\n"
        "    print(exc)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )
    assert "set it before the process starts" in done.stdout, done.stderr
