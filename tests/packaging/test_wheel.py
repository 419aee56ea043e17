"""What a release ships: the wheel at work in a fresh venv, its metadata, and both archives'
contents (fixtures in conftest.py)."""

from __future__ import annotations

import re
import tarfile
import zipfile
from email.message import Message
from email.parser import Parser
from pathlib import Path

import pytest

from .conftest import REPO, VERSION, Dists, WheelVenv, run

# Building and installing runs pip; on a machine whose pip cache is cold it downloads the
# dependencies first. A liveness bound only: the whole module takes well under a minute.
pytestmark = [pytest.mark.packaging, pytest.mark.timeout(600)]

DEMO_TIMEOUT_S = 120
DIST_INFO = f"peerwire-{VERSION}.dist-info"
SDIST_ROOT = f"peerwire-{VERSION}"
# Never in an archive: environments, caches, installed node packages, local databases.
JUNK_DIRS = {
    ".git",
    ".venv",
    "venv",
    "node_modules",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".hypothesis",
    ".cache",
    ".bench-cache",
    "dist",
}
JUNK_SUFFIXES = (".pyc", ".pyo", ".db", ".db-wal", ".db-shm")
EXTRAS = {"server", "cli", "grpc", "postgres", "redis", "security", "uvicorn", "all"}


def _wheel_names(dists: Dists) -> list[str]:
    with zipfile.ZipFile(dists.wheel) as wheel:
        return wheel.namelist()


def _sdist_names(dists: Dists) -> list[str]:
    with tarfile.open(dists.sdist) as sdist:
        return [member.name for member in sdist.getmembers() if member.isfile()]


def _metadata(dists: Dists) -> Message:
    with zipfile.ZipFile(dists.wheel) as wheel:
        return Parser().parsestr(wheel.read(f"{DIST_INFO}/METADATA").decode())


def _junk(names: list[str]) -> list[str]:
    return [
        name
        for name in names
        if JUNK_DIRS.intersection(name.split("/")[:-1]) or name.endswith(JUNK_SUFFIXES)
    ]


def test_the_demo_runs_from_the_wheel_in_an_empty_folder(
    wheel_venv: WheelVenv, tmp_path: Path
) -> None:
    done = run(
        [str(wheel_venv.bin / "peerwire"), "demo"],
        cwd=tmp_path,
        timeout=DEMO_TIMEOUT_S,
        what="peerwire demo (installed from the wheel with the cli extra)",
    )
    out = done.stdout
    assert done.stderr == ""
    # Every step ran (tests/cli/test_demo.py checks what each one shows).
    for step in range(1, 9):
        assert re.search(rf"^{step}\. \w", out, re.M), f"step {step}"
    assert "A sealed class restricts which other classes may extend it." in out
    assert "same task both turns: yes" in out
    assert 'SendStreamingMessage "monad" -> FAILED' in out, "the Brief Agent called the Glossary"
    assert "Stopped both agents; their task stores were temporary." in out
    stores = re.search(r"Their tasks are kept in SQLite files under (\S+)", out)
    assert stores is not None, out
    assert not Path(stores[1]).exists(), "the demo removed its temporary stores"
    assert list(tmp_path.iterdir()) == [], "the demo wrote nothing to the current folder"


def test_the_fulfillment_demo_runs_from_the_wheel_in_an_empty_folder(
    wheel_venv: WheelVenv, tmp_path: Path
) -> None:
    done = run(
        [str(wheel_venv.bin / "peerwire"), "demo", "fulfillment"],
        cwd=tmp_path,
        timeout=DEMO_TIMEOUT_S,
        what="peerwire demo fulfillment (installed from the wheel with the cli extra)",
    )
    out = done.stdout
    assert done.stderr == ""
    # Every scenario ran (tests/cli/test_demo_fulfillment.py checks what each one shows),
    # the orchestrator as a process of the wheel's own interpreter.
    for step in range(1, 6):
        assert re.search(rf"^{step}\. \w", out, re.M), f"step {step}"
    assert "SIGKILL the Order Fulfillment Agent" in out
    assert (
        "ORD-1005: inventory got 1 lock request(s), booked 1; "
        "logistics got 1 booking request(s), booked 1"
    ) in out
    assert "Stopped all four agents; the orchestrator's store was temporary." in out
    assert list(tmp_path.iterdir()) == [], "the demo wrote nothing to the current folder"


