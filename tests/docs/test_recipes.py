"""The recipes' examples (docs/howto/approval.md, docs/howto/replay.md) run as written, their
printed lines checked against what the pages say they print."""

from __future__ import annotations

import pytest

from peerwire.testing import live_server

from .test_examples import Load, example, printed

__all__ = ["example"]  # the fixture, imported for these tests


async def test_approval_by_another_principal(
    example: Load, capsys: pytest.CaptureFixture[str]
) -> None:
    module = example("approval_example")
    async with live_server(module.agent, auth=module.verifiers()) as url:
        await module.main(url)
    assert printed(capsys) == [
        "INPUT_REQUIRED - Approve 'team lunch, 120 EUR' for Erin Diaz?",
        "Otto: no such task",
        "Mona sees: Approve 'team lunch, 120 EUR' for Erin Diaz? (0 messages)",
        "COMPLETED - Approved by Mona Lee",
        "answered by: {'principal': 'mona', 'scheme': 'bearer'}",
    ]
