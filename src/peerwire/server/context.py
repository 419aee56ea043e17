"""``TaskContext``: how a handler moves its task along and talks to the caller.

Every method turns into one event that the state machine checks before it is stored and
published; an illegal move raises ``IllegalTransitionError`` in the handler and changes nothing.

``ask`` and replay: ``await ctx.ask(question)`` moves the task to INPUT_REQUIRED and returns
the caller's next message on the same task. If the process holding the suspended handler is
gone (a restart, or the follow-up reached another worker), the follow-up runs the handler again
from the start, and ``ask`` first returns the answers already recorded in the task's history, in
order, before waiting for new ones. A handler that uses ``ask`` must therefore be replay-safe:
whatever it does before an ``ask`` may happen again. Calls to other agents made with
``ctx.delegate`` are (docs/DELEGATION.md): recorded by their ``key``, a replay gets them back
instead of sending them again. Who sent each message is recorded with the task when it is
accepted (``encode_caller``, ``TaskStore.save_caller``), so a replay sees the same
``ctx.caller`` as the first run did; an artifact added without an ``artifact_id`` gets one
derived from the task and the handler's step (``_ids.step_id``), so a replay replaces it
instead of adding it again.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

import msgspec

from .._ids import new_id, step_id
from ..delegation import Call, Delegation, Delegations, Follow, OnFailure, Outcome, Undo
from ..errors import InvalidParamsError
from ..protocol import TERMINAL
from ..security.principal import Principal
from ..types import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    now_timestamp,
)

__all__ = [
    "HISTORY_DEFAULT_LIMIT",
    "HISTORY_MAX_LIMIT",
    "Caller",
    "CallerSource",
    "TaskContext",
    "Turn",
    "decode_caller",
    "encode_caller",
]

HISTORY_DEFAULT_LIMIT = 50
"""``TaskContext.history``: how many prior turns it returns unless told."""
HISTORY_MAX_LIMIT = 1000
"""``TaskContext.history``: the most prior turns one call may ask for."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One prior turn of a conversation: a message of a task that shares the context, or an
    artifact it produced (``artifact_id`` set, ``role`` agent)."""

    task_id: str
    role: Role
    parts: list[Part]
    message_id: str = ""
    artifact_id: str = ""


def _turns_of(task: Task) -> list[Turn]:
    turns = [Turn(task.id, m.role, list(m.parts), message_id=m.message_id) for m in task.history]
    turns.extend(
        Turn(task.id, Role.AGENT, list(a.parts), artifact_id=a.artifact_id) for a in task.artifacts
    )
    return turns


log = logging.getLogger("peerwire.server")


@dataclass(frozen=True, slots=True)
class Caller:
    """Who sent the message a handler is working on (``TaskContext.caller``).

    Only the task's owner can send its messages, so ``principal.id`` is the task's
    ``owner`` and ``tenant`` its tenant (an answer from another principal a skill lets answer,
    ``Agent.skill(answerable_by=...)``, is the exception); what may change from one message to
    the next is the credential: its ``scopes``, the principal's ``scheme`` and ``claims``, the
    ``extensions`` the request activated.
    """

    principal: Principal
    """The authenticated principal (``Principal(id="")`` when the agent requires no
    authentication)."""
    scopes: frozenset[str]
    """The scopes the request was granted (what the skill's ``scopes=`` were checked against)."""
    tenant: str
    extensions: tuple[str, ...] = ()
    """The extensions the request activated (``A2A-Extensions``)."""
    recorded: bool = False
    """True when the message did not reach this process with its credential: an answer
    replayed from the task's history (``ask`` after a restart) or a message handed over by
    the work queue. Then the principal, scopes and extensions are those recorded with the
    task when the message was accepted (never the credential itself); where nothing was
    recorded (an anonymous caller, a task stored before schema version 7) only the id and
    tenant are known: ``scopes`` is empty, so a check of scopes fails closed."""

    @property
    def id(self) -> str:
        """The principal's id: the owner of the task (``""``: anonymous)."""
        return self.principal.id


class _RecordedCaller(msgspec.Struct, omit_defaults=True, forbid_unknown_fields=False):
    """A caller as recorded with its task (``TaskStore.save_caller``): what ``Caller`` holds
    but the tenant (the task's own)."""

    id: str
    scheme: str = ""
    scopes: list[str] = []
    claims: dict[str, Any] = {}
    granted: list[str] = []
    extensions: list[str] = []


_CALLER_ENCODER = msgspec.json.Encoder(enc_hook=str)  # a claim of another type: its text
_CALLER_DECODER = msgspec.json.Decoder(_RecordedCaller)


def encode_caller(source: CallerSource) -> bytes | None:
    """What to record of the caller of an accepted message, or ``None`` when there is nothing
    beyond the task's owner to record (an anonymous caller that activated no extension: a
    replay knows as much without a record)."""
    principal = source.principal
    if principal is None and not source.extensions and not source.scopes:
        return None
    if principal is None:
        principal = Principal(id=source.owner)
    return _CALLER_ENCODER.encode(
        _RecordedCaller(
            id=principal.id,
            scheme=principal.scheme,
            scopes=sorted(principal.scopes),
            claims=dict(principal.claims),
            granted=sorted(source.scopes),
            extensions=list(source.extensions),
        )
    )


def decode_caller(body: bytes, tenant: str) -> Caller:
    """The ``Caller`` ``encode_caller`` recorded, for a message of a task of ``tenant``."""
    found = _CALLER_DECODER.decode(body)
    principal = Principal(
        id=found.id,
        scheme=found.scheme,
        scopes=frozenset(found.scopes),
        claims=MappingProxyType(found.claims),
    )
    return Caller(
        principal, frozenset(found.granted), tenant, tuple(found.extensions), recorded=True
    )


class CallerSource(Protocol):
    """What the dispatcher knows of a request's caller (``dispatch.CallContext`` is one): the
    runner hands it over, and ``TaskContext.caller`` makes a ``Caller`` of it when asked."""

    @property
    def owner(self) -> str: ...

    @property
    def scopes(self) -> frozenset[str]: ...

    @property
    def principal(self) -> Principal | None: ...

    @property
    def extensions(self) -> tuple[str, ...]: ...


def caller_of(source: CallerSource, tenant: str) -> Caller:
    """The ``Caller`` of a request the dispatcher received from ``source``."""
    principal = source.principal or Principal(id=source.owner, scopes=source.scopes)
    return Caller(principal, source.scopes, tenant, source.extensions)


class _Driver(Protocol):
    """The runner side of a context."""

    async def emit(
        self, ctx: TaskContext, event: TaskStatusUpdateEvent | TaskArtifactUpdateEvent
    ) -> None: ...

    def queued_message(self, ctx: TaskContext) -> tuple[Message, CallerSource | None] | None: ...

    async def wait_for_message(self, ctx: TaskContext) -> tuple[Message, CallerSource | None]: ...

    def delegations_for(self, ctx: TaskContext) -> Delegations: ...

    async def emit_final(self, ctx: TaskContext, event: TaskStatusUpdateEvent) -> None: ...

    async def recorded_callers(self, ctx: TaskContext) -> Mapping[str, bytes]: ...

    def app_state(self) -> Any: ...
    async def context_tasks(self, ctx: TaskContext, cursor: str) -> tuple[list[Task], str]: ...


PartsLike = str | dict[str, Any] | list[Any] | Part | Sequence[Part]


class TaskContext:
    """The handler's view of its task. Created by the runner, one per handler run."""

    def __init__(
        self,
        driver: _Driver,
        *,
        task_id: str,
        context_id: str,
        message: Message,
        skill_id: str,
        tenant: str = "",
        owner: str = "",
        state: TaskState = TaskState.SUBMITTED,
        recorded_answers: Sequence[Message] = (),
        latest_message: Message | None = None,
        caller: CallerSource | None = None,
        delegations: Delegations | None = None,
        known_callers: dict[str, Caller] | None = None,
    ) -> None:
        """``caller`` sent ``latest_message`` (``None``: not known here, see ``Caller``);
        ``known_callers``: the recorded callers already at hand, by message id (``None``:
        read from the store when a message comes without its caller).
        ``delegations``: the task's, given when it may have some already (a handler run
        again after a restart or a question), so that its end settles them."""
        self._driver = driver
        # The task's delegations once the handler used them (None: it never did, and its
        # final state is written at no extra cost).
        self._delegations = delegations
        self.task_id = task_id
        self.context_id = context_id
        self.message = message
        """The message that started the task (on a replay too)."""
        self.latest_message = latest_message or message
        """The newest message from the caller on this task."""
        self.skill_id = skill_id
        self.tenant = tenant
        self.owner = owner
        self.state = state
        self._recorded = list(recorded_answers)
        self._latest_source = caller
        # Replaying, the handler starts again at the first message, whose caller is not known
        # here; the latest message's (the last recorded answer) comes with the last answer.
        self._source = None if self._recorded else caller
        # The message being handled (its recorded caller applies when its source is unknown).
        self._current = message.message_id
        # The callers recorded with the task, by message id (``recall``); None: not read.
        self._callers: dict[str, Caller] | None = known_callers
        self._caller: Caller | None = None
        # Artifacts added without an id so far: the next one's step (``step_id``).
        self._artifact_steps = 0

    @property
    def app_state(self) -> Any:
        """What the agent's lifespan yielded (``Agent(lifespan=...)``); a skill may take it
        by a parameter annotated with its type instead. ``AppStateUnavailableError`` when
        the agent has no lifespan."""
        return self._driver.app_state()

    @property
    def caller(self) -> Caller:
        """Who sent the message being handled: the first message's caller until ``ask``
        returns, then the one who answered. Check scopes here for what a skill does on a
        follow-up: the dispatcher checked the skill's own ``scopes=`` on every message."""
        caller = self._caller
        if caller is None:
            caller = self._caller = self._caller_of(self._source)
        return caller

    def _caller_of(self, source: CallerSource | None) -> Caller:
        if source is not None:
            return caller_of(source, self.tenant)
        recorded = None if self._callers is None else self._callers.get(self._current)
        if recorded is not None:
            return recorded
        return Caller(Principal(id=self.owner), frozenset(), self.tenant, recorded=True)

    @property
    def needs_recorded_callers(self) -> bool:
        """Whether the message being handled came without its caller (a replay, a job from
        the work queue) and the recorded callers are not at hand."""
        return self._source is None and self._callers is None

    async def recall(self) -> None:
        """Read the callers recorded with the task (the runner does before the handler runs
        again, and ``ask`` for an answer handed over without its caller). A store that cannot
        answer now leaves them unknown: ``caller`` then fails closed (no scopes)."""
        try:
            found = await self._driver.recorded_callers(self)
        except Exception as exc:  # the store away: the handler runs, its scopes fail closed
            log.warning("task %s: the recorded callers could not be read: %s", self.task_id, exc)
            return
        self._callers = {
            message_id: decode_caller(body, self.tenant) for message_id, body in found.items()
        }
        self._caller = None

    async def history(self, *, limit: int = HISTORY_DEFAULT_LIMIT) -> list[Turn]:
        """The prior turns of this conversation, oldest first: the messages, then the
        artifacts, of the other tasks of the owner (and tenant) that share this
        ``context_id``, tasks ordered by their latest status update; at most the newest
        ``limit`` turns (1 to ``HISTORY_MAX_LIMIT``). Read from the task store, so it holds
        across restarts and replicas; another principal reusing the ``context_id`` shares
        none of them. The current task's own messages are ``message``/``latest_message``."""
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise InvalidParamsError(f"history limit must be an int, got {type(limit).__name__}")
        if not 1 <= limit <= HISTORY_MAX_LIMIT:
            raise InvalidParamsError(
                f"history limit must be between 1 and {HISTORY_MAX_LIMIT}, got {limit}"
            )
        newest_first: list[list[Turn]] = []
        count, cursor = 0, ""
        while count < limit:
            tasks, cursor = await self._driver.context_tasks(self, cursor)
            for task in tasks:
                if task.id == self.task_id:
                    continue
                turns = _turns_of(task)
                newest_first.append(turns)
                count += len(turns)
            if not cursor:
                break
        ordered = [turn for turns in reversed(newest_first) for turn in turns]
        return ordered[-limit:]

    def _answered_by(self, message: Message, source: CallerSource | None) -> None:
        self._current = message.message_id
        self._source = source
        self._caller = None

    # -- status ---------------------------------------------------------------------------

    async def start_work(self, message: str | Message | None = None) -> None:
        """Move to WORKING (a no-op when already working and there is nothing to say: the
        runner calls it before a skill function runs; ``update`` always says something)."""
        if self.state is TaskState.WORKING and message is None:
            return
        await self._status(TaskState.WORKING, message)

    async def update(self, message: str | Message | None = None) -> None:
        """A WORKING status update, always sent: with ``message``, progress for the caller;
        without, a heartbeat ("still working") that streams, subscribers and webhooks see
        as a status update carrying no message, and that refreshes the task's status
        timestamp."""
        await self._status(TaskState.WORKING, message)

    async def require_input(self, question: str | Message) -> None:
        """Move to INPUT_REQUIRED with a question; the handler may return afterwards."""
        await self._status(TaskState.INPUT_REQUIRED, question)

    async def require_auth(self, explanation: str | Message) -> None:
        """Move to AUTH_REQUIRED, saying what is needed. The state grants nothing by itself."""
        await self._status(TaskState.AUTH_REQUIRED, explanation)

    async def complete(self, message: str | Message | None = None) -> None:
        await self._status(TaskState.COMPLETED, message)

    async def fail(self, reason: str | Message) -> None:
        await self._status(TaskState.FAILED, reason)

    async def reject(self, reason: str | Message) -> None:
        await self._status(TaskState.REJECTED, reason)

    async def ask(self, question: str | Message) -> Message:
        """Ask the caller and wait for the answer (see the module docstring on replay)."""
        if self._recorded:
            answer = self._recorded.pop(0)
            self._answered_by(answer, None if self._recorded else self._latest_source)
            return answer
        # A message that arrived while the handler was busy is the answer: the caller has
        # already said more, so the task does not stop to ask.
        queued = self._driver.queued_message(self)
        if queued is None:
            await self._status(TaskState.INPUT_REQUIRED, question)
            queued = await self._driver.wait_for_message(self)
            # The follow-up put the task back to work (the dispatcher recorded WORKING).
            self.state = TaskState.WORKING
        answer, source = queued
        self.latest_message = answer
        self._answered_by(answer, source)
        if source is None and (self._callers is None or answer.message_id not in self._callers):
            await self.recall()  # handed over by the work queue: its caller is in the store
        return answer

    # -- delegation -------------------------------------------------------------------------

    @property
    def delegations(self) -> Delegations:
        """This task's delegations (``peerwire.delegation.Delegations``; docs/DELEGATION.md):
        its ledger entries, ``compensate()``, ``cancel_open()``."""
        scope = self._delegations
        if scope is None:
            scope = self._delegations = self._driver.delegations_for(self)
        return scope

    async def delegate(
        self,
        agent: str,
        message: str | Message,
        *,
        key: str,
        deadline: float | None = None,
        stall_deadline: float | None = None,
        follow: Follow = "subscribe",
        context_id: str | None = None,
        compensate: Undo | None = None,
    ) -> Delegation:
        """Delegate ``message`` to the agent at ``agent`` (its URL) on behalf of this task.

        Recorded in the ledger before it is sent; ``key`` names the step, unique within the
        task: a handler that runs again gets the recorded delegation back and nothing is sent
        twice. ``compensate`` (an ``Undo``) registers the step's undo before it is sent.
        ``await d.result()`` follows the remote task to its outcome. The delegation is
        canceled at its agent when this task ends first (docs/DELEGATION.md)."""
        return await self.delegations.delegate(
            agent,
            message,
            key=key,
            deadline=deadline,
            stall_deadline=stall_deadline,
            follow=follow,
            context_id=context_id,
            compensate=compensate,
        )

    async def delegate_all(
        self,
        calls: Sequence[Call],
        *,
        deadline: float | None = None,
        on_failure: OnFailure = "cancel_rest",
    ) -> list[Outcome]:
        """Start every ``Call`` at once; their outcomes in order (``Delegations.delegate_all``)."""
        return await self.delegations.delegate_all(calls, deadline=deadline, on_failure=on_failure)

    # -- artifacts --------------------------------------------------------------------------

    async def add_artifact(
        self,
        parts: PartsLike,
        *,
        name: str = "",
        artifact_id: str | None = None,
        description: str = "",
        append: bool = False,
        last_chunk: bool = False,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        """Add an artifact, or with ``append`` a chunk of one; returns the artifact id.

        Without ``artifact_id``, the id is derived from the task and the handler's step (the
        how-many-th artifact without an id this run adds): a handler run again (the replay
        rule) adds it under the same id, which replaces it instead of adding another."""
        if not artifact_id:
            artifact_id = step_id(self.task_id, "artifact", self._artifact_steps)
            self._artifact_steps += 1
        artifact = Artifact(
            artifact_id=artifact_id,
            name=name,
            description=description,
            parts=to_parts(parts),
            metadata=metadata,
        )
        await self._driver.emit(
            self,
            TaskArtifactUpdateEvent(
                task_id=self.task_id,
                context_id=self.context_id,
                artifact=artifact,
                append=append,
                last_chunk=last_chunk,
            ),
        )
        return artifact.artifact_id

    # -- helpers ----------------------------------------------------------------------------

    def agent_message(self, content: str | Message) -> Message:
        """``content`` as a message from the agent on this task."""
        if isinstance(content, Message):
            if content.context_id and content.task_id:
                return content
            # Agent messages carry their context and, on a task, its id.
            return msgspec.structs.replace(
                content,
                context_id=content.context_id or self.context_id,
                task_id=content.task_id or self.task_id,
            )
        return Message(
            message_id=new_id(),
            context_id=self.context_id,
            task_id=self.task_id,
            role=Role.AGENT,
            parts=[Part(text=content)],
        )

    async def _status(self, state: TaskState, message: str | Message | None) -> None:
        status = TaskStatus(
            state=state,
            message=None if message is None else self.agent_message(message),
            timestamp=now_timestamp(),
        )
        event = TaskStatusUpdateEvent(
            task_id=self.task_id, context_id=self.context_id, status=status
        )
        if self._delegations is None or state not in TERMINAL:
            await self._driver.emit(self, event)
        else:
            # Delegations are settled (open ones canceled at their agents, compensations
            # discarded or made due) before the final state is recorded: a caller who sees
            # the task ended sees its delegations settled.
            try:
                await self._driver.emit_final(self, event)
            finally:
                self._delegations = None  # settled: the hub let go of them
        self.state = state


def to_parts(content: PartsLike) -> list[Part]:
    """Parts from the shorthand forms a handler may use."""
    if isinstance(content, str):
        return [Part(text=content)]
    if isinstance(content, Part):
        return [content]
    if isinstance(content, dict):
        return [Part(data=content, media_type="application/json")]
    if isinstance(content, list) and all(isinstance(p, Part) for p in content) and content:
        return list(content)
    if isinstance(content, list):
        return [Part(data=content, media_type="application/json")]
    return list(content)
