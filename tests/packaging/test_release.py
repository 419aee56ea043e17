"""The version is written once, and the changelog's newest release is that version."""

from __future__ import annotations

import re
import tomllib

from typer.testing import CliRunner

import peerwire
from peerwire.cli import app

from .conftest import REPO, VERSION

# Keep a Changelog: "## [0.2.0] - 2026-12-01"; the release being prepared says Unreleased.
RELEASE_HEADING = re.compile(r"## \[(?P<version>\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2}|Unreleased)")


def test_the_version_lives_in_one_place() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["hatch"]["version"]["path"] == "src/peerwire/_version.py"
    assert re.fullmatch(r"\d+\.\d+\.\d+", peerwire.__version__)


def test_peerwire_version_prints_it() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"peerwire {VERSION}\n"


def test_the_changelog_starts_with_this_version() -> None:
    lines = (REPO / "CHANGELOG.md").read_text().splitlines()
    headings = [line for line in lines if line.startswith("## ")]
    assert headings, "CHANGELOG.md has no release"
    releases = [RELEASE_HEADING.fullmatch(line) for line in headings]
    assert all(releases), f"headings must read '## [X.Y.Z] - YYYY-MM-DD': {headings}"
    versions = [match["version"] for match in releases if match is not None]
    assert versions[0] == VERSION
    numbers = [tuple(int(part) for part in version.split(".")) for version in versions]
    assert numbers == sorted(set(numbers), reverse=True), "newest first, each release once"
