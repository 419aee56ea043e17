"""The documentation, the code's comments and docstrings, and the tests stand on their own.

They may cite what anyone can read (the A2A specification by section, "A2A spec §3.1.2"; RFCs;
the a2a-sdk), but not material a reader of this repository does not have: notes kept outside
it, their section and erratum numbers, seed or issue numbers of the project's own tracker.
Each such reference must say the fact itself instead.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("README.md", "CHANGELOG.md", "mkdocs.yml", "docs", "src", "tests", "bench", "scripts")
SUFFIXES = {".md", ".py", ".proto", ".yml", ".yaml", ".toml", ".txt", ".json", ".js", ".sh", ""}
SKIPPED_DIRS = {"node_modules", "_gen", "__pycache__", ".venv", "site"}
SKIPPED_FILES = {Path(__file__).resolve()}

FORBIDDEN = re.compile(
    r"""
      \bfacts?\s+(?:§|E\d|erratum|errata|sections?\s+\d|\d|sheet|file)   # facts §9.4, facts E8
    | \bfact[\s-]sheet
    | \bprotocol's\ facts
    | \berrat(?:um|a)\b                 # erratum E2
    | \(E\d{1,2}\)                      # (E8)
    | \bseed\s+\d{3}\b                  # seed 003
    | (?:\.\./|/work/)?shared/(?:design|spec|seeds|hooks|bench)\b
    | /work/(?:shared|helpers)\b
    | \[(?:SDK|ACTS)\]
    | \bissues?\s+\#?\d+                # issue #16, issue 10
    """,
    re.IGNORECASE | re.VERBOSE,
)


def _files() -> list[Path]:
    found: list[Path] = []
    for name in SCANNED:
        top = ROOT / name
        candidates = [top] if top.is_file() else sorted(top.rglob("*")) if top.is_dir() else []
        for path in candidates:
            relative = path.relative_to(ROOT)
            if not path.is_file() or SKIPPED_DIRS.intersection(relative.parts):
                continue
            if path.suffix in SUFFIXES and path.resolve() not in SKIPPED_FILES:
                found.append(path)
    return found


def test_the_scan_covers_the_tree() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in _files()}
    for expected in ("README.md", "docs/ARCHITECTURE.md", "src/peerwire/errors.py", "mkdocs.yml"):
        assert expected in names


def test_no_reference_to_material_outside_the_repository() -> None:
    found = []
    for path in _files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            match = FORBIDDEN.search(line)
            if match:
                found.append(
                    f"{path.relative_to(ROOT)}:{number}: {match.group(0)!r}: {line.strip()}"
                )
    assert not found, "references to material a reader does not have:\n" + "\n".join(found)


def test_the_pattern_catches_what_it_is_for() -> None:
    for text in (
        "(facts §9.4 Step A)",
        "streams stay open (facts E8)",
        "erratum E2",
        "the ERP article (seed 003)",
        # Spelled in two parts so that this file holds no such reference itself.
        "`../" + "shared/design/architecture.md`",
        "[SDK] closes",
        "[ACTS] expects",
        "issue #16",
        "the targets of issue 10",
        "(E1)",
    ):
        assert FORBIDDEN.search(text), text
    for text in (
        "A2A spec §3.1.2",
        "RFC 9110 §15.5.2",
        "facts = dict(metadata or {})",
        "artifacts",
        "--seed 7",
        "issuer",
        "%E2%82",
    ):
        assert not FORBIDDEN.search(text), text
