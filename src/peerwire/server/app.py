"""Putting an agent on the network: ``create_app`` builds the ASGI app, ``serve`` runs it."""

from __future__ import annotations

import contextlib
import gc
import inspect
import json
import logging
import os
import socket
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

import msgspec

from ..compat.v03.files import FileBytes, FileBytesSettingError, check_file_bytes
from ..delegation import DelegationHub
from ..httpd import HTTPLimits, ServerTLS
from ..ops import Readiness, configure_logging
from ..ops.logs import ACCESS_LOGGER, LogFormat, describe_backend
from ..ops.metrics import Metrics, metrics_available
from ..ops.metrics_http import METRICS_PATH, MetricsEndpoint, MetricsPort
from ..types import AgentCard, AgentInterface, Binding
from ..types.card import BINDING_NAMES
from ._mount import under_prefix
from ._origin import RequestOrigin, TrustedProxies
from .agent import Agent
from .asgi import A2AApp
from .bus import EventBus, MemoryBus
from .card import CARD_PATH, v03_bindings_of
from .delegating import delegation_hub_beside
from .dispatch import CallContext, Dispatcher
from .idempotency import DEFAULT_MESSAGE_RETENTION, MessageLedger, idempotent_send_extension
from .push import PushDeliverer, PushSettings
from .push_configs import PushConfigPolicy
from .runner import Runner
from .ssrf import WebhookGuard
from .stores import TaskStore, open_store

if TYPE_CHECKING:
    from ..cluster.work_queue import RedisWorkQueue
    from ..security import Authenticator, CardSigner, Principal, Verifier

__all__ = ["INTERFACE_NAMES", "ExtendedCard", "Listening", "create_app", "open_bus", "serve"]

log = logging.getLogger("peerwire.server")

ExtendedCard = (
    AgentCard
    | Callable[["Principal"], AgentCard | None]
    | Callable[["Principal", AgentCard], AgentCard | None]
)
"""What ``create_app(extended_card=...)`` takes: a card, or a function of the caller's
principal (and, when it takes two arguments, of the public card) returning theirs."""

# What a card built without a request (and without ``public_url``) says by default.
DEFAULT_URL = "http://127.0.0.1:8000"

# The names ``interface_order=`` (``peerwire serve --interfaces``) orders the card's list by.
INTERFACE_NAMES = BINDING_NAMES


def open_bus(spec: str) -> EventBus:
    """A bus from its spec: ``memory`` or ``redis://HOST[:PORT][/DB][?prefix=NAME]``.

    The bus is returned unopened: its owner calls ``open()`` (the app does, at startup).
    ``rediss://`` (TLS) and ``unix://`` Redis URLs work too. Engine selection lives here, in
    the composition root, so that ``server/bus.py`` never imports ``peerwire.cluster``.
    """
    if spec == "memory":
        return MemoryBus()
    if spec.split("://", 1)[0] in ("redis", "rediss", "unix") and "://" in spec:
        from ..cluster.redis_bus import RedisBus  # the "redis" extra

        return RedisBus.from_url(spec)
    raise ValueError(f"unknown bus {spec!r}: expected 'memory' or 'redis://HOST:PORT'")


