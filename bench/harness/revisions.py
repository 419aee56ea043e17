"""Another git revision of peerwire as a benchmark target, built once per commit.

``--compare-rev REV`` (or a target named ``peerwire@REV``) runs the revision's own
``peerwire serve`` with its own bench/echo_agent.py, so "before" and "after" differ only in
the code. The revision's files are exported with ``git archive`` (no worktree, no checkout:
the repository's state is never touched) into ``.bench-cache/peerwire-COMMIT/tree`` and
installed there with ``pip install -e 'tree[all]'`` into a venv beside it, from the same base
Python as this interpreter. Both are kept, keyed by the commit, and reused by later runs.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from . import venvs

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".bench-cache"  # in .gitignore
ECHO_AGENT = Path("bench") / "echo_agent.py"


class RevisionError(RuntimeError):
    """The revision is not a commit, or cannot be built into a target."""


@dataclass(frozen=True)
class Revision:
    label: str  # as the user wrote it: the target is "peerwire@LABEL"
    commit: str  # the full commit id

    @property
    def home(self) -> Path:
        return CACHE / f"peerwire-{self.commit[:12]}"

    @property
    def tree(self) -> Path:
        return self.home / "tree"

    @property
    def venv(self) -> venvs.VenvSpec:
        check = (
            "import pathlib, peerwire, uvloop, httptools; "
            # Resolved: .bench-cache may be a symlink shared by several checkouts.
            "assert pathlib.Path(peerwire.__file__).resolve().is_relative_to("
            f"pathlib.Path({str(self.tree / 'src')!r}).resolve())"
        )
        what = f"peerwire at {self.commit[:12]}"
        return venvs.VenvSpec(self.home / "venv", ("-e", f"{self.tree}[all]"), check, what)

    @property
    def peerwire(self) -> Path:
        return self.venv.path / "bin" / "peerwire"


def resolve(label: str, root: Path = ROOT) -> Revision:
    done = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--verify", "--quiet", f"{label}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    commit = done.stdout.strip()
    if done.returncode != 0 or not commit:
        raise RevisionError(f"{label!r} is not a commit of {root}")
    return Revision(label, commit)


def _export(revision: Revision, root: Path) -> None:
    partial = revision.home / "tree.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    archive = subprocess.Popen(
        ["git", "-C", str(root), "archive", "--format=tar", revision.commit],
        stdout=subprocess.PIPE,
    )
    assert archive.stdout is not None
    unpacked = subprocess.run(["tar", "-x", "-C", str(partial)], stdin=archive.stdout)
    archive.stdout.close()
    if archive.wait() != 0 or unpacked.returncode != 0:
        raise RevisionError(f"cannot export {revision.commit[:12]} with git archive")
    partial.rename(revision.tree)


def ensure(revision: Revision, root: Path = ROOT) -> Revision:
    """Export and install the revision unless a previous run did; it is then ready."""
    with venvs.locked(CACHE / f".peerwire-{revision.commit[:12]}.lock"):
        if not revision.tree.is_dir():
            print(f"# exporting {revision.commit[:12]} to {revision.tree}", file=sys.stderr)
            _export(revision, root)
    if not (revision.tree / ECHO_AGENT).is_file():
        raise RevisionError(f"{revision.label} has no {ECHO_AGENT}: it cannot be benchmarked")
    try:
        venvs.ensure(revision.venv)
    except venvs.VenvError as exc:
        raise RevisionError(f"cannot install {revision.label}: {exc}") from exc
    return revision
