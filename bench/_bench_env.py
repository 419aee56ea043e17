"""Where the micro benchmarks run: the bench harness, serving from a venv with Starlette.

The micro benchmarks compare our plumbing with Starlette and sse-starlette, which are not
peerwire dependencies and stay out of the project's venv: their servers run in a throwaway
venv, ``$PEERWIRE_BENCH_VENV`` (default ``~/.cache/peerwire/bench-venv``), built here on
first use with ``pip install -e '.[server,bench]'`` (this checkout, so it measures the
working tree). ``$PEERWIRE_BENCH_PYTHON`` names a ready interpreter instead. The harness
itself is bench/run.sh's (bench/harness: pinning, validation, the noise column).
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: bench/ is on the path, the checkout is not

from bench.harness import venvs  # noqa: E402

_CHECK = (
    "import pathlib, peerwire, starlette, sse_starlette, uvicorn; "
    f"assert pathlib.Path(peerwire.__file__).is_relative_to({str(ROOT / 'src')!r})"
)


def bench_venv() -> venvs.VenvSpec:
    default = Path.home() / ".cache" / "peerwire" / "bench-venv"
    path = Path(os.environ.get("PEERWIRE_BENCH_VENV") or default).expanduser()
    what = f"peerwire[server,bench] of {ROOT}"
    return venvs.VenvSpec(path, ("-e", f"{ROOT}[server,bench]"), _CHECK, what)


def bench_python() -> str:
    explicit = os.environ.get("PEERWIRE_BENCH_PYTHON")
    if explicit:
        if not venvs.python_works(Path(explicit), _CHECK):
            sys.exit(f"{explicit} lacks peerwire (this checkout), starlette or sse-starlette")
        return explicit
    try:
        return str(venvs.ensure(bench_venv()))
    except venvs.VenvError as exc:
        sys.exit(f"cannot build the micro benchmarks' venv: {exc}")


def server_command(python: str, variant: str) -> str:
    """The harness target command for a micro_servers.py variant ({port} left for it)."""
    root, python = shlex.quote(str(ROOT)), shlex.quote(python)
    return f"env PYTHONPATH={root} {python} -m bench.micro_servers {variant} --port {{port}}"


def run_harness(targets: list[str], defaults: list[str]) -> None:
    """Replace this process with bench/run.sh: the given variants, then ``defaults``, then
    this script's own arguments (later options win, so they can override the defaults)."""
    python = bench_python()
    args = ["bash", str(ROOT / "bench" / "run.sh")]
    for variant in targets:
        args += ["--server", f"{variant}={server_command(python, variant)}"]
    args += defaults + sys.argv[1:]
    sys.stdout.flush()
    os.execvp(args[0], args)