def create_app(
    agent: Agent,
    *,
    store: TaskStore | str = "memory",
    bus: EventBus | str = "memory",
    public_url: str | None = None,
    default_url: str = DEFAULT_URL,
    trusted_proxies: Sequence[str] = (),
    rpc_path: str = "/",
    rest_path: str | None = "/rest",
    lenient_version: bool = False,
    serve_v03: bool = True,
    v03_file_bytes: FileBytes | Mapping[str, FileBytes] = "auto",
    max_working: int = 10_000,
    shutdown_grace: float = 10.0,
    max_body_bytes: int = 10 * 1024 * 1024,
    card_max_age: int = 300,
    keepalive_seconds: float = 15.0,
    grpc_port: int | None = None,
    grpc_host: str = "127.0.0.1",
    grpc_public_address: str | None = None,
    grpc_tls: ServerTLS | None = None,
    interface_order: Sequence[str] = ("jsonrpc", "rest", "grpc"),
    auth: Authenticator | Mapping[str, Verifier] | None = None,
    signing_key: CardSigner | Any = None,
    extended_card: ExtendedCard | None = None,
    push: PushSettings | bool | None = None,
    queue: RedisWorkQueue | None = None,
    local_workers: bool = True,
    on_started: Callable[[AgentCard], None] | None = None,
    message_retention: timedelta | None = DEFAULT_MESSAGE_RETENTION,
    access_log: bool = False,
    metrics: bool | Metrics = True,
    metrics_token: str | None = None,
    metrics_port: int | None = None,
    metrics_host: str = "127.0.0.1",
    delegations: DelegationHub | None = None,
) -> A2AApp:
    """An ASGI application serving ``agent`` over JSON-RPC and HTTP+JSON, with its card.

    ``store`` is a ``TaskStore`` or a spec: ``"memory"``, ``"sqlite:PATH"``,
    ``"postgresql://..."``. ``bus`` is an ``EventBus`` or a spec: ``"memory"`` (one process),
    ``"redis://HOST:PORT"`` (replicas sharing a PostgreSQL store see each other's events).
    ``public_url`` is the base URL the card advertises. Without it, the card's URLs name
    what each request reached (docs/howto/mounting.md, "Where the card points"): its
    ``Host`` and scheme, the mount prefix; ``Forwarded`` and ``X-Forwarded-Host``, ``-Proto``
    and ``-Port`` only from the addresses or CIDR networks of ``trusted_proxies``. A signed
    card is signed again for each host (up to 64 kept, the least recently asked for dropped).
    ``default_url`` is what is built without a request says (gRPC's card of A2A 0.3,
    extended cards, the push JWT issuer, ``on_started``'s card), and what a request whose
    ``Host`` is not a valid host gets. ``lenient_version`` accepts requests
    without ``A2A-Version`` as 1.0 (strictly, a missing header means 0.3 and is refused).
    ``serve_v03`` (default on) also serves A2A 0.3 callers on JSON-RPC and HTTP+JSON, and
    the card to a caller that does not name 1.x in ``A2A-Version`` with 0.3's members beside
    1.0's (docs/COMPATIBILITY.md, "The card"; with ``lenient_version`` a card request without
    the header gets the 1.0 card); a 0.3 request is told by its shape (its method name, its
    ``/v1/...`` route), not by ``lenient_version``.
    Off, 0.3 methods get -32601 and 0.3 routes 404.
    ``v03_file_bytes`` is how 0.3 file bytes are read over HTTP+JSON and gRPC, whose SDKs
    disagree (``peerwire.compat.v03.files``): ``"auto"`` (default) tells the two forms apart
    and answers each task in the form its files arrived in; ``"content"`` or ``"base64"``
    (a2a-sdk's) reads and answers in that one form; a mapping sets it per binding
    (``{"grpc": "base64"}``; keys ``"rest"``, ``"grpc"``; bindings left out: ``"auto"``).
    ``keepalive_seconds``: how long an idle stream waits before a keep-alive comment.
    ``rest_path`` is where the HTTP+JSON binding lives (``None``: not served).
    ``grpc_port`` also serves the gRPC binding (needs grpcio), started in the app's lifespan
    on ``grpc_host`` (``0``: a free port; ``None``, the default: not served); the card lists
    it as ``grpc_public_address``, by default the card's host (``public_url``'s, or the
    request's) and the bound port.
    ``grpc_tls`` serves gRPC over TLS (mutual TLS when it requires client certificates); the
    card then gives its address as ``https://host:port``, so clients use TLS even on
    loopback. TLS for the HTTP bindings is the ASGI server's (``serve(tls=...)``).
    ``interface_order`` orders the card's interfaces, first preferred, by the names
    ``"jsonrpc"``, ``"rest"``, ``"grpc"`` (bindings not served are skipped, served ones not
    named come last).

    ``auth`` enforces the card's security requirements (required when the agent declares
    any): an ``Authenticator`` built for this agent's card, or the verifier of each scheme
    name (``{"oidc": OIDCVerifier(audience=...)}``). Every request but the public card is
    authenticated, on every binding; tasks belong to the caller's principal.
    ``signing_key`` signs the card (and extended cards): a ``CardSigner``, or a private key
    (joserfc key, JWK dict, PEM) for one. ``extended_card`` offers GetExtendedAgentCard to
    authenticated callers: a card, or a function of the caller's ``Principal`` returning
    their card (``None``: not configured for them). A function taking two arguments gets the
    public card as served too, to derive theirs from:
    ``lambda principal, card: card.replace(skills=[*card.skills, admin])``.

    ``push`` offers push notifications (``capabilities.pushNotifications``; docs/PUSH.md):
    ``True`` with the default ``PushSettings``, or settings of your own (SSRF allow-list,
    retries, timeouts, a ``signing_key`` whose JWKS is then served at
    ``/.well-known/jwks.json``). Notifications are delivered from the store's outbox by a
    deliverer the app's lifespan runs.

    ``queue`` (a ``RedisWorkQueue``, with a shared store and a Redis bus; docs/DEPLOYMENT.md)
    hands tasks to whichever process consumes it: ``peerwire worker`` processes, and this
    app too unless ``local_workers`` is false.

    ``on_started(card)`` is called once the app's lifespan has started (store open, restart
    recovery done, gRPC bound), with the card as served: its interfaces carry the bound ports.

    ``delegations`` (a ``peerwire.delegation.DelegationHub``) is the ledger of what handlers
    delegate (``ctx.delegate``; docs/DELEGATION.md): by default beside the tasks, in the
    SQLite file or PostgreSQL schema of ``store`` (in memory for the memory store); give one
    to choose its store or how it connects to agents (``connect=``: credentials, headers).

    ``message_retention`` (default 24 hours) is how long a caller's first message is
    remembered: a SendMessage or SendStreamingMessage repeating its ``messageId`` gets the
    task it created instead of a second one, and the card advertises that
    (``peerwire.server.idempotency``, docs/DELEGATION.md). ``None`` turns it off.

    ``/healthz`` and ``/readyz`` are served beside the bindings, without authentication
    (docs/OPERATIONS.md): readiness checks the store (``TaskStore.check_health``) and, when
    the bus or ``queue`` is Redis, PINGs it. ``access_log`` writes one INFO record per HTTP
    request on the ``peerwire.access`` logger (method, path, binding, operation, status,
    duration, task id).

    ``metrics`` (on by default when prometheus-client is installed: the ``metrics`` extra)
    serves Prometheus metrics at ``/metrics`` (under the mount prefix when mounted), without
    A2A authentication (docs/OPERATIONS.md); ``False`` turns them off (no route, no work),
    a ``peerwire.ops.Metrics`` of your own brings its registry. ``metrics_token`` makes
    the page require ``Authorization: Bearer TOKEN``; ``metrics_port`` serves it on that
    port of ``metrics_host`` instead (``0``: a free one), from a thread of its own, while
    the app runs.
    """
    order = _interface_order(interface_order)
    if public_url is not None and trusted_proxies:
        raise ValueError(
            "trusted_proxies= lets forwarded headers decide the card's URLs, which public_url= "
            "fixes: give one of them"
        )
    origins = None if public_url is not None else RequestOrigin(TrustedProxies(trusted_proxies))
    template = (public_url or default_url).rstrip("/")
    task_store = open_store(store) if isinstance(store, str) else store
    if not isinstance(task_store, TaskStore):
        raise TypeError(
            f"store= takes a spec string or a TaskStore (subclass "
            f"peerwire.server.stores.TaskStore), not {type(task_store).__name__}"
        )
    event_bus = open_bus(bus) if isinstance(bus, str) else bus
    placement = None
    if queue is not None:
        from ..cluster.placement import Placement  # the "redis" extra, as the queue is

        placement = Placement(queue, consume=local_workers)
    meters = _metrics(metrics, metrics_token, metrics_port)
    runner = Runner(
        agent,
        task_store,
        event_bus,
        max_working=max_working,
        shutdown_grace=shutdown_grace,
        placement=placement,
        metrics=meters,
        delegations=delegations or delegation_hub_beside(task_store),
    )
    interfaces = [
        AgentInterface(
            url=template + rpc_path,
            protocol_binding=Binding.JSONRPC,
            protocol_version="1.0",
        )
    ]
    if rest_path is not None:
        interfaces.append(
            AgentInterface(
                url=template + rest_path.rstrip("/"),
                protocol_binding=Binding.HTTP_JSON,
                protocol_version="1.0",
            )
        )
    http_interfaces = tuple(interfaces)
    signer = _signer(signing_key)
    messages = None if message_retention is None else MessageLedger(task_store, message_retention)
    behaviours = () if messages is None else (idempotent_send_extension(messages.retention),)
    push_settings = PushSettings() if push is True else (push or None)
    push_policy, deliverer, documents = _push(push_settings, task_store, template, meters)

    # The bindings the card offers A2A 0.3 on (its 0.3 members; see publish's signatures).
    rest_file_bytes, grpc_file_bytes = _file_bytes_settings(v03_file_bytes)
    v03_bindings = v03_bindings_of(
        serve_v03=serve_v03, rest=rest_path is not None, grpc=grpc_port is not None
    )

    def publish(interfaces: Sequence[AgentInterface]) -> AgentCard:
        published = agent.card(
            interfaces,
            push_notifications=push_settings is not None,
            extended_agent_card=extended_card is not None,
            server_extensions=behaviours,
        )
        # Signed over the AgentCard alone: the 1.0 form as served. The app adds a signature
        # over the dual form as served to that form (``card_signer``).
        return published if signer is None else signer.sign(published)

    # A list so the lifespan can add the gRPC interface once its port is bound.
    card: list[AgentCard] = [publish(_ordered(http_interfaces, order))]
    authenticator = _authenticator(
        auth, card[0], agent.requires_authentication, extended_card is not None
    )

    # gRPC's bound port, once it is: a card built for a request names the request's host.
    grpc_bound: list[int] = []
    derive_grpc = grpc_public_address is None

    def card_at(origin: str | None, prefix: str) -> AgentCard:
        """The card as served to a request that reached ``origin`` (``None``: the fixed
        URL) under a mount prefix: its HTTP URLs there, gRPC's on the request's host."""
        mounted = under_prefix(origin or template, prefix)
        interfaces = []
        for i in card[0].supported_interfaces:
            if i.url == template or i.url.startswith(template + "/"):
                i = msgspec.structs.replace(i, url=mounted + i.url[len(template) :])
            elif i.protocol_binding == Binding.GRPC and origin and grpc_bound and derive_grpc:
                from .grpc import grpc_address  # imported: gRPC is served

                host = urlsplit(origin).hostname or grpc_host
                url = _grpc_url(grpc_address(host, grpc_bound[0]), grpc_tls)
                i = msgspec.structs.replace(i, url=url)
            interfaces.append(i)
        return publish(interfaces)

    def public_for(call: CallContext) -> AgentCard:
        """The public card as served where ``call`` reached the app (what an extended card
        built from it names)."""
        if call.reached is None or call.reached == (None, ""):
            return card[0]
        return card_at(*call.reached)

    dispatcher = Dispatcher(
        agent,
        task_store,
        event_bus,
        runner,
        lambda: card[0],
        extended_card=_extended(extended_card, signer, public_for),
        push_configs=push_policy,
        messages=messages,
        metrics=meters,
    )

    @contextlib.asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        await task_store.open()
        try:
            await event_bus.open()
            # Outermost after the store: it stops only once the runner has drained, so the
            # events of the last moments are in the outbox (delivered now or after a restart).
            # The message-id sweep's timer runs while the store is open.
            async with (
                deliverer or contextlib.nullcontext(),
                messages or contextlib.nullcontext(),
                runner,
            ):
                await runner.recover()
                if grpc_port is None:
                    if on_started is not None:
                        on_started(card[0])
                    yield
                    return
                from .grpc import grpc_address, serving_grpc  # grpcio is an optional extra

                async with serving_grpc(
                    dispatcher,
                    grpc_host,
                    grpc_port,
                    lenient_version=lenient_version,
                    max_receive_bytes=max_body_bytes,
                    grace=shutdown_grace,
                    authenticator=authenticator,
                    tls=grpc_tls,
                    serve_v03=serve_v03,
                    v03_bindings=v03_bindings,
                    v03_file_bytes=grpc_file_bytes,
                ) as bound:
                    grpc_bound[:] = [bound]
                    public_host = urlsplit(template).hostname or grpc_host
                    grpc_interface = AgentInterface(
                        url=grpc_public_address
                        or _grpc_url(grpc_address(public_host, bound), grpc_tls),
                        protocol_binding=Binding.GRPC,
                        protocol_version="1.0",
                    )
                    card[0] = publish(_ordered([*http_interfaces, grpc_interface], order))
                    if on_started is not None:
                        on_started(card[0])
                    try:
                        yield
                    finally:
                        # Before gRPC stops: its streams end now and its blocked calls get
                        # their tasks' outcome, rather than waiting out its grace.
                        await runner.drain()
        finally:
            await event_bus.close()
            await task_store.close()

    return A2AApp(
        dispatcher,
        readiness=_readiness(task_store, event_bus, queue, runner),
        access_log=access_log,
        rpc_path=rpc_path,
        rest_path=rest_path,
        max_body_bytes=max_body_bytes,
        lenient_version=lenient_version,
        card_max_age=card_max_age,
        keepalive_seconds=keepalive_seconds,
        lifespan=_with_metrics_port(lifespan, meters, metrics_host, metrics_port, metrics_token),
        authenticator=authenticator,
        documents=documents,
        routes=_metrics_route(meters, metrics_port, metrics_token),
        card_at=card_at,
        origins=origins,
        serve_v03=serve_v03,
        v03_bindings=v03_bindings,
        card_signer=None if signer is None else signer.signature,
        v03_file_bytes=rest_file_bytes,
    )


