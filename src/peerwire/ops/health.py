"""Liveness and readiness: ``/healthz`` and ``/readyz`` (docs/OPERATIONS.md, "Health").

* **Liveness** (``/healthz``): 200 while the process runs and its event loop answers. It
  checks nothing else, on purpose: a liveness probe that fails when the database is away
  makes an orchestrator restart every replica at once, which fixes nothing.
* **Readiness** (``/readyz``): 200 when this process can serve: each named check (the task
  store's ``check_health``, a PING to Redis when a bus or work queue uses it) answered, and
  the process is not shutting down; otherwise 503 with a small JSON body naming what is down
  (``{"status": "unavailable", "checks": {"store": "down", "bus": "ok"}}``). Why a check
  failed is logged (once per change), never sent: the probe is not authenticated.

``Readiness`` keeps the last report for ``ttl`` seconds (a probe storm costs one check per
``ttl``) and never runs a check twice at once: a check still running when the next probe
comes is waited for again, not repeated, and one that takes longer than ``timeout`` counts as
down while it goes on. ``answer`` serves both paths to an ASGI app; ``HealthServer`` serves
them on a port of their own, for a process without HTTP (``peerwire worker --health-port``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from ..httpd import CannotListenError

__all__ = [
    "HEALTHZ_PATH",
    "READYZ_PATH",
    "HealthServer",
    "Readiness",
    "ReadinessReport",
    "answer",
]

log = logging.getLogger("peerwire.health")

HEALTHZ_PATH = "/healthz"
READYZ_PATH = "/readyz"

Check = Callable[[], Awaitable[object]]
"""A readiness check: returns when the dependency answers, raises when it does not."""

_LIVE_BODY = b'{"status":"ok"}'


@dataclass(frozen=True, slots=True)
class ReadinessReport:
    """One readiness answer: ``status`` is ``ready``, ``unavailable`` (a check is down),
    ``draining`` (shutting down) or ``starting`` (not serving yet); ``checks`` says ``ok``
    or ``down`` per check name; ``reasons`` why each one that is down is (logged only)."""

    status: str
    checks: Mapping[str, str] = field(default_factory=dict)
    reasons: Mapping[str, str] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return self.status == "ready"

    @property
    def http_status(self) -> int:
        return 200 if self.ready else 503

    def body(self) -> bytes:
        """The JSON the probe gets: the status and each check's ``ok``/``down``."""
        document: dict[str, Any] = {"status": self.status}
        if self.checks:
            document["checks"] = dict(self.checks)
        return json.dumps(document, separators=(",", ":")).encode()


class Readiness:
    """Whether this process is ready to serve, from named checks (see the module docstring).

    ``accepting`` says whether the process takes work (the runner's ``accepting``): while it
    does not, the report is ``starting`` until it first did, ``draining`` after, and no check
    runs. ``ttl``: how long a report is reused; ``timeout``: how long a probe waits for a
    check before counting it as down.
    """

    def __init__(
        self,
        checks: Mapping[str, Check],
        *,
        accepting: Callable[[], bool] | None = None,
        ttl: float = 1.0,
        timeout: float = 2.0,
    ) -> None:
        if ttl < 0 or timeout <= 0:
            raise ValueError("ttl must not be negative and timeout must be positive")
        self.checks = dict(checks)
        self.accepting = accepting
        self.ttl = ttl
        self.timeout = timeout
        self._served = False
        self._cached: ReadinessReport | None = None
        self._cached_until = 0.0
        self._running: dict[str, asyncio.Task[object]] = {}
        self._last_status = ""

    async def report(self) -> ReadinessReport:
        """The readiness now (at most ``ttl`` seconds old)."""
        if self.accepting is not None and not self.accepting():
            return self._noted(ReadinessReport("draining" if self._served else "starting"))
        self._served = True
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self._cached is not None and now < self._cached_until:
            return self._cached
        report = await self._run_checks(loop)
        self._cached, self._cached_until = report, loop.time() + self.ttl
        return self._noted(report)

    async def _run_checks(self, loop: asyncio.AbstractEventLoop) -> ReadinessReport:
        tasks = {name: self._task(name, check, loop) for name, check in self.checks.items()}
        if tasks:
            await asyncio.wait(tasks.values(), timeout=self.timeout)
        checks: dict[str, str] = {}
        reasons: dict[str, str] = {}
        for name, task in tasks.items():
            if not task.done():
                reasons[name] = f"no answer within {self.timeout:g} s"
            elif task.cancelled():
                reasons[name] = "the check was cancelled"
            elif (error := task.exception()) is not None:
                reasons[name] = f"{type(error).__name__}: {error}"
            checks[name] = "down" if name in reasons else "ok"
        return ReadinessReport("unavailable" if reasons else "ready", checks, reasons)

    def _task(
        self, name: str, check: Check, loop: asyncio.AbstractEventLoop
    ) -> asyncio.Task[object]:
        """The check's run in progress, or a new one: never two of one check at once."""
        running = self._running.get(name)
        if running is not None and not running.done() and running.get_loop() is loop:
            return running
        task: asyncio.Task[object] = loop.create_task(
            _call(check), name=f"peerwire readiness {name}"
        )
        task.add_done_callback(_retrieve)
        self._running[name] = task
        return task

    def _noted(self, report: ReadinessReport) -> ReadinessReport:
        """Log each change of status (with the reasons, which the probe does not get)."""
        if report.status != self._last_status:
            first = not self._last_status
            self._last_status = report.status
            if report.status == "unavailable":
                down = "; ".join(f"{name}: {why}" for name, why in report.reasons.items())
                log.warning("peerwire: not ready: %s", down, extra={"readiness": report.status})
            elif report.ready and not first:
                log.warning("peerwire: ready again", extra={"readiness": report.status})
            elif report.status == "draining":
                log.info("peerwire: not ready: shutting down", extra={"readiness": "draining"})
        return report


