"""Idempotent sends apply only to a caller that activates their extension, on every binding.

A2A 1.0 does not define a repeated ``messageId``: a caller that does not name the extension
in ``A2A-Extensions`` (gRPC metadata ``a2a-extensions``) gets a new task for each send, as
from any other agent; one that names it gets the task the first send made, and the
extension echoed. Raw calls (``Peer.wire``) send exactly the extensions under test; streams
go through the binding's transport with the extensions of their ``CallOptions``.
"""

from __future__ import annotations

import uuid

import pytest

from peerwire.client import IDEMPOTENT_SEND_EXTENSION, CallOptions
from peerwire.errors import UnsupportedOperationError
from peerwire.types import (
    Message,
    Part,
    Role,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    Task,
    TaskState,
)

from ._peers import TIMEOUT_S, Peer

pytestmark = pytest.mark.asyncio(loop_scope="module")


def _request(skill: str = "echo", text: str = "x", task_id: str = "") -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            message_id=f"m-{uuid.uuid4()}",
            role=Role.USER,
            parts=[Part(text=text)],
            task_id=task_id,
            metadata={"skill": skill},
        )
    )


async def _sent_twice(
    peer: Peer, request: SendMessageRequest, extensions: list[str]
) -> list[SendMessageResponse]:
    answers = []
    for _ in range(2):
        answer = await peer.wire.call(
            "SendMessage", request, SendMessageResponse, extensions=extensions
        )
        assert answer.error is None, answer
        assert answer.extensions == (IDEMPOTENT_SEND_EXTENSION if extensions else None)
        answers.append(answer.result)
    return answers


async def test_the_card_offers_the_extension_without_requiring_it(peer: Peer) -> None:
    [offered] = [
        e for e in peer.client.card.capabilities.extensions if e.uri == IDEMPOTENT_SEND_EXTENSION
    ]
    assert offered.required is False and offered.description


async def test_without_activation_a_repeat_makes_a_new_task(peer: Peer) -> None:
    first, second = await _sent_twice(peer, _request(), [])
    assert first.task is not None and second.task is not None
    assert first.task.id != second.task.id, "1.0: a repeated messageId is another message"
    assert first.task.status.state is second.task.status.state is TaskState.COMPLETED


async def test_activated_a_repeat_gets_the_first_task(peer: Peer) -> None:
    first, second = await _sent_twice(peer, _request(), [IDEMPOTENT_SEND_EXTENSION])
    assert first.task is not None and second.task is not None
    assert second.task.id == first.task.id


async def test_without_activation_a_repeated_follow_up_is_a_message_to_a_finished_task(
    peer: Peer,
) -> None:
    """1.0: the repeat reaches a task that completed on the first answer, which is refused."""
    asked = await peer.wire.call("SendMessage", _request("ask_then_note"), SendMessageResponse)
    assert asked.result.task.status.state is TaskState.INPUT_REQUIRED
    answer = _request("ask_then_note", "monday", task_id=asked.result.task.id)
    done = await peer.wire.call("SendMessage", answer, SendMessageResponse)
    assert done.error is None and done.result.task.status.state is TaskState.COMPLETED
    again = await peer.wire.call("SendMessage", answer, SendMessageResponse)
    assert type(again.error) is UnsupportedOperationError, again
    activated = await peer.wire.call(
        "SendMessage", answer, SendMessageResponse, extensions=[IDEMPOTENT_SEND_EXTENSION]
    )
    assert activated.error is None, activated
    assert activated.result.task.id == asked.result.task.id
    history = [m.message_id for m in activated.result.task.history]
    assert history.count(answer.message.message_id) == 1, history


async def _first_task(peer: Peer, request: SendMessageRequest, extensions: list[str]) -> Task:
    options = CallOptions(timeout=TIMEOUT_S, extensions=tuple(extensions))
    events = peer.transport.stream("SendStreamingMessage", request, options)
    try:
        first: StreamResponse = await anext(aiter(events))
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()
    assert first.task is not None, first
    return first.task


@pytest.mark.parametrize("activated", [False, True], ids=["plain", "activated"])
async def test_a_repeated_stream_follows_activation(peer: Peer, activated: bool) -> None:
    request = _request()
    extensions = [IDEMPOTENT_SEND_EXTENSION] if activated else []
    first = await _first_task(peer, request, extensions)
    second = await _first_task(peer, request, extensions)
    assert (second.id == first.id) is activated


async def test_the_client_activates_what_the_card_offers(peer: Peer) -> None:
    """peerwire's client names the extension on its own: its repeats get the first task."""
    message = _request().message
    first = await peer.client.send(message)
    second = await peer.client.send(message)
    assert isinstance(first, Task) and isinstance(second, Task)
    assert second.id == first.id