def _file_bytes_settings(
    setting: FileBytes | Mapping[str, FileBytes],
) -> tuple[FileBytes, FileBytes]:
    """The ``v03_file_bytes`` of HTTP+JSON and of gRPC; a bad setting or binding name raises
    ``FileBytesSettingError`` (a ``ValueError``) naming the valid ones."""
    if isinstance(setting, str):
        one = check_file_bytes(setting)
        return one, one
    unknown = set(setting) - {"rest", "grpc"}
    if unknown:
        raise FileBytesSettingError(
            f"v03_file_bytes names bindings 'rest' and 'grpc' (0.3 JSON-RPC has one form), "
            f"not {', '.join(sorted(map(repr, unknown)))}"
        )
    return (
        check_file_bytes(setting.get("rest", "auto"), "v03_file_bytes['rest']"),
        check_file_bytes(setting.get("grpc", "auto"), "v03_file_bytes['grpc']"),
    )


def _metrics(metrics: bool | Metrics, token: str | None, port: int | None) -> Metrics | None:
    """The agent's instruments: on when prometheus-client is installed, unless turned off."""
    if isinstance(metrics, Metrics):
        return metrics
    if metrics and metrics_available():
        return Metrics()
    if token is not None or port is not None:
        raise ValueError(
            "metrics_token= and metrics_port= need metrics on"
            + ("" if metrics else " (metrics=False)")
            + ("" if metrics_available() else ": pip install 'peerwire[metrics]'")
        )
    return None


