"""One async function per A2A operation, transport-agnostic.

Bindings decode a request into its typed form, call the matching method here with a
``CallContext`` (who is calling, for which tenant, with which extensions), and encode what comes
back. Streaming operations return an async iterator *after* every check has passed, so a binding
can answer an error as an ordinary response before it starts a stream.

What runs the agent's own code inline (its validators, a message skill) lets an ``A2AError``
through as the answer; any other exception is the agent's bug: the caller gets
``InternalError`` without its text, the log gets the traceback.

A stream the server must end before its task reached a closing state (``end_streams``: the
shutdown, an outage of the event source) ends with ``StreamEndedError`` as its last event,
never with a silent close, so its client knows to subscribe again.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import anyio
import msgspec

from .._ids import new_id
from ..errors import (
    A2AError,
    AuthenticationError,
    ExtendedAgentCardNotConfiguredError,
    FieldViolation,
    InternalError,
    InvalidParamsError,
    PermissionDeniedError,
    PushNotificationNotSupportedError,
    ServerBusyError,
    StreamEndedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from ..ops.metrics import LevelSet, Metrics
from ..protocol import (
    PROTOCOL_VERSION,
    Continue,
    TaskRecord,
    check_history_length,
    closes_stream,
    ends_blocking_wait,
    finished_task_refusal,
    list_query,
    resolve_continuation,
)
from ..protocol.extensions import ANSWERABLE_BY_EXTENSION, IDEMPOTENT_SEND_EXTENSION
from ..security.principal import Principal
from ..types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    Encoded,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Role,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    now_timestamp,
)
from . import _typed
from ._typed import TYPED
from .agent import Agent, Skill
from .bus import BusEvent, EventBus, Subscription
from .catch_up import GapFilling
from .context import caller_of, encode_caller
from .idempotency import MessageLedger, check_message_id, holds_message
from .push_configs import PushConfigPolicy
from .runner import Runner
from .stores.base import TaskStore, snapshot_reader

__all__ = ["CallContext", "Dispatcher", "TaskStream"]

log = logging.getLogger("peerwire.server")


@dataclass(frozen=True, slots=True)
class CallContext:
    """Who is calling: the owner of the tasks they see (an opaque principal id, ``""`` when
    anonymous), the scopes they were granted, the authenticated ``principal`` (``None`` when
    the binding authenticated nobody), the active extensions and the A2A version (Major.Minor)
    the request was made in (what a push config it registers is notified in). Build it with
    ``of``."""

    owner: str = ""
    extensions: tuple[str, ...] = ()
    scopes: frozenset[str] = frozenset()
    principal: Principal | None = None
    protocol_version: str = PROTOCOL_VERSION
    reached: tuple[str | None, str] | None = None
    """Where an HTTP request reached the app, ``(origin, mount prefix)`` (``origin`` ``None``:
    the app's fixed URL), set only where a card is built for the request (an extended card);
    ``None``: not known (gRPC), the card's default URLs are used."""

    @classmethod
    def of(
        cls,
        principal: Principal | None,
        extensions: tuple[str, ...] = (),
        *,
        protocol_version: str = PROTOCOL_VERSION,
    ) -> CallContext:
        if principal is None:
            if not extensions and protocol_version == PROTOCOL_VERSION:
                return _ANONYMOUS  # frozen: the plain anonymous 1.0 caller is one instance
            return cls(extensions=extensions, protocol_version=protocol_version)
        return cls(
            owner=principal.id,
            extensions=extensions,
            scopes=principal.scopes,
            principal=principal,
            protocol_version=protocol_version,
        )


_ANONYMOUS = CallContext()


class Dispatcher:
    """The eleven operations over one agent, its store, bus and runner."""

    def __init__(
        self,
        agent: Agent,
        store: TaskStore,
        bus: EventBus,
        runner: Runner,
        card: Callable[[], AgentCard],
        *,
        extended_card: Callable[[CallContext], AgentCard | None] | None = None,
        push_configs: PushConfigPolicy | None = None,
        messages: MessageLedger | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        """``metrics``: the agent's instruments (``peerwire.ops.Metrics``), which the
        bindings meter their requests with too; ``None``: no metrics work at all."""
        self.agent = agent
        self.store = store
        self.bus = bus
        self.runner = runner
        self._snapshots = snapshot_reader(store)
        self._card = card
        self._extended_card = extended_card
        # None: push notifications are not offered (the card says so too).
        self.push_configs = push_configs
        # None: sends are not deduplicated by message id (server.idempotency); otherwise
        # only those of callers that activate its extension (``_deduplicates``).
        self.messages = messages
        self.metrics = metrics
        # Every stream that follows a task, until it closes (``end_streams`` ends them); with
        # metrics, their number is ``peerwire_task_subscribers``.
        self._streams: set[TaskStream] = set() if metrics is None else LevelSet(metrics.subscribers)
        # Set once the server is shutting down: new streams are refused, late ones ended.
        self._streams_stopped: str | None = None
        runner.on_drain(self._stop_streams)
        runner.on_unrecorded(self._end_task_streams)
        if isinstance(bus, GapFilling):
            # A bus between processes can lose what the store has: its streams fill from it.
            bus.fill_gaps_from(store)

    # -- SendMessage / SendStreamingMessage -----------------------------------------------------

    async def send_message(
        self, request: SendMessageRequest, call: CallContext = _ANONYMOUS
    ) -> SendMessageResponse | Encoded[SendMessageResponse]:
        """The answer to a send; a finished task's may come ``Encoded`` (see ``get_task``)."""
        history_length = self._check_send(request)
        if self.agent.validators:
            await self._validate(request, call)
        config = request.configuration
        push = None if config is None else await self._inline_push_config(request)
        blocking = config is None or not config.return_immediately
        started = await self._start(request, call, push, streaming=False, blocking=blocking)
        if isinstance(started, Message):
            return SendMessageResponse(message=started)
        if isinstance(started, _Answered):
            return SendMessageResponse(task=started.view)
        task_id, waiting, seen, created = started
        if not isinstance(waiting, Subscription):
            await waiting  # the runner's word that the task settled (``Runner.launch_watched``)
        else:
            with waiting:
                if blocking:
                    events = await _wait_until_settled(waiting, seen)
                    # A new task's answer from the events its subscription got: no reload.
                    answer = _folded(created, seen, events)
                    if answer is not None:
                        return SendMessageResponse(
                            task=answer.snapshot(history_length=history_length)
                        )
        if history_length is not None:
            return SendMessageResponse(
                task=await self._snapshot(task_id, request.tenant, call.owner, history_length)
            )
        task = await self._snapshots.load_encoded_snapshot(
            task_id, tenant=request.tenant, owner=call.owner
        )
        if task is None:
            raise _task_not_found(task_id)
        if isinstance(task, Encoded):
            # The stored encoding of the finished task, spliced in: encoded once per task.
            return Encoded(b'{"task":' + task.json + b"}", SendMessageResponse)
        return SendMessageResponse(task=task)

    async def send_streaming_message(
        self, request: SendMessageRequest, call: CallContext = _ANONYMOUS
    ) -> TaskStream:
        self._check_streaming()
        history_length = self._check_send(request)
        if self.agent.validators:
            await self._validate(request, call)
        push = None if request.configuration is None else await self._inline_push_config(request)
        started = await self._start(request, call, push, streaming=True, blocking=False)
        if isinstance(started, Message):
            return TaskStream(StreamResponse(message=started))
        if isinstance(started, _Answered):
            return TaskStream(StreamResponse(task=started.view))
        task_id, subscription, version, task = started
        if not isinstance(subscription, Subscription):
            # A repeated message whose task is at a closing state: its snapshot is all.
            assert task is not None
            return TaskStream(StreamResponse(task=task))
        if task is None:
            try:
                record = await self._load(task_id, request.tenant, call.owner)
            except BaseException:
                subscription.close()
                raise
            task, version = record.snapshot(history_length=history_length), record.version
        return self._follow(StreamResponse(task=task), subscription, version)

    def _check_send(self, request: SendMessageRequest) -> int | None:
        if request.message.role is not Role.USER:
            raise InvalidParamsError("message.role must be ROLE_USER for a message to an agent")
        check_message_id(request.message)
        config = request.configuration
        if config is None:
            return None
        check_history_length(config.history_length, "configuration.historyLength")
        if config.task_push_notification_config is not None and self.push_configs is None:
            raise PushNotificationNotSupportedError(
                "This agent does not support push notifications "
                "(configuration.taskPushNotificationConfig)"
            )
        return config.history_length

    async def _validate(self, request: SendMessageRequest, call: CallContext) -> None:
        """Run the agent's validators on the message: before anything is created, stored or
        resolved (the inline push config's DNS check comes after)."""
        message, caller = request.message, caller_of(call, request.tenant)
        for validator in self.agent.validators:
            try:
                outcome = validator(message, caller)
                if outcome is not None:
                    if not inspect.isawaitable(outcome):
                        raise TypeError(
                            f"returned {type(outcome).__name__}: a validator returns None to "
                            "accept and raises an A2AError to refuse"
                        )
                    await outcome
            except A2AError:
                raise
            except Exception:
                name = getattr(validator, "__qualname__", repr(validator))
                log.exception("peerwire: the validator %s failed", name)
                raise InternalError("The agent failed to check this message") from None

    async def _inline_push_config(
        self, request: SendMessageRequest
    ) -> TaskPushNotificationConfig | None:
        """The inline push config of a send, checked before anything is created or stored
        (its task id is bound once the task exists)."""
        config = request.configuration
        inline = None if config is None else config.task_push_notification_config
        if inline is None:
            return None
        policy = self._push_policy()
        field = "configuration.taskPushNotificationConfig."
        if inline.task_id and inline.task_id != request.message.task_id:
            raise InvalidParamsError(
                "configuration.taskPushNotificationConfig.taskId must be empty or the "
                "message's taskId: the config is registered for the task this message "
                "creates or continues",
                field_violations=(
                    FieldViolation(field=f"{field}taskId", description="not this task"),
                ),
            )
        policy.check_form(inline, field=field)
        await policy.check_address(inline, field=field)
        return inline

    async def _register_push_config(
        self, config: TaskPushNotificationConfig, task_id: str, call: CallContext
    ) -> TaskPushNotificationConfig:
        """Store an accepted config for ``task_id`` (an id assigned if it had none), within
        the per-task cap; the task's later events are pushed to it."""
        policy = self._push_policy()
        stored = msgspec.structs.replace(config, id=config.id or new_id(), task_id=task_id)
        existing = await self.store.list_push_configs(task_id)
        if len(existing) >= policy.max_per_task and all(c.id != stored.id for c in existing):
            raise InvalidParamsError(
                f"Task {task_id} already has {len(existing)} push notification configs, the "
                f"most this agent accepts; delete one first",
                metadata={"taskId": task_id},
            )
        await self.store.save_push_config(stored, protocol_version=call.protocol_version)
        return stored

    async def _start(
        self,
        request: SendMessageRequest,
        call: CallContext,
        push: TaskPushNotificationConfig | None,
        *,
        streaming: bool,
        blocking: bool,
    ) -> Message | _Answered | tuple[str, Subscription | asyncio.Future[None], int, Task | None]:
        """Create or continue the task and start its handler, with a subscription opened first.

        ``push`` (an accepted inline config) is registered before the handler can emit.
        Returns the reply of a message skill, or ``(task_id, subscription, version, task)``:
        the subscription's events follow ``version``, which ``task`` (for a stream, the task at
        creation; ``None`` for a continued task or a blocking send) is at. A ``blocking`` send
        of a new task whose every event the runner sees gets, instead of a subscription, the
        runner's future that is done once the task settles. An answer from a principal the
        task's skill lets answer (``answerable_by``) is ``_Answered``: what that one may see.
        """
        message = _unmarked(request.message)
        existing = None
        record: TaskRecord | None = None
        if message.task_id:
            record = await self.store.load(message.task_id, tenant=request.tenant, owner=call.owner)
            if record is None:
                answerable = await self._answerable(message.task_id, request.tenant, call)
                if answerable is not None:
                    return await self._answer(
                        *answerable, message, request.tenant, call, push, blocking=blocking
                    )
            existing = None if record is None else (record.context_id, record.state)
            if (
                record is not None
                and self._deduplicates(call)
                and holds_message(record, message.message_id)
            ):
                # This follow-up was taken before (its answer was lost): not appended twice.
                return await self._repeat(record.id, request, call, streaming, blocking)
        decision = resolve_continuation(message, existing)
        if isinstance(decision, Continue):
            assert record is not None
            return await self._continue(decision, message, record, request.tenant, call, push)
        skill = self.agent.route(message)
        if skill.scopes:
            _check_scopes(skill, call)
        self.agent.check_input_modes(skill, message)
        self.agent.check_typed_input(skill, message)
        if skill.replies_with_message:
            # A direct reply creates no task: there is nothing to push about.
            return await self._reply(skill, message, decision.context_id)
        self.runner.check_capacity()
        task_id, context_id = new_id(), decision.context_id or new_id()
        first = msgspec.structs.replace(message, task_id=task_id, context_id=context_id)
        record = TaskRecord(
            task_id,
            context_id,
            TaskStatus(state=TaskState.SUBMITTED, timestamp=now_timestamp()),
            history=[first],
            metadata=request.metadata,
            version=1,
        )
        # Taken before the handler can run: a stream starts from the task as it was created.
        # A blocking send waiting on a subscription folds its events into the whole task as
        # created (``_folded``): its answer needs no reload.
        snapshot = (
            record.snapshot(history_length=_history_length(request))
            if streaming
            else record.snapshot()
            if blocking and not self.runner.sees_every_event
            else None
        )
        version = record.version
        if self.messages is None or not self._deduplicates(call):
            await self.store.create(record, tenant=request.tenant, owner=call.owner)
        else:
            held = await self.messages.create(
                record, tenant=request.tenant, owner=call.owner, message=message
            )
            if held != task_id:
                # The caller sent this message before: the task it made is the answer.
                return await self._repeat(held, request, call, streaming, blocking)
        if self.metrics is not None:
            self.metrics.task_created(skill.id)
        try:
            await self._record_caller(task_id, first, call)
        except Exception as exc:
            # The task exists: its answer is the task, never an error a caller would retry
            # into a duplicate. Unrecorded, a replay of it sees no scopes (fails closed).
            log.warning("peerwire: task %s: its caller is not recorded: %s", task_id, exc)
        if push is not None:
            await self._register_push_config(push, task_id, call)
        if blocking and self.runner.sees_every_event:
            # No subscription to fill and drain: the runner knows when the task settles.
            settled = self.runner.launch_watched(
                skill,
                task_id=task_id,
                context_id=context_id,
                message=first,
                tenant=request.tenant,
                owner=call.owner,
                caller=call,
            )
            return task_id, settled, version, snapshot
        subscription = self.bus.subscribe(task_id)
        try:
            launched = await self.runner.launch(
                skill,
                task_id=task_id,
                context_id=context_id,
                message=first,
                tenant=request.tenant,
                owner=call.owner,
                caller=call,
                created=record,
            )
        except BaseException:
            subscription.close()
            raise
        if not launched and not streaming:
            # Stored but not queued yet (the queue is away; the sweeper queues it): the task
            # exists, so the answer is the task, SUBMITTED, now; never an error a caller
            # would retry into a duplicate.
            subscription.close()
            return task_id, _settled_now(), version, snapshot
        return task_id, subscription, version, snapshot

    def _deduplicates(self, call: CallContext) -> bool:
        """Whether this send is answered idempotently: the server offers it and the caller
        activated the extension. Without activation a repeated messageId is what A2A 1.0
        makes of it (a new task, or another follow-up), as other agents answer it."""
        return self.messages is not None and IDEMPOTENT_SEND_EXTENSION in call.extensions

    async def _repeat(
        self,
        task_id: str,
        request: SendMessageRequest,
        call: CallContext,
        streaming: bool,
        blocking: bool,
    ) -> tuple[str, Subscription | asyncio.Future[None], int, Task | None]:
        """The answer to a message sent again: its task as ``_start`` would hand it on, with
        a subscription opened before it is read, so nothing it does next is missed. A task
        already where a stream closes or a blocking send returns (or a send that asked to
        return at once) gets a done future instead: its snapshot is the answer."""
        subscription = self.bus.subscribe(task_id)
        try:
            record = await self._load(task_id, request.tenant, call.owner)
        except BaseException:
            subscription.close()
            raise
        snapshot = record.snapshot(history_length=_history_length(request)) if streaming else None
        settled = closes_stream(record.state) if streaming else ends_blocking_wait(record.state)
        if settled or not (streaming or blocking):
            subscription.close()
            return task_id, _settled_now(), record.version, snapshot
        return task_id, subscription, record.version, snapshot

    async def _continue(
        self,
        decision: Continue,
        message: Message,
        record: TaskRecord,
        tenant: str,
        call: CallContext,
        push: TaskPushNotificationConfig | None = None,
    ) -> tuple[str, Subscription, int, None]:
        task_id, context_id = decision.task_id, decision.context_id
        # What this message continues from, read before anything can change it: a blocking
        # send waits for the events after it, and an answer is taken only at it.
        seen, state = record.version, record.state
        follow_up = msgspec.structs.replace(message, context_id=context_id)
        history = [m for m in record.history if m.role is Role.USER]
        # Every message is checked, not just the first: scopes granted once (or a task that
        # reached AUTH_REQUIRED) authorize nothing later (A2A spec §7.6, in-task authorization).
        skill = self.agent.route(history[0]) if history else self.agent.route(follow_up)
        _check_scopes(skill, call)
        self.agent.check_input_modes(skill, follow_up)
        if push is not None:
            await self._register_push_config(push, task_id, call)
        # Before the message is recorded: whoever runs the handler on it (a worker, a
        # restart) finds its caller.
        await self._record_caller(task_id, follow_up, call)
        subscription = self.bus.subscribe(task_id)
        try:
            await self.runner.continue_task(
                skill,
                task_id=task_id,
                context_id=context_id,
                follow_up=follow_up,
                earlier=history,
                tenant=tenant,
                owner=call.owner,
                version=seen,
                state=state,
                caller=call,
            )
        except BaseException:
            subscription.close()
            raise
        return task_id, subscription, seen, None

    # -- answers from another principal (Skill.answerable_by) --------------------------------

    async def _answerable(
        self, task_id: str, tenant: str, call: CallContext
    ) -> tuple[TaskRecord, str, Skill] | None:
        """The task, its owner and skill, when ``call`` may answer it for its owner: the task
        is the tenant's, waits for input (INPUT_REQUIRED), and its skill's ``answerable_by``
        scopes were all granted to the caller. ``None`` otherwise, as for a missing task. A
        caller granted none of the agent's answering scopes costs no read at all: its
        not-found takes the owner's path only (docs/SECURITY.md)."""
        if call.principal is None or not any(
            needed <= call.scopes for needed in self.agent.answering_scopes
        ):
            return None
        owner = await self.store.owner_of(task_id, tenant=tenant)
        if owner is None or owner == call.owner:
            return None
        record = await self.store.load(task_id, tenant=tenant, owner=owner)
        if record is None or record.state is not TaskState.INPUT_REQUIRED:
            return None
        first = next((m for m in record.history if m.role is Role.USER), None)
        try:
            skill = None if first is None else self.agent.route(first)
        except A2AError:  # the agent changed since the task was accepted
            return None
        if skill is None or not skill.answerable_by or not set(skill.answerable_by) <= call.scopes:
            return None
        return record, owner, skill

    async def _answer(
        self,
        record: TaskRecord,
        owner: str,
        skill: Skill,
        message: Message,
        tenant: str,
        call: CallContext,
        push: TaskPushNotificationConfig | None,
        *,
        blocking: bool,
    ) -> _Answered:
        """Record ``call``'s answer to the question of ``owner``'s task, marked with who
        answered, and hand it to the handler as the owner's would be. The answerer gets the
        task as it may see it (``_answerer_view``): a blocking send once the task settled
        (terminal or interrupted, as for any blocking send), else at once."""
        if push is not None:
            raise InvalidParamsError(
                "An answer on behalf of the task's owner cannot register a push notification "
                "config: the task's notifications are its owner's",
                field_violations=(
                    FieldViolation(
                        field="configuration.taskPushNotificationConfig",
                        description="not allowed when answering another principal's task",
                    ),
                ),
            )
        decision = resolve_continuation(message, (record.context_id, record.state))
        assert isinstance(decision, Continue)  # INPUT_REQUIRED: a message continues it
        principal = call.principal
        assert principal is not None  # ``_answerable`` found one
        mark = {"principal": principal.id, "scheme": principal.scheme}
        answer = msgspec.structs.replace(
            message,
            context_id=decision.context_id,
            metadata={**(message.metadata or {}), ANSWERABLE_BY_EXTENSION: mark},
        )
        history = [m for m in record.history if m.role is Role.USER]
        await self._record_caller(record.id, answer, call)
        with self.bus.subscribe(record.id) as subscription:
            await self.runner.continue_task(
                skill,
                task_id=record.id,
                context_id=decision.context_id,
                follow_up=answer,
                earlier=history,
                tenant=tenant,
                owner=owner,
                version=record.version,
                state=record.state,
                caller=call,
            )
            if blocking:
                await _wait_until_settled(subscription, record.version)
        log.info(
            "task %s: the question of skill %r answered by %r for its owner %r",
            record.id,
            skill.id,
            principal.id,
            owner,
        )
        now = await self.store.load(record.id, tenant=tenant, owner=owner)
        return _Answered(_answerer_view(record if now is None else now))

    async def _record_caller(self, task_id: str, message: Message, call: CallContext) -> None:
        """Record who sent ``message`` with its task: a handler run again on it (a restart,
        another worker) sees the same ``ctx.caller``. An anonymous caller needs no record."""
        body = encode_caller(call)
        if body is not None:
            await self.store.save_caller(task_id, message.message_id, body)

    async def _reply(self, skill: Skill, message: Message, context_id: str) -> Message:
        """Run a message skill inline: it answers directly and creates no task."""
        assert skill.function is not None
        context_id = context_id or new_id()
        arguments = [
            self.agent.app_state if kind == "state" else _message_argument(kind, message, skill)
            for kind in skill.arguments
        ]
        limit = self.agent.task_timeout
        try:
            with anyio.fail_after(limit) as scope:
                reply = await skill.function(*arguments)
        except A2AError:
            raise  # the skill's own answer: InvalidParamsError, ContentTypeNotSupportedError...
        except Exception as exc:
            if isinstance(exc, TimeoutError) and scope.cancel_called:
                raise InternalError(
                    f"The skill {skill.id!r} did not answer within its time limit of {limit:g} s"
                ) from None
            # Its text may hold anything (paths, secrets): the log gets it, the caller not.
            log.exception("peerwire: the message skill %r failed", skill.id)
            raise InternalError(f"The skill {skill.id!r} failed") from None
        if not isinstance(reply, Message):
            log.error(
                "peerwire: the message skill %r returned %s, not a Message",
                skill.id,
                type(reply).__name__,
            )
            raise InternalError(f"The skill {skill.id!r} did not return a Message")
        return msgspec.structs.replace(
            reply, context_id=reply.context_id or context_id, role=Role.AGENT
        )

    # -- tasks ----------------------------------------------------------------------------------

    async def get_task(
        self, request: GetTaskRequest, call: CallContext = _ANONYMOUS
    ) -> Task | Encoded[Task]:
        """The task; the whole of it may come ``Encoded`` as the store keeps it (a binding
        encodes either form with ``encode``, or decodes it when it needs the object)."""
        _check_task_id(request.id)
        check_history_length(request.history_length)
        task: Task | Encoded[Task] | None
        if request.history_length is not None:
            task = await self._snapshots.load_snapshot(
                request.id,
                tenant=request.tenant,
                owner=call.owner,
                history_length=request.history_length,
            )
        else:
            task = await self._snapshots.load_encoded_snapshot(
                request.id, tenant=request.tenant, owner=call.owner
            )
        if task is None:
            answerable = await self._answerable(request.id, request.tenant, call)
            if answerable is None:
                raise _task_not_found(request.id)
            return _answerer_view(answerable[0])
        return task

    async def list_tasks(
        self, request: ListTasksRequest, call: CallContext = _ANONYMOUS
    ) -> ListTasksResponse:
        query = list_query(request)
        tasks, token, total = await self.store.list_tasks(
            query, tenant=request.tenant, owner=call.owner
        )
        return ListTasksResponse(
            tasks=tasks, next_page_token=token, page_size=query.page_size, total_size=total
        )

    async def cancel_task(self, request: CancelTaskRequest, call: CallContext = _ANONYMOUS) -> Task:
        _check_task_id(request.id)
        record = await self._load(request.id, request.tenant, call.owner)
        await self.runner.cancel(record.id, record.context_id, record.state, tenant=request.tenant)
        record = await self._load(request.id, request.tenant, call.owner)
        if record.state is not TaskState.CANCELED:
            raise TaskNotCancelableError(
                f"Task {record.id} is {record.state.value} and can no longer be canceled",
                metadata={"taskId": record.id},
            )
        return record.snapshot()

    async def subscribe_to_task(
        self, request: SubscribeToTaskRequest, call: CallContext = _ANONYMOUS
    ) -> TaskStream:
        self._check_streaming()
        _check_task_id(request.id)
        subscription = self.bus.subscribe(request.id)
        try:
            record = await self._load(request.id, request.tenant, call.owner)
            if record.terminal:
                raise finished_task_refusal(record.id, record.state)
            snapshot = record.snapshot()
        except BaseException:
            subscription.close()
            raise
        # A task already waiting for input is followed, not closed at once: a second observer
        # subscribes to see it resume (the stream closes at the next closing state).
        return self._follow(StreamResponse(task=snapshot), subscription, record.version)

    # -- ending streams -------------------------------------------------------------------------

    def end_streams(self, cause: str) -> int:
        """End every open stream now, before its task reached a closing state: each sends
        the events it already holds, then ``StreamEndedError`` (its task's id, ``cause``:
        ``StreamEndedError.SHUTDOWN`` or ``.OUTAGE``) as its last event, and closes.
        Returns how many streams were ended.

        The runner's drain calls this (with ``"shutdown"``) as the server's shutdown begins;
        whatever loses the source of the tasks' events (an outage of the bus) calls it too.
        """
        streams = list(self._streams)
        for stream in streams:
            stream.end(cause)
        return len(streams)

    def _end_task_streams(self, task_id: str) -> None:
        """The task's final state was not recorded (an outage): its streams would wait for
        events that are not coming, so they end, ``StreamEndedError`` cause ``outage``."""
        for stream in list(self._streams):
            if stream.task_id == task_id:
                stream.end(StreamEndedError.OUTAGE)

    def _stop_streams(self) -> None:
        """The shutdown began: end the open streams, refuse new ones (``ServerBusyError``)."""
        self._streams_stopped = StreamEndedError.SHUTDOWN
        self.end_streams(StreamEndedError.SHUTDOWN)

    def _follow(
        self, first: StreamResponse, subscription: Subscription, version: int
    ) -> TaskStream:
        stream = TaskStream(first, subscription, version, self._streams)
        if self._streams_stopped is not None:
            # Opened while the shutdown began (its checks passed just before): it ends at once.
            stream.end(self._streams_stopped)
        return stream

    # -- push notification configs ---------------------------------------------------------------
    # A config belongs to its task: the task is loaded with the caller's owner first, so the
    # configs of someone else's task are as missing as the task (A2A spec §3.1.8, §13.1).

    async def create_task_push_notification_config(
        self, request: TaskPushNotificationConfig, call: CallContext = _ANONYMOUS
    ) -> TaskPushNotificationConfig:
        policy = self._push_policy()
        _require_task_id(request.task_id)
        policy.check_form(request)
        record = await self._load(request.task_id, request.tenant, call.owner)
        await policy.check_address(request)
        return await self._register_push_config(request, record.id, call)

    async def get_task_push_notification_config(
        self, request: GetTaskPushNotificationConfigRequest, call: CallContext = _ANONYMOUS
    ) -> TaskPushNotificationConfig:
        self._push_policy()
        _require_task_id(request.task_id)
        record = await self._load(request.task_id, request.tenant, call.owner)
        config = await self.store.get_push_config(record.id, request.id) if request.id else None
        if config is None:
            # There is no "config not found" error: a missing config is TaskNotFoundError.
            raise TaskNotFoundError(
                f"Task {record.id} has no push notification config {request.id!r}",
                metadata={"taskId": record.id, "configId": request.id},
            )
        return config

    async def list_task_push_notification_configs(
        self, request: ListTaskPushNotificationConfigsRequest, call: CallContext = _ANONYMOUS
    ) -> ListTaskPushNotificationConfigsResponse:
        self._push_policy()
        _require_task_id(request.task_id)
        if request.page_size < 0:
            raise InvalidParamsError(
                "pageSize must not be negative",
                field_violations=(FieldViolation(field="pageSize", description="negative"),),
            )
        if request.page_token:
            # Every config comes on the first page (a task has few), so no token was issued.
            raise InvalidParamsError(
                "pageToken is not one this agent issued",
                field_violations=(FieldViolation(field="pageToken", description="unknown"),),
            )
        record = await self._load(request.task_id, request.tenant, call.owner)
        configs = await self.store.list_push_configs(record.id)
        return ListTaskPushNotificationConfigsResponse(configs=configs)

    async def delete_task_push_notification_config(
        self, request: DeleteTaskPushNotificationConfigRequest, call: CallContext = _ANONYMOUS
    ) -> None:
        self._push_policy()
        _require_task_id(request.task_id)
        record = await self._load(request.task_id, request.tenant, call.owner)
        # Idempotent: deleting a config that is not there (any more) succeeds.
        await self.store.delete_push_config(record.id, request.id)

    # -- cards ----------------------------------------------------------------------------------

    def card(self) -> AgentCard:
        return self._card()

    async def get_extended_agent_card(
        self, request: GetExtendedAgentCardRequest, call: CallContext = _ANONYMOUS
    ) -> AgentCard:
        if not self._card().capabilities.extended_agent_card:
            raise UnsupportedOperationError("This agent does not offer an extended agent card")
        if call.principal is None or not call.principal.authenticated:
            raise AuthenticationError(
                "GetExtendedAgentCard requires an authenticated caller (A2A spec §3.1.11)"
            )
        card = self._extended_card(call) if self._extended_card is not None else None
        if card is None:
            raise ExtendedAgentCardNotConfiguredError()
        return card

    # -- helpers --------------------------------------------------------------------------------

    def _push_policy(self) -> PushConfigPolicy:
        if self.push_configs is None or not self._card().capabilities.push_notifications:
            raise _push_unsupported()
        return self.push_configs

    def _check_streaming(self) -> None:
        if not self._card().capabilities.streaming:
            raise UnsupportedOperationError("This agent does not support streaming")
        if self._streams_stopped is not None:
            raise ServerBusyError(
                "The server is shutting down and opens no new streams; retry later"
            )

    async def _load(self, task_id: str, tenant: str, owner: str | None) -> TaskRecord:
        record = await self.store.load(task_id, tenant=tenant, owner=owner)
        if record is None:
            raise _task_not_found(task_id)
        return record

    async def _snapshot(
        self, task_id: str, tenant: str, owner: str, history_length: int | None
    ) -> Task:
        task = await self._snapshots.load_snapshot(
            task_id, tenant=tenant, owner=owner, history_length=history_length
        )
        if task is None:
            raise _task_not_found(task_id)
        return task


@dataclass(frozen=True, slots=True)
class _Answered:
    """A send answered on behalf of a task's owner (``Dispatcher._answer``): its answer."""

    view: Task


def _answerer_view(record: TaskRecord) -> Task:
    """What a principal answering another's task sees of it: its ids and its status, with
    the status message (the question) only while the task waits for input. Never its
    history, artifacts or metadata: they stay the owner's."""
    status = record.status
    if status.state is not TaskState.INPUT_REQUIRED and status.message is not None:
        status = msgspec.structs.replace(status, message=None)
    return Task(id=record.id, context_id=record.context_id, status=status)


def _unmarked(message: Message) -> Message:
    """``message`` without the mark of an answer from another principal, which only the
    server sets (``Dispatcher._answer``): no caller can claim someone else answered."""
    metadata = message.metadata
    if metadata is None or ANSWERABLE_BY_EXTENSION not in metadata:
        return message
    kept = {key: value for key, value in metadata.items() if key != ANSWERABLE_BY_EXTENSION}
    return msgspec.structs.replace(message, metadata=kept or None)


def _task_not_found(task_id: str) -> TaskNotFoundError:
    return TaskNotFoundError(f"Task {task_id} was not found", metadata={"taskId": task_id})


def _check_task_id(task_id: str) -> None:
    # ProtoJSON and protobuf cannot tell an empty id from a missing one: either way the REQUIRED
    # id is absent, a validation error on every binding (REST finds it in its path already).
    if not task_id:
        raise InvalidParamsError(
            "id is required: the id of the task",
            field_violations=(FieldViolation(field="id", description="must not be empty"),),
        )


def _check_scopes(skill: Skill, call: CallContext) -> None:
    missing = [scope for scope in skill.scopes if scope not in call.scopes]
    if missing:
        raise PermissionDeniedError(
            f"The skill {skill.id!r} requires the scope(s) {', '.join(missing)}, which this "
            "caller was not granted",
            metadata={"skill": skill.id, "missingScopes": " ".join(missing)},
        )


def _message_argument(kind: str, message: Message, skill: Skill) -> object:
    if kind == TYPED:
        assert skill.input_type is not None
        return _typed.decode_input(skill.input_type, skill.id, message)
    if kind == "text":
        return message.text
    if kind == "data":
        return message.data if isinstance(message.data, dict) else {}
    return message


def _history_length(request: SendMessageRequest) -> int | None:
    return None if request.configuration is None else request.configuration.history_length


def _require_task_id(task_id: str) -> None:
    if not task_id:
        raise InvalidParamsError(
            "taskId is required: push notification configs belong to a task",
            field_violations=(FieldViolation(field="taskId", description="required"),),
        )


def _push_unsupported() -> PushNotificationNotSupportedError:
    return PushNotificationNotSupportedError("This agent does not support push notifications")


async def _wait_until_settled(
    subscription: Subscription, after_version: int
) -> list[tuple[int, BusEvent]] | None:
    """Wait for the task to become terminal or interrupted after ``after_version`` (a
    blocking SendMessage); an earlier turn's settling is not this one's. Returns the events
    up to the settling one, in order; ``None`` when the subscription closes first (the
    server is shutting down)."""
    events: list[tuple[int, BusEvent]] = []
    while True:
        try:
            batch = await subscription.next_batch(after_version)
        except StopAsyncIteration:
            return None
        assert batch is not None  # no timeout was given
        for item in batch:
            events.append(item)
            if _settles(item[1]):
                return events


def _folded(
    created: Task | None, version: int, events: list[tuple[int, BusEvent]] | None
) -> TaskRecord | None:
    """``created`` (the task at ``version``) with ``events`` applied: the task as stored once
    they are, when they are every version after it; ``None`` where some version is not among
    them (a caller's message takes a version and is not published) or nothing settled."""
    if created is None or events is None:
        return None
    record = TaskRecord.from_task(created, version)
    for at, event in events:
        if at != record.version + 1:
            return None
        try:
            record.apply(event)
        except A2AError:  # not as stored (a bus that reordered): the store's copy answers
            return None
    return record


def _settled_now() -> asyncio.Future[None]:
    """A wait that is over: for a send answered with its task as it stands."""
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    done.set_result(None)
    return done


def _settles(event: BusEvent) -> bool:
    return isinstance(event, TaskStatusUpdateEvent) and ends_blocking_wait(event.status.state)


def _wrap(event: BusEvent) -> StreamResponse:
    if isinstance(event, TaskArtifactUpdateEvent):
        return StreamResponse(artifact_update=event)
    return StreamResponse(status_update=event)


class TaskStream:
    """What a streaming operation returns: the first event, then the task's later events.

    ``next`` returns ``None`` when ``timeout`` passes with no event (time for a keep-alive) and
    raises ``StopAsyncIteration`` at the end: after a closing state, a single message reply, or
    ``close()`` (the client went away). A stream the server ends before a closing state
    (``end``, or its subscription closed by the bus) raises ``StreamEndedError`` once, after
    the events it already held: a binding sends it as the stream's last event. ``next_batch``
    is ``next`` for every event that is ready at once. Iterating with ``async for`` ignores
    the timeouts.
    """

    __slots__ = ("_ending", "_open", "_ready", "_subscription", "_version")

    def __init__(
        self,
        first: StreamResponse,
        subscription: Subscription | None = None,
        version: int = 0,
        open_streams: set[TaskStream] | None = None,
    ) -> None:
        # Events taken from the subscription and not handed out yet (first of all: ``first``).
        self._ready: deque[StreamResponse] = deque((first,))
        self._subscription = subscription
        self._version = version
        # Why the server ends this stream early (``end``); raised once its events are out.
        self._ending: StreamEndedError | None = None
        # The dispatcher's open streams, which this one leaves when it closes.
        self._open = open_streams if subscription is not None else None
        if self._open is not None:
            self._open.add(self)

    async def next(self, timeout: float | None = None) -> StreamResponse | None:
        ready = self._ready
        if not ready:
            batch = await self.next_batch(timeout)
            if batch is None:
                return None
            ready.extend(batch)
        return ready.popleft()

    async def next_batch(self, timeout: float | None = None) -> list[StreamResponse] | None:
        """The events that are ready, at least one, in order; ``None`` and
        ``StopAsyncIteration`` as from ``next``. One wake-up per burst of events, not one
        call per event."""
        ready = self._ready
        if ready:
            batch = list(ready)
            ready.clear()
            return batch
        subscription = self._subscription
        if subscription is None:
            raise StopAsyncIteration
        try:
            items = await subscription.next_batch(self._version, timeout)
        except StreamEndedError:
            self.close()  # its subscription could not fill a gap from the store: an outage
            raise
        except StopAsyncIteration:
            # Closed under this stream, not by it: ended by the server (``end``, or the bus
            # closed at shutdown) before a closing state. The client must hear of it.
            ending = self._ending or StreamEndedError(
                task_id=subscription.task_id, cause=StreamEndedError.SHUTDOWN
            )
            self.close()
            raise ending from None
        if items is None:
            return None
        batch = []
        for _, event in items:
            batch.append(_wrap(event))
            if isinstance(event, TaskStatusUpdateEvent) and closes_stream(event.status.state):
                self.close()
                break  # whatever follows a closing state is not this stream's
        return batch

    @property
    def task_id(self) -> str | None:
        """The task this stream follows (``None``: a single reply, or closed)."""
        subscription = self._subscription
        return None if subscription is None else subscription.task_id

    def end(self, cause: str) -> None:
        """End the stream early, for ``cause``: the events it holds are handed out, then
        ``StreamEndedError`` is raised. No effect on a stream that has closed or is ending."""
        subscription = self._subscription
        if subscription is None or self._ending is not None:
            return
        self._ending = StreamEndedError(task_id=subscription.task_id, cause=cause)
        # Wakes a waiting ``next_batch``; events already queued still come out first.
        subscription.close()

    def close(self) -> None:
        self._ending = None
        if self._subscription is not None:
            self._subscription.close()
            self._subscription = None
        if self._open is not None:
            self._open.discard(self)
            self._open = None

    def __aiter__(self) -> TaskStream:
        return self

    async def __anext__(self) -> StreamResponse:
        item = await self.next()
        assert item is not None
        return item
