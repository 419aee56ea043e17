"""What the A2A 0.3 transports share beyond the sans-I/O translation of ``compat.v03``: making
a 0.3 stream read as a 1.0 one.

1.0 streams begin with the Task (or the one Message of a direct reply); 0.3 ones need not,
and 0.3 servers refuse a finished task's subscription their own ways. ``as_v10`` puts that
right for every HTTP binding (gRPC's transport uses ``_v03_follow.task_first`` likewise):

* a resubscription begins with the task from GetTask when it begins with an update, and a
  refusal with InvalidParamsError (a2a-sdk 0.3) is UnsupportedOperationError when GetTask
  says the task is finished (``_v03_follow.task_first``);
* a resubscription cut before its first event (a2a-sdk 0.3's REST server refuses so: it
  starts the event stream, then fails in it) is UnsupportedOperationError too when the task
  is finished; otherwise the cut stands;
* a send's stream that begins with an update gets its Task in front
  (``compat.v03.streams.opening``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from ...compat.v03.streams import opening
from ...errors import A2AConnectionError, A2AError, ClientError
from ...protocol import finished_task_refusal, is_terminal
from ...types import GetTaskRequest, StreamResponse, Task
from ._v03_follow import task_first
from .base import CallOptions, Transport

__all__ = ["as_v10"]


async def as_v10(
    transport: Transport,
    operation: str,
    request: Any,
    options: CallOptions,
    events: AsyncIterator[StreamResponse],
) -> AsyncIterator[StreamResponse]:
    """The 0.3 stream ``events`` (of ``operation`` with ``request``, over ``transport``) as a
    1.0 stream reads (see the module docstring). Closing this closes ``events``."""

    async def get_task() -> Task:
        task: Task = await transport.call("GetTask", GetTaskRequest(id=request.id), Task, options)
        return task

    subscribing = operation == "SubscribeToTask"
    source = task_first(events, get_task) if subscribing else events
    try:
        try:
            first = await anext(source)
        except StopAsyncIteration:
            return
        except A2AConnectionError as cut:
            if subscribing:
                await _refuse_if_finished(get_task, cut)
            raise
        for opened in opening(first, request):
            yield opened
        async for event in source:
            yield event
    finally:
        for stream in (source, events):
            close = getattr(stream, "aclose", None)  # async generators: end their calls now
            if close is not None:
                await close()


async def _refuse_if_finished(get_task: Any, cut: A2AConnectionError) -> None:
    """Raise UnsupportedOperationError if the task of a subscription that was cut is finished;
    return (the cut stands) if it is not, or if GetTask fails too."""
    try:
        task: Task = await get_task()
    except (A2AError, ClientError):
        return
    if is_terminal(task.status.state):
        raise finished_task_refusal(
            task.id,
            task.status.state,
            "; the A2A 0.3 server ended the subscription to it without an event",
        ) from cut
