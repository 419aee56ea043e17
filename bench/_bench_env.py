"""Where the micro benchmarks run: the shared harness, and a Python with Starlette in it.

The micro benchmarks compare our plumbing with Starlette and sse-starlette, which are not
peerwire dependencies and stay out of the project's venv: they run in a throwaway venv,
``$PEERWIRE_BENCH_VENV`` (default ``~/.cache/peerwire/bench-venv``), built here on first use
with ``pip install -e '.[server,bench]'`` (this checkout, so it measures the working tree).
``$PEERWIRE_BENCH_PYTHON`` names a ready interpreter instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_PROBE = "import peerwire, starlette, sse_starlette, uvicorn; print(peerwire.__file__)"


def harness() -> Path:
    """The shared harness's run.sh (``$PEERWIRE_SHARED_BENCH``, default ../shared/bench)."""
    folder = Path(os.environ.get("PEERWIRE_SHARED_BENCH", ROOT.parent / "shared" / "bench"))
    run = folder / "run.sh"
    if not run.exists():
        sys.exit(f"no benchmark harness at {folder} (set PEERWIRE_SHARED_BENCH)")
    return run


def _serves_this_checkout(python: Path) -> bool:
    if not python.exists():
        return False
    probe = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=120)
    return probe.returncode == 0 and Path(probe.stdout.strip()).is_relative_to(ROOT / "src")


def bench_python() -> str:
    explicit = os.environ.get("PEERWIRE_BENCH_PYTHON")
    if explicit:
        if not _serves_this_checkout(Path(explicit)):
            sys.exit(f"{explicit} lacks peerwire (this checkout), starlette or sse-starlette")
        return explicit
    default = Path.home() / ".cache" / "peerwire" / "bench-venv"
    venv = Path(os.environ.get("PEERWIRE_BENCH_VENV", default)).expanduser()
    python = venv / "bin" / "python"
    if not _serves_this_checkout(python):
        print(f"# building {venv} (peerwire[server,bench])", file=sys.stderr, flush=True)
        base = getattr(sys, "_base_executable", None) or sys.executable
        subprocess.run([base, "-m", "venv", "--clear", venv], check=True)
        pip = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run([*pip, "-e", f"{ROOT}[server,bench]"], check=True, timeout=1200)
        if not _serves_this_checkout(python):
            sys.exit(f"{venv} was built but cannot import peerwire from {ROOT / 'src'}")
    return str(python)


def server_command(python: str, variant: str) -> str:
    """The harness target command for a micro_servers.py variant ({port} left for it)."""
    return f"env PYTHONPATH={ROOT} {python} -m bench.micro_servers {variant} --port {{port}}"


def run_harness(targets: list[str], defaults: list[str]) -> None:
    """Replace this process with the harness: the given variants, then ``defaults``, then
    this script's own arguments (later options win, so they can override the defaults)."""
    python = bench_python()
    args = [str(harness())]
    for variant in targets:
        args += ["--server", f"{variant}={server_command(python, variant)}"]
    args += defaults + sys.argv[1:]
    sys.stdout.flush()
    os.execv(args[0], args)
