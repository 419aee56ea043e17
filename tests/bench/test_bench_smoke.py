"""Smoke runs of the benchmark tools in bench/: tiny, unpinned, nothing timed, no wrk.

The benchmarks themselves never run in the test suite; this checks that the tools work end
to end and that their validation can fail: the harness's parts (wrk's output, the table, the
profile, the loopback guard), its targets and command line (dry runs), a real harness run of
scenario d against peerwire and the floor, the httpx client's stream checks, the client
bench (both clients), the chart. The a2a-sdk client runs in its own venv
(tests/interop/sdk_env.py). This folder has no ``__init__.py`` on purpose: a ``tests/bench``
package would shadow the top-level ``bench`` package these tests import.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest

import peerwire
from bench import echo_agent, micro_servers, plot
from bench.harness import loopback, profile, report, targets, wrk
from peerwire import Agent, Message
from peerwire.testing import live_server

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
PEERWIRE_BIN = Path(sys.executable).parent / "peerwire"
PEERWIRE_ENV = {"PEERWIRE_BIN": str(PEERWIRE_BIN)}
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
    """The shape of the harness's --json: per target, per metric, one value per repeat."""
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


def test_plot_takes_the_baseline_the_harness_recorded() -> None:
    data = harness_json()
    data["baseline"] = "sdk"  # as a --compare-rev run records its revision
    assert {b.baseline for b in plot.server_bars(data)} == {"sdk"}


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


# -- the uvicorn target and rss_curve.py ---------------------------------------------------


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


# -- the harness: its parts -----------------------------------------------------------------

WRK_OUTPUT = """\
Running 3s test @ http://127.0.0.1:9/
  1 threads and 32 connections
HARNESS_BAD status=500 body={"oops": true}
HARNESS_COUNTS responses=1201 ok=1200 bad=1 events=0
HARNESS_SUMMARY duration_us=3000000 requests=1201 bytes=600000 connect=0 read=2 write=0 \
status=1 timeout=1
HARNESS_LATENCY_US mean=1500.5 p50=1400 p90=2000 p99=4500 p999=9000 max=12000
"""


def test_wrk_totals_are_parsed_and_a_run_without_them_is_an_error() -> None:
    run_ = wrk.parse(WRK_OUTPUT)
    assert (run_.responses, run_.ok, run_.bad, run_.socket_errors) == (1201, 1200, 1, 3)
    assert run_.ok_per_s == pytest.approx(400.0) and run_.failures == 4
    assert (run_.p50_ms, run_.p99_ms, run_.max_ms) == (1.4, 4.5, 12.0)
    assert run_.bad_samples == ('HARNESS_BAD status=500 body={"oops": true}',)
    with pytest.raises(wrk.WrkError, match="no totals"):
        wrk.parse("unable to connect to 127.0.0.1:9 Connection refused\n")


def test_wrk_command_sends_whole_seconds_and_a_fresh_tag() -> None:
    load = wrk.Load("http://127.0.0.1:9/", "GetTask", 32, 0.4, task_id="t-1")
    first, second = wrk.command("wrk", load), wrk.command("wrk", load)
    assert first[:7] == ["wrk", "-t", "1", "-c", "32", "-d", "1s"]
    assert first[first.index("-s") + 1] == str(wrk.LUA) and wrk.LUA.is_file()
    assert first[-5:-1] == ["--", "GetTask", "t-1", "0"]
    assert first[-1] != second[-1]  # messageIds never repeat across runs


def test_the_table_shows_medians_and_ratios_and_failures_are_counted() -> None:
    results = {
        "new": {"a.ok_rps": [900.0, 1100.0, 1000.0], "a.bad": [0, 0, 0], "d.ok": ["9/9", "9/9"]},
        "old": {"a.ok_rps": [500.0, 500.0, 400.0], "a.bad": [0, 2, 0], "d.ok": ["8/9", "9/9"]},
    }
    text = report.table(results, ["old", "new"], "old", {"c": 32, "n": 20, "m": 9, "sc": 8})
    header, _, send, bad, done = text.splitlines()
    assert header.split() == ["scenario", "/", "metric", "old", "new", "new/old"]
    assert send.split()[-3:] == ["500", "1,000", "2.000"]
    assert bad.split()[-3:] == ["0", "0", "-"]
    assert done.split()[-3:] == ["8/9,9/9", "9/9", "-"]  # repeats that differ are all shown
    assert report.failures(results) == ["old: 2 bad in scenario (a)"]


