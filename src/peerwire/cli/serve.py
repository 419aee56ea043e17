"""``peerwire serve MODULE:ATTR``: serve an agent over HTTP."""

from __future__ import annotations

import enum
import importlib
import inspect
import json
import os
import sys
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from ..httpd import HTTPLimits, ServerTLS
from ..ops.metrics import metrics_available
from ..server import Agent, LifespanStartError, PushSettings, serve
from ..server.app import INTERFACE_NAMES
from ..server.stores import TaskStore, open_store
from ._app import app
from ._logs import LogFormatName, LogFormatOption, LogLevelOption
from ._options import FileBytesName
from ._scale import LeaseTtl, ReclaimIdle, SweepEvery, event_bus, work_queue
from ._tracing import TracingName, install_tracing

if TYPE_CHECKING:
    from ..security import Authenticator, Verifier
    from ..security.signing import CardSigner


class HTTPServerName(enum.StrEnum):
    """The names ``--http`` takes."""

    peerwire = "peerwire"
    uvicorn = "uvicorn"


def load_object(target: str, param_hint: str) -> object:
    """The attribute ``ATTR`` of module ``MODULE`` for ``MODULE:ATTR`` (the current directory
    is importable); a usage error naming ``param_hint`` when it is not there."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise typer.BadParameter(f"expected MODULE:ATTR, got {target!r}", param_hint=param_hint)
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise typer.BadParameter(
            f"cannot import {module_name!r}: {exc}", param_hint=param_hint
        ) from None
    except Exception as exc:  # the module's own code failed: say so, not as a traceback
        raise typer.BadParameter(
            f"importing {module_name!r} failed: {type(exc).__name__}: {exc}",
            param_hint=param_hint,
        ) from None
    if not hasattr(module, attribute):
        raise typer.BadParameter(
            f"module {module_name!r} has no attribute {attribute!r}", param_hint=param_hint
        )
    return getattr(module, attribute)


def load_agent(target: str) -> Agent:
    """Import ``module:attribute`` (the current directory is importable) and check it."""
    agent = load_object(target, "TARGET")
    if not isinstance(agent, Agent):
        raise typer.BadParameter(
            f"{target!r} is not a peerwire Agent (found {type(agent).__name__})",
            param_hint="TARGET",
        )
    return agent


def load_auth(target: str) -> Authenticator | Mapping[str, Verifier]:
    """``--auth MODULE:ATTR``: an ``Authenticator``, or a mapping of scheme name to verifier,
    or a function of no arguments returning either (called once, as the server starts: keys
    are loaded then, not when the module is imported)."""
    from ..security import Authenticator

    found = load_object(target, "--auth")
    if inspect.isfunction(found):
        try:
            inspect.signature(found).bind()
        except TypeError:
            raise typer.BadParameter(
                f"{target!r} is a function that needs arguments; --auth calls it with none",
                param_hint="--auth",
            ) from None
        found = found()
    if isinstance(found, Authenticator):
        return found
    if (
        isinstance(found, Mapping)
        and found
        and all(
            isinstance(name, str) and callable(getattr(verifier, "verify", None))
            for name, verifier in found.items()
        )
    ):
        return cast("Mapping[str, Verifier]", found)
    raise typer.BadParameter(
        f"{target!r} is neither a peerwire.security.Authenticator nor a dict of scheme "
        f"name to Verifier, nor a function returning one (found {type(found).__name__})",
        param_hint="--auth",
    )


def load_card_signer(spec: str) -> CardSigner:
    """``--card-signing-key``: a private key file (PEM or JWK JSON), or ``MODULE:ATTR`` naming
    a ``CardSigner`` or a key."""
    from ..security.signing import CardSigner

    hint = "--card-signing-key"
    path = Path(spec)
    key: object
    if path.is_file():
        text = path.read_text()
        key = json.loads(text) if text.lstrip().startswith("{") else text
    elif ":" in spec and not path.exists():
        key = load_object(spec, hint)
        if isinstance(key, CardSigner):
            return key
    else:
        raise typer.BadParameter(f"no key file or MODULE:ATTR {spec!r}", param_hint=hint)
    try:
        return CardSigner(key)  # type: ignore[arg-type]  # checked here, as the user gave it
    except (ValueError, TypeError) as exc:
        raise typer.BadParameter(
            f"cannot sign cards with {spec!r}: {exc}", param_hint=hint
        ) from None


@app.command("serve")
def serve_command(
    target: Annotated[str, typer.Argument(help="The agent to serve, as MODULE:ATTR.")],
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    http: Annotated[
        HTTPServerName,
        typer.Option(
            case_sensitive=False,
            help="The HTTP server: peerwire's own (fastest; mTLS principals) or uvicorn "
            "(needs peerwire[uvicorn]). See docs/DEPLOYMENT.md.",
        ),
    ] = HTTPServerName.peerwire,
    public_url: Annotated[
        str | None,
        typer.Option(help="Base URL the card advertises (default: the host each request reached)."),
    ] = None,
    trusted_proxy: Annotated[
        list[str] | None,
        typer.Option(
            help="Believe Forwarded / X-Forwarded-* from this proxy address or CIDR network "
            "(repeatable; default none).",
            metavar="ADDRESS|CIDR",
        ),
    ] = None,
    store: Annotated[
        str,
        typer.Option(
            help="Task store: sqlite:PATH (durable: survives kill -9) or memory (lost on exit)."
        ),
    ] = "sqlite:./peerwire.db",
    bus: Annotated[
        str,
        typer.Option(
            help="Event bus: memory (one process) or redis://HOST:PORT[?prefix=NAME] "
            "(replicas and workers sharing a PostgreSQL store; also shares the work)."
        ),
    ] = "memory",
    local_workers: Annotated[
        bool,
        typer.Option(help="With a Redis bus, also run tasks here, not only in peerwire workers."),
    ] = True,
    lease_ttl: LeaseTtl = 15.0,
    reclaim_idle: ReclaimIdle = 30.0,
    sweep_every: SweepEvery = 30.0,
    retain_finished: Annotated[
        float | None,
        typer.Option(help="Delete finished tasks after this many days (default: keep them)."),
    ] = None,
    message_retention: Annotated[
        float,
        typer.Option(
            help="Hours a caller's first message is remembered: a SendMessage repeating its "
            "messageId gets the task it created, not a second one (0: off).",
            min=0.0,
        ),
    ] = 24.0,
    max_working: Annotated[
        int, typer.Option(help="Most tasks working at once; more are refused as busy.")
    ] = 10_000,
    shutdown_grace: Annotated[
        float, typer.Option(help="Seconds running tasks get to finish on shutdown.")
    ] = 10.0,
    max_body_bytes: Annotated[int, typer.Option(help="Largest request body accepted.")] = 10
    * 1024
    * 1024,
    lenient_version: Annotated[
        bool, typer.Option(help="Take requests without A2A-Version as 1.0 (not 0.3).")
    ] = False,
    v03: Annotated[
        bool,
        typer.Option(
            "--v03/--no-v03",
            help="Also serve A2A 0.3 callers (JSON-RPC and HTTP+JSON; docs/COMPATIBILITY.md).",
        ),
    ] = True,
    v03_file_bytes: Annotated[
        FileBytesName,
        typer.Option(
            case_sensitive=False,
            help="How A2A 0.3 file bytes are read over HTTP+JSON and gRPC: auto tells "
            "a2a-sdk's base64 text from the content; content or base64 forces one "
            "(docs/COMPATIBILITY.md).",
        ),
    ] = FileBytesName.auto,
    log_level: LogLevelOption = "info",
    log_format: LogFormatOption = LogFormatName.text,
    access_log: Annotated[
        bool,
        typer.Option(
            help="Log each HTTP request (method, path, binding, operation, status, duration, "
            "task id) on peerwire.access; never its headers or query string."
        ),
    ] = False,
    grpc: Annotated[bool, typer.Option(help="Also serve gRPC (when grpcio is installed).")] = True,
    grpc_port: Annotated[
        int, typer.Option(help="gRPC port on HOST; 0 picks a free one (the card lists it).")
    ] = 0,
    grpc_public_address: Annotated[
        str | None,
        typer.Option(
            help="The gRPC address the card lists (a load balancer's host:port; default: "
            "the card's host and --grpc-port).",
            metavar="HOST:PORT",
        ),
    ] = None,
    interfaces: Annotated[
        str,
        typer.Option(help="The card's interfaces in preference order, comma-separated."),
    ] = "jsonrpc,rest,grpc",
    push: Annotated[
        bool,
        typer.Option(help="Offer push notifications (webhooks), delivered from the store."),
    ] = False,
    push_allow: Annotated[
        list[str] | None,
        typer.Option(
            help="A host or network (CIDR) webhooks may use although it is internal "
            "(loopback, private, ...); repeat or comma-separate.",
            metavar="HOST|CIDR",
        ),
    ] = None,
    push_attempts: Annotated[
        int, typer.Option(help="Attempts per notification before it is given up.")
    ] = 5,
    push_timeout: Annotated[float, typer.Option(help="Seconds each attempt may take.")] = 10.0,
    push_retry_delay: Annotated[
        float, typer.Option(help="Seconds before the first retry; doubling after that.")
    ] = 1.0,
    push_signing_key: Annotated[
        Path | None,
        typer.Option(
            help="A private key (PEM or JWK JSON) to sign notifications with; its public "
            "key is served at /.well-known/jwks.json.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    ssl_certfile: Annotated[
        Path | None, typer.Option(help="Serve HTTPS (and gRPC over TLS) with this certificate.")
    ] = None,
    ssl_keyfile: Annotated[
        Path | None, typer.Option(help="The private key of --ssl-certfile.")
    ] = None,
    ssl_ca_certs: Annotated[
        Path | None,
        typer.Option(help="Ask clients for certificates issued by these CAs (mutual TLS)."),
    ] = None,
    require_client_cert: Annotated[
        bool, typer.Option(help="Refuse TLS connections without a client certificate.")
    ] = False,
    head_timeout: Annotated[
        float | None,
        typer.Option(help="Seconds a request head may take to arrive (default 10; 408 past it)."),
    ] = None,
    body_timeout: Annotated[
        float | None,
        typer.Option(help="Seconds a request body may stay silent (default 30; 408 past it)."),
    ] = None,
    keep_alive: Annotated[
        float | None,
        typer.Option(help="Seconds an idle keep-alive connection stays open (default 5)."),
    ] = None,
    metrics: Annotated[
        bool,
        typer.Option(
            help="Serve Prometheus metrics at /metrics, without A2A authentication (on when "
            "prometheus-client is installed; docs/OPERATIONS.md)."
        ),
    ] = True,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            help="Serve the metrics on this port of HOST instead of /metrics on the agent's "
            "port; 0 picks a free one.",
            min=0,
            max=65535,
        ),
    ] = None,
    metrics_token: Annotated[
        str | None,
        typer.Option(
            help="Bearer token a scrape must send (Authorization: Bearer TOKEN).",
            envvar="PEERWIRE_METRICS_TOKEN",
        ),
    ] = None,
    auth: Annotated[
        str | None,
        typer.Option(
            help="The verifiers of an agent whose card declares security, as MODULE:ATTR "
            "(loaded as the agent is): a peerwire.security.Authenticator, a dict of "
            "scheme name to Verifier, or a function of no arguments returning either "
            "(docs/SECURITY.md).",
            metavar="MODULE:ATTR",
        ),
    ] = None,
    card_signing_key: Annotated[
        str | None,
        typer.Option(
            help="Sign the card with this private key: a file (PEM or JWK JSON) or "
            "MODULE:ATTR naming a peerwire.security.CardSigner or a key.",
            metavar="FILE|MODULE:ATTR",
        ),
    ] = None,
    tracing: Annotated[
        TracingName | None,
        typer.Option(
            case_sensitive=False,
            help="Export OpenTelemetry spans: console (stdout) or otlp (OTLP/HTTP, set by "
            "the OTEL_EXPORTER_OTLP_* variables); needs peerwire[tracing-otlp].",
        ),
    ] = None,
) -> None:
    """Serve an agent: its card, JSON-RPC endpoint and streams."""
    if not metrics and (metrics_port is not None or metrics_token is not None):
        raise typer.BadParameter(
            "--metrics-port and --metrics-token need metrics on", param_hint="--no-metrics"
        )
    if (metrics_port is not None or metrics_token is not None) and not metrics_available():
        raise typer.BadParameter(
            "metrics need prometheus-client: pip install 'peerwire[metrics]'",
            param_hint="--metrics-port/--metrics-token",
        )
    if http is HTTPServerName.uvicorn:
        _require_uvicorn()
    http_limits = _http_limits(http, head_timeout, body_timeout, keep_alive)
    task_store = _store(store, retain_finished)
    tls = _tls(ssl_certfile, ssl_keyfile, ssl_ca_certs, require_client_cert)
    push_settings = (
        _push_settings(push_allow, push_attempts, push_timeout, push_retry_delay, push_signing_key)
        if push
        else None
    )
    queue = None
    if bus != "memory":
        queue = work_queue(bus, lease_ttl, reclaim_idle, sweep_every)
        event_bus(bus)  # a bad spec fails here, as a usage error
    agent = load_agent(target)
    verifiers = load_auth(auth) if auth is not None else None
    if verifiers is None and agent.requires_authentication:
        # What create_app would refuse, said in the CLI's terms before anything starts.
        raise SystemExit(
            f"peerwire: {agent.name!r} declares security on its card: give its verifiers "
            "with --auth MODULE:ATTR (an Authenticator, a dict of scheme name to Verifier, "
            "or a function returning one)"
        )
    signer = load_card_signer(card_signing_key) if card_signing_key is not None else None
    if tracing is not None:
        install_tracing(tracing, agent.name)
    try:
        serve(
            agent,
            auth=verifiers,
            signing_key=signer,
            host=host,
            port=port,
            public_url=public_url,
            trusted_proxies=_trusted_proxies(trusted_proxy or [], public_url),
            log_level=log_level,
            log_format=log_format.value,
            access_log=access_log,
            store=task_store,
            bus=bus,
            queue=queue,
            local_workers=local_workers,
            max_working=max_working,
            shutdown_grace=shutdown_grace,
            max_body_bytes=max_body_bytes,
            lenient_version=lenient_version,
            serve_v03=v03,
            v03_file_bytes=v03_file_bytes.value,
            grpc=grpc,
            grpc_port=grpc_port,
            grpc_public_address=grpc_public_address,
            interface_order=_interface_names(interfaces),
            push=push_settings,
            tls=tls,
            http=http.value,
            http_limits=http_limits,
            metrics=metrics,
            metrics_port=metrics_port,
            metrics_host=host,
            metrics_token=metrics_token,
            message_retention=timedelta(hours=message_retention) if message_retention else None,
        )
    except LifespanStartError as exc:
        # The agent's own code failed to start: said in one line with its cause.
        raise SystemExit(f"peerwire: {exc}") from None


def _trusted_proxies(entries: list[str], public_url: str | None) -> tuple[str, ...]:
    """``--trusted-proxy`` checked here, so a typo is a usage error, not a traceback."""
    from ..server._origin import TrustedProxies

    if entries and public_url is not None:
        raise typer.BadParameter(
            "--public-url fixes the card's URLs; forwarded headers would change nothing",
            param_hint="--trusted-proxy",
        )
    try:
        TrustedProxies(entries)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--trusted-proxy") from None
    return tuple(entries)


def _http_limits(
    http: HTTPServerName,
    head_timeout: float | None,
    body_timeout: float | None,
    keep_alive: float | None,
) -> HTTPLimits | None:
    if head_timeout is None and body_timeout is None and keep_alive is None:
        return None
    hint = "--head-timeout/--body-timeout/--keep-alive"
    if http is HTTPServerName.uvicorn:
        raise typer.BadParameter(
            "these limits are peerwire's HTTP server's; uvicorn has its own settings",
            param_hint=hint,
        )
    defaults = HTTPLimits()
    try:
        return HTTPLimits(
            head_timeout=defaults.head_timeout if head_timeout is None else head_timeout,
            body_timeout=defaults.body_timeout if body_timeout is None else body_timeout,
            idle_timeout=defaults.idle_timeout if keep_alive is None else keep_alive,
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=hint) from None


def _require_uvicorn() -> None:
    """Say so before any work when the chosen server is not installed."""
    try:
        from ..server import _uvicorn  # noqa: F401
    except ImportError as exc:
        raise typer.BadParameter(str(exc), param_hint="--http") from None


def _tls(
    certfile: Path | None, keyfile: Path | None, ca_certs: Path | None, require_client_cert: bool
) -> ServerTLS | None:
    if certfile is None:
        if keyfile is not None or ca_certs is not None or require_client_cert:
            raise typer.BadParameter(
                "the TLS options need a server certificate", param_hint="--ssl-certfile"
            )
        return None
    if keyfile is None:
        raise typer.BadParameter(
            "the certificate's private key is needed", param_hint="--ssl-keyfile"
        )
    try:
        return ServerTLS(
            certfile, keyfile, client_ca=ca_certs, require_client_cert=require_client_cert
        )
    except (ValueError, OSError) as exc:
        # ssl.SSLError is an OSError: a key that does not match, a file that is not PEM.
        raise typer.BadParameter(str(exc), param_hint="--ssl-certfile") from None


def _push_settings(
    allow: list[str] | None,
    attempts: int,
    timeout: float,
    retry_delay: float,
    signing_key: Path | None,
) -> PushSettings:
    entries = tuple(part.strip() for entry in allow or () for part in entry.split(","))
    key = None
    if signing_key is not None:
        text = signing_key.read_text()
        key = json.loads(text) if text.lstrip().startswith("{") else text
    try:
        return PushSettings(
            allow=tuple(entry for entry in entries if entry),
            max_attempts=attempts,
            attempt_timeout=timeout,
            retry_delay=retry_delay,
            signing_key=key,
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--push-*") from None


def _store(spec: str, retain_days: float | None) -> TaskStore:
    if retain_days is not None and retain_days <= 0:
        raise typer.BadParameter(
            "must be a positive number of days", param_hint="--retain-finished"
        )
    retain = None if retain_days is None else timedelta(days=retain_days)
    try:
        return open_store(spec, retain_finished=retain)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--store") from None


def _interface_names(text: str) -> list[str]:
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in INTERFACE_NAMES]
    if unknown:
        known = ",".join(INTERFACE_NAMES)
        raise typer.BadParameter(
            f"unknown interface(s) {', '.join(unknown)} (known: {known})",
            param_hint="--interfaces",
        )
    return names
