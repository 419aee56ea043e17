"""What the inspector's backend holds for the page: one agent, its card, the credentials the
user gave, a ``Client`` per binding, the tasks seen (as timelines), the runs (each message
sent, each resubscription) and the wire log. Every change is published as an event for the
page's event stream (``publish``).

Calls that answer at once (GetTask, CancelTask, ListTasks, push configs, the card) are
awaited by the route that asks; a message or a resubscription is a *run*: it goes on in a
background task the session owns (``start_send``, ``start_subscribe``), its progress
published as it happens, so the page sees a stream's events as they arrive. ``drain`` ends
every run and closes every client.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import httpx

from ..client import CardCache, Client, TransportSettings
from ..client.auth import Credentials
from ..errors import PeerwireError
from ..types import (
    AgentCard,
    AgentInterface,
    Binding,
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
    decode,
    to_builtins,
)
from .card_view import CardFetchError, card_location, inspect_card
from .credentials import CredentialStore
from .page_io import InspectorError, Outgoing, Run, binding_of, describe_error
from .selfcheck import run_self_check
from .timeline import TaskTimeline, describe_parts
from .wire import Exchange, RecordingGrpcTransport, RecordingTransport, Redactor, WireLog

__all__ = ["InspectorSession"]

log = logging.getLogger("peerwire.inspect")

MAX_RUNNING = 32  # runs going on at once: a page clicking on and on cannot exhaust the backend
MAX_RUNS = 200  # runs remembered for the page
MAX_TASKS = 500  # task timelines remembered (the oldest go first)
_STATE_NAMES = {state.value.removeprefix("TASK_STATE_"): state for state in TaskState}


class InspectorSession:
    """The backend's state for one page (one user on this machine)."""

    def __init__(self, publish: Callable[[dict[str, Any]], None], *, timeout: float = 30.0) -> None:
        self._publish = publish
        self.timeout = timeout
        self.url = ""
        self.card: AgentCard | None = None
        self.card_view: dict[str, Any] | None = None
        self.pinned_keys: Any = None
        self.credentials = CredentialStore()
        self.redactor = Redactor()
        self.wire = WireLog(self._exchange_changed, self.redactor)
        self.tasks: dict[str, TaskTimeline] = {}
        self.runs: deque[Run] = deque(maxlen=MAX_RUNS)
        self._run_ids = itertools.count(1)
        self._clients: dict[str, Client] = {}
        self._http: dict[str, httpx.AsyncClient] = {}
        self._connecting = asyncio.Lock()
        self._connects = 0  # connects begun: only the last one's card is shown
        self._epoch = 0  # clients closed so far (the agent or the credentials changed)
        self._background: set[asyncio.Task[None]] = set()
        # Token requests (OAuth 2.0 client credentials) are on the wire too, as "auth"; this
        # client lives as long as the session, since the credentials holding it may.
        self._auth_http = httpx.AsyncClient(
            transport=RecordingTransport(self.wire, "auth"), trust_env=False
        )

    # -- publishing -------------------------------------------------------------------------

    def _exchange_changed(self, exchange: Exchange) -> None:
        self._publish({"type": "exchange", "exchange": exchange.to_json()})

    def _task_changed(self, timeline: TaskTimeline) -> None:
        self._publish({"type": "task", "task": timeline.to_json()})

    def _run_changed(self, run: Run) -> None:
        self._publish({"type": "run", "run": run.to_json()})

    def state(self) -> dict[str, Any]:
        """Everything the page shows, for a page that (re)loads."""
        return {
            "url": self.url,
            "card": self.card_view,
            "credentials": self.credentials.summary(),
            "tasks": [t.to_json() for t in self.tasks.values()],
            "runs": [r.to_json() for r in self.runs],
            "exchanges": self.wire.to_json(),
        }

    # -- the agent --------------------------------------------------------------------------

    async def connect(self, url: Any, *, pinned_keys: Any = None) -> dict[str, Any]:
        """Inspect the agent at ``url``: fetch and describe its card. Clients are made anew
        on first use (they may have been for another agent)."""
        if not isinstance(url, str) or not url.strip():
            raise InspectorError("type the agent's URL (e.g. http://127.0.0.1:8000)")
        url = url.strip()
        try:
            card_location(url)
        except ValueError as exc:
            raise InspectorError(str(exc)) from None
        if isinstance(pinned_keys, str):
            pinned_keys = _pasted_keys(pinned_keys)
        async with self._connecting:
            await self._close_clients()
            if self.credentials.follow(url):
                # Typed for another agent: a stranger's card naming its schemes alike must
                # not receive them.
                self._publish({"type": "credentials", "credentials": {}})
            self.url, self.card, self.card_view = url, None, None
            self.pinned_keys = pinned_keys
            self._connects += 1
            this_connect = self._connects
            # A client of its own: new credentials, closing the others, leave it be.
            http = self._new_http("card", certificate=self.credentials.may_go_to(url))
        # Fetched without the lock: a slow or dripping card holds this call only (for
        # ``timeout`` in all), never the page's other calls.
        try:
            view = await inspect_card(http, url, pinned_keys=pinned_keys, timeout=self.timeout)
        except CardFetchError as exc:
            raise InspectorError(str(exc), 502) from None
        finally:
            await _quietly(http.aclose())
        async with self._connecting:
            if this_connect != self._connects:
                raise InspectorError(f"another agent was chosen while {url} answered", 409)
            self._show_card(view)
        return view

    def _show_card(self, view: dict[str, Any]) -> None:
        self.card_view = view
        document = view["document"]
        if not any(p.startswith("not a valid") for p in view["problems"]):
            try:
                self.card = _card_of(document)
            except PeerwireError:
                self.card = None
        if self.card is not None:
            # The headers this card puts API keys in are hidden on the wire, like Authorization.
            self.redactor.set_headers(
                scheme.api_key_security_scheme.name
                for scheme in self.card.security_schemes.values()
                if scheme.api_key_security_scheme is not None
                and scheme.api_key_security_scheme.location == "header"
            )

    def _http_client(self, label: str, *, certificate: bool) -> httpx.AsyncClient:
        """The recording HTTP client of one binding, built with the client certificate
        when the user gave one (``certificate``: and it may go where this one goes)."""
        http = self._http.get(label)
        if http is None:
            http = self._http[label] = self._new_http(label, certificate=certificate)
        return http

    def _new_http(self, label: str, *, certificate: bool) -> httpx.AsyncClient:
        credentials = self.credentials.credentials() if certificate else None
        verify: Any = True
        if credentials is not None and (context := credentials.ssl_context()) is not None:
            verify = context
        # trust_env off: a proxy from the environment would bypass the recording
        # transport, and the page would show nothing of what was sent.
        return httpx.AsyncClient(
            transport=RecordingTransport(self.wire, label, httpx.AsyncHTTPTransport(verify=verify)),
            trust_env=False,
            timeout=self.timeout,
        )

    async def client(self, binding: str) -> Client:
        """The client for ``binding`` (connected on first use)."""
        if not self.url:
            raise InspectorError("connect to an agent first (type its URL)")
        async with self._connecting:
            client = self._clients.get(binding)
            if client is not None:
                return client
            credentials = self._credentials_for(binding)
            http = self._http_client(binding, certificate=credentials is not None)
            transport = self._grpc_transport(http) if binding == Binding.GRPC else None
            epoch = self._epoch
        # Connected without the lock (Client.connect reads the card again): an agent slow to
        # answer holds this call only, never the page's others.
        try:
            client = await Client.connect(
                self.url,
                bindings=(binding,),
                transport=transport,
                http_client=http,
                credentials=credentials,
                card_cache=CardCache(),
                timeout=self.timeout,
                stream_idle_timeout=None,
            )
        except BaseException:
            if transport is not None:
                await transport.aclose()
            raise
        async with self._connecting:
            grpc = binding == Binding.GRPC
            if epoch != self._epoch:
                await _quietly(client.aclose())
                raise InspectorError(
                    "the agent or the credentials changed while connecting: try again", 409
                )
            if credentials is not None and not self.credentials.may_go_to(
                client.interface.url, grpc=grpc
            ):
                # The card the client read names another interface than the one shown.
                await _quietly(client.aclose())
                raise InspectorError(
                    f"the {binding} interface is at {client.interface.url}, not at the agent "
                    "the credentials were given for: they are not sent there"
                )
            existing = self._clients.get(binding)
            if existing is not None:  # another call connected it meanwhile
                await _quietly(client.aclose())
                return existing
            self._clients[binding] = client
            return client

    def _credentials_for(self, binding: str) -> Credentials | None:
        """The credentials, if the card's interface for ``binding`` is at the agent they
        were typed for (never another origin, whatever its schemes are named)."""
        if not self.credentials.may_go_to(self.url):
            return None
        interface = _first(self.card.supported_interfaces, binding) if self.card else None
        grpc = binding == Binding.GRPC
        if interface is not None and not self.credentials.may_go_to(interface.url, grpc=grpc):
            return None
        return self.credentials.credentials()

    def _grpc_transport(self, http: httpx.AsyncClient) -> RecordingGrpcTransport:
        """peerwire's gRPC transport for the card's first gRPC interface, recorded."""
        if self.card is None:
            raise InspectorError("the card could not be read, so its gRPC interface is unknown")
        interface = _first(self.card.supported_interfaces, Binding.GRPC)
        if interface is None:
            raise InspectorError(f"{self.card.name}'s card offers no gRPC interface")
        from ..compat.v03.version import speaks_v03

        try:
            if speaks_v03(interface.protocol_version):
                from ..client.transports.grpc_v03 import create_transport as create_v03

                factory: Any = create_v03
            else:
                from ..client.transports.grpc import create_transport

                factory = create_transport
        except ImportError as exc:
            raise InspectorError(f"gRPC is not installed here (peerwire[grpc]): {exc}") from None
        credentials = self._credentials_for(Binding.GRPC)
        settings = TransportSettings(
            http=http,
            timeout=self.timeout,
            stream_idle_timeout=None,
            client_tls=credentials.client_tls() if credentials is not None else None,
        )
        inner = factory(interface, settings)
        return RecordingGrpcTransport(inner, self.wire)

    async def _close_clients(self) -> None:
        self._epoch += 1  # a client connecting meanwhile is for what was: not kept
        clients, self._clients = self._clients, {}
        https, self._http = self._http, {}
        for client in clients.values():
            await _quietly(client.aclose())
        for http in https.values():
            await _quietly(http.aclose())

    # -- credentials ------------------------------------------------------------------------

    async def set_credential(self, scheme: Any, fields: Any, url: Any = None) -> dict[str, str]:
        """Hold a credential for the agent at ``url`` (default: the one shown); a client
        certificate may be given before its card can be read (the agent may want it)."""
        if not isinstance(scheme, str) or not isinstance(fields, Mapping):
            raise InspectorError("send {scheme, credential: {kind, ...}}")
        if url is not None and not isinstance(url, str):
            raise InspectorError("url must be text: the agent the credential is for")
        from .credentials import CredentialError

        agent_url = (url or "").strip() or self.url
        try:
            self.credentials.set(scheme, fields, agent_url=agent_url, http=self._auth_http)
        except CredentialError as exc:
            raise InspectorError(f"credential for {scheme}: {exc}") from None
        return await self._credentials_changed()

    async def remove_credential(self, scheme: str) -> dict[str, str]:
        self.credentials.remove(scheme)
        return await self._credentials_changed()

    async def _credentials_changed(self) -> dict[str, str]:
        self.redactor.set(self.credentials.secrets())
        async with self._connecting:
            await self._close_clients()  # the next call connects with the new credentials
        return self.credentials.summary()

    # -- tasks ------------------------------------------------------------------------------

    def _timeline(self, task_id: str, binding: str) -> TaskTimeline:
        timeline = self.tasks.get(task_id)
        if timeline is None:
            # Kept with the agent it belongs to: the page groups the tasks per agent, and
            # inspecting another agent later leaves these under their own.
            timeline = self.tasks[task_id] = TaskTimeline(
                task_id,
                binding=binding,
                agent=self.url,
                agent_name=self.card.name if self.card is not None else "",
            )
            while len(self.tasks) > MAX_TASKS:
                del self.tasks[next(iter(self.tasks))]
        timeline.binding = binding
        return timeline

    def _apply(
        self, binding: str, payload: Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent
    ) -> TaskTimeline:
        task_id = payload.id if isinstance(payload, Task) else payload.task_id
        timeline = self._timeline(task_id, binding)
        timeline.apply(payload)
        self._task_changed(timeline)
        return timeline

    async def get_task(self, binding: str, task_id: str) -> dict[str, Any]:
        client = await self.client(binding)
        task = await client.get_task(_task_id(task_id))
        timeline = self._apply(binding, task)
        return {"task": timeline.to_json(), "raw": to_builtins(task)}

    async def cancel_task(self, binding: str, task_id: str) -> dict[str, Any]:
        client = await self.client(binding)
        timeline = self._timeline(_task_id(task_id), binding)
        timeline.note("info", f"cancel asked over {binding}")
        self._task_changed(timeline)
        try:
            task = await client.cancel_task(task_id)
        except PeerwireError as exc:
            timeline.note("error", describe_error(exc))
            self._task_changed(timeline)
            raise
        return {"task": self._apply(binding, task).to_json()}

    async def list_tasks(self, binding: str, query: Mapping[str, str]) -> dict[str, Any]:
        """One page of ListTasks: ``pageSize`` tasks from page ``page`` (1 = newest),
        filtered by ``contextId`` and ``state``. Pages are walked with the agent's own page
        tokens, so page N costs N requests; ``more`` says whether a next page exists."""
        client = await self.client(binding)
        page = _int(query.get("page"), "page", 1, 10_000, 1)
        size = _int(query.get("pageSize"), "pageSize", 1, 100, 20)
        state_name = (query.get("state") or "").strip().upper().removeprefix("TASK_STATE_")
        state = None
        if state_name:
            state = _STATE_NAMES.get(state_name)
            if state is None:
                raise InspectorError(f"unknown state {state_name!r}")
        listing = client.list_tasks(
            context_id=(query.get("contextId") or "").strip() or None,
            status=state,
            page_size=size,
        )
        skip, more = (page - 1) * size, False
        tasks: list[Task] = []
        async for task in listing:
            if skip:
                skip -= 1
                continue
            if len(tasks) == size:
                more = True
                break
            tasks.append(task)
        return {
            "page": page,
            "pageSize": size,
            "more": more,
            "tasks": [_task_row(task) for task in tasks],
        }

    # -- push configs -----------------------------------------------------------------------

    async def push_configs(self, binding: str, task_id: str) -> list[Any]:
        client = await self.client(binding)
        return [to_builtins(c) for c in await client.list_push_configs(_task_id(task_id))]

    async def create_push_config(self, binding: str, task_id: str, body: Mapping[str, Any]) -> Any:
        client = await self.client(binding)
        url = body.get("url")
        if not isinstance(url, str) or not url.strip():
            raise InspectorError("the webhook URL is empty")
        token = body.get("token") or ""
        config_id = body.get("id") or ""
        if not isinstance(token, str) or not isinstance(config_id, str):
            raise InspectorError("token and id must be text")
        config = await client.create_push_config(
            _task_id(task_id), url.strip(), token=token, config_id=config_id
        )
        return to_builtins(config)

    async def get_push_config(self, binding: str, task_id: str, config_id: str) -> Any:
        client = await self.client(binding)
        return to_builtins(await client.get_push_config(_task_id(task_id), config_id))

    async def delete_push_config(self, binding: str, task_id: str, config_id: str) -> None:
        client = await self.client(binding)
        await client.delete_push_config(_task_id(task_id), config_id)

    # -- runs -------------------------------------------------------------------------------

    def _start(self, run: Run, work: Callable[[Run], Any]) -> dict[str, Any]:
        running = sum(1 for task in self._background if not task.done())
        if running >= MAX_RUNNING:
            raise InspectorError(f"{running} runs are going on already; cancel some first", 429)
        self.runs.append(run)
        self._run_changed(run)
        task = asyncio.create_task(self._guarded(run, work), name=f"inspector run {run.id}")
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return run.to_json()

    async def _guarded(self, run: Run, work: Callable[[Run], Any]) -> None:
        """A run ends done or with its error said on the page, whatever happens in it."""
        try:
            await work(run)
            run.status = "done"
        except asyncio.CancelledError:
            run.status, run.error = "error", "stopped: the inspector is shutting down"
            raise
        except Exception as exc:  # every failure is shown on the page, not lost in a task
            if not isinstance(exc, PeerwireError | InspectorError):
                log.exception("peerwire inspect: run %d failed", run.id)
            run.status, run.error = "error", self.redactor(describe_error(exc))
            if run.task_id and run.task_id in self.tasks:
                timeline = self.tasks[run.task_id]
                timeline.note("error", run.error)
                self._task_changed(timeline)
        finally:
            self._run_changed(run)

    def start_send(self, body: Mapping[str, Any]) -> dict[str, Any]:
        if not self.url:
            raise InspectorError("connect to an agent first (type its URL)")
        binding = binding_of(body.get("binding"))
        outgoing = Outgoing.from_json(body)
        streaming = bool(body.get("streaming"))
        run = Run(
            next(self._run_ids),
            binding,
            "streaming" if streaming else "blocking",
            outgoing.summary(),
            task_id=outgoing.task_id or "",
        )
        if outgoing.task_id:
            timeline = self._timeline(outgoing.task_id, binding)
            timeline.note("sent", outgoing.summary(), mode=run.mode)
            self._task_changed(timeline)

        async def work(run: Run) -> None:
            client = await self.client(binding)
            options: dict[str, Any] = {
                "task_id": outgoing.task_id,
                "context_id": outgoing.context_id,
                "data": outgoing.data,
                "files": outgoing.files,
                "skill": outgoing.skill,
            }
            if streaming:
                await self._follow(run, client.stream(outgoing.text, **options), outgoing)
            else:
                reply = await client.send(outgoing.text, **options)
                self._received(run, reply, outgoing)

        return self._start(run, work)

    def start_subscribe(self, binding: str, task_id: str) -> dict[str, Any]:
        task_id = _task_id(task_id)
        run = Run(next(self._run_ids), binding, "subscribe", f"resubscribe to {task_id}", task_id)
        timeline = self._timeline(task_id, binding)
        timeline.note("info", f"resubscribed over {binding}")
        self._task_changed(timeline)

        async def work(run: Run) -> None:
            client = await self.client(binding)
            await self._follow(run, client.subscribe(task_id), None)

        return self._start(run, work)

    async def _follow(
        self, run: Run, payloads: AsyncIterator[Any], outgoing: Outgoing | None
    ) -> None:
        try:
            async for payload in payloads:
                self._received(run, payload, outgoing)
        finally:
            close = getattr(payloads, "aclose", None)
            if close is not None:
                await close()
        if run.task_id in self.tasks:
            timeline = self.tasks[run.task_id]
            timeline.note("closed", f"the stream closed at {timeline.to_json()['state']}")
            self._task_changed(timeline)

    def _received(self, run: Run, payload: Any, outgoing: Outgoing | None) -> None:
        if isinstance(payload, Message):
            run.reply = describe_parts(payload.parts)
            self._run_changed(run)
            return
        task_id = payload.id if isinstance(payload, Task) else payload.task_id
        if not run.task_id:
            run.task_id = task_id
            self._run_changed(run)
        new = task_id not in self.tasks
        timeline = self._timeline(task_id, run.binding)
        if new and outgoing is not None:
            timeline.note("sent", outgoing.summary(), mode=run.mode)
        timeline.apply(payload)
        self._task_changed(timeline)

    # -- the self-check ---------------------------------------------------------------------

    async def self_check(self) -> dict[str, Any]:
        if not self.url:
            raise InspectorError("connect to an agent first (type its URL)")
        given = self.credentials.as_list() if self.credentials.may_go_to(self.url) else []
        report = await run_self_check(self.url, credentials=given, timeout=min(self.timeout, 10.0))
        result: dict[str, Any] = report.to_json()
        return result

    # -- lifetime ---------------------------------------------------------------------------

    async def drain(self) -> None:
        """End every run (their streams close) and close every client."""
        running = list(self._background)
        for task in running:
            task.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)
        async with self._connecting:
            await self._close_clients()
        await _quietly(self._auth_http.aclose())