def test_the_venv_runs_the_wheel_not_this_checkout(wheel_venv: WheelVenv, tmp_path: Path) -> None:
    imported = Path(wheel_venv.base_probe.splitlines()[0])
    assert imported == wheel_venv.site_packages / "peerwire" / "__init__.py"
    said = run(
        [str(wheel_venv.bin / "peerwire"), "--version"], cwd=tmp_path, timeout=60, what="version"
    )
    assert said.stdout == f"peerwire {VERSION}\n"


def test_the_wheel_alone_imports_without_the_cli_extra(wheel_venv: WheelVenv) -> None:
    missing_extras = wheel_venv.base_probe.splitlines()[1:]
    assert missing_extras in ([], [""]), f"installed without extras, yet found {missing_extras}"


def test_the_wheel_holds_the_package_and_nothing_else(dists: Dists) -> None:
    names = _wheel_names(dists)
    outside = [n for n in names if not n.startswith(("peerwire/", f"{DIST_INFO}/"))]
    assert outside == [], "no tests, bench or scripts in the wheel"
    assert _junk(names) == []
    for needed in (
        "peerwire/py.typed",
        "peerwire/samples/glossary.py",
        "peerwire/samples/brief.py",
        "peerwire/samples/fulfillment/orchestrator.py",
        "peerwire/bindings/grpc/_gen/a2a_pb2.py",
        "peerwire/bindings/grpc/_gen/a2a_pb2.pyi",
        f"{DIST_INFO}/licenses/LICENSE",
    ):
        assert needed in names, needed
    # The inspector's page (peerwire inspect) is served from the package: every file of
    # its static/ folder (HTML, ES modules, CSS) must be in the wheel.
    static = REPO / "src" / "peerwire" / "inspect" / "static"
    shipped = sorted(p.relative_to(REPO / "src").as_posix() for p in static.iterdir())
    assert "peerwire/inspect/static/index.html" in shipped
    assert [n for n in shipped if n not in names] == []
    # Exactly the package's files in the sdist: the wheel was built from it and drops nothing.
    package = f"{SDIST_ROOT}/src/"
    in_sdist = {n.removeprefix(package) for n in _sdist_names(dists) if n.startswith(package)}
    assert {n for n in names if n.startswith("peerwire/")} == in_sdist


def test_the_wheel_metadata(dists: Dists) -> None:
    meta = _metadata(dists)
    assert meta["Metadata-Version"] == "2.4", "what every uploader accepts (pyproject.toml)"
    assert meta["Name"] == "peerwire"
    assert meta["Version"] == VERSION
    assert meta["Requires-Python"] == ">=3.11"
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta.get_all("License-File") == ["LICENSE"]
    classifiers = meta.get_all("Classifier") or []
    assert "Typing :: Typed" in classifiers
    assert not [c for c in classifiers if c.startswith("License ::")], "the expression says it"
    assert set(meta.get_all("Provides-Extra") or []) >= EXTRAS
    assert meta["Description-Content-Type"] == "text/markdown"
    assert meta.get_payload() == (REPO / "README.md").read_text()
    with zipfile.ZipFile(dists.wheel) as wheel:
        entry_points = wheel.read(f"{DIST_INFO}/entry_points.txt").decode()
    assert "peerwire = peerwire.cli:main" in entry_points


def test_the_sdist_holds_what_it_takes_to_build_and_test(dists: Dists) -> None:
    names = _sdist_names(dists)
    assert all(n.startswith(f"{SDIST_ROOT}/") for n in names)
    inside = {n.removeprefix(f"{SDIST_ROOT}/") for n in names}
    assert _junk(names) == []
    for needed in (
        "PKG-INFO",
        "pyproject.toml",
        "README.md",
        "CHANGELOG.md",
        "LICENSE",
        ".ci/run",
        "src/peerwire/py.typed",
        "src/peerwire/samples/glossary.py",
        "docs/ARCHITECTURE.md",
        "scripts/gen_grpc.py",
        "bench/run.sh",
        "tests/interop/js_peer/package-lock.json",
    ):
        assert needed in inside, needed
    # Every Python file of the package and of the tests (bar what .gitignore keeps out).
    for top in ("src", "tests"):
        for path in (REPO / top).rglob("*.py"):
            relative = path.relative_to(REPO).as_posix()
            if not JUNK_DIRS.intersection(path.relative_to(REPO).parts):
                assert relative in inside, relative