def _metrics_route(
    metrics: Metrics | None, port: int | None, token: str | None
) -> dict[str, MetricsEndpoint]:
    """``/metrics`` on the agent's own port, unless metrics are off or have a port of their own."""
    if metrics is None or port is not None:
        return {}
    return {METRICS_PATH: MetricsEndpoint(metrics, token=token)}


def _with_metrics_port(
    lifespan: Callable[[], contextlib.AbstractAsyncContextManager[None]],
    metrics: Metrics | None,
    host: str,
    port: int | None,
    token: str | None,
) -> Callable[[], contextlib.AbstractAsyncContextManager[None]]:
    """``lifespan``, with the metrics page served on a port of its own while it runs."""
    if metrics is None or port is None:
        return lifespan

    @contextlib.asynccontextmanager
    async def serving_metrics() -> AsyncIterator[None]:
        exporter = MetricsPort(metrics, host=host, port=port, token=token)
        exporter.start()  # first: a port that is taken stops the start-up at once
        try:
            async with lifespan():
                yield
        finally:
            exporter.stop()

    return serving_metrics


def _readiness(
    store: TaskStore, bus: EventBus, queue: RedisWorkQueue | None, runner: Runner
) -> Readiness:
    """What ``/readyz`` checks: the store, and Redis where the bus or the queue uses it
    (they have ``check_health``: a PING)."""
    checks = {"store": store.check_health}
    for name, part in (("bus", bus), ("queue", queue)):
        check = getattr(part, "check_health", None)
        if check is not None:
            checks[name] = check
    return Readiness(checks, accepting=lambda: runner.accepting)


