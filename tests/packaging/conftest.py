"""The sdist and the wheel, built as a release builds them, and a fresh venv with the wheel.

``dists`` builds the sdist and, from the sdist, the wheel (``python -m build``, without an
isolated build environment: ``build`` and ``hatchling`` come with the test extra), so a file
the sdist lacks breaks the wheel too. ``wheel_venv`` is a new virtual environment (no system
site-packages, no pip of its own: this environment's pip installs into it with ``--python``,
from the usual indexes through pip's cache) holding the wheel: first alone, then with the
``cli`` extra, which is what the README tells a user to install for ``peerwire demo``.

A build or an install that fails fails the tests (pytest.fail): nothing here is skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import peerwire

REPO = Path(__file__).resolve().parents[2]
VERSION = peerwire.__version__
_BUILD_TIMEOUT_S = 300
_PIP_TIMEOUT_S = 300
# Imported by the wheel installed without extras: the package, its client and server, and the
# sample agents the demo serves. The cli extra's libraries must be missing then.
_BASE_PROBE = (
    "import importlib.util, peerwire, peerwire.client, peerwire.server, peerwire.testing, "
    "peerwire.samples.glossary, peerwire.samples.brief, peerwire.samples.weather, "
    "peerwire.samples.travel; "
    "print(peerwire.__file__); "
    "print(*(n for n in ('typer', 'rich') if importlib.util.find_spec(n) is not None))"
)


def clean_env() -> dict[str, str]:
    """The environment of a user's shell: nothing pointing Python at this checkout."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("PYTHON") and key not in ("VIRTUAL_ENV", "GLOSSARY_URL")
    }
    env["NO_COLOR"] = "1"
    return env


def run(
    command: list[str], *, cwd: Path, timeout: float, what: str
) -> subprocess.CompletedProcess[str]:
    """Run ``command``; a non-zero exit or a timeout fails the test with its output."""
    try:
        done = subprocess.run(
            command,
            cwd=cwd,
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{what} did not finish within {timeout:g} s: {command}\n{exc.output}")
    if done.returncode != 0:
        pytest.fail(
            f"{what} failed (exit {done.returncode}): {command}\n"
            f"--- stdout ---\n{done.stdout[-6000:]}\n--- stderr ---\n{done.stderr[-6000:]}"
        )
    return done


@dataclass(frozen=True)
class Dists:
    sdist: Path
    wheel: Path


@dataclass(frozen=True)
class WheelVenv:
    bin: Path
    site_packages: Path
    base_probe: str
    """What ``_BASE_PROBE`` printed with the wheel installed without extras."""


@pytest.fixture(scope="session")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    out = tmp_path_factory.mktemp("dist")
    run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(REPO)],
        cwd=REPO,
        timeout=_BUILD_TIMEOUT_S,
        what="python -m build (pip install -e '.[test]' brings build and hatchling)",
    )
    built = sorted(path.name for path in out.iterdir())
    expected = [f"peerwire-{VERSION}-py3-none-any.whl", f"peerwire-{VERSION}.tar.gz"]
    assert built == expected, f"python -m build made {built}"
    return Dists(sdist=out / expected[1], wheel=out / expected[0])


@pytest.fixture(scope="session")
def wheel_venv(dists: Dists, tmp_path_factory: pytest.TempPathFactory) -> WheelVenv:
    venv = tmp_path_factory.mktemp("venv")
    empty = tmp_path_factory.mktemp("cwd")
    # The base interpreter, not this venv's: the new venv must not chain to this one.
    base = getattr(sys, "_base_executable", None) or sys.executable
    run([base, "-m", "venv", "--without-pip", str(venv)], cwd=empty, timeout=60, what="venv")
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet"]
    run([*pip, str(dists.wheel)], cwd=empty, timeout=_PIP_TIMEOUT_S, what="pip install WHEEL")
    probe = run([str(python), "-c", _BASE_PROBE], cwd=empty, timeout=60, what="import peerwire")
    run([*pip, f"{dists.wheel}[cli]"], cwd=empty, timeout=_PIP_TIMEOUT_S, what="pip install [cli]")
    site = run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        cwd=empty,
        timeout=60,
        what="sysconfig",
    )
    return WheelVenv(
        bin=venv / "bin", site_packages=Path(site.stdout.strip()), base_probe=probe.stdout
    )
