"""The Brief Agent (peerwire) calling the official a2a-sdk Glossary server as its Glossary."""

from __future__ import annotations

import pytest
from interop.conftest import sdk_glossary_server, sdk_python  # noqa: F401  (fixtures)
from interop.sdk_harness import SdkServer

from peerwire import Client, Task, TaskState
from peerwire.samples.brief import make_agent
from peerwire.testing import live_server

pytestmark = pytest.mark.interop


async def test_a_brief_from_the_sdk_glossary(sdk_glossary_server: SdkServer) -> None:  # noqa: F811
    agent = make_agent(sdk_glossary_server.base_url, timeout=60)
    async with live_server(agent, shutdown_grace=1.0) as url, Client.connect(url) as client:
        done = await client.send("record, sealed class")
        failed = await client.send("record, monad")
    assert isinstance(done, Task) and isinstance(failed, Task)
    assert done.status.state is TaskState.COMPLETED
    brief = next(a.text for a in done.artifacts if a.name == "brief")
    assert brief.splitlines()[0].startswith("- record: A record is a final class")
    assert failed.status.state is TaskState.FAILED
    assert failed.status.message is not None
    assert failed.status.message.text == (
        "Glossary Agent (a2a-sdk) could not help with \"monad\": I do not know the term 'monad'."
    )
