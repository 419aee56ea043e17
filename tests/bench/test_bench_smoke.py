"""Smoke runs of the benchmark scripts in bench/: tiny, unpinned, nothing timed.

The benchmarks themselves never run in the test suite; this checks that the scripts work end
to end (a real server, both clients, the chart) and that their validation can fail. The
a2a-sdk client runs in its own venv (tests/interop/sdk_env.py). This folder has no
``__init__.py`` on purpose: a ``tests/bench`` package would shadow the top-level ``bench``
package these tests import.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest

import peerwire
from bench import micro_servers, plot
from peerwire import Agent, Message
from peerwire.testing import live_server

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
PEERWIRE_BIN = Path(sys.executable).parent / "peerwire"
TIMEOUT_S = 120
# Unpinned and without waiting for an idle machine: other tests are running beside these.
TINY = ["--concurrency", "2", "--quiet-wait", "0", "--server-cpus", "", "--client-cpus", ""]


def _sdk_env() -> ModuleType:
    # By path: whether ``interop`` is importable depends on which test folders pytest
    # collected first (this one is no package, see above).
    spec = importlib.util.spec_from_file_location("sdk_env", ROOT / "tests/interop/sdk_env.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def sdk_python() -> Path:
    """The a2a-sdk venv's interpreter, built on first use (a failure fails, never skips)."""
    python: Path = _sdk_env().sdk_python()
    return python


def run(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )


# -- client_bench.py ----------------------------------------------------------------------


