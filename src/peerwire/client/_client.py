"""``Client``: call any A2A agent (1.0, or 0.3), over whichever binding its card offers first."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Generator, Mapping, Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
import msgspec

from ..compat.v03.version import PROTOCOL_VERSION as V03
from ..compat.v03.version import speaks_v03
from ..errors import (
    A2ATimeoutError,
    CardSignatureError,
    InvalidAgentCardError,
    InvalidResponseError,
    VersionNotSupportedError,
)
from ..protocol import PROTOCOL_VERSION, check_version
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
from ._follow import Payload, TaskFollower
from ._inprocess import ASGIApp, StreamingASGITransport
from ._messages import Content, FileLike, build_message
from ._registry import spoken_versions, transport_factory, unavailable_reason
from .transports._exchange import HTTPExchange, HttpxExchange, PooledExchange
from .transports._limits import DEFAULT_LIMITS, ClientLimits
from .transports.base import CallOptions, Transport, TransportSettings

if TYPE_CHECKING:
    from ..security.signing import Trust
    from .auth import Credentials

__all__ = ["DEFAULT_BINDINGS", "Client", "TaskListing"]

T = TypeVar("T")

DEFAULT_BINDINGS = (Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC)

# How many tasks' skills a client remembers, so that follow-ups ask for the skill's scopes.
_REMEMBERED_SKILLS = 1024


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
    ) -> None:
        """Use ``Client.connect``; this wires up parts that ``connect`` has already chosen."""
        self._card = card
        self._credentials = credentials
        self._task_skills: OrderedDict[str, str] = OrderedDict()
        self._interface = interface
        self._transport = transport
        self._tenant = interface.tenant
        self._owned_http = owned_http
        self._options = CallOptions(
            extensions=tuple(extensions),
            # The version the interface speaks: 1.0, or 0.3 for an agent that still does.
            headers={**(headers or {}), "A2A-Version": _version_of(interface)},
        )
        self._follower = TaskFollower(self._resubscribe, self.get_task)

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
    ) -> _Connect:
        """Fetch the agent's card from ``url`` and connect to its first usable interface.

        ``url`` is the agent's base URL (its card is at ``/.well-known/agent-card.json``) or the
        card's own URL. The interface is the first in the card's ``supportedInterfaces`` (their
        order is the agent's preference) whose binding is in ``bindings`` and available here,
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

        Await the result, or use it as ``async with Client.connect(...) as client``.
        """
        return _Connect(
            cls._connect(
                url,
                transport=transport,
                app=app,
                bindings=tuple(bindings),
                timeout=timeout,
                stream_idle_timeout=stream_idle_timeout,
                headers=dict(headers or {}),
                http_client=http_client,
                extensions=tuple(extensions),
                card_cache=card_cache,
                trust=trust,
                credentials=credentials,
                limits=limits if limits is not None else DEFAULT_LIMITS,
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
        try:
            location = card_url(url)
            card = await card_cache.fetch(
                http,
                location,
                headers={**headers, "A2A-Version": PROTOCOL_VERSION},
                timeout=timeout,
                check=_signature_check(trust, location) if trust is not None else None,
            )
            if transport is not None:
                interface = _interface_of(card, transport)
            else:
                settings = TransportSettings(
                    http=http,
                    timeout=timeout,
                    stream_idle_timeout=stream_idle_timeout,
                    in_process=app is not None,
                    client_tls=credentials.client_tls() if credentials is not None else None,
                )
                interface, transport = _choose(card, location, bindings, settings)
        except BaseException:
            await http.aclose()
            raise
        return cls(
            card,
            interface,
            transport,
            headers=headers,
            extensions=extensions,
            owned_http=http,
            credentials=credentials,
        )

    # -- what was chosen ------------------------------------------------------------------

    @property
    def card(self) -> AgentCard:
        """The agent's card (the extended card, once ``get_extended_card`` fetched it)."""
        return self._card

    @property
    def interface(self) -> AgentInterface:
        """The interface every call goes to."""
        return self._interface

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
    ) -> Task | Message:
        """Send a message; returns the agent's ``Task`` or its direct ``Message`` reply.

        By default this waits until the task is terminal or needs something from you
        (INPUT_REQUIRED, AUTH_REQUIRED); ``return_immediately`` returns once it exists.
        Continue a task by passing its ``task_id``. ``message`` is text, a ``Message`` or parts;
        ``data`` adds a data part, ``files`` file parts (local paths are sent inline);
        ``skill`` names the skill of a peerwire agent; ``metadata`` is the message's.

        On a timeout, ``A2ATimeoutError.task_id`` is the continued task's; a new task's id
        would only have been in the answer (``stream`` knows it from the first event).
        """
        request = await self._send_request(
            message,
            task_id=task_id,
            context_id=context_id,
            data=data,
            files=files,
            skill=skill,
            metadata=metadata,
            configuration=_configuration(return_immediately, history_length, accepted_output_modes),
        )
        skill = self._skill_of(skill, task_id)
        try:
            response = await self._call("SendMessage", request, SendMessageResponse, skill=skill)
        except A2ATimeoutError as exc:
            _name_task(exc, task_id)
            raise
        payload = response.payload
        if isinstance(payload, Task):
            self._remember_skill(payload.id, skill)
        return payload

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
    ) -> AsyncIterator[Payload]:
        """Send a message and follow what happens: a ``Message`` reply, or the ``Task`` and
        then its ``TaskStatusUpdateEvent``s and ``TaskArtifactUpdateEvent``s until it ends or
        needs input. A dropped connection is followed up with SubscribeToTask transparently.
        Stop early with ``break`` or ``aclose()``; that does not cancel the task.

        A server that ends the stream before the task reached a closing state (it shuts
        down, or lost its event source) says so: ``StreamEndedError`` (a ``ServerBusyError``)
        is raised, its ``task_id`` the task to ``subscribe`` to once the server is back.
        ``resume_for`` seconds (default 0: none) are spent subscribing again instead, with
        backoff, while the server is not back (a restart, another replica behind the URL);
        the iteration goes on as after a dropped connection, or raises that error after all.

        An agent silent for longer than ``stream_idle_timeout``, again when subscribed to
        anew, raises ``A2ATimeoutError``; its ``task_id`` is the task followed (once known).
        """
        request = await self._send_request(
            message,
            task_id=task_id,
            context_id=context_id,
            data=data,
            files=files,
            skill=skill,
            metadata=metadata,
            configuration=_configuration(False, history_length, accepted_output_modes),
        )
        skill = self._skill_of(skill, task_id)
        options = await self._call_options(skill)
        events = self._transport.stream("SendStreamingMessage", request, options)
        followed_events = self._follower.follow(events, resume_for=resume_for)
        following = task_id
        async with contextlib.aclosing(followed_events) as followed:
            try:
                async for payload in followed:
                    if isinstance(payload, Task):
                        following = payload.id
                        self._remember_skill(payload.id, skill)
                    yield payload
            except A2ATimeoutError as exc:
                _name_task(exc, following)
                raise

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

    async def subscribe(self, task_id: str, *, resume_for: float = 0.0) -> AsyncIterator[Payload]:
        """Follow a running task: its ``Task`` snapshot first, then its updates, until it ends
        or needs input. A dropped connection is resubscribed and the new snapshot merged in as
        updates, so you see the true state without any chunk twice; if the task finished
        meanwhile, the final ``Task`` (from GetTask) ends the iteration.

        Subscribing to a task that has already finished raises ``UnsupportedOperationError``
        (A2A spec §3.1.6): use ``get_task`` for it. A server that ends the stream early raises
        ``StreamEndedError``, or is subscribed to again for ``resume_for`` seconds, as for
        ``stream``; a timeout raises ``A2ATimeoutError`` with this ``task_id``.
        """
        async with contextlib.aclosing(
            self._follower.follow(self._resubscribe(task_id), resume_for=resume_for)
        ) as followed:
            try:
                async for payload in followed:
                    yield payload
            except A2ATimeoutError as exc:
                _name_task(exc, task_id)
                raise

    def _resubscribe(self, task_id: str) -> AsyncIterator[StreamResponse]:
        request = SubscribeToTaskRequest(tenant=self._tenant, id=task_id)
        if self._credentials is None:
            return self._transport.stream("SubscribeToTask", request, self._options)
        return self._authorized_stream("SubscribeToTask", request)

    async def _authorized_stream(
        self, operation: str, request: Any
    ) -> AsyncIterator[StreamResponse]:
        """A stream opened with credentials chosen when it opens (a resubscription may come
        long after the first call, with a token renewed meanwhile)."""
        events = self._transport.stream(operation, request, await self._call_options())
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
        self._card = await self._call("GetExtendedAgentCard", request, AgentCard)
        return self._card

    # -- lifetime -------------------------------------------------------------------------

    async def aclose(self) -> None:
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
        options = await self._call_options(skill)
        return await self._transport.call(operation, request, response_type, options)

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
) -> SendMessageConfiguration | None:
    if not return_immediately and history_length is None and accepted_output_modes is None:
        return None
    return SendMessageConfiguration(
        accepted_output_modes=list(accepted_output_modes or ()),
        history_length=history_length,
        return_immediately=return_immediately,
    )


def _timestamp(value: datetime | str | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if value.tzinfo is None:
        raise ValueError("status_timestamp_after needs a time zone (e.g. datetime.now(UTC))")
    moment = value.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