def _push(
    settings: PushSettings | None, store: TaskStore, public_url: str, metrics: Metrics | None
) -> tuple[PushConfigPolicy | None, PushDeliverer | None, dict[str, bytes]]:
    """What offering push takes: the config policy, the deliverer and the JWKS document."""
    if settings is None:
        return None, None, {}
    guard = WebhookGuard(settings.allow, resolver=settings.resolver)
    signer = None
    documents = {}
    if settings.signing_key is not None:
        from ..push import JWKS_PATH
        from ..push.signing import NotificationSigner  # the "security" extra

        signer = NotificationSigner(
            settings.signing_key,
            issuer=public_url.rstrip("/"),
            kid=settings.signing_kid,
            lifetime=settings.jwt_lifetime,
        )
        documents[JWKS_PATH] = json.dumps(signer.public_jwks()).encode()
    policy = PushConfigPolicy(guard, max_per_task=settings.max_configs_per_task)
    deliverer = PushDeliverer(store, settings, guard=guard, signer=signer, metrics=metrics)
    return policy, deliverer, documents


def _grpc_url(address: str, tls: ServerTLS | None) -> str:
    """The card's gRPC URL: a bare ``host:port`` reads as plaintext on loopback (A2A spec §10
    leaves the form open), so a TLS server says ``https://`` explicitly."""
    return address if tls is None else f"https://{address}"


