"""The documentation site builds with ``mkdocs build --strict``: no warning of any kind.

Strict mode turns every warning into a failure: a page missing from the nav, a link to a page
or an anchor that does not exist, an API reference object that cannot be found, a docstring
griffe cannot read, an included example file that is gone. The test also refuses any warning
line a plugin prints without failing the build, and checks that the README's links to the
documentation resolve.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT_S = 120


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            "mkdocs.yml",
            "--site-dir",
            str(site),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    warnings = [line for line in output.splitlines() if re.search(r"\bWARNING\b", line)]
    assert not warnings, "\n".join(warnings)
    for page in ("index.html", "tutorial/index.html", "reference/peerwire/index.html"):
        assert (site / page).is_file(), f"{page} was not built"
    reference = (site / "reference" / "peerwire" / "index.html").read_text()
    for name in ("peerwire.Agent", "peerwire.TaskContext", "peerwire.Client", "peerwire.serve"):
        assert f'id="{name}"' in reference, f"the API reference lacks {name}"


def test_every_page_is_in_the_nav() -> None:
    """Strict mode warns of pages left out of the nav; this says which, before building."""
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md"))
    missing = [page for page in pages if f" {page}" not in nav]
    assert not missing, f"pages not in mkdocs.yml's nav: {missing}"


def test_the_readmes_links_resolve() -> None:
    readme = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [t for t in targets if "://" not in t]
    assert local, "the README links to no local file"
    broken = [t for t in local if not (ROOT / t).exists()]
    assert not broken, f"README links to missing files: {broken}"
