"""The ``peerwire`` command line against the official a2a-sdk Glossary server.

The server runs in the SDK's own virtual environment (tests/interop); nothing of the SDK is
imported here. Its behaviour is described in tests/interop/sdk_peer/glossary_server.py.
"""

from __future__ import annotations

import pytest
from interop.conftest import sdk_glossary_server, sdk_python  # noqa: F401  (fixtures)
from interop.sdk_harness import SdkServer

from peerwire.types import SendMessageResponse, StreamResponse, Task, TaskState, decode

from .conftest import invoke

pytestmark = pytest.mark.interop

RECORD = "A record is a final class that is a transparent carrier for its components."
BINDINGS = ["jsonrpc", "rest", "grpc"]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_send_and_get_on_each_binding(
    sdk_glossary_server: SdkServer,  # noqa: F811
    binding: str,
) -> None:
    url = sdk_glossary_server.base_url
    sent = await invoke("send", url, "record", "--binding", binding, "--json")
    assert sent.code == 0, sent.err
    task = decode(sent.out, SendMessageResponse).task
    assert task is not None and task.artifacts[0].text == RECORD
    got = await invoke("get", url, task.id, "--binding", binding, "--json")
    assert got.code == 0, got.err
    assert decode(got.out, Task).status.state is TaskState.COMPLETED


@pytest.mark.parametrize("binding", BINDINGS)
async def test_stream_on_each_binding(
    sdk_glossary_server: SdkServer,  # noqa: F811
    binding: str,
) -> None:
    url = sdk_glossary_server.base_url
    ran = await invoke("send", url, "record", "--stream", "--binding", binding, "--json")
    assert ran.code == 0, ran.err
    events = [decode(line, StreamResponse) for line in ran.out.splitlines()]
    assert events[0].task is not None
    assert "".join(e.artifact_update.artifact.text for e in events if e.artifact_update) == RECORD
    last = events[-1].status_update
    assert last is not None and last.status.state is TaskState.COMPLETED


async def test_exit_codes_for_a_question_and_a_failure(
    sdk_glossary_server: SdkServer,  # noqa: F811
) -> None:
    url = sdk_glossary_server.base_url
    asked = await invoke("send", url, "")
    assert asked.code == 3, asked.err
    assert "question: Which term should I define?" in asked.out
    failed = await invoke("send", url, "monad", "--stream")
    assert failed.code == 4, failed.err
    assert "I do not know the term 'monad'." in failed.out
    card = await invoke("card", url)
    assert card.code == 0 and "Glossary Agent (a2a-sdk)" in card.out
