"""``Client``: call any A2A agent (1.0, or 0.3), over whichever binding its card offers first."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Mapping, Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import httpx
import msgspec

from ..compat.v03.files import FileBytes, check_file_bytes
from ..compat.v03.version import PROTOCOL_VERSION as V03
from ..compat.v03.version import speaks_v03
from ..errors import (
    A2AConnectionError,
    A2AError,
    A2ATimeoutError,
    CardSignatureError,
    ClientError,
    InvalidAgentCardError,
    InvalidResponseError,
    MethodNotFoundError,
    VersionNotSupportedError,
)
from ..ops import tracing
from ..protocol import PROTOCOL_VERSION, check_version
from ..protocol.extensions import IDEMPOTENT_SEND_EXTENSION
from ..types import (
    AgentCard,
    AgentInterface,
    AuthenticationInfo,
    Binding,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageConfiguration,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from ._card import CardCache, CardCheck, card_url, default_card_cache
from ._card_source import DEFAULT_CARD_TTL, CardSource
from ._follow import Payload, Settling, TaskFollower
from ._inprocess import ASGIApp, StreamingASGITransport
from ._leaving import RemoteCancels
from ._messages import Content, FileLike, build_message
from ._registry import available_bindings, spoken_versions, transport_factory, unavailable_reason
from ._typed_call import call_parts, call_result, result_codec
from .transports._exchange import HTTPExchange, HttpxExchange, PooledExchange
from .transports._limits import DEFAULT_LIMITS, ClientLimits
from .transports.base import CallOptions, Transport, TransportSettings

if TYPE_CHECKING:
    from ..security.signing import Trust
    from .auth import Credentials

__all__ = ["DEFAULT_BINDINGS", "Client", "PushConfig", "TaskListing"]

log = logging.getLogger("peerwire.client")

PushConfig = TaskPushNotificationConfig
"""A webhook for ``send``/``stream``'s ``push=``: ``PushConfig(url=..., token=...,
authentication=...)`` (its task id is filled in by the agent)."""

T = TypeVar("T")

DEFAULT_BINDINGS = (Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC)

# How many tasks' skills a client remembers, so that follow-ups ask for the skill's scopes.
_REMEMBERED_SKILLS = 1024

# Operations sent again after a failed connection (or a moved interface) as they are: they
# change nothing, or the same thing twice. A send goes again only to an agent whose card says
# it deduplicates messages (``IDEMPOTENT_SEND_EXTENSION``); CancelTask never (a second one
# would answer TaskNotCancelable for a task the first did cancel).
_SAFE_TO_REPEAT = frozenset(
    {
        "GetTask",
        "ListTasks",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
        "GetExtendedAgentCard",
    }
)
# How long finding the task of a send that timed out may take (a repeat with returnImmediately).
_LOOKUP_TIMEOUT_S = 5.0


class Client:
    """A connection to one A2A agent. Make one with ``Client.connect``::

        async with Client.connect("https://agent.example") as client:
            task = await client.send("record")

    Every request carries ``A2A-Version: 1.0`` and the chosen interface's ``tenant``. Errors
    are those of ``peerwire.errors``: the agent's A2A errors as their classes, and
    ``A2AConnectionError``, ``A2ATimeoutError`` or ``InvalidResponseError`` for failures on
    the way. A task that failed is a result (a ``Task`` in ``TASK_STATE_FAILED``), not an error.
    """

    def __init__(
        self,
        card: AgentCard,
        interface: AgentInterface,
        transport: Transport,
        *,
        headers: Mapping[str, str] | None = None,
        extensions: Sequence[str] = (),
        owned_http: HTTPExchange | None = None,
        credentials: Credentials | None = None,
        cancel_on_exit: bool = False,
        timeout: float | None = None,
    ) -> None:
        """Use ``Client.connect``; this wires up parts that ``connect`` has already chosen."""
        self._card = card
        self._cancel_on_exit = cancel_on_exit
        self._timeout = timeout
        self._cancels = RemoteCancels(self.cancel_task)
        # Set by ``connect``: where the card is read again from, and how a transport is made.
        self._source: CardSource | None = None
        self._bindings: tuple[str, ...] = ()
        self._settings: TransportSettings | None = None
        # Transports left behind when the card moved the client elsewhere (closed with it).
        self._retired: list[Transport] = []
        self._extended = False  # ``card`` is the extended card (``get_extended_card``)
        self._credentials = credentials
        self._task_skills: OrderedDict[str, str] = OrderedDict()
        self._interface = interface
        self._transport = transport
        self._tenant = interface.tenant
        self._owned_http = owned_http
        self._extensions = tuple(extensions)
        self._options = CallOptions(
            extensions=_activated(self._extensions, card),
            # The version the interface speaks: 1.0, or 0.3 for an agent that still does.
            headers={**(headers or {}), "A2A-Version": _version_of(interface)},
        )
        self._follower = TaskFollower(self._resubscribe_after_drop, self.get_task)
        # The CLIENT spans of its calls, made once tracing is on (``tracing.STATE.tracer``).
        self._spans: tracing.ClientSpans | None = None
        tracing.refresh()

    @classmethod
    def connect(
        cls,
        url: str,
        *,
        transport: Transport | None = None,
        app: ASGIApp | None = None,
        bindings: Sequence[str] = DEFAULT_BINDINGS,
        timeout: float | None = 30.0,
        stream_idle_timeout: float | None = 60.0,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        extensions: Sequence[str] = (),
        card_cache: CardCache | None = None,
        trust: Trust | None = None,
        credentials: Credentials | None = None,
        limits: ClientLimits | None = None,
        cancel_on_exit: bool = False,
        card_ttl: float | None = DEFAULT_CARD_TTL,
        fallback: AgentCard | str | None = None,
        v03_file_bytes: FileBytes = "auto",
    ) -> _Connect:
        """Fetch the agent's card from ``url`` and connect to its first usable interface.

        ``url`` is the agent's base URL (its card is at ``/.well-known/agent-card.json``) or the
        card's own URL. The interface is the first in the card's ``supportedInterfaces`` (their
        order is the agent's preference) whose binding is in ``bindings`` (binding strings such
        as ``Binding.HTTP_JSON``, or the CLI's names ``jsonrpc``, ``rest``, ``grpc``; another
        name raises ``ValueError`` listing the valid ones) and available here,
        at protocol version 1.0 or 0.3: an A2A 0.3 agent (its card, its interfaces) is spoken
        to in 0.3 and answers with the same ``peerwire.types`` (docs/COMPATIBILITY.md).
        ``transport`` skips that choice and uses the one given (the
        client closes it with itself).

        ``app`` calls an ASGI application in this process instead of the network (its lifespan
        must already be running). ``timeout`` bounds each call; a stream may stay silent for
        ``stream_idle_timeout`` seconds (``None``: forever). ``headers`` go with every request,
        the card's too; ``extensions`` are requested in ``A2A-Extensions``.

        ``trust`` verifies the card's signatures (``peerwire.security.Trust``) on the document
        as received, before anything in it is used: an unsigned card (when the trust requires
        signatures) or one whose signature does not verify raises ``CardSignatureError``.
        ``credentials`` (``peerwire.client.auth.Credentials``) are chosen per call by the
        card's security requirements (a skill's, for a message to that skill), so tokens are
        renewed as they expire; a client certificate among them is presented on every TLS
        connection (unless you pass your own ``http_client``, which then needs it).

        Without ``http_client`` the client keeps its own HTTP/1.1 connections (up to 100 per
        origin, kept alive; https verified against the system's trust store). It does not
        speak to proxies: URLs that ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY`` (less
        ``NO_PROXY``) send through one go through httpx instead. An ``http_client`` you pass
        is used for everything, as it is configured, and left open.

        ``limits`` (``peerwire.client.ClientLimits``) bound what a server may send (response
        heads, bodies, SSE events), connecting, and the connections per origin; past one, a
        call fails with ``InvalidResponseError`` naming it.

        ``cancel_on_exit`` (default off; each call may say otherwise) cancels the remote task
        of a ``send``, ``stream`` or ``subscribe`` left before its task settled: cancelled,
        timed out, or its iterator closed early (CancelTask, bounded in time, failures
        logged; docs/CLIENT.md).

        ``card_ttl`` (seconds, default 300; ``None``: never) is how long the card is used
        before it is read again (revalidated through the card cache); a call whose connection
        fails, or whose interface has no A2A route any more, reads it again at once and goes
        to its new first interface, sent again when that is safe (a read, or a send to an
        agent that deduplicates messages). ``fallback`` (an ``AgentCard``, or a URL whose card
        to fetch) stands in when the agent's card cannot be fetched.

        ``v03_file_bytes`` is how file bytes go to and come from an A2A 0.3 agent over
        HTTP+JSON and gRPC, where the 0.3 SDKs disagree (docs/COMPATIBILITY.md): ``"auto"``
        (default) reads either form and sends the content, as the proto means it (@a2a-js,
        peerwire); ``"base64"`` sends (and reads) the base64 text a2a-sdk agents expect;
        ``"content"`` reads and sends the content only. Another value raises
        ``FileBytesSettingError`` (a ``ValueError``).

        Await the result, or use it as ``async with Client.connect(...) as client``.
        """
        return _Connect(
            cls._connect(
                url,
                transport=transport,
                app=app,
                bindings=_binding_strings(bindings),
                timeout=timeout,
                stream_idle_timeout=stream_idle_timeout,
                headers=dict(headers or {}),
                http_client=http_client,
                extensions=tuple(extensions),
                card_cache=card_cache,
                trust=trust,
                credentials=credentials,
                limits=limits if limits is not None else DEFAULT_LIMITS,
                cancel_on_exit=cancel_on_exit,
                card_ttl=card_ttl,
                fallback=fallback,
                v03_file_bytes=check_file_bytes(v03_file_bytes),
            )
        )

    @classmethod
    async def _connect(
        cls,
        url: str,
        *,
        transport: Transport | None,
        app: ASGIApp | None,
        bindings: tuple[str, ...],
        timeout: float | None,
        stream_idle_timeout: float | None,
        headers: dict[str, str],
        http_client: httpx.AsyncClient | None,
        extensions: tuple[str, ...],
        card_cache: CardCache | None,
        trust: Trust | None,
        credentials: Credentials | None,
        limits: ClientLimits,
        cancel_on_exit: bool = False,
        card_ttl: float | None = DEFAULT_CARD_TTL,
        fallback: AgentCard | str | None = None,
        v03_file_bytes: FileBytes = "auto",
    ) -> Client:
        if app is not None and http_client is not None:
            raise ValueError("pass either app= (in-process) or http_client=, not both")
        http: HTTPExchange
        if http_client is not None:
            http = HttpxExchange(http_client, limits=limits)  # the caller's: left open
        elif app is not None:
            asgi = httpx.AsyncClient(transport=StreamingASGITransport(app), timeout=timeout)
            http = HttpxExchange(asgi, owned=True, limits=limits)
        else:
            tls = credentials.ssl_context() if credentials is not None else None
            http = PooledExchange(ssl_context=tls, limits=limits)
        if card_cache is None:
            # Apps in one process may share a URL; their cards must not be confused.
            card_cache = CardCache() if app is not None else default_card_cache
        if card_ttl is not None and card_ttl <= 0:
            raise ValueError(f"card_ttl must be positive seconds or None, got {card_ttl}")
        settings = None
        try:
            source = CardSource(
                cache=card_cache,
                http=http,
                location=card_url(url),
                headers={**headers, "A2A-Version": PROTOCOL_VERSION},
                timeout=timeout,
                check=(lambda at: _signature_check(trust, at)) if trust is not None else None,
                ttl=card_ttl,
                fallback=fallback,
            )
            card, location = await source.read()
            if transport is not None:
                interface = _interface_of(card, transport)
            else:
                settings = TransportSettings(
                    http=http,
                    timeout=timeout,
                    stream_idle_timeout=stream_idle_timeout,
                    in_process=app is not None,
                    client_tls=credentials.client_tls() if credentials is not None else None,
                    v03_file_bytes=v03_file_bytes,
                )
                interface, transport = _choose(card, location, bindings, settings)
        except BaseException:
            await http.aclose()
            raise
        client = cls(
            card,
            interface,
            transport,
            headers=headers,
            extensions=extensions,
            owned_http=http,
            credentials=credentials,
            cancel_on_exit=cancel_on_exit,
            timeout=timeout,
        )
        client._source, client._bindings, client._settings = source, bindings, settings
        return client

    # -- what was chosen ------------------------------------------------------------------

    @property
    def card(self) -> AgentCard:
        """The agent's card (the extended card, once ``get_extended_card`` fetched it)."""
        return self._card

    @property
    def interface(self) -> AgentInterface:
        """The interface every call goes to."""
        return self._interface

    @property
    def deduplicates(self) -> bool:
        """Whether the card says the agent answers a repeated message with the task it made
        (``IDEMPOTENT_SEND_EXTENSION``), which the client then activates on every request:
        only then does it send a message again whose answer it did not get, with the same
        ``messageId``."""
        return _offers_idempotent_send(self._card)

    # -- messages -------------------------------------------------------------------------

    async def send(
        self,
        message: Content,
        *,
        task_id: str | None = None,
        context_id: str | None = None,
        data: Any = None,
        files: Sequence[FileLike] = (),
        skill: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        return_immediately: bool = False,
        history_length: int | None = None,
        accepted_output_modes: Sequence[str] | None = None,
        push: PushConfig | str | None = None,
        cancel_on_exit: bool | None = None,
    ) -> Task | Message:
        """Send a message; returns the agent's ``Task`` or its direct ``Message`` reply.

        By default this waits until the task is terminal or needs something from you
        (INPUT_REQUIRED, AUTH_REQUIRED); ``return_immediately`` returns once it exists.
        Continue a task by passing its ``task_id``. ``message`` is text, a ``Message`` or parts;
        ``data`` adds a data part, ``files`` file parts (local paths are sent inline);
        ``skill`` names the skill of a peerwire agent; ``metadata`` is the message's.

        ``push`` registers a webhook with the task in the same request (a ``PushConfig``, or
        its URL), so even a short task's notifications all reach it.

        On a timeout, ``A2ATimeoutError.task_id`` is the task's: the continued one, or for a
        new message to an agent that deduplicates messages (``deduplicates``), the one the
        client then asks for by sending the message again with ``returnImmediately``. From
        other agents a new task's id would only have been in the answer.

        ``cancel_on_exit`` (default: the client's) cancels the remote task when this call is
        cancelled or times out before the task settled. A new message to an agent that does
        not deduplicate messages but streams then goes as SendStreamingMessage, so the task's
        id is known from the first event; the answer is the settled task, read with GetTask.
        """
        configuration = _configuration(
            return_immediately, history_length, accepted_output_modes, self._push_config(push)
        )
        request = await self._send_request(
            message,
            task_id=task_id,
            context_id=context_id,
            data=data,
            files=files,
            skill=skill,
            metadata=metadata,
            configuration=configuration,
        )
        skill = self._skill_of(skill, task_id)
        cancel = self._cancel_on_exit if cancel_on_exit is None else cancel_on_exit
        known = request.message.task_id or None  # a continued task (``task_id``, or the Message's)
        if (
            cancel
            and known is None
            and not return_immediately
            and not self.deduplicates
            and self._card.capabilities.streaming
        ):
            return await self._send_followed(request, skill, history_length)
        try:
            response = await self._call("SendMessage", request, SendMessageResponse, skill=skill)
        except A2ATimeoutError as exc:
            if exc.task_id is None:
                exc.task_id = known or await self._task_of(request, skill)
            if cancel and exc.task_id is not None:
                await self._cancels.cancel(exc.task_id, "a send timed out")
            raise
        except asyncio.CancelledError:
            if cancel:
                await self._cancels.cancel(
                    known if known is not None else (lambda: self._task_of(request, skill)),
                    "a send was cancelled",
                )
            raise
        payload = response.payload
        if isinstance(payload, Task):
            self._remember_skill(payload.id, skill)
        return payload

    async def call(
        self,
        skill: str,
        value: Any,
        *,
        returns: type[T],
        context_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> T:
        """Call a typed skill: send ``value`` (a pydantic model, a dataclass, a msgspec
        ``Struct``, ``File``, ``bytes``, a scalar, or a ``str``/``dict``/``list``) to ``skill``,
        wait for its task to settle and return its result decoded to ``returns``.

        A bad input is the agent's ``InvalidParamsError`` (its field violations name the
        field); a task that does not complete raises ``TaskNotCompletedError`` (its ``task``
        says why, or what it asks); a result that does not decode to ``returns`` raises
        ``InvalidResponseError`` naming the field.
        """
        codec = result_codec(returns)
        answer = await self.send(
            call_parts(value), skill=skill, context_id=context_id, metadata=metadata
        )
        result: T = call_result(answer, codec, skill, self.interface.url)
        return result

    async def stream(
        self,
        message: Content,
        *,
        task_id: str | None = None,
        context_id: str | None = None,
        data: Any = None,
        files: Sequence[FileLike] = (),
        skill: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        history_length: int | None = None,
        accepted_output_modes: Sequence[str] | None = None,
        resume_for: float = 0.0,
        push: PushConfig | str | None = None,
        cancel_on_exit: bool | None = None,
    ) -> AsyncIterator[Payload]:
        """Send a message and follow what happens: a ``Message`` reply, or the ``Task`` and
        then its ``TaskStatusUpdateEvent``s and ``TaskArtifactUpdateEvent``s until it ends or
        needs input. A dropped connection is followed up with SubscribeToTask transparently.
        Stop early with ``break`` or ``aclose()``; that does not cancel the task, unless
        ``cancel_on_exit`` (default: the client's): then leaving before the task settled
        (terminal or interrupted), by closing the iterator, a cancellation or a timeout,
        cancels it at the agent. ``push`` registers a webhook with the task, as for ``send``.

        A server that ends the stream before the task reached a closing state (it shuts
        down, or lost its event source) says so: ``StreamEndedError`` (a ``ServerBusyError``)
        is raised, its ``task_id`` the task to ``subscribe`` to once the server is back.
        ``resume_for`` seconds (default 0: none) are spent subscribing again instead, with
        backoff, while the server is not back (a restart, another replica behind the URL);
        the iteration goes on as after a dropped connection, or raises that error after all.

        An agent silent for longer than ``stream_idle_timeout``, again when subscribed to
        anew, raises ``A2ATimeoutError``; its ``task_id`` is the task followed (once known).

        Continuing a task (``task_id``), read the stream to its end rather than stopping at
        the first interrupted state: a server may begin it with the task as it was before it
        read your message, still INPUT_REQUIRED (``Settling`` tells which state is the
        answer), or with a status update instead of the task.
        """
        request = await self._send_request(
            message,
            task_id=task_id,
            context_id=context_id,
            data=data,
            files=files,
            skill=skill,
            metadata=metadata,
            configuration=_configuration(
                False, history_length, accepted_output_modes, self._push_config(push)
            ),
        )
        skill = self._skill_of(skill, task_id)
        cancel = self._cancel_on_exit if cancel_on_exit is None else cancel_on_exit
        await self._card_current()
        traced = None
        if tracing.STATE.tracer is not None:  # tracing off: this attribute read is all
            traced = self._traced("SendStreamingMessage", request)
        try:
            options = await self._call_options(skill)
            if traced is not None:
                options = dataclasses.replace(options, headers=traced.headers(options.headers))
            # When the task reached a state at which leaving costs it nothing.
            settling = Settling(
                continuing=request.message.task_id or None, sent_at=datetime.now(UTC)
            )
            events = self._transport.stream("SendStreamingMessage", request, options)
            follower = self._follower if traced is None else self._follower_in(traced)
            followed_events = follower.follow(events, resume_for=resume_for, settling=settling)
            following = task_id
            async with contextlib.aclosing(followed_events) as followed:
                try:
                    async for payload in followed:
                        if traced is not None:
                            traced.counted(payload)
                        if isinstance(payload, Task):
                            following = payload.id
                            self._remember_skill(payload.id, skill)
                        yield payload
                except A2ATimeoutError as exc:
                    _name_task(exc, following)
                    if cancel and not settling.settled:
                        await self._leave(exc.task_id, request, skill, "a stream timed out")
                    raise
                except (GeneratorExit, asyncio.CancelledError):
                    if cancel and not settling.settled:
                        await self._leave(following, request, skill, "a stream was left early")
                    raise
        except Exception as exc:
            if traced is not None:
                traced.failed(exc)
            raise
        finally:
            if traced is not None:
                traced.end()  # one span for the whole stream, however it ended

    async def _send_request(
        self,
        message: Content,
        *,
        configuration: SendMessageConfiguration | None,
        **parts: Any,
    ) -> SendMessageRequest:
        return SendMessageRequest(
            tenant=self._tenant,
            message=await build_message(message, **parts),
            configuration=configuration,
        )

    # -- tasks ----------------------------------------------------------------------------

    async def get_task(self, task_id: str, *, history_length: int | None = None) -> Task:
        """The task as it is now, artifacts assembled (``history_length``: latest messages)."""
        request = GetTaskRequest(tenant=self._tenant, id=task_id, history_length=history_length)
        return await self._call("GetTask", request, Task)

    def list_tasks(
        self,
        *,
        context_id: str | None = None,
        status: TaskState | str | None = None,
        page_size: int | None = None,
        history_length: int | None = None,
        status_timestamp_after: datetime | str | None = None,
        include_artifacts: bool | None = None,
    ) -> TaskListing:
        """Every task visible to you, newest status first: ``await`` it for the list of them
        all (every page fetched), or ``async for task in client.list_tasks()`` to fetch each
        page as you get to it (and stop early at no cost for the rest)::

            tasks = await client.list_tasks(status="input-required")
            async for task in client.list_tasks(context_id=context):
                ...

        ``page_size`` (1-100) is how many each request asks for; filters are by context,
        by one state, and by status time at or after ``status_timestamp_after``. Nothing is
        sent until you await or iterate; each time you do, the walk starts again at the
        first page.
        """
        query = ListTasksRequest(
            tenant=self._tenant,
            context_id=context_id or "",
            status=TaskState(status) if status is not None else TaskState.UNSPECIFIED,
            page_size=page_size,
            history_length=history_length,
            status_timestamp_after=_timestamp(status_timestamp_after),
            include_artifacts=include_artifacts,
        )
        return TaskListing(lambda: self._walk_tasks(query))

    async def _walk_tasks(self, query: ListTasksRequest) -> AsyncIterator[Task]:
        seen: set[str] = set()
        while True:
            page = await self._call("ListTasks", query, ListTasksResponse)
            for task in page.tasks:
                yield task
            token = page.next_page_token
            if not token:
                return
            if token in seen:
                raise InvalidResponseError(
                    f"ListTasks at {self._interface.url} handed out page token {token!r} twice; "
                    "its pages would never end"
                )
            seen.add(token)
            query = msgspec.structs.replace(query, page_token=token)

    async def cancel_task(self, task_id: str, *, metadata: Mapping[str, Any] | None = None) -> Task:
        """Ask the agent to cancel the task; returns it (normally TASK_STATE_CANCELED)."""
        request = CancelTaskRequest(
            tenant=self._tenant, id=task_id, metadata=dict(metadata) if metadata else None
        )
        return await self._call("CancelTask", request, Task)

    async def subscribe(
        self, task_id: str, *, resume_for: float = 0.0, cancel_on_exit: bool | None = None
    ) -> AsyncIterator[Payload]:
        """Follow a running task: its ``Task`` snapshot first, then its updates, until it ends
        or needs input. A dropped connection is resubscribed and the new snapshot merged in as
        updates, so you see the true state without any chunk twice; if the task finished
        meanwhile, the final ``Task`` (from GetTask) ends the iteration.

        Subscribing to a task that has already finished raises ``UnsupportedOperationError``
        (A2A spec §3.1.6): use ``get_task`` for it. A server that ends the stream early raises
        ``StreamEndedError``, or is subscribed to again for ``resume_for`` seconds, as for
        ``stream``; a timeout raises ``A2ATimeoutError`` with this ``task_id``.
        ``cancel_on_exit`` cancels the task when this is left before it settled, as for
        ``stream``.
        """
        cancel = self._cancel_on_exit if cancel_on_exit is None else cancel_on_exit
        settling = Settling()
        await self._card_current()
        traced = None
        follower = self._follower
        if tracing.STATE.tracer is not None:  # tracing off: this attribute read is all
            request = SubscribeToTaskRequest(tenant=self._tenant, id=task_id)
            traced = self._traced("SubscribeToTask", request)
            follower = self._follower_in(traced)
        try:
            async with contextlib.aclosing(
                follower.follow(
                    self._resubscribe(task_id, traced),
                    resume_for=resume_for,
                    subscribed=task_id,
                    settling=settling,
                )
            ) as followed:
                try:
                    async for payload in followed:
                        if traced is not None:
                            traced.counted(payload)
                        yield payload
                except A2ATimeoutError as exc:
                    _name_task(exc, task_id)
                    if cancel and not settling.settled:
                        await self._leave(task_id, None, None, "a subscription timed out")
                    raise
                except (GeneratorExit, asyncio.CancelledError):
                    if cancel and not settling.settled:
                        await self._leave(task_id, None, None, "a subscription was left early")
                    raise
        except Exception as exc:
            if traced is not None:
                traced.failed(exc)
            raise
        finally:
            if traced is not None:
                traced.end()

    def _resubscribe(
        self, task_id: str, traced: tracing.ClientCall | None = None
    ) -> AsyncIterator[StreamResponse]:
        """SubscribeToTask; ``traced``: within that call's span (its trace context sent)."""
        request = SubscribeToTaskRequest(tenant=self._tenant, id=task_id)
        if self._credentials is None:
            options = self._options
            if traced is not None:
                options = dataclasses.replace(options, headers=traced.headers(options.headers))
            return self._transport.stream("SubscribeToTask", request, options)
        return self._authorized_stream("SubscribeToTask", request, traced)

    async def _resubscribe_after_drop(
        self, task_id: str, traced: tracing.ClientCall | None = None
    ) -> AsyncIterator[StreamResponse]:
        """SubscribeToTask after a stream dropped: the card is read again first (revalidated:
        a 304 when nothing changed), so a task whose agent moved meanwhile is followed at
        its new interface."""
        if self._source is not None:
            await self._reload_card(refresh=True)
        events = self._resubscribe(task_id, traced)
        try:
            async for event in events:
                yield event
        finally:
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()

    async def _authorized_stream(
        self, operation: str, request: Any, traced: tracing.ClientCall | None = None
    ) -> AsyncIterator[StreamResponse]:
        """A stream opened with credentials chosen when it opens (a resubscription may come
        long after the first call, with a token renewed meanwhile)."""
        options = await self._call_options()
        if traced is not None:
            options = dataclasses.replace(options, headers=traced.headers(options.headers))
        events = self._transport.stream(operation, request, options)
        try:
            async for event in events:
                yield event
        finally:
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()

    # -- push notification configs --------------------------------------------------------

    async def create_push_config(
        self,
        task_id: str,
        url: str,
        *,
        token: str = "",
        authentication: AuthenticationInfo | None = None,
        config_id: str = "",
    ) -> TaskPushNotificationConfig:
        """Register a webhook for the task; returns the stored config with its ``id``."""
        config = TaskPushNotificationConfig(
            tenant=self._tenant,
            id=config_id,
            task_id=task_id,
            url=url,
            token=token,
            authentication=authentication,
        )
        return await self._call(
            "CreateTaskPushNotificationConfig", config, TaskPushNotificationConfig
        )

    async def get_push_config(self, task_id: str, config_id: str) -> TaskPushNotificationConfig:
        request = GetTaskPushNotificationConfigRequest(
            tenant=self._tenant, task_id=task_id, id=config_id
        )
        return await self._call(
            "GetTaskPushNotificationConfig", request, TaskPushNotificationConfig
        )

    async def list_push_configs(self, task_id: str) -> list[TaskPushNotificationConfig]:
        """Every webhook registered for the task (all pages)."""
        request = ListTaskPushNotificationConfigsRequest(tenant=self._tenant, task_id=task_id)
        configs: list[TaskPushNotificationConfig] = []
        seen: set[str] = set()
        while True:
            page = await self._call(
                "ListTaskPushNotificationConfigs", request, ListTaskPushNotificationConfigsResponse
            )
            configs.extend(page.configs)
            token = page.next_page_token
            if not token:
                return configs
            if token in seen:
                raise InvalidResponseError(
                    f"ListTaskPushNotificationConfigs handed out page token {token!r} twice"
                )
            seen.add(token)
            request = msgspec.structs.replace(request, page_token=token)

    async def delete_push_config(self, task_id: str, config_id: str) -> None:
        request = DeleteTaskPushNotificationConfigRequest(
            tenant=self._tenant, task_id=task_id, id=config_id
        )
        await self._call("DeleteTaskPushNotificationConfig", request, type(None))

    # -- cards ----------------------------------------------------------------------------

    async def get_extended_card(self) -> AgentCard:
        """The card the agent shows to you once authenticated; it replaces ``card``."""
        request = GetExtendedAgentCardRequest(tenant=self._tenant)
        self._card_is(await self._call("GetExtendedAgentCard", request, AgentCard))
        self._extended = True
        return self._card

    def _card_is(self, card: AgentCard) -> None:
        """Take ``card`` as the agent's: the extensions requested follow what it offers."""
        self._card = card
        extensions = _activated(self._extensions, card)
        if extensions != self._options.extensions:
            self._options = dataclasses.replace(self._options, extensions=extensions)

    # -- lifetime -------------------------------------------------------------------------

    async def aclose(self) -> None:
        await self._cancels.wait()  # the cancels of calls left early, each bounded in time
        for retired in self._retired:
            await retired.aclose()
        await self._transport.aclose()
        if self._owned_http is not None:
            await self._owned_http.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _call(
        self, operation: str, request: Any, response_type: type[T], *, skill: str | None = None
    ) -> T:
        if tracing.STATE.tracer is None:  # tracing off: this attribute read is all
            options = await self._call_options(skill)
            return await self._invoke(operation, request, response_type, options)
        traced = self._traced(operation, request)

        async def call() -> T:
            options = await self._call_options(skill)
            options = dataclasses.replace(options, headers=traced.headers(options.headers))
            return await self._invoke(operation, request, response_type, options)

        result: T = await traced.run(call)
        return result

    async def _invoke(
        self, operation: str, request: Any, response_type: type[T], options: CallOptions
    ) -> T:
        """One call on the current interface. The card is read again first once its time to
        live is over; after a failed connection, or an interface with no A2A route, it is
        read again at once (the agent may have moved) and the call sent once more, to the
        interface it names now, when that is safe (``_repeatable``)."""
        source = self._source
        if source is not None and source.stale():  # inline: this runs before every call
            await self._reload_card(refresh=False)
        try:
            return await self._transport.call(operation, request, response_type, options)
        except (A2AConnectionError, MethodNotFoundError) as exc:
            if self._source is None:
                raise
            moved = await self._reload_card(refresh=True)
            if not self._repeatable(operation, request) or (
                isinstance(exc, MethodNotFoundError) and not moved
            ):
                raise
            log.info("peerwire: %s failed (%s); sending it again", operation, exc.message)
        if hasattr(request, "tenant"):
            request = msgspec.structs.replace(request, tenant=self._tenant)
        options = dataclasses.replace(
            options, headers={**options.headers, "A2A-Version": _version_of(self._interface)}
        )
        return await self._transport.call(operation, request, response_type, options)

    async def _card_current(self) -> None:
        """Read the card again if its time to live is over (before a call or a stream)."""
        if self._source is not None and self._source.stale():
            await self._reload_card(refresh=False)

    def _repeatable(self, operation: str, request: Any) -> bool:
        """Whether sending ``request`` again cannot do twice what it asks: it only reads, or
        it is a message to an agent that deduplicates messages (same ``messageId``)."""
        if operation in _SAFE_TO_REPEAT:
            return True
        if operation == "SendMessage":
            return self.deduplicates
        if operation == "CreateTaskPushNotificationConfig":
            return bool(request.id)  # saved under its own id: the same config again
        return False

    async def _reload_card(self, *, refresh: bool) -> bool:
        """Read the card again; move to its first usable interface if that is another one.
        Returns whether the client moved. A card that cannot be read leaves things as they
        are (the call's own error says what went wrong)."""
        source = self._source
        assert source is not None
        try:
            card, location = await source.read(refresh=refresh)
        except ClientError as exc:
            log.warning("peerwire: reading the agent card again failed: %s", exc.message)
            return False
        if not self._extended:
            self._card_is(card)  # an extended card stays (it is what this caller may see)
        if self._settings is None:
            return False  # the caller chose the transport: it stays
        try:
            interface, transport = _choose(card, location, self._bindings, self._settings)
        except InvalidAgentCardError as exc:
            log.warning(
                "peerwire: the agent card changed to one without a usable interface: %s", exc
            )
            return False
        if interface == self._interface:
            await transport.aclose()
            return False
        log.info(
            "peerwire: the agent moved from %s to %s (%s)",
            self._interface.url,
            interface.url,
            interface.protocol_binding,
        )
        # Streams still open on the old transport go on there; it closes with the client.
        self._retired.append(self._transport)
        self._transport, self._interface, self._tenant = transport, interface, interface.tenant
        self._options = dataclasses.replace(
            self._options, headers={**self._options.headers, "A2A-Version": _version_of(interface)}
        )
        self._spans = None
        return True

    # -- leaving calls early --------------------------------------------------------------

    async def _task_of(self, request: SendMessageRequest, skill: str | None) -> str | None:
        """The task a send created, for an agent that deduplicates messages: the same message
        again with ``returnImmediately`` answers with it at once. ``None`` for other agents
        (a second send would open a second task) and when that fails too."""
        if not self.deduplicates:
            return None
        config = request.configuration or SendMessageConfiguration()
        again = msgspec.structs.replace(
            request, configuration=msgspec.structs.replace(config, return_immediately=True)
        )
        try:
            with anyio.fail_after(_LOOKUP_TIMEOUT_S):
                answer = await self._call("SendMessage", again, SendMessageResponse, skill=skill)
        except (ClientError, A2AError, TimeoutError) as exc:
            log.warning("peerwire: asking the agent which task a message made failed: %s", exc)
            return None
        return answer.task.id if answer.task is not None else None

    async def _leave(
        self,
        task_id: str | None,
        request: SendMessageRequest | None,
        skill: str | None,
        why: str,
    ) -> None:
        """Cancel the remote task of a call left early (``cancel_on_exit``): the one known,
        or the one the send made (``_task_of``)."""
        if task_id is not None:
            await self._cancels.cancel(task_id, why)
        elif request is not None:
            await self._cancels.cancel(lambda: self._task_of(request, skill), why)

    async def _send_followed(
        self, request: SendMessageRequest, skill: str | None, history_length: int | None
    ) -> Task | Message:
        """A blocking send made as a stream, so the task's id is known from its first event
        and a cancel can reach it (``cancel_on_exit`` with an agent that does not
        deduplicate). Ends as the send would: the task as it settled, per GetTask."""
        task_id: str | None = None
        events = self._stream_for_send(request, skill)
        try:
            with anyio.fail_after(self._timeout) if self._timeout else contextlib.nullcontext():
                async with contextlib.aclosing(events) as followed:
                    async for payload in followed:
                        if isinstance(payload, Message):
                            return payload
                        if isinstance(payload, Task):
                            task_id = payload.id
        except TimeoutError as exc:
            if isinstance(exc, A2ATimeoutError):
                raise
            raise A2ATimeoutError(
                f"SendMessage to {self._interface.url} got no settled task within "
                f"{self._timeout:g} s",
                url=self._interface.url,
                task_id=task_id,
            ) from None
        if task_id is None:
            raise InvalidResponseError(
                f"SendStreamingMessage to {self._interface.url} ended without a task",
                url=self._interface.url,
            )
        return await self.get_task(task_id, history_length=history_length)

    def _stream_for_send(
        self, request: SendMessageRequest, skill: str | None
    ) -> AsyncGenerator[Payload, None]:
        """``stream``'s following of a request already built, cancelling on exit."""
        message = request.message
        configuration = request.configuration
        return self.stream(  # type: ignore[return-value]  # an async generator function
            message,
            history_length=None if configuration is None else configuration.history_length,
            accepted_output_modes=(
                None if configuration is None else configuration.accepted_output_modes or None
            ),
            push=None if configuration is None else configuration.task_push_notification_config,
            skill=skill,
            cancel_on_exit=True,
        )

    def _push_config(self, push: PushConfig | str | None) -> TaskPushNotificationConfig | None:
        if push is None:
            return None
        if isinstance(push, str):
            return TaskPushNotificationConfig(tenant=self._tenant, url=push)
        return msgspec.structs.replace(push, tenant=push.tenant or self._tenant)

    # -- tracing --------------------------------------------------------------------------

    def _traced(self, operation: str, request: Any) -> tracing.ClientCall:
        """A CLIENT span for one call (only while tracing is on)."""
        spans = self._spans
        if spans is None:
            interface = self._interface
            spans = self._spans = tracing.ClientSpans(
                binding=interface.protocol_binding,
                version=_version_of(interface),
                url=interface.url,
                card=self._card,
            )
        return spans.start(operation, request)

    def _follower_in(self, traced: tracing.ClientCall) -> TaskFollower:
        """A follower like the client's whose resubscriptions go within ``traced``."""
        own = self._follower
        return TaskFollower(
            lambda task_id: self._resubscribe_after_drop(task_id, traced),
            self.get_task,
            attempts=own.attempts,
            backoff=own.backoff,
            max_backoff=own.max_backoff,
        )

    # -- credentials ----------------------------------------------------------------------

    async def _call_options(self, skill: str | None = None) -> CallOptions:
        """The options of one call: the credentials the card asks for (a skill's, when the
        call is a message to it) are chosen per call, so renewed tokens are picked up."""
        if self._credentials is None:
            return self._options
        auth = await self._credentials.for_card(self._card, skill=skill)
        if not auth.headers and not auth.query:
            return self._options
        return dataclasses.replace(
            self._options,
            headers={**self._options.headers, **auth.headers},
            query=auth.query,
        )

    def _skill_of(self, skill: str | None, task_id: str | None) -> str | None:
        """The skill a message goes to: named, or the one its task was started with (the
        agent checks that skill's scopes on every follow-up)."""
        if skill is None and task_id is not None:
            return self._task_skills.get(task_id)
        return skill

    def _remember_skill(self, task_id: str, skill: str | None) -> None:
        if skill is None or self._credentials is None:
            return
        self._task_skills[task_id] = skill
        self._task_skills.move_to_end(task_id)
        while len(self._task_skills) > _REMEMBERED_SKILLS:
            self._task_skills.popitem(last=False)


class TaskListing:
    """What ``Client.list_tasks`` returns: ``await`` it for every task in one list, or
    iterate it with ``async for`` to fetch page by page. Each await or iteration walks the
    pages from the first."""

    __slots__ = ("_walk",)

    def __init__(self, walk: Callable[[], AsyncIterator[Task]]) -> None:
        self._walk = walk

    def __aiter__(self) -> AsyncIterator[Task]:
        return self._walk()

    def __await__(self) -> Generator[Any, None, list[Task]]:
        return self._all().__await__()

    async def _all(self) -> list[Task]:
        return [task async for task in self._walk()]


class _Connect:
    """What ``Client.connect`` returns: await it, or enter it with ``async with``."""

    def __init__(self, connecting: Any) -> None:
        self._connecting = connecting
        self._client: Client | None = None

    def __await__(self) -> Generator[Any, None, Client]:
        return self._connecting.__await__()  # type: ignore[no-any-return]

    async def __aenter__(self) -> Client:
        self._client = await self._connecting
        return self._client

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._client is not None:
            await self._client.aclose()


def _name_task(exc: A2ATimeoutError, task_id: str | None) -> None:
    """Say which task a call that timed out was following, so the caller can follow it on."""
    if exc.task_id is None:
        exc.task_id = task_id


def _signature_check(trust: Trust, url: str) -> CardCheck:
    """Verifies the card document as received with ``trust`` (the "security" extra)."""
    from ..security.signing import verify_card_async

    async def check(content: bytes) -> None:
        try:
            document = json.loads(content)
        except ValueError:
            raise InvalidAgentCardError(
                f"The agent card at {url} is not JSON, so its signature cannot be checked",
                url=url,
            ) from None
        try:
            await verify_card_async(document, trust)
        except CardSignatureError as exc:
            raise CardSignatureError(f"{exc.message} (agent card at {url})", url=url) from None

    return check


def _binding_strings(bindings: Sequence[str]) -> tuple[str, ...]:
    """``bindings`` as the card's binding strings: the CLI's names (``rest``) are taken too, and
    a binding registered with ``register_transport`` as it is."""
    if isinstance(bindings, str):
        raise TypeError(f"bindings must be a sequence of names, not the string {bindings!r}")
    custom = {b for v in spoken_versions() for b in available_bindings(v)}
    return tuple(name if name in custom else Binding.named(name) for name in bindings)


def _choose(
    card: AgentCard, location: str, bindings: tuple[str, ...], settings: TransportSettings
) -> tuple[AgentInterface, Transport]:
    """The first interface of the card this client can use (A2A spec §8: order is normative)."""
    for interface in card.supported_interfaces:
        if interface.protocol_binding not in bindings or not _speaks(interface.protocol_version):
            continue
        factory = transport_factory(interface.protocol_binding, _version_of(interface))
        transport = factory(interface, settings) if factory is not None else None
        if transport is not None:
            return interface, transport
    offered = ", ".join(
        f"{i.protocol_binding} {i.protocol_version or '(no version)'} at {i.url}"
        for i in card.supported_interfaces
    )
    versions = spoken_versions()
    usable = [f"{b} {v}" for b in bindings for v in versions if transport_factory(b, v) is not None]
    why = [
        f"{b} {v}: {reason}"
        for b in bindings
        for v in versions
        if (reason := unavailable_reason(b, v))
    ]
    message = (
        f"No interface of the agent card at {location} can be used. It offers: "
        f"{offered or 'nothing'}; this client speaks {', '.join(usable) or 'no binding'}"
    )
    if settings.in_process:
        message += " in process"
    if why:
        message += " (unavailable: " + "; ".join(why) + ")"
    raise InvalidAgentCardError(message, url=location)


def _speaks(version: str) -> bool:
    if speaks_v03(version):
        return True
    try:
        check_version(version)
    except VersionNotSupportedError:
        return False
    return True


def _offers_idempotent_send(card: AgentCard) -> bool:
    return any(e.uri == IDEMPOTENT_SEND_EXTENSION for e in card.capabilities.extensions)


def _activated(requested: tuple[str, ...], card: AgentCard) -> tuple[str, ...]:
    """The extensions a call requests: the caller's, and idempotent sends when the card
    offers them (the agent applies them only to a caller that activates them)."""
    if IDEMPOTENT_SEND_EXTENSION in requested or not _offers_idempotent_send(card):
        return requested
    return (*requested, IDEMPOTENT_SEND_EXTENSION)


def _version_of(interface: AgentInterface) -> str:
    """The Major.Minor to speak on ``interface``: 0.3 for a 0.3 one, else 1.0."""
    return V03 if speaks_v03(interface.protocol_version) else PROTOCOL_VERSION


def _interface_of(card: AgentCard, transport: Transport) -> AgentInterface:
    """The card's entry for a transport chosen by the caller, for its tenant."""
    # A transport that speaks another version than 1.0 says so (``protocol_version``).
    version = getattr(transport, "protocol_version", PROTOCOL_VERSION)
    tenant = ""
    for interface in card.supported_interfaces:
        if (interface.protocol_binding, interface.url) == (transport.binding, transport.url):
            if speaks_v03(interface.protocol_version) == speaks_v03(version):
                return interface
            tenant = interface.tenant
    return AgentInterface(
        url=transport.url,
        protocol_binding=transport.binding,
        tenant=tenant,
        protocol_version=version,
    )


def _configuration(
    return_immediately: bool,
    history_length: int | None,
    accepted_output_modes: Sequence[str] | None,
    push: TaskPushNotificationConfig | None = None,
) -> SendMessageConfiguration | None:
    if (
        not return_immediately
        and history_length is None
        and accepted_output_modes is None
        and push is None
    ):
        return None
    return SendMessageConfiguration(
        accepted_output_modes=list(accepted_output_modes or ()),
        history_length=history_length,
        return_immediately=return_immediately,
        task_push_notification_config=push,
    )


def _timestamp(value: datetime | str | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if value.tzinfo is None:
        raise ValueError("status_timestamp_after needs a time zone (e.g. datetime.now(UTC))")
    moment = value.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