def _first(interfaces: Sequence[AgentInterface], binding: str) -> AgentInterface | None:
    return next((i for i in interfaces if i.protocol_binding == binding), None)


def _card_of(document: Mapping[str, Any]) -> AgentCard:
    from ..compat.v03.card import card_from_v03, is_v03_card

    if is_v03_card(document):
        return card_from_v03(document, "card")
    return decode(json.dumps(document), AgentCard, path="card")


def _pasted_keys(text: str) -> Any:
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text  # PEM text: the signing module reads it


def _task_id(task_id: Any) -> str:
    if not isinstance(task_id, str) or not task_id.strip():
        raise InspectorError("name a task id")
    return task_id.strip()


def _int(value: str | None, name: str, low: int, high: int, default: int) -> int:
    if value in (None, ""):
        return default
    try:
        number = int(value)
    except ValueError:
        raise InspectorError(f"{name} must be a whole number") from None
    if not low <= number <= high:
        raise InspectorError(f"{name} must be between {low} and {high}")
    return number


def _task_row(task: Task) -> dict[str, Any]:
    return {
        "id": task.id,
        "contextId": task.context_id,
        "state": task.status.state.value.removeprefix("TASK_STATE_"),
        "timestamp": task.status.timestamp or "",
        "artifacts": len(task.artifacts),
    }


async def _quietly(closing: Any) -> None:
    try:
        await closing
    except Exception:  # closing a client that already failed must not stop the others
        log.debug("peerwire inspect: closing a client failed", exc_info=True)
