"""The how-to "Typed skills and files" (docs/howto/typed-skills.md) runs as written: its
example against its agent on a real server prints what the page says, and the refused call
created no task."""

from __future__ import annotations

import pytest

from peerwire.testing import live_server

from .test_examples import Load, example, printed
from .test_recipes_parts_sdk_wheel import page_block

__all__ = ["example"]  # the fixture, imported for these tests

pytestmark = pytest.mark.asyncio


async def test_typed_skills(example: Load, capsys: pytest.CaptureFixture[str]) -> None:
    from peerwire import Client

    module = example("typed_example")
    async with live_server(module.agent) as url:
        await module.main(url)
        async with Client.connect(url) as client:
            listed = await client.list_tasks()
    assert len(listed) == 2  # the quote and the stamp; the refused call made none
    assert printed(capsys) == page_block("howto/typed-skills.md", "It prints:")
