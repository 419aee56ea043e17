"""The install commands the docs give a newcomer work as written: the wheel ``python -m
build`` makes, installed into a fresh venv with the docs' own ``pip install`` line, runs the
``peerwire`` command, and no page tells anyone to install peerwire from a package index."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

from .conftest import REPO, VERSION, Dists, run

pytestmark = [pytest.mark.packaging, pytest.mark.timeout(600)]

BUILD = "pip install build && python -m build"
INSTALL = "pip install --find-links dist 'peerwire[cli]'"
PAGES = ("docs/index.md", "docs/tutorial.md", "README.md")
# A pip install of peerwire by name alone: served by no index.
FROM_AN_INDEX = re.compile(r"pip install (?!-e |--find-links )['\"]?peerwire\b")


@pytest.mark.parametrize("page", PAGES)
def test_no_page_installs_peerwire_from_an_index(page: str) -> None:
    text = " ".join((REPO / page).read_text().split())
    assert FROM_AN_INDEX.search(text) is None, FROM_AN_INDEX.search(text)


def test_the_docs_give_the_build_and_the_install() -> None:
    index = (REPO / "docs/index.md").read_text()
    assert BUILD in index and INSTALL in index
    assert "pip install -e '.[cli]'" in index
    assert "--find-links dist 'peerwire[cli]'" in (REPO / "docs/tutorial.md").read_text()


def test_the_documented_install_of_the_built_wheel_runs_peerwire(
    dists: Dists, tmp_path: Path
) -> None:
    # The documented build's output, as `python -m build` leaves it in dist/.
    dist = tmp_path / "dist"
    dist.mkdir()
    (dist / dists.wheel.name).write_bytes(dists.wheel.read_bytes())
    (dist / dists.sdist.name).write_bytes(dists.sdist.read_bytes())
    venv = tmp_path / "venv"
    base = getattr(sys, "_base_executable", None) or sys.executable
    run([base, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path, timeout=60, what="venv")
    python = venv / "bin" / "python"
    # The docs' line as written, with this environment's pip installing into the new venv.
    words = shlex.split(INSTALL)
    assert words[:2] == ["pip", "install"]
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet"]
    run([*pip, *words[2:]], cwd=tmp_path, timeout=300, what=INSTALL)
    done = run(
        [str(venv / "bin" / "peerwire"), "--version"], cwd=tmp_path, timeout=60, what="peerwire"
    )
    assert done.stdout.strip() == f"peerwire {VERSION}"
    installed = run(
        [str(python), "-c", "import peerwire, typer; print(peerwire.__file__)"],
        cwd=tmp_path,
        timeout=60,
        what="import",
    )
    assert str(venv) in installed.stdout, "the venv runs the wheel, not this checkout"