async def _call(check: Check) -> object:
    return await check()


def _retrieve(task: asyncio.Task[object]) -> None:
    # A check that outlived its probe may fail unseen: its exception is not an "unretrieved" one.
    if not task.cancelled():
        task.exception()


# -- serving the two paths --------------------------------------------------------------------

Scope = MutableMapping[str, Any]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

_HEADERS = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]


async def answer(path: str, scope: Scope, send: Send, readiness: Readiness | None) -> None:
    """Answer ``GET``/``HEAD`` of ``HEALTHZ_PATH`` or ``READYZ_PATH`` (``path``: the route
    below any mount prefix) in ASGI; ``readiness`` ``None``: ready whenever live."""
    method = scope.get("method", "GET")
    if method not in ("GET", "HEAD"):
        body = b"Method Not Allowed"
        headers = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"allow", b"GET, HEAD"),
            (b"content-length", b"%d" % len(body)),
        ]
        await send({"type": "http.response.start", "status": 405, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        return
    status, body = await respond_to(path, readiness)
    headers = [*_HEADERS, (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if method == "HEAD" else body})


async def respond_to(path: str, readiness: Readiness | None) -> tuple[int, bytes]:
    """The status and JSON body for a health path (``HEALTHZ_PATH`` or ``READYZ_PATH``)."""
    if path == READYZ_PATH:
        if readiness is None:
            return 200, ReadinessReport("ready").body()
        report = await readiness.report()
        return report.http_status, report.body()
    return 200, _LIVE_BODY


# -- a port of its own ------------------------------------------------------------------------

_MAX_HEAD_BYTES = 8192
_HEAD_TIMEOUT_S = 5.0
_REASONS = {200: b"OK", 404: b"Not Found", 405: b"Method Not Allowed", 503: b"Service Unavailable"}


class HealthServer:
    """``/healthz`` and ``/readyz`` on a TCP port of their own, for a process that serves no
    HTTP (``peerwire worker --health-port``): HTTP/1.1, one request per connection, a head
    of at most 8 KiB within 5 s; anything else is 404 (or 405 for other methods).

    ``port=0`` picks a free port (``port`` says which, once started). Use as
    ``async with HealthServer(readiness, port=8081):``."""

    def __init__(
        self, readiness: Readiness | None, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.readiness = readiness
        self.host = host
        self.port = port
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        """Listen (``CannotListenError``, an ``OSError``, when the address cannot be bound)."""
        if self._server is not None:
            return
        try:
            # ``limit``: a head longer than that ends the connection (LimitOverrunError).
            self._server = await asyncio.start_server(
                self._serve, self.host, self.port, limit=_MAX_HEAD_BYTES
            )
        except OSError as exc:
            raise CannotListenError(
                f"cannot serve health checks on {self.host}:{self.port}: {exc.strerror or exc}"
            ) from exc
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
            await server.wait_closed()

    async def __aenter__(self) -> HealthServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(_HEAD_TIMEOUT_S):
                head = await reader.readuntil(b"\r\n\r\n")
            status, body, method = await self._respond(head)
            reason = _REASONS.get(status, b"")
            writer.write(
                b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncache-control: no-store\r\n"
                b"content-length: %d\r\nconnection: close\r\n\r\n%s"
                % (status, reason, len(body), b"" if method == b"HEAD" else body)
            )
            await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            pass  # a client that sent no request, too long a head, or left: nothing to answer
        finally:
            writer.close()

    async def _respond(self, head: bytes) -> tuple[int, bytes, bytes]:
        method, _, rest = head.partition(b" ")
        target = rest.split(b" ", 1)[0].split(b"?", 1)[0].decode("latin-1")
        if target not in (HEALTHZ_PATH, READYZ_PATH):
            return 404, b'{"status":"not found"}', method
        if method not in (b"GET", b"HEAD"):
            return 405, b'{"status":"method not allowed"}', method
        status, body = await respond_to(target, self.readiness)
        return status, body, method