@pytest.mark.interop
def test_client_bench_runs_both_clients_against_a_fresh_server(
    tmp_path: Path, sdk_python: Path
) -> None:
    out = tmp_path / "client.json"
    done = run(
        sys.executable,
        BENCH / "client_bench.py",
        *TINY,
        "--duration",
        "1",
        "--warmup",
        "0.2",
        "--sdk-python",
        sdk_python,
        "--json",
        out,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "peerwire/sdk" in done.stdout
    report = json.loads(out.read_text())
    for name, version in (("peerwire", peerwire.__version__), ("sdk", "1.3.0")):
        runs = report["results"][name]
        assert runs["ok"][0] > 0 and runs["calls"][0] == runs["ok"][0], runs
        assert runs["bad_total"] == [0]
        assert runs["client_cpu_s"][0] > 0
        assert runs["server_cpu_pct"][0] > 0  # the server's pid was found and read
        assert report["versions"][name] == version
    # What the chart is drawn from.
    bars = plot.client_bars(report)
    assert {(b.series, b.baseline) for b in bars} == {("peerwire", "sdk")}
    assert len(bars) == len(plot.CLIENT_METRICS)


def not_an_echo() -> Agent:
    agent = Agent("Not an echo", description="Answers with the text reversed.")

    @agent.skill("reverse")
    async def reverse(message: Message) -> str:
        return message.text[::-1]

    return agent


@pytest.mark.interop
async def test_client_bench_fails_on_replies_that_do_not_echo(sdk_python: Path) -> None:
    async with live_server(not_an_echo()) as url:
        command = [sys.executable, BENCH / "client_bench.py", *TINY, "--url", url]
        command += ["--duration", "0.5", "--warmup", "0", "--sdk-python", sdk_python]
        done = await anyio.run_process([str(c) for c in command], check=False)
    stdout = done.stdout.decode()
    assert done.returncode == 1, stdout + done.stderr.decode()
    for name in ("peerwire", "sdk"):
        assert f"{name}: BadResponse: task " in stdout and "echoed" in stdout, stdout


def test_client_bench_refuses_a_non_loopback_url() -> None:
    done = run(sys.executable, BENCH / "client_bench.py", "--url", "http://192.0.2.1:80")
    assert done.returncode == 2 and "non-loopback" in done.stderr


# -- plot.py ------------------------------------------------------------------------------


def harness_json() -> dict[str, Any]:
    """The shape of a2a_bench.py --json: per target, per metric, one value per repeat."""
    return {
        "results": {
            "peerwire": {"a.ok_rps": [2000.0, 1800.0, 1900.0], "b.ok_rps": [6000.0], "d.ok": ["x"]},
            "sdk": {"a.ok_rps": [400.0, 420.0, 380.0], "b.ok_rps": [3000.0]},
            "floor": {"a.ok_rps": [16000.0, 16000.0, 16000.0], "b.ok_rps": [15000.0]},
        },
        "extra": {},
        "problems": {},
        "args": {"baseline": None, "server": ["peerwire=...", "sdk", "floor"]},
    }


def test_plot_ratios_are_medians_against_the_harness_baseline() -> None:
    bars = {(b.metric, b.series): b for b in plot.server_bars(harness_json())}
    send, get = plot.SERVER_METRICS[0][1], plot.SERVER_METRICS[3][1]
    assert bars[send, "peerwire"].ratio == pytest.approx(1900 / 16000)
    assert bars[send, "sdk"].ratio == pytest.approx(400 / 16000)
    assert bars[get, "peerwire"].ratio == pytest.approx(0.4)
    assert {b.baseline for b in bars.values()} == {"floor"}
    assert "floor" not in {series for _, series in bars}  # the baseline is the line at 1


def test_plot_can_take_ratios_against_another_target() -> None:
    bars = {(b.metric, b.series): b.ratio for b in plot.server_bars(harness_json(), "sdk")}
    send = plot.SERVER_METRICS[0][1]
    assert bars[send, "peerwire"] == pytest.approx(1900 / 400)
    assert bars[send, "floor"] == pytest.approx(16000 / 400)
    with pytest.raises(ValueError, match="baseline 'nope'"):
        plot.server_bars(harness_json(), "nope")


def test_plot_skips_metrics_that_were_not_run_or_are_not_numbers() -> None:
    data = harness_json()
    data["results"]["peerwire"]["a.ok_rps"] = [1.0, "failed"]
    metrics = {(b.metric, b.series) for b in plot.server_bars(data)}
    assert (plot.SERVER_METRICS[0][1], "peerwire") not in metrics
    assert (plot.SERVER_METRICS[0][1], "sdk") in metrics
    assert not any(m == plot.SERVER_METRICS[4][1] for m, _ in metrics)  # (c) was not run
    with pytest.raises(ValueError, match="client_bench"):
        plot.client_bars(data)


def test_plot_writes_the_chart(tmp_path: Path) -> None:
    bench, client, png = tmp_path / "bench.json", tmp_path / "client.json", tmp_path / "p.png"
    bench.write_text(json.dumps(harness_json()))
    results = {
        "peerwire": {"calls_per_s": [900.0], "calls_per_client_cpu_s": [950.0]},
        "sdk": {"calls_per_s": [300.0], "calls_per_client_cpu_s": [310.0]},
    }
    client.write_text(json.dumps({"kind": "client_bench", "baseline": "sdk", "results": results}))
    done = run(
        sys.executable, BENCH / "plot.py", "--bench", bench, "--client", client, "--out", png
    )
    assert done.returncode == 0, done.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    missing = run(sys.executable, BENCH / "plot.py", "--bench", tmp_path / "absent.json")
    assert missing.returncode == 2 and "cannot read the results" in missing.stderr


# -- run.sh -------------------------------------------------------------------------------


@pytest.fixture
def fake_harness(tmp_path: Path) -> Path:
    """A stand-in for ../shared/bench that prints the arguments it was given, one a line, so
    bench/run.sh's handling of them is checked without starting wrk or any server."""
    script = tmp_path / "run.sh"
    script.write_text('#!/usr/bin/env bash\nfor a in "$@"; do printf "%s\\n" "$a"; done\n')
    script.chmod(0o755)
    return tmp_path


def run_sh(harness: Path, *args: str) -> list[str]:
    done = run(
        "bash",
        BENCH / "run.sh",
        *args,
        env={"PEERWIRE_SHARED_BENCH": str(harness), "PEERWIRE_BIN": str(PEERWIRE_BIN)},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_run_sh_defaults_to_peerwire_memory_and_sqlite_beside_sdk_and_floor(
    fake_harness: Path,
) -> None:
    argv = run_sh(fake_harness, "--repeat", "2")
    servers = [argv[i + 1] for i, a in enumerate(argv) if a == "--server"]
    assert [s.split("=", 1)[0] for s in servers] == ["peerwire", "peerwire-sqlite", "sdk", "floor"]
    assert servers[0].endswith("--no-grpc --port {port} --store memory")
    assert "--store sqlite:" in servers[1] and servers[1].endswith("/bench-$$.db")
    assert argv[-4:] == ["--baseline", "floor", "--repeat", "2"]


def test_run_sh_targets_given_replace_the_defaults_and_name_ours(fake_harness: Path) -> None:
    argv = run_sh(fake_harness, "--scenarios", "p", "--server", "peerwire")
    assert argv[:3] == ["--scenarios", "p", "--server"]
    assert argv[3].startswith("peerwire=env PYTHONPATH=") and argv[3].endswith("--store memory")
    assert len(argv) == 4
    argv = run_sh(fake_harness, "--server=peerwire-sqlite", "--url", "x=http://127.0.0.1:9")
    assert argv[0].startswith("--server=peerwire-sqlite=env ") and "--store sqlite:" in argv[0]
    assert argv[1:] == ["--url", "x=http://127.0.0.1:9"]


def test_run_sh_names_the_same_app_on_uvicorn(fake_harness: Path) -> None:
    argv = run_sh(fake_harness, "--server", "peerwire-uvicorn")
    assert argv[1].startswith("peerwire-uvicorn=env PYTHONPATH=")
    assert "PEERWIRE_BENCH_URL=http://127.0.0.1:{port} " in argv[1]
    assert "-m uvicorn --factory bench.echo_agent:uvicorn_app --port {port}" in argv[1]


def test_the_uvicorn_factory_builds_the_echo_agent() -> None:
    # In a process of its own: the factory tunes the garbage collector as a server would.
    probe = (
        "import asyncio, httpx\n"
        "from bench.echo_agent import uvicorn_app\n"
        "async def main():\n"
        "    app = uvicorn_app()\n"
        "    async with app.lifespan(), httpx.AsyncClient(\n"
        "        transport=httpx.ASGITransport(app=app), base_url='http://t') as http:\n"
        "        message = {'messageId': 'm', 'role': 'ROLE_USER', 'parts': [{'text': 'hi'}]}\n"
        "        body = {'jsonrpc': '2.0', 'id': 1, 'method': 'SendMessage',\n"
        "                'params': {'message': message}}\n"
        "        reply = await http.post('/', json=body, headers={'A2A-Version': '1.0'})\n"
        "        print(reply.json()['result']['task']['status']['state'])\n"
        "asyncio.run(main())\n"
    )
    done = run(sys.executable, "-c", probe, env={"PYTHONPATH": str(BENCH.parent)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_rss_curve_prints_a_point_per_step(store: str) -> None:
    done = run(
        sys.executable,
        BENCH / "rss_curve.py",
        "--store",
        store,
        "--steps",
        "2",
        "--per-step",
        "64",
        "--warmup",
        "8",
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"store={store} warm-up 8 tasks")
    assert [line.split()[0] for line in lines[1:]] == ["72", "136"]
    assert all("bytes/task since warm-up" in line for line in lines[1:])


def test_run_sh_help_shows_its_usage_and_the_harness_options_without_running() -> None:
    done = run("bash", BENCH / "run.sh", "--help")
    assert done.returncode == 0, done.stderr
    assert "bench/run.sh --client" in done.stdout  # its own usage
    assert "--quiet-wait" in done.stdout  # the real harness's options
    client = run(
        "bash", BENCH / "run.sh", "--client", "--help", env={"PEERWIRE_BIN": str(PEERWIRE_BIN)}
    )
    assert client.returncode == 0 and "--sdk-python" in client.stdout


def test_run_sh_says_where_the_harness_is_missing(tmp_path: Path) -> None:
    done = run("bash", BENCH / "run.sh", env={"PEERWIRE_SHARED_BENCH": str(tmp_path / "none")})
    assert done.returncode == 2 and "no harness at" in done.stderr


# -- micro_servers.py ---------------------------------------------------------------------


async def test_the_raw_micro_variant_answers_like_peerwire() -> None:
    """The raw-ASGI baseline of the micro benchmarks serves the same replies as A2AApp
    (the Starlette variants need the bench extra and are exercised by the benchmark only)."""
    import httpx

    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "SendMessage",
        "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}},
    }
    replies = []
    for variant in ("raw", "peerwire"):
        app, a2a = micro_servers.build(variant, 8000)
        async with (
            a2a.lifespan(),
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1:8000"
            ) as http,
        ):
            reply = await http.post("/", json=body, headers={"A2A-Version": "1.0"})
            replies.append(reply.json())
    for reply in replies:
        assert reply["id"] == 7
        task = reply["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert task["artifacts"][0]["parts"] == [{"text": "hi"}]
