"""Following a task's event stream to its end, across dropped connections.

The caller gets the payloads of the stream (Task, Message, status and artifact updates) while
the task is folded into a ``TaskRecord`` with the protocol's rules. How a stream may end:

* after a Message (a message-only stream), or with the task terminal or interrupted: done;
* an error of the connection once the task reached a state at which the server closes the
  stream: done too. The answer is complete, and the error is the close racing the last event;
* otherwise the connection dropped: the task is followed again with SubscribeToTask, whose
  snapshot is merged in as updates (``catch_up``), so no chunk reaches the caller twice. If
  the task finished meanwhile, subscribing is refused (UnsupportedOperationError) and GetTask
  supplies the final task. Resubscribing gives up after a few attempts that bring nothing new;
* a subscription that ends before its first event (an a2a-sdk 0.3 server does that when the
  task ends between its check for a terminal task and its tap of the task's events) is
  answered by GetTask: a terminal task raises the UnsupportedOperationError a subscription to
  it is refused with, another is handed on (merged, on a resubscription) and followed on;
* the server ended the stream before a closing state (``StreamEndedError``: it is shutting
  down, or lost its event source). That is raised, carrying the task id, so the caller can
  ``subscribe(task_id)`` once the server is back, unless the caller asked to ``resume_for``
  some seconds: then the task is subscribed to again, with backoff, while the server refuses
  (busy, unreachable: a restart, another replica) until that time is up, and followed on as
  after a drop. Not by default: a server that says it is going away is seldom back at once.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable

import anyio

from ..errors import (
    A2AConnectionError,
    A2ATimeoutError,
    ClientError,
    IllegalTransitionError,
    InvalidResponseError,
    ServerBusyError,
    StreamEndedError,
    UnsupportedOperationError,
)
from ..protocol import TaskRecord, closes_stream, ends_blocking_wait, is_terminal
from ..protocol.subscription import finished_task_refusal
from ..types import Message, StreamResponse, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent
from ._reconcile import catch_up

__all__ = ["Payload", "TaskFollower"]

Payload = Task | Message | TaskStatusUpdateEvent | TaskArtifactUpdateEvent
"""One event of a stream, unwrapped from its ``StreamResponse``."""

Subscribe = Callable[[str], AsyncIterator[StreamResponse]]
GetTask = Callable[[str], Awaitable[Task]]

_DROPS = (A2AConnectionError, A2ATimeoutError)
# What a server that ended a stream says while it restarts (ServerBusyError covers another
# StreamEndedError), or a replica behind the same address is not up yet.
_NOT_BACK_YET = (ServerBusyError, *_DROPS)


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

    async def follow(
        self,
        events: AsyncIterator[StreamResponse],
        *,
        resume_for: float = 0.0,
        subscribed: str | None = None,
    ) -> AsyncGenerator[Payload, None]:
        """The payloads of ``events`` and of the resubscriptions that follow it (see the
        module docstring); ``resume_for``: seconds to keep subscribing again after the server
        ended the stream early (0: raise its ``StreamEndedError``); ``subscribed``: the task
        ``events`` subscribes to (SubscribeToTask), if it does."""
        view = _View()
        source = events
        pending: StreamResponse | None = None  # the first event of a resumed source, read
        resumed = False  # source is a resubscription: its snapshot is merged, not repeated
        fruitless = 0  # consecutive connections that brought nothing new
        while True:
            dropped: ClientError | None = None
            ended: StreamEndedError | None = None
            delivered = 0
            first = True
            try:
                while True:
                    try:
                        if pending is not None:
                            response, pending = pending, None
                        else:
                            response = await anext(source)
                    except StopAsyncIteration:
                        break
                    except _DROPS as exc:
                        dropped = exc
                        break
                    except StreamEndedError as exc:
                        ended = exc
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
                        return  # exactly one Message, then the stream is over (A2A spec §3.1.2)
            finally:
                await _close(source)
            following = subscribed if view.record is None else view.record.id
            if (resumed or subscribed) and first and dropped is None and ended is None:
                assert following is not None
                # A subscription that ended before its snapshot: GetTask says why.
                for payload in await self._ended_empty(view, following):
                    delivered += 1
                    yield payload
                if view.record is not None and is_terminal(view.record.state):
                    return
                dropped = A2AConnectionError(
                    f"the subscription to task {following} ended before its first event"
                )
            record = view.record
            if record is None:
                if ended is not None:
                    raise ended
                if dropped is not None:
                    raise dropped
                raise InvalidResponseError("the stream ended before its first event")
            if ended is not None:
                # Whatever the state: the server said it cut the stream short, so a stream
                # at INPUT_REQUIRED (a subscription follows on through it) did not just end.
                ended.metadata.setdefault("taskId", record.id)
                if resume_for <= 0:
                    raise ended
            elif (
                ends_blocking_wait(record.state) if dropped is None else closes_stream(record.state)
            ):
                return  # done, or a drop racing the close at a closing state
            fruitless = 0 if delivered else fruitless + 1
            if fruitless >= self.attempts:
                state = record.state.value
                raise (
                    ended
                    or dropped
                    or A2AConnectionError(
                        f"the stream of task {record.id} keeps ending while the task is {state}; "
                        f"gave up after {self.attempts} attempts to follow it again"
                    )
                )
            if ended is not None:
                back = await self._resume(record.id, ended, resume_for)
                if back is None:
                    for payload in await self._finish(view):
                        yield payload
                    return
                source, pending = back
            else:
                await anyio.sleep(min(self.max_backoff, self.backoff * 2**fruitless))
                source = self._subscribe(record.id)
            resumed = True

    async def _resume(
        self, task_id: str, ended: StreamEndedError, within: float
    ) -> tuple[AsyncIterator[StreamResponse], StreamResponse | None] | None:
        """Subscribe to the task again after the server ended its stream, retrying (with
        backoff) while the server is not back, for ``within`` seconds; the new stream and its
        first event (``None``: it ended without one), or ``None`` if the task finished
        meanwhile. Raises ``ended`` (caused by the last refusal) once the time is up."""
        give_up = anyio.current_time() + within
        for attempt in itertools.count():
            delay = min(self.max_backoff, self.backoff * 2**attempt)
            if anyio.current_time() + delay > give_up:
                break
            await anyio.sleep(delay)
            source = self._subscribe(task_id)
            try:
                return source, await anext(source)
            except UnsupportedOperationError:
                await _close(source)
                return None  # refused as finished: GetTask has the outcome
            except StopAsyncIteration:
                return source, None  # ended empty: the caller asks GetTask
            except _NOT_BACK_YET as exc:
                await _close(source)
                ended.__cause__ = exc
            except BaseException:
                await _close(source)
                raise
        raise ended

    async def _ended_empty(self, view: _View, task_id: str) -> list[Payload]:
        """What a subscription that ended before its first event leaves: the task as GetTask
        has it, merged into what was seen. A task never seen that is terminal raises the
        refusal of a subscription to a finished task (A2A spec §3.1.6)."""
        task = await self._get_task(task_id)
        state = task.status.state
        if view.record is None:
            if is_terminal(state):
                raise finished_task_refusal(
                    task_id, state, "; its subscription ended without an event"
                )
            return view.take(task, merge=False)
        updates: list[Payload] = [*view.merge(task)]
        return [*updates, task] if is_terminal(state) else updates

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
                "(A2A spec §3.1.2)"
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