def _signer(signing_key: Any) -> CardSigner | None:
    if signing_key is None:
        return None
    from ..security.signing import CardSigner  # the "security" extra

    return signing_key if isinstance(signing_key, CardSigner) else CardSigner(signing_key)


def _authenticator(
    auth: Authenticator | Mapping[str, Verifier] | None,
    card: AgentCard,
    required: bool,
    extended: bool,
) -> Authenticator | None:
    if auth is None:
        if required:
            raise ValueError(
                "the agent's card requires authentication: pass auth= with a verifier for each "
                "scheme it names, so the server enforces what the card promises"
            )
        if extended:
            raise ValueError("extended_card= needs auth=: only authenticated callers get it")
        return None
    from ..security.authenticator import Authenticator

    if isinstance(auth, Authenticator):
        if not auth.matches_card(card):
            raise ValueError(
                "the Authenticator's schemes and requirements differ from the agent's card; "
                "build it with Authenticator.from_card or pass the verifiers as auth="
            )
        return auth
    return Authenticator.from_card(card, auth)


def _extended(
    extended_card: ExtendedCard | None,
    signer: CardSigner | None,
    public: Callable[[CallContext], AgentCard],
) -> Callable[[CallContext], AgentCard | None] | None:
    if extended_card is None:
        return None
    # Decided once: a function that can take two arguments is given the public card too.
    with_card = callable(extended_card) and _accepts_two(extended_card)

    def for_caller(call: CallContext) -> AgentCard | None:
        assert call.principal is not None  # the dispatcher lets only principals through
        if not callable(extended_card):
            found: AgentCard | None = extended_card
        elif with_card:
            found = extended_card(call.principal, public(call))  # type: ignore[call-arg]
        else:
            found = extended_card(call.principal)  # type: ignore[call-arg]
        if found is None or signer is None:
            return found
        return signer.sign(msgspec.structs.replace(found, signatures=[]))

    return for_caller


def _accepts_two(function: Callable[..., object]) -> bool:
    try:
        inspect.signature(function).bind(None, None)
    except TypeError:
        return False
    except ValueError:  # no signature to inspect (some builtins): called as documented first
        return False
    return True


def _interface_order(names: Sequence[str]) -> tuple[str, ...]:
    """Binding strings for the names of ``interface_order``; a typo is an error, not ignored."""
    order = []
    for name in names:
        binding = INTERFACE_NAMES.get(name.strip().lower())
        if binding is None:
            known = ", ".join(INTERFACE_NAMES)
            raise ValueError(f"unknown interface {name!r} in interface_order (known: {known})")
        order.append(binding)
    return tuple(order)


def _ordered(interfaces: Sequence[AgentInterface], order: Sequence[str]) -> list[AgentInterface]:
    rank = {binding: i for i, binding in reversed(list(enumerate(order)))}
    return sorted(interfaces, key=lambda i: rank.get(i.protocol_binding, len(order)))


@dataclass(frozen=True, slots=True)
class Listening:
    """Where ``serve`` listens, once the agent can be reached there (``serve(on_ready=...)``)."""

    url: str
    """The base URL of the HTTP bindings at the bound address (``http://127.0.0.1:PORT``)."""
    host: str
    port: int
    """The bound HTTP port: the one ``port=0`` picked."""
    card: AgentCard
    """The card as served: its interface URLs carry the bound ports (gRPC's too)."""

    @property
    def grpc_url(self) -> str | None:
        """The card's gRPC interface URL, when gRPC is served."""
        for interface in self.card.supported_interfaces:
            if interface.protocol_binding == Binding.GRPC:
                return interface.url
        return None