def test_paired_ratios_compare_each_repeat_with_its_neighbour() -> None:
    # The machine sped up between repeats: each pair is 0.9, the medians' ratio is not.
    results = {
        "old": {"a.ok_rps": [1000.0, 2000.0, 3000.0], "b.ok_rps": [10.0, 10.0]},
        "new": {"a.ok_rps": [900.0, 1800.0, 2700.0], "b.ok_rps": [11.0]},
    }
    lines = report.paired(results, ["old", "new"], "old")
    assert lines == [  # (b) has a repeat missing on one side: no line
        "(a) SendMessage req/s, new/old per repeat: median 0.900, range 0.900-0.900, "
        "0 of 3 at or above 1"
    ]


def test_a_py_spy_profile_is_folded_by_package_and_frame() -> None:
    site = "/v/lib/python3.11/site-packages"
    raw = (
        f"main (/app/serve.py:1);run ({site}/uvloop/__init__.py:9);"
        f"write (/w/src/peerwire/httpd/_connection.py:5) 3\n"
        f"main (/app/serve.py:1);select (/usr/lib/python3.11/selectors.py:4) 1\n"
        "garbage line\n"
    )
    folded = profile.fold(raw, top=5)
    assert folded.samples == 4
    assert folded.by_package == [("_connection.py", 75.0), ("stdlib:selectors", 25.0)]
    assert folded.top_self[0] == ("write (_connection.py)", 75.0)
    assert ("main (serve.py)", 100.0) in folded.top_inclusive


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("http://127.0.0.1:8000/", True),
        ("http://127.9.9.9/", True),
        ("http://[::1]:80/", True),
        ("http://localhost:1", True),
        ("http://192.0.2.1:80/", False),
        ("http://example.com/", False),
        ("not a url", False),
    ],
)
def test_only_loopback_urls_pass(url: str, ok: bool) -> None:
    assert loopback.is_loopback(url) is ok


def test_the_jsonrpc_url_comes_from_the_card_preferring_protocol_1() -> None:
    card = {
        "supportedInterfaces": [
            {"protocolBinding": "HTTP+JSON", "protocolVersion": "1.0", "url": "http://h/rest"},
            {"protocolBinding": "JSONRPC", "protocolVersion": "0.3", "url": "http://h/v03"},
            {"protocolBinding": "JSONRPC", "protocolVersion": "1.0", "url": "http://h/a2a"},
        ]
    }
    assert targets.jsonrpc_url(card, "http://h") == "http://h/a2a"
    assert targets.jsonrpc_url({"supportedInterfaces": "junk"}, "http://h") == "http://h/"


# -- the harness: targets and the command line (nothing started) ----------------------------


def dry_run(*args: str, script: bool = False) -> tuple[dict[str, str], list[str]]:
    """The targets a run would start (name -> command) and the rest of what it says."""
    if script:
        done = run("bash", BENCH / "run.sh", "--dry-run", *args, env=PEERWIRE_ENV)
    else:
        done = run(sys.executable, "-m", "bench.harness", "--dry-run", *args)
    assert done.returncode == 0, done.stderr
    commands, rest = {}, []
    for line in done.stdout.splitlines():
        name, _, value = line.partition(" = ")
        if name in ("baseline", "scenarios") or name.startswith("revision "):
            rest.append(line)
        else:
            commands[name] = value
    return commands, rest


def test_run_sh_defaults_to_peerwire_memory_and_sqlite_beside_sdk_and_floor() -> None:
    commands, rest = dry_run(script=True)
    assert list(commands) == ["peerwire", "peerwire-sqlite", "sdk", "floor"]
    assert commands["peerwire"].startswith(f"env PYTHONPATH={ROOT} {PEERWIRE_BIN} serve ")
    assert commands["peerwire"].endswith("--store memory --port {port}")
    assert "--store sqlite:{tmp}/bench.db" in commands["peerwire-sqlite"]
    assert commands["sdk"].endswith(f"{BENCH / 'sdk_echo_server.py'} --port {{port}}")
    assert commands["floor"].startswith("env -u PYTHONPATH ")  # never our import paths
    assert rest == ["baseline = floor", "scenarios = a,l,b,c,d"]


