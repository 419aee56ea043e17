"""Following a task's event stream to its end, across dropped connections.

The caller gets the payloads of the stream (Task, Message, status and artifact updates) while
the task is folded into a ``TaskRecord`` with the protocol's rules. How a stream may end:

* after a Message (a message-only stream), or with the task terminal or interrupted: done;
* an error of the connection once the task reached a state at which the server closes the
  stream: done too. The answer is complete, and the error is the close racing the last event;
* otherwise the connection dropped: the task is followed again with SubscribeToTask, whose
  snapshot is merged in as updates (``catch_up``), so no chunk reaches the caller twice. If
  the task finished meanwhile, subscribing is refused (UnsupportedOperationError) and GetTask
  supplies the final task. Resubscribing gives up after a few attempts that bring nothing new.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable

import anyio

from ..errors import (
    A2AConnectionError,
    A2ATimeoutError,
    ClientError,
    IllegalTransitionError,
    InvalidResponseError,
    UnsupportedOperationError,
)
from ..protocol import TaskRecord, closes_stream, ends_blocking_wait, is_terminal
from ..types import Message, StreamResponse, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent
from ._reconcile import catch_up

__all__ = ["Payload", "TaskFollower"]

Payload = Task | Message | TaskStatusUpdateEvent | TaskArtifactUpdateEvent
"""One event of a stream, unwrapped from its ``StreamResponse``."""

Subscribe = Callable[[str], AsyncIterator[StreamResponse]]
GetTask = Callable[[str], Awaitable[Task]]

_DROPS = (A2AConnectionError, A2ATimeoutError)


class TaskFollower:
    """Follows streams of one client; ``subscribe`` and ``get_task`` are its calls."""

    def __init__(
        self,
        subscribe: Subscribe,
        get_task: GetTask,
        *,
        attempts: int = 5,
        backoff: float = 0.1,
        max_backoff: float = 2.0,
    ) -> None:
        self._subscribe = subscribe
        self._get_task = get_task
        self.attempts = attempts
        self.backoff = backoff
        self.max_backoff = max_backoff

    async def follow(self, events: AsyncIterator[StreamResponse]) -> AsyncGenerator[Payload, None]:
        view = _View()
        source = events
        resumed = False  # source is a resubscription: its snapshot is merged, not repeated
        fruitless = 0  # consecutive connections that brought nothing new
        while True:
            dropped: ClientError | None = None
            delivered = 0
            first = True
            try:
                while True:
                    try:
                        response = await anext(source)
                    except StopAsyncIteration:
                        break
                    except _DROPS as exc:
                        dropped = exc
                        break
                    except UnsupportedOperationError:
                        if not (resumed and first):
                            raise
                        # Refused on a resubscription: the task may have finished meanwhile.
                        for payload in await self._finish(view):
                            yield payload
                        return
                    for payload in view.take(response.payload, merge=resumed and first):
                        delivered += 1
                        yield payload
                    first = False
                    if view.message_only:
                        return  # exactly one Message, then the stream is over (facts §5.4)
            finally:
                await _close(source)
            record = view.record
            if record is None:
                if dropped is not None:
                    raise dropped
                raise InvalidResponseError("the stream ended before its first event")
            if dropped is None and ends_blocking_wait(record.state):
                return
            if dropped is not None and closes_stream(record.state):
                return
            fruitless = 0 if delivered else fruitless + 1
            if fruitless >= self.attempts:
                state = record.state.value
                raise dropped or A2AConnectionError(
                    f"the stream of task {record.id} keeps ending while the task is {state}; "
                    f"gave up after {self.attempts} attempts to follow it again"
                )
            await anyio.sleep(min(self.max_backoff, self.backoff * 2**fruitless))
            source = self._subscribe(record.id)
            resumed = True

    async def _finish(self, view: _View) -> list[Payload]:
        """What was missed of a task that finished while disconnected, then the final task."""
        record = view.record
        assert record is not None
        task = await self._get_task(record.id)
        if not is_terminal(task.status.state):
            raise InvalidResponseError(
                f"task {record.id} is {task.status.state.value}, yet subscribing to it again "
                "was refused as unsupported"
            )
        return [*view.merge(task), task]


class _View:
    """What the caller has seen of the stream, folded."""

    def __init__(self) -> None:
        self.record: TaskRecord | None = None
        self.message_only = False

    def take(self, payload: Payload, *, merge: bool) -> list[Payload]:
        """The payloads to hand on for one received event."""
        if isinstance(payload, Message):
            if self.record is not None:
                raise InvalidResponseError("a task's stream carried a Message event")
            self.message_only = True
            return [payload]
        if isinstance(payload, Task):
            if merge and self.record is not None:
                return list(self.merge(payload))
            self.record = _record(payload)
            return [payload]
        if self.record is None:
            raise InvalidResponseError(
                f"the stream began with a {type(payload).__name__}, not a Task or a Message "
                "(facts §5.4)"
            )
        try:
            self.record.apply(payload)
        except IllegalTransitionError as exc:
            raise InvalidResponseError(
                f"the stream broke the task's rules: {exc.message}"
            ) from None
        return [payload]

    def merge(self, snapshot: Task) -> list[TaskStatusUpdateEvent | TaskArtifactUpdateEvent]:
        record = self.record
        assert record is not None
        if snapshot.id != record.id:
            raise InvalidResponseError(f"following task {record.id}, got task {snapshot.id}")
        try:
            return catch_up(record, snapshot)
        except IllegalTransitionError as exc:
            raise InvalidResponseError(
                f"task {record.id} went back from what was seen: {exc.message}"
            ) from None


def _record(task: Task) -> TaskRecord:
    try:
        return TaskRecord.from_task(task)
    except IllegalTransitionError as exc:
        raise InvalidResponseError(f"the stream sent an impossible task: {exc.message}") from None


async def _close(events: AsyncIterator[StreamResponse]) -> None:
    """Close a transport's stream (they are async generators; the protocol promises ``aclose``)."""
    close = getattr(events, "aclose", None)
    if close is not None:
        await close()
