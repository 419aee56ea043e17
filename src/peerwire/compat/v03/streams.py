"""How a 0.3 stream opens, in 1.0's terms (sans I/O): for the client transports of every binding.

1.0 streams open with the Task (or the one Message of a direct reply); 0.3 promised no such
thing, and 0.3 servers (the official Python SDK's, for one) open with a status update. A
client transport hands its first event to ``opening``, which puts the Task in front:

* a status update becomes the Task in that status (the update itself is not repeated);
* an artifact update gets a Task before it, SUBMITTED (its real state is not known yet; any
  later status moves on from there), then comes as it is;
* a Task or a Message is the opening already.

The Task's history is the message the stream was opened with (a send), as 1.0's first Task
holds it; a resubscription's has none. Its id and context are the event's.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ...types import SendMessageRequest, StreamResponse, Task, TaskState, TaskStatus

__all__ = ["opening"]


def opening(first: StreamResponse, request: Any = None) -> list[StreamResponse]:
    """The events to hand on for the first event of a 0.3 stream opened by ``request``."""
    update = first.status_update or first.artifact_update
    if update is None:
        return [first]
    history = []
    if isinstance(request, SendMessageRequest):
        history.append(
            msgspec.structs.replace(
                request.message, task_id=update.task_id, context_id=update.context_id
            )
        )
    if first.status_update is not None:
        status = first.status_update.status
    else:
        status = TaskStatus(state=TaskState.SUBMITTED)
    task = Task(id=update.task_id, context_id=update.context_id, status=status, history=history)
    opened = [StreamResponse(task=task)]
    if first.artifact_update is not None:
        opened.append(first)
    return opened