def test_targets_given_replace_the_defaults() -> None:
    commands, rest = dry_run(
        *("--server", "peerwire-uvicorn", "--server", "mine=serve-it --port {port}"),
        *("--url", "there=http://127.0.0.1:9", "--server", "floor-asgi", "--scenarios", "e,p"),
        *("--ref-python", "/opt/ref/python", "--builtin-args", "--http h11"),
    )
    assert list(commands) == ["peerwire-uvicorn", "mine", "floor-asgi", "there"]
    assert (
        "-m uvicorn --factory bench.echo_agent:uvicorn_app --port {port}"
        in commands["peerwire-uvicorn"]
    )
    assert "PEERWIRE_BENCH_URL=http://127.0.0.1:{port} " in commands["peerwire-uvicorn"]
    assert commands["mine"] == "serve-it --port {port}"
    assert commands["floor-asgi"].endswith("--mode asgi --port {port} --http h11")
    assert "/opt/ref/python " in commands["floor-asgi"]
    assert commands["there"] == "http://127.0.0.1:9"
    assert rest == ["baseline = peerwire-uvicorn", "scenarios = a,p"]  # e is (a)'s latency


def test_compare_rev_runs_the_revision_beside_the_working_tree_as_the_baseline() -> None:
    commit = run("git", "rev-parse", "HEAD").stdout.strip()
    commands, rest = dry_run("--compare-rev", "HEAD", "--scenarios", "a", script=True)
    assert list(commands) == ["peerwire@HEAD", "peerwire"]
    home = ROOT / ".bench-cache" / f"peerwire-{commit[:12]}"
    # The revision's own echo agent and its own venv: only the code differs.
    assert commands["peerwire@HEAD"].startswith(
        f"env PYTHONPATH={home / 'tree'} {home / 'venv/bin/peerwire'} serve bench.echo_agent:agent"
    )
    assert rest[:2] == ["baseline = peerwire@HEAD", "scenarios = a"]
    assert rest[2].startswith(f"revision HEAD = {commit} (")
    ignored = run("git", "check-ignore", "-q", str(home / "tree" / "x.py"))
    assert ignored.returncode == 0, "the cache must be ignored by git"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--compare-rev", "no-such-rev-anywhere"], "is not a commit"),
        (["--url", "far=http://192.0.2.1:80"], "non-loopback"),
        (["--server", "nginx"], "unknown target 'nginx'"),
        (["--server", "floor", "--baseline", "sdk"], "baseline 'sdk' is not a target"),
        (["--server", "floor", "--server", "floor"], "targets named twice"),
        (["--server", "peerwire-uvicorn@HEAD"], "only peerwire@REV and peerwire-sqlite@REV"),
        (["--scenarios", "a,z"], "unknown scenario"),
    ],
)
def test_the_harness_refuses_what_it_cannot_run(args: list[str], says: str) -> None:
    done = run(sys.executable, "-m", "bench.harness", "--dry-run", *args)
    assert done.returncode == 2 and says in done.stderr, done.stderr


def test_run_sh_help_shows_its_usage_and_the_harness_options_without_running() -> None:
    done = run("bash", BENCH / "run.sh", "--help")
    assert done.returncode == 0, done.stderr
    assert "bench/run.sh --compare-rev 278a5f2" in done.stdout  # its own usage
    assert "--quiet-wait" in done.stdout and "--server-cpus" in done.stdout  # the harness's
    client = run("bash", BENCH / "run.sh", "--client", "--help", env=PEERWIRE_ENV)
    assert client.returncode == 0 and "--sdk-python" in client.stdout


# -- the harness: a real run without wrk (scenario d), the httpx client ---------------------

