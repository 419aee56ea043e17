"""The virtual environment holding a2a-sdk 0.3, the official Python SDK of A2A 0.3.

a2a-sdk 0.3's generated protobuf registers ``a2a.v1``, as peerwire's own 0.3 proto does, so
the two never share a process: the SDK lives in its own venv (built here on first use, like
the 1.x one of ``sdk_env``) and tests drive it through subprocesses (``sdk03_peer/``).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .sdk_env import SdkEnvError, _locked, _python_in, _run

SDK_VERSION = "0.3.26"
"""The last 0.3 release of a2a-sdk."""

REQUIREMENTS = (
    f"a2a-sdk[http-server,grpc]=={SDK_VERSION}",
    "uvicorn[standard]",
    "httpx",
)
# Everything the sdk03_peer scripts import; a venv that fails this is rebuilt.
_CHECK = (
    "import importlib.metadata as m, a2a.client, a2a.server.apps, a2a.grpc.a2a_pb2_grpc, grpc, "
    "uvicorn, httpx, fastapi, sse_starlette; "
    f"assert m.version('a2a-sdk') == {SDK_VERSION!r}, m.version('a2a-sdk')"
)

_failure: SdkEnvError | None = None  # set once a build has failed in this process


def venv_dir() -> Path:
    override = os.environ.get("PEERWIRE_SDK03_VENV")
    if override:
        return Path(override).expanduser().resolve()
    return Path.home() / ".cache" / "peerwire" / f"a2a-sdk-{SDK_VERSION}"


def _works(python: Path) -> bool:
    if not python.exists():
        return False
    try:
        probe = subprocess.run([python, "-c", _CHECK], capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:
        return False
    return probe.returncode == 0


def _build(venv: Path) -> None:
    shutil.rmtree(venv, ignore_errors=True)  # never build over a half-built venv
    base = getattr(sys, "_base_executable", None) or sys.executable
    _run([base, "-m", "venv", venv], "creating the a2a-sdk 0.3 venv")
    pip = [_python_in(venv), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    _run([*pip, *REQUIREMENTS], f"pip install {' '.join(REQUIREMENTS)}")


@functools.cache
def sdk03_python() -> Path:
    """Python executable of a venv with a2a-sdk 0.3 (+ uvicorn, httpx), built if missing.

    Raises SdkEnvError when it cannot be built (the tests fail, never skip); the failure is
    remembered so a session does not retry a doomed install for every test.
    """
    global _failure
    if _failure is not None:
        raise _failure
    venv = venv_dir()
    python = _python_in(venv)
    try:
        if not _works(python):
            with _locked(venv.parent / f".{venv.name}.lock"):
                if not _works(python):  # another process may have built it meanwhile
                    _build(venv)
                    if not _works(python):
                        probe = subprocess.run(
                            [python, "-c", _CHECK], capture_output=True, text=True
                        )
                        raise SdkEnvError(
                            f"a2a-sdk 0.3 venv at {venv} was built but fails its import "
                            f"check:\n{probe.stderr[-4000:]}"
                        )
    except SdkEnvError as exc:
        _failure = exc
        raise
    return python


if __name__ == "__main__":
    print(sdk03_python())
