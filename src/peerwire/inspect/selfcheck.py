"""The inspector's self-check: a quick run against any A2A agent that reports what would
break an interoperating client.

``await run_self_check(url)`` fetches the agent's card and judges it (``card.*``), then probes
every 1.0 interface the card lists, on its own binding (``interfaces.reachable``,
``version.*``, ``errors.*``), and streams one short message per binding when the card says
the agent streams (``stream.order``). Each finding names its check id, whether it passed,
how much a failure matters and the spec rule; docs/INSPECTOR.md lists every check.

Whatever the agent does (it is down, answers garbage, stalls), the result is findings, never
an exception: every request is bounded by ``timeout`` seconds, every stream by ``timeout``
and ``MAX_EVENTS`` events. The checks run concurrently per interface, so a whole run takes
a few times ``timeout`` at worst. The self-check sends GetTask of random ids, one body
that is not JSON per HTTP interface and one streamed message per binding (a task it
leaves unfinished is canceled); nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..client._card import card_url
from ..client.auth import Credential, Credentials, RequestAuth
from ..client.transports.base import ClientTLS
from ..errors import A2AError, PeerwireError
from ..types import AgentCard, Binding, decode
from ._card_fetch import fetch_card
from ._checks_card import card_findings, interfaces_of, major_minor
from ._checks_security import security_findings, signature_findings
from ._checks_stream import MAX_EVENTS, stream_findings
from ._checks_wire import interface_findings
from ._findings import Finding, SelfCheckReport, Severity, failed, passed
from ._probes import Interface, JsonRpcProber, ProbeAuth, Prober, RestProber
from .credentials import same_agent

__all__ = ["MAX_EVENTS", "Finding", "SelfCheckReport", "Severity", "run_self_check"]

_PROBED = (Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC)


async def run_self_check(
    url: str,
    *,
    credentials: Sequence[Credential] = (),
    timeout: float = 10.0,
    headers: Mapping[str, str] | None = None,
    read_only: bool = False,
) -> SelfCheckReport:
    """Check the agent at ``url`` (its base URL or its card's URL).

    ``read_only`` checks the card only (fields, interfaces, skills, security, signature) and
    sends the agent no A2A request: no message, so no task, and nothing it refuses, so none
    of its error counters move. The interfaces are not probed; a ``selfcheck.read_only``
    note says so.

    ``credentials`` (``peerwire.client.auth`` credentials: ``BearerToken``, ``APIKey``,
    ``OAuth2ClientCredentials``, ``ClientCertificate`` ...) are presented where the card asks
    for them, as a client would; without them an agent that requires authentication is
    reported as such and checked no further. ``headers`` go with every request as given.
    ``timeout`` bounds each request and each stream, in seconds.
    """
    if timeout <= 0:
        raise ValueError("timeout must be positive")
    report = SelfCheckReport(url)
    try:
        await _check(report, url, tuple(credentials), timeout, dict(headers or {}), read_only)
    except Exception as exc:  # a bug of ours must still end in a report, and say so
        report.findings.append(
            failed(
                "selfcheck.internal",
                "error",
                "The self-check itself failed",
                f"{type(exc).__name__}: {exc}. The findings above are complete; the rest "
                "was not checked. Please report this.",
            )
        )
    return report


async def _check(
    report: SelfCheckReport,
    url: str,
    credentials: tuple[Credential, ...],
    timeout: float,
    headers: dict[str, str],
    read_only: bool,
) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        report.findings.append(
            failed(
                "card.fetch",
                "error",
                "Not an http(s) URL",
                f"{url!r}: give the agent's base URL, e.g. http://127.0.0.1:8000.",
            )
        )
        return
    chosen = Credentials(*credentials) if credentials else None
    tls = chosen.ssl_context() if chosen is not None else None
    # Redirects are followed within the origin only (``_bounded``), never by httpx; an
    # interface at another origin is probed with ``plain``: no client certificate either.
    async with (
        httpx.AsyncClient(verify=tls if tls is not None else True, follow_redirects=False) as http,
        httpx.AsyncClient(follow_redirects=False) as plain,
    ):
        fetched = await fetch_card(http, card_url(url), headers, {}, timeout)
        report.extend(fetched.findings)
        document = fetched.document
        if document is None:
            return
        report.extend(card_findings(document))
        report.extend(security_findings(document))
        report.extend(await signature_findings(document, timeout))
        if read_only:
            report.findings.append(
                failed(
                    "selfcheck.read_only",
                    "info",
                    "The interfaces were not probed (read-only)",
                    "Only the card was checked: no request was sent to the agent's "
                    "interfaces. Without --read-only the self-check sends GetTask of random "
                    "ids, malformed bodies and one streamed message per binding.",
                )
            )
            return
        auth, unusable = await _auth_for(document, chosen, headers)
        if unusable is not None:
            report.findings.append(unusable)
        probers = _probers(url, document, (http, plain), auth, timeout, chosen)
        try:
            await _probe(report, probers, document, timeout)
        finally:
            for prober in probers:
                with contextlib.suppress(Exception):
                    await prober.aclose()


async def _auth_for(
    document: Mapping[str, Any], credentials: Credentials | None, headers: dict[str, str]
) -> tuple[ProbeAuth, Finding | None]:
    """What to present on every probe (the card's choice among the credentials, and the
    headers), and a finding when credentials were given but cannot be used."""
    chosen = RequestAuth()
    problem = None
    if credentials is not None:
        try:
            card = decode(json.dumps(document), AgentCard)
        except A2AError:
            card = None  # card.fields says why; probed without credentials
        try:
            if card is not None:
                chosen = await credentials.for_card(card)
        except PeerwireError as exc:  # none fits the card, or a token could not be had
            why = exc.message if isinstance(exc, A2AError) else str(exc)
            problem = failed(
                "credentials",
                "warning",
                "The credentials given cannot be used with this card",
                f"{why}. The interfaces are probed without credentials.",
            )
    return ProbeAuth(headers={**chosen.headers, **headers}, query=dict(chosen.query)), problem


def _probers(
    url: str,
    document: Mapping[str, Any],
    clients: tuple[httpx.AsyncClient, httpx.AsyncClient],
    auth: ProbeAuth,
    timeout: float,
    credentials: Credentials | None,
) -> list[Prober]:
    """One prober per interface the self-check speaks: a standard binding at 1.0. An
    interface elsewhere than the agent at ``url`` is probed without credentials (nor the
    headers given): they were given for that agent, not for whoever its card names."""
    probers: list[Prober] = []
    for interface in interfaces_of(document):
        if interface.binding not in _PROBED or major_minor(interface.version) != "1.0":
            continue  # card.interfaces says why
        ours = same_agent(url, interface.url, grpc=interface.binding == Binding.GRPC)
        given, chosen = (auth, credentials) if ours else (ProbeAuth(), None)
        http = clients[0] if ours else clients[1]
        if interface.binding == Binding.GRPC:
            grpc_prober = _grpc_prober()
            if grpc_prober is None:
                continue  # reported by _probe: grpcio is not installed
            tls = chosen.client_tls() if chosen is not None else None
            probers.append(grpc_prober(interface, given, timeout, tls))
        elif _http_url(interface):
            cls = JsonRpcProber if interface.binding == Binding.JSONRPC else RestProber
            probers.append(cls(interface, http, given, timeout))
    return probers


def _grpc_prober() -> Callable[[Interface, ProbeAuth, float, ClientTLS | None], Prober] | None:
    """The gRPC prober, if grpcio (the ``grpc`` extra) is installed."""
    try:
        from ._probes_grpc import GrpcProber
    except ImportError:
        return None
    return GrpcProber


def _http_url(interface: Interface) -> bool:
    parts = urlsplit(interface.url)
    return parts.scheme in ("http", "https") and bool(parts.hostname)


async def _probe(
    report: SelfCheckReport,
    probers: list[Prober],
    document: Mapping[str, Any],
    timeout: float,
) -> None:
    if _grpc_prober() is None:
        for interface in interfaces_of(document):
            if interface.binding == Binding.GRPC and major_minor(interface.version) == "1.0":
                report.findings.append(
                    failed(
                        "interfaces.reachable",
                        "info",
                        "The GRPC interface is not probed",
                        "grpcio is not installed here: pip install 'peerwire[grpc]'.",
                        interface=interface.label,
                    )
                )
    results = await asyncio.gather(*(_guarded_interface(p) for p in probers))
    answering: list[Prober] = []
    for prober, (findings, answered) in zip(probers, results, strict=True):
        report.extend(findings)
        if answered:
            answering.append(prober)
    capabilities = document.get("capabilities")
    streaming = isinstance(capabilities, Mapping) and capabilities.get("streaming") is True
    if not streaming:
        report.findings.append(
            passed(
                "stream.order",
                "Streams not checked: the card does not declare streaming",
                "capabilities.streaming is not true, so clients do not stream.",
            )
        )
        return
    # One stream per binding (its first answering interface): each is a task on the agent.
    first_of: dict[str, Prober] = {}
    for prober in answering:
        first_of.setdefault(prober.interface.binding, prober)
    skill = _first_skill(document)
    streams = await asyncio.gather(*(_guarded_stream(p, timeout, skill) for p in first_of.values()))
    for findings in streams:
        report.extend(findings)


async def _guarded_interface(prober: Prober) -> tuple[list[Finding], bool]:
    try:
        return await interface_findings(prober)
    except Exception as exc:
        return [_internal(prober, exc)], False


def _first_skill(document: Mapping[str, Any]) -> str | None:
    skills = document.get("skills")
    first = skills[0] if isinstance(skills, list) and skills else None
    skill_id = first.get("id") if isinstance(first, Mapping) else None
    return skill_id if isinstance(skill_id, str) and skill_id else None


async def _guarded_stream(prober: Prober, timeout: float, skill: str | None) -> list[Finding]:
    try:
        return await stream_findings(prober, timeout, skill)
    except Exception as exc:
        return [_internal(prober, exc)]


def _internal(prober: Prober, exc: Exception) -> Finding:
    return failed(
        "selfcheck.internal",
        "error",
        f"The self-check of {prober.interface.label} failed",
        f"{type(exc).__name__}: {exc}. Please report this.",
        interface=prober.interface.label,
    )