ECHO_AGENT_ELSEWHERE = """
from peerwire import Agent, Message

agent = Agent("Not an echo", description="Answers with the text reversed.")


@agent.skill("reverse")
async def reverse(message: Message) -> str:
    return message.text[::-1]
"""


def harness_run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    out, scratch = tmp_path / "run.json", tmp_path / "scratch"
    scratch.mkdir()
    done = run(
        sys.executable,
        *("-m", "bench.harness", "--scenarios", "d", "--mem-warmup", "4", "--mem-tasks", "24"),
        "--mem-settle=0",
        *(*TINY, "--json", str(out), *args),
        env={"TMPDIR": str(scratch)},
    )
    assert not list(scratch.iterdir()), "a target left its directory behind"
    return done, json.loads(out.read_text()) if out.exists() else None


def test_the_harness_runs_targets_interleaved_and_prints_ratios(tmp_path: Path) -> None:
    # The floor in peerwire's own venv here (its raw-ASGI mode needs only uvicorn).
    targets = ["--server", "peerwire", "--server", "floor-asgi", "--baseline", "floor-asgi"]
    done, data = harness_run(
        tmp_path, *targets, "--ref-python", sys.executable, "--repeat", "2", "--mem-warmup", "0"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "peerwire/floor-asgi" in done.stdout
    assert "(d) RSS after warm-up MiB" in done.stdout and "RSS growth bytes/task" in done.stdout
    started = [line.split("] ")[1] for line in done.stderr.splitlines() if "] scenario" in line]
    assert started == [
        f"scenario d target {name} rep {rep}"
        for rep in (1, 2)
        for name in ("peerwire", "floor-asgi")
    ]
    assert data["baseline"] == "floor-asgi"
    for name in ("peerwire", "floor-asgi"):
        figures = data["results"][name]
        assert figures["d.ok"] == ["24/24", "24/24"] and figures["d.bad"] == [0, 0]
        assert min(figures["d.rss_after_mib"]) > 10  # the server's own process was read


def test_the_harness_fails_a_run_whose_replies_break_the_contract(tmp_path: Path) -> None:
    (tmp_path / "not_echo.py").write_text(ECHO_AGENT_ELSEWHERE)
    command = f"env PYTHONPATH={tmp_path} {PEERWIRE_BIN} serve not_echo:agent --port {{port}}"
    done, data = harness_run(tmp_path, "--server", f"reverse={command}")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAILED: reverse: 28 bad in scenario (d)" in done.stdout
    assert data["results"]["reverse"]["d.ok"] == ["0/24"]
    assert (
        "reverse: d.errors {\"artifact 'hcneb olleh' does not echo the text\": 28}" in done.stdout
    )


def test_a_terminated_harness_stops_the_server_it_started(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    command = [sys.executable, "-m", "bench.harness", "--server", "peerwire-sqlite", *TINY]
    command += ["--scenarios", "d", "--mem-warmup", "1", "--mem-tasks", "1000000"]
    harness = subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(scratch)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while not list(scratch.glob("*/bench.db")):  # the server is up and has its database
            assert harness.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        harness.terminate()
        assert harness.wait(30) == 128 + signal.SIGTERM
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
    assert not list(scratch.iterdir()), "the server's directory is left: it was not stopped"


async def stream_check(url: str, count: int) -> dict[str, Any]:
    command = [sys.executable, "-m", "bench.harness.client", "stream", f"{url}/"]
    command += ["--count", str(count), "--concurrency", "2", "--chunks", "3"]
    done = await anyio.run_process(command, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr.decode()
    report_: dict[str, Any] = json.loads(done.stdout)
    return report_


async def test_the_client_validates_every_stream() -> None:
    async with live_server(echo_agent.agent) as url:
        good = await stream_check(url, 6)
    assert (good["ok"], good["bad"], good["events"]) == (6, 0, 36)  # 3 chunks + 3 events each
    assert good["ttfe_p50_ms"] > 0 and good["errors"] == {}
    async with live_server(not_an_echo()) as url:
        bad = await stream_check(url, 3)
    assert (bad["ok"], bad["bad"]) == (0, 3)
    assert bad["errors"] == {"4 events, not 6": 3}, bad  # it ignores metadata.chunks


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
