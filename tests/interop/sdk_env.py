"""The virtual environment holding the official a2a-sdk, our interop peer.

a2a-sdk's generated protobuf registers the same proto package (``lf.a2a.v1``) as
peerwire's, so the two can never share a process: the SDK lives in its own venv
and tests drive it through subprocesses (see ``sdk_peer/``). A fresh machine has
only Python and PyPI, so the venv is built here on first use.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

SDK_VERSION = "1.3.0"
REQUIREMENTS = (
    # "signing" brings PyJWT for a2a.utils.signing (the card-signing cross-check).
    f"a2a-sdk[http-server,grpc,signing]=={SDK_VERSION}",
    "uvicorn[standard]",
    "httpx",
)
# Everything the sdk_peer scripts import; a venv that fails this is rebuilt.
_CHECK = (
    "import importlib.metadata as m, a2a.client, a2a.server.routes, grpc, uvicorn, httpx, "
    "starlette.applications, sse_starlette, a2a.utils.signing; "
    f"assert m.version('a2a-sdk') == {SDK_VERSION!r}, m.version('a2a-sdk')"
)
_PIP_TIMEOUT_S = 900


class SdkEnvError(RuntimeError):
    """The a2a-sdk venv could not be built or verified (tests must fail, not skip)."""


_failure: SdkEnvError | None = None  # set once a build has failed in this process


def venv_dir() -> Path:
    override = os.environ.get("PEERWIRE_SDK_VENV")
    if override:
        return Path(override).expanduser().resolve()
    return Path.home() / ".cache" / "peerwire" / f"a2a-sdk-{SDK_VERSION}"


def _python_in(venv: Path) -> Path:
    return venv / "bin" / "python"  # POSIX only, like the fcntl lock below


def _works(python: Path) -> bool:
    if not python.exists():
        return False
    try:
        probe = subprocess.run([python, "-c", _CHECK], capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:
        return False
    return probe.returncode == 0


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    # An OS lock, released even if this process dies, so parallel pytest
    # processes (xdist workers, two sessions) never build the venv twice at once.
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _run(cmd: list[str | Path], what: str) -> None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=_PIP_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise SdkEnvError(f"{what} timed out after {_PIP_TIMEOUT_S} s: {cmd}") from exc
    if done.returncode != 0:
        raise SdkEnvError(
            f"{what} failed (exit {done.returncode}): {cmd}\n"
            f"--- stdout ---\n{done.stdout[-4000:]}\n--- stderr ---\n{done.stderr[-4000:]}"
        )


def _build(venv: Path) -> None:
    # Start from scratch: a half-built venv from an interrupted run must not linger.
    shutil.rmtree(venv, ignore_errors=True)
    # The base interpreter, not a venv's, so the new venv does not chain to ours.
    base = getattr(sys, "_base_executable", None) or sys.executable
    _run([base, "-m", "venv", venv], "creating the a2a-sdk venv")
    python = _python_in(venv)
    pip = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    _run([*pip, *REQUIREMENTS], f"pip install {' '.join(REQUIREMENTS)}")


@functools.cache
def sdk_python() -> Path:
    """Python executable of a venv with a2a-sdk 1.3.0 (+ uvicorn, httpx), built if missing.

    Raises SdkEnvError when it cannot be built; the failure is remembered so a
    test session does not retry a slow doomed pip install for every test.
    """
    global _failure
    if _failure is not None:
        raise _failure
    try:
        return _ensure(venv_dir())
    except SdkEnvError as exc:
        _failure = exc
        raise


def _ensure(venv: Path) -> Path:
    python = _python_in(venv)
    if _works(python):
        return python
    with _locked(venv.parent / f".{venv.name}.lock"):
        # Another process may have finished the build while we waited for the lock.
        if not _works(python) and not _completed(python):
            _build(venv)
            if not _works(python):
                probe = subprocess.run([python, "-c", _CHECK], capture_output=True, text=True)
                raise SdkEnvError(
                    f"a2a-sdk venv at {venv} was built but fails its import check:\n"
                    f"{probe.stderr[-4000:]}"
                )
    return python


def _completed(python: Path) -> bool:
    """Install what an existing venv lacks in place (additive: a venv other test processes
    may be using is not torn down just because a requirement was added)."""
    if not python.exists():
        return False
    pip = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    try:
        _run([*pip, *REQUIREMENTS], f"pip install {' '.join(REQUIREMENTS)} (in place)")
    except SdkEnvError:
        return False
    return _works(python)


if __name__ == "__main__":
    print(sdk_python())