def serve(
    agent: Agent,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    public_url: str | None = None,
    log_level: str = "info",
    log_format: LogFormat = "text",
    grpc: bool = True,
    grpc_port: int = 0,
    tls: ServerTLS | None = None,
    http: Literal["peerwire", "uvicorn"] = "peerwire",
    http_limits: HTTPLimits | None = None,
    on_ready: Callable[[Listening], None] | None = None,
    **options: object,
) -> None:
    """Serve ``agent`` with peerwire's HTTP server (uvloop when installed) until interrupted.

    ``port=0`` picks a free port: the socket is bound first (one socket, on the first address
    ``host`` resolves to), so the card's URLs carry the real port. Without ``public_url`` the
    card served over HTTP names the host each request reached (``create_app``'s
    ``trusted_proxies`` option believes a proxy's forwarded headers); ``on_ready``'s card and
    the log name the bound address. Once the app has started
    and the socket listens, one INFO record of ``peerwire.server`` says where (``peerwire:
    serving 'Name' on http://127.0.0.1:PORT (JSON-RPC ..., HTTP+JSON ..., gRPC ..., card
    ...); store ...; bus ...``, credentials redacted), and ``on_ready`` (called on the
    server's event loop) gets a ``Listening`` with the bound address and the served card.
    gRPC is served beside HTTP on ``host`` and ``grpc_port`` (``0``: a free port, as the card
    shows) when ``grpc`` is set and grpcio is installed; ``options`` go to ``create_app``.
    ``tls`` serves both over TLS (HTTPS; mutual TLS when it names client CAs), and requests
    carry the client certificate in the ASGI TLS extension for ``MTLSVerifier``.
    ``log_level`` is the level of the ``peerwire`` loggers, ``log_format`` how they are
    written to stderr: ``"text"`` or ``"json"`` (one object a line; ``ops.JSONFormatter``),
    unless logging is configured already (then only the level is set). The access log
    (``access_log=True``, a ``create_app`` option) is written at any ``log_level``.
    ``http="uvicorn"`` serves on uvicorn instead (the ``uvicorn`` extra; docs/DEPLOYMENT.md,
    "Choosing the HTTP server"): the same app, lifespan, gRPC and shutdown order, uvicorn's
    logs at ``log_level``; an mTLS security scheme is refused (uvicorn does not provide the
    ASGI TLS extension).
    ``http_limits`` bound what clients may send to peerwire's HTTP server (``HTTPLimits``:
    head size and count, body size, head and body timeouts, keep-alive idle; docs/LIMITS.md);
    uvicorn has limits of its own, so they are refused with ``http="uvicorn"``.
    """
    from ..httpd import CannotListenError, HTTPServer

    if http not in ("peerwire", "uvicorn"):
        raise ValueError(f"unknown HTTP server {http!r} (known: peerwire, uvicorn)")
    if http == "uvicorn" and http_limits is not None:
        raise ValueError(
            "http_limits are peerwire's HTTP server's; uvicorn has its own (its --limit-* "
            "and --timeout-* settings)"
        )
    if http == "uvicorn":
        from . import _uvicorn  # the "uvicorn" extra: a clear ImportError before any work
    # Before anything is bound or built: what that logs is written as configured too.
    _configure_logging(log_level, log_format, access_log=bool(options.get("access_log")))
    try:
        sock = _listen(host, port)
    except CannotListenError as exc:
        raise SystemExit(f"peerwire: {exc}") from None
    with sock:
        bound = int(sock.getsockname()[1])
        url = f"{'http' if tls is None else 'https'}://{_url_host(host)}:{bound}"
        options = {"metrics_host": host, **options}  # a metrics port listens where HTTP does
        if grpc and _grpc_installed():
            options = {"grpc_host": host, "grpc_tls": tls, **options, "grpc_port": grpc_port}
            if grpc_port:
                # gRPC binds in the app's lifespan, after the store opened: a port already
                # taken is said here, in one line, before anything starts.
                try:
                    _listen(str(options["grpc_host"]), grpc_port, " for gRPC").close()
                except CannotListenError as exc:
                    raise SystemExit(f"peerwire: {exc}") from None

        def started(card: AgentCard) -> None:
            listening = Listening(url=url, host=host, port=bound, card=card)
            _log_start(agent.name, url, (public_url or url).rstrip("/") + CARD_PATH, card, options)
            if on_ready is not None:
                on_ready(listening)

        app = create_app(
            agent,
            public_url=public_url,
            default_url=url,
            on_started=started,
            **options,  # type: ignore[arg-type]
        )
        _tune_gc()
        if http == "uvicorn":
            _uvicorn.run_uvicorn(
                app,
                host=host,
                port=bound,
                tls=tls,
                log_level=log_level,
                log_format=log_format,
                sock=sock,
            )
            return
        server = HTTPServer(
            app, ssl_context=None if tls is None else tls.ssl_context(), limits=http_limits
        )
        try:
            server.run(host=host, port=bound, sock=sock)
        except CannotListenError as exc:  # gRPC's port, taken since it was checked
            raise SystemExit(f"peerwire: {exc}") from None


