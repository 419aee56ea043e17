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


async def test_replay_safety(example: Load, capsys: pytest.CaptureFixture[str]) -> None:
    """Started, then the server stopped and started again on the same file: the answer
    runs the handler again from its start."""
    module = example("replay_example")
    store = "sqlite:bookings.db"  # in the example's working folder
    async with live_server(module.agent, store=store, auth=module.AUTH) as url:
        task_id = await module.start(url)
    async with live_server(module.agent, store=store, auth=module.AUTH) as url:
        await module.finish(task_id, url)
    assert printed(capsys) == [
        "INPUT_REQUIRED - Confirm 2 nights for Ana? (yes/no)",
        "COMPLETED - booked for Ana",
        "artifacts: ['quote for Ana: 2 nights, 240 EUR', 'booking for Ana']",
        "'checking availability' sent 2 times",
        "deposits charged: 1",
    ]
