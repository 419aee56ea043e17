"""``peerwire serve``'s usage surface: its help and the errors a wrong command line gets."""

from __future__ import annotations

import re

from .conftest import invoke

OPTION = re.compile(r"--[a-z0-9][a-z0-9-]*")


async def test_serve_help_shows_every_option_name_whole_at_80_columns() -> None:
    ran = await invoke("serve", "--help", env={"COLUMNS": "80"})
    assert ran.code == 0, ran.err
    assert "…" not in ran.out, "help text is cut short"
    assert all(len(line) <= 80 for line in ran.out.splitlines())
    shown = set(OPTION.findall(ran.out))
    for name in ("--message-retention", "--push-retry-delay", "--push-signing-key"):
        assert name in shown
    assert "--require-client-cert" in shown and "--no-lenient-version" in shown
    assert "peerwire[uvicorn]" in ran.out, "brackets are text, not markup"


async def test_serve_names_a_missing_attribute() -> None:
    ran = await invoke("serve", "peerwire.samples.glossary:agnt")
    assert ran.code == 2
    said = " ".join(re.sub("[│╭╮╰╯─]", " ", ran.err).split())
    assert "module 'peerwire.samples.glossary' has no attribute 'agnt'" in said
    assert "NoneType" not in said


async def test_serve_says_what_a_non_agent_attribute_is() -> None:
    ran = await invoke("serve", "peerwire.samples.glossary:Agent")
    assert ran.code == 2
    assert "is not a peerwire Agent (found type)" in " ".join(ran.err.split())