def _listen(host: str, port: int, purpose: str = "") -> socket.socket:
    """A listening TCP socket on ``host`` (its first address) and ``port`` (``0``: any free
    one), so the port is known before the app (and its card) is built. ``purpose`` names
    what it is for in the error (``" for gRPC"``)."""
    from ..httpd import CannotListenError

    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets that say so, and
        # accepted connections inherit it; without it each response waits ~40 ms on Nagle.
        sock = socket.socket(family, kind, proto or socket.IPPROTO_TCP)
    except OSError as exc:
        raise CannotListenError(f"cannot listen{purpose} on {host}:{port}: {exc}") from exc
    try:
        if os.name != "nt":  # as asyncio's reuse_address: restart while old sockets linger
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(_LISTEN_BACKLOG)
    except OSError as exc:
        sock.close()
        raise CannotListenError(f"cannot listen{purpose} on {host}:{port}: {exc}") from exc
    return sock


# As peerwire's HTTP server asks (a burst of clients connecting at once is not refused).
_LISTEN_BACKLOG = 2048


def _url_host(host: str) -> str:
    """``host`` as a URL shows it: a wildcard address as loopback, IPv6 in brackets."""
    if host in ("0.0.0.0", "::", ""):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def _configure_logging(level: str, fmt: LogFormat, *, access_log: bool) -> None:
    """Show peerwire's log records at ``level`` on stderr in ``fmt``, and every other
    library's at WARNING and above the same way (one handler on the root logger: with
    ``json`` each line of stderr is one object), unless logging is configured (then only
    the level is set: the application's handlers write them)."""
    root, logger = logging.getLogger(), logging.getLogger("peerwire")
    if not root.handlers and not logger.handlers:
        configure_logging(level, fmt, logger="")
        # Third parties at WARNING at least: their INFO (an httpx line per request) is noise
        # here; peerwire's own records keep the level asked for.
        root.setLevel(max(root.level, logging.WARNING))
    logger.setLevel(level.upper())
    if access_log:  # asked for: shown whatever the level of the rest
        access = logging.getLogger(ACCESS_LOGGER)
        if not access.isEnabledFor(logging.INFO):
            access.setLevel(logging.INFO)


def _log_start(
    name: str, url: str, card_url: str, card: AgentCard, options: Mapping[str, object]
) -> None:
    """The start-up line: every URL served (the card's interfaces and the card itself) and
    the store, bus and work queue, credentials redacted; each also as an ``extra`` field."""
    interfaces = {
        _BINDING_LABELS.get(i.protocol_binding, i.protocol_binding): i.url
        for i in card.supported_interfaces
    }
    served = ", ".join(f"{label} {where}" for label, where in interfaces.items())
    store = describe_backend(options.get("store", "memory"))
    bus = describe_backend(options.get("bus", "memory"))
    queue = options.get("queue")
    backends = f"store {store}; bus {bus}" + (
        f"; work queue {describe_backend(queue)}" if queue is not None else ""
    )
    log.info(
        "peerwire: serving %r on %s (%s, card %s); %s",
        name,
        url,
        served,
        card_url,
        backends,
        extra={
            "url": url,
            "interfaces": interfaces,
            "card_url": card_url,
            "store": store,
            "bus": bus,
            "queue": None if queue is None else describe_backend(queue),
        },
    )


_BINDING_LABELS = {
    Binding.JSONRPC: "JSON-RPC",
    Binding.HTTP_JSON: "HTTP+JSON",
    Binding.GRPC: "gRPC",
}


def _tune_gc() -> None:
    """Collect less often in a serving process (it owns the process, unlike an embedded app).

    A server allocates many short-lived objects per request; with the default thresholds the
    cyclic collector ran hundreds of times per 10,000 requests and full collections over the
    growing heap paused for up to ~100 ms. Freezing what exists at start-up (modules, the app)
    and raising the first threshold measured about 1.6x the requests per second in process,
    with pauses of a few ms (docs/PERFORMANCE.md).
    """
    gc.freeze()
    gc.set_threshold(10_000, 20, 20)


def _grpc_installed() -> bool:
    """Whether the ``grpc`` extra (grpcio, protobuf, googleapis-common-protos) is installed."""
    try:
        from . import grpc  # noqa: F401
    except ImportError:
        return False
    return True
