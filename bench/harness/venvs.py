"""Virtual environments the benchmarks build on first use, and check on every use.

The reference targets (the a2a-sdk echo agent, the floor) and py-spy live in a venv of
their own, never in peerwire's: a2a-sdk's generated protobuf registers the same
``lf.a2a.v1`` package as peerwire's, and the floor must run on the very uvicorn and
Starlette the SDK runs on. Versions are pinned so figures stay comparable from run to run
(they are those of docs/PERFORMANCE.md). The approach is tests/interop/sdk_env.py's: an OS
lock so two runs never build at once, an import check that decides whether a venv serves,
a missing requirement installed in place before anything is torn down.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PIP_TIMEOUT_S = 1200
SDK_VERSION = "1.3.0"
REFERENCE_REQUIREMENTS = (
    f"a2a-sdk[http-server]=={SDK_VERSION}",
    "uvicorn==0.54.0",
    "uvloop==0.23.0",
    "httptools==0.9.0",
    "starlette==1.10.0",
    "sse-starlette==3.7.0",
    "protobuf==7.36.2",
    "py-spy==0.4.3",
)
_REFERENCE_CHECK = (
    "import importlib.metadata as m, a2a.server.routes, uvicorn, uvloop, httptools, "
    "starlette.applications, sse_starlette; "
    f"assert m.version('a2a-sdk') == {SDK_VERSION!r}, m.version('a2a-sdk')"
)


class VenvError(RuntimeError):
    """A venv could not be built, or was built and still fails its check."""


@dataclass(frozen=True)
class VenvSpec:
    path: Path
    requirements: tuple[str, ...]  # pip install arguments
    check: str  # Python code that runs cleanly in a venv that serves
    what: str  # for messages

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"


def reference_venv() -> VenvSpec:
    default = Path.home() / ".cache" / "peerwire" / f"bench-reference-a2a-sdk-{SDK_VERSION}"
    path = Path(os.environ.get("PEERWIRE_BENCH_REF_VENV") or default).expanduser()
    return VenvSpec(path, REFERENCE_REQUIREMENTS, _REFERENCE_CHECK, f"a2a-sdk {SDK_VERSION}")


def base_python() -> str:
    """The interpreter new venvs are made from: this one's base, so they do not chain."""
    return getattr(sys, "_base_executable", None) or sys.executable


def python_works(python: Path, check: str) -> bool:
    """Whether ``check`` runs cleanly on this interpreter."""
    if not python.exists():
        return False
    try:
        probe = subprocess.run([python, "-c", check], capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:
        return False
    return probe.returncode == 0


def works(spec: VenvSpec) -> bool:
    return python_works(spec.python, spec.check)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An OS lock on ``path``, released even if this process dies."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def run(command: list[str | Path], what: str, cwd: Path | None = None) -> None:
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, cwd=cwd
        )
    except subprocess.TimeoutExpired as exc:
        raise VenvError(f"{what} timed out after {PIP_TIMEOUT_S} s") from exc
    if done.returncode != 0:
        raise VenvError(
            f"{what} failed (exit {done.returncode}): {' '.join(map(str, command))}\n"
            f"{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )


def pip_install(spec: VenvSpec) -> None:
    pip = [spec.python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    run([*pip, *spec.requirements], f"pip install {' '.join(spec.requirements)}")


def ensure(spec: VenvSpec) -> Path:
    """The venv's interpreter, building the venv first if it does not serve."""
    if works(spec):
        return spec.python
    with locked(spec.path.parent / f".{spec.path.name}.lock"):
        if works(spec):  # another run finished it while we waited
            return spec.python
        print(f"# building {spec.path} ({spec.what})", file=sys.stderr, flush=True)
        if spec.python.exists():
            with contextlib.suppress(VenvError):
                pip_install(spec)  # in place: what an existing venv lacks
        if not works(spec):
            shutil.rmtree(spec.path, ignore_errors=True)  # a half-built venv must not linger
            run([base_python(), "-m", "venv", spec.path], f"creating {spec.path}")
            pip_install(spec)
        if not works(spec):
            probe = subprocess.run([spec.python, "-c", spec.check], capture_output=True, text=True)
            raise VenvError(f"{spec.path} was built but fails its check:\n{probe.stderr[-3000:]}")
    return spec.python
