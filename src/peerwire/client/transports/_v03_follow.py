"""What a client of an A2A 0.3 agent does to make its streams read as 1.0 streams, on any
binding (no I/O of its own: the transport's calls are passed in).

A 1.0 subscription (SubscribeToTask) begins with the task (A2A spec §3.1.2, §3.5.2); a 0.3
resubscription need not: a2a-sdk 0.3 begins with the next update. ``task_first`` puts the
task first, fetched with GetTask once that first update has arrived (a2a-sdk stores each
event before it sends it, so the snapshot already holds it, and the update is not passed on
twice). A resubscription to a finished task is UnsupportedOperationError in 1.0; a2a-sdk
0.3 refuses it with InvalidParamsError, which becomes UnsupportedOperationError when the task
is indeed finished, so the client's follower knows to stop resubscribing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

from ...errors import InvalidParamsError
from ...protocol import finished_task_refusal, is_terminal
from ...types import StreamResponse, Task

__all__ = ["task_first"]


async def task_first(
    events: AsyncIterator[StreamResponse], get_task: Callable[[], Awaitable[Task]]
) -> AsyncIterator[StreamResponse]:
    """``events`` of a 0.3 resubscription, beginning with the task as 1.0's do: when the
    first event is an update, the task from ``get_task`` (asked once that update arrived,
    so it holds it) takes its place. Closing this closes ``events``."""
    try:
        try:
            first = await anext(events, None)
        except InvalidParamsError as refused:
            task = await get_task()
            if not is_terminal(task.status.state):
                raise
            raise finished_task_refusal(
                task.id, task.status.state, f" ({refused.message})"
            ) from None
        if first is None:
            return
        if first.task is None and first.message is None:
            first = StreamResponse(task=await get_task())
        yield first
        async for event in events:
            yield event
    finally:
        close = getattr(events, "aclose", None)  # a generator: end its call now
        if close is not None:
            await close()
