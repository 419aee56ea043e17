"""The inspector's backend: a small raw-ASGI app, like the rest of peerwire.

It serves the page (``static/``: HTML, plain ES modules, CSS; nothing fetched from elsewhere)
and a JSON API the page calls, plus one server-sent event stream (``/api/events``) carrying
every change as it happens: a task's timeline, a run's progress, an exchange on the wire.
The page talks only to this backend; the backend talks to the agent (``InspectorSession``).

Routes (JSON bodies; every failure is ``{"error": "..."}`` with a 4xx/5xx status, never a
traceback):

    GET    /api/state                                everything, for a page that (re)loads
    GET    /api/events                               the event stream
    POST   /api/connect            {url, keys?}      fetch and describe the agent's card
    POST   /api/credentials        {scheme, credential: {kind, ...}, url?}  (url: the agent's)
    DELETE /api/credentials/{scheme}
    POST   /api/send               {binding, text, data?, file?, streaming, taskId?, contextId?}
    GET    /api/tasks              ?binding&contextId&state&page&pageSize   (ListTasks)
    GET    /api/tasks/{id}         ?binding                                 (GetTask)
    POST   /api/tasks/{id}/cancel  {binding}
    POST   /api/tasks/{id}/subscribe {binding}
    GET    /api/tasks/{id}/delegations             what the agent's ledger holds for it
    GET    /api/tasks/{id}/push-configs            ?binding
    POST   /api/tasks/{id}/push-configs            {binding, url, token?, id?}
    GET    /api/tasks/{id}/push-configs/{config}   ?binding
    DELETE /api/tasks/{id}/push-configs/{config}   ?binding
    POST   /api/selfcheck                            the self-check's report
    DELETE /api/wire                                 forget the recorded exchanges

It holds credentials, so a page of another origin must make it do nothing. Every request is
answered only when addressed to a loopback name or the host it was told to bind (``Host``: a
DNS-rebinding page cannot reach it by another name), and refused when its ``Origin`` is
another one or its ``Sec-Fetch-Site`` says another site sent it (an ``<img>``, a form, a
``fetch``). Every API route, GET included, also wants the launch token (``token``: made per
launch, carried once by the URL printed or opened, then sent by the page as
``X-Peerwire-Token``; the event stream takes it as ``?token=``, EventSource sending no
headers): with ``--host 0.0.0.0``, where any name is accepted, it is what stops a rebinding
page. JSON bodies only (a form on another site cannot post one without the browser asking).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from ..errors import PeerwireError
from .delegations import LedgerView
from .hub import EventHub
from .page_io import InspectorError, binding_of, describe_error, error_status
from .session import InspectorSession

__all__ = ["InspectorApp"]

log = logging.getLogger("peerwire.inspect")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

MAX_REQUEST_BYTES = 12 * 1024 * 1024  # a file to send, base64, and the rest of the message
KEEPALIVE_S = 15.0
TOKEN_HEADER = b"x-peerwire-token"
# Requests a browser says came from this origin, or from no page at all (typed, a bookmark).
_SAME_SITE = frozenset({b"same-origin", b"none"})
_LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
_STATIC_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
# The page loads its own files only; no inline script, nothing from another origin.
_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)


class _Runner:
    """What peerwire's HTTP server drains before closing connections: the session's runs."""

    shutdown_grace = 2.0

    def __init__(self, app: InspectorApp) -> None:
        self._app = app

    async def drain(self) -> None:
        self._app.hub.close()
        await self._app.session.drain()


class _Dispatcher:
    def __init__(self, runner: _Runner) -> None:
        self.runner = runner


class InspectorApp:
    """The ASGI app of ``peerwire inspect``. ``allowed_hosts``: host names (besides the
    loopback ones) that requests may be addressed to. ``token``: what every API call must
    carry (default: a new random one; the page's URL is ``...?token=`` it). ``ledger``: the
    agent's delegation ledger, a store spec (``sqlite:PATH``, ``postgresql://...``: the
    agent's ``--store``), read to show each task's delegations; ``None``: not shown."""

    def __init__(
        self,
        *,
        url: str = "",
        timeout: float = 30.0,
        allowed_hosts: tuple[str, ...] = (),
        ledger: str | None = None,
        token: str | None = None,
    ) -> None:
        # Per launch: what the page was given, and a page of another origin cannot know.
        self.token = token if token is not None else secrets.token_urlsafe(32)
        self.hub = EventHub()
        self.session = InspectorSession(self.hub.publish, timeout=timeout)
        self.initial_url = url
        # Listening on every address (0.0.0.0, ::) the user asked to be reached by any name.
        self.any_host = any(h.strip("[]") in ("0.0.0.0", "::") for h in allowed_hosts)
        self.allowed_hosts = _LOOPBACK_NAMES | {h.lower() for h in allowed_hosts}
        self.dispatcher = _Dispatcher(_Runner(self))
        self._static = resources.files(__package__).joinpath("static")
        self.ledger = None if ledger is None else LedgerView(ledger)

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        try:
            if self.ledger is not None:
                # Opened first: a ledger that cannot be read stops the start, in words.
                await self.ledger.open()
            if self.initial_url:
                # The URL given on the command line: its card is shown when the page opens.
                # An agent that is not up yet is not fatal: the page says so and can retry.
                with contextlib.suppress(InspectorError, PeerwireError):
                    await self.session.connect(self.initial_url)
                self.session.url = self.session.url or self.initial_url
            yield
        finally:
            self.hub.close()
            await self.session.drain()
            if self.ledger is not None:
                await self.ledger.close()

    # -- ASGI -------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan_protocol(receive, send)
            return
        if scope["type"] != "http":
            return
        if not self._addressed_to_us(scope):
            await _json(send, 403, {"error": "this inspector answers on loopback only"})
            return
        path: str = scope["path"]
        method: str = scope["method"]
        if not self._from_our_page(scope):
            await _json(send, 403, {"error": "this inspector answers its own page only"})
            return
        if method == "GET" and not path.startswith("/api/"):
            await self._static_file(send, path)
            return
        if not self._has_token(scope):
            await _json(
                send,
                403,
                {"error": "no inspector token: open the URL peerwire inspect printed (?token=)"},
            )
            return
        if path == "/api/events" and method == "GET":
            await self._events(receive, send)
            return
        try:
            body = await _read_json(scope, receive) if method in ("POST", "PUT") else {}
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
            status, answer = await self._route(method, path, body, query)
        except InspectorError as exc:
            status, answer = exc.status, {"error": exc.message}
        except PeerwireError as exc:
            status, answer = (
                error_status(exc),
                {"error": self.session.redactor(describe_error(exc))},
            )
        except Exception as exc:  # a bug here still answers the page in words, and is logged
            log.exception("peerwire inspect: %s %s failed", method, path)
            status, answer = 500, {"error": f"the inspector failed: {describe_error(exc)}"}
        await _json(send, status, answer)

    async def _route(
        self, method: str, path: str, body: dict[str, Any], query: dict[str, str]
    ) -> tuple[int, Any]:
        session = self.session
        parts = [unquote(p) for p in path.removeprefix("/api/").split("/")]
        binding = binding_of(body.get("binding") or query.get("binding"))
        match method, parts:
            case "GET", ["state"]:
                return 200, {**session.state(), "ledger": self.ledger is not None}
            case "POST", ["connect"]:
                return 200, await session.connect(body.get("url"), pinned_keys=body.get("keys"))
            case "POST", ["credentials"]:
                return 200, await session.set_credential(
                    body.get("scheme"), body.get("credential"), body.get("url")
                )
            case "DELETE", ["credentials", scheme]:
                return 200, await session.remove_credential(scheme)
            case "POST", ["send"]:
                return 202, session.start_send(body)
            case "GET", ["tasks"]:
                return 200, await session.list_tasks(binding, query)
            case "GET", ["tasks", task_id]:
                return 200, await session.get_task(binding, task_id)
            case "POST", ["tasks", task_id, "cancel"]:
                return 200, await session.cancel_task(binding, task_id)
            case "POST", ["tasks", task_id, "subscribe"]:
                return 202, session.start_subscribe(binding, task_id)
            case "GET", ["tasks", task_id, "delegations"]:
                if self.ledger is None:
                    raise InspectorError(
                        "no delegation ledger to read: start the inspector with --ledger "
                        "STORE (the agent's store, e.g. sqlite:./peerwire.db)",
                        404,
                    )
                return 200, await self.ledger.of_task(task_id)
            case "GET", ["tasks", task_id, "push-configs"]:
                return 200, {"configs": await session.push_configs(binding, task_id)}
            case "POST", ["tasks", task_id, "push-configs"]:
                return 201, await session.create_push_config(binding, task_id, body)
            case "GET", ["tasks", task_id, "push-configs", config_id]:
                return 200, await session.get_push_config(binding, task_id, config_id)
            case "DELETE", ["tasks", task_id, "push-configs", config_id]:
                await session.delete_push_config(binding, task_id, config_id)
                return 200, {"deleted": config_id}
            case "POST", ["selfcheck"]:
                return 200, await session.self_check()
            case "DELETE", ["wire"]:
                session.wire.clear()
                return 200, {"cleared": True}
        raise InspectorError(f"no route {method} {path}", 404)

    # -- the event stream -------------------------------------------------------------------

    async def _events(self, receive: Receive, send: Send) -> None:
        listener = self.hub.listen()
        gone = asyncio.Event()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()

        watcher = asyncio.create_task(watch())
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [
                        (b"content-type", b"text/event-stream"),
                        (b"cache-control", b"no-store"),
                        (b"x-accel-buffering", b"no"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b": hello\n\n", "more_body": True})
            while not gone.is_set():
                try:
                    async with asyncio.timeout(KEEPALIVE_S):
                        framed = await listener.next()
                except TimeoutError:
                    framed = b": keep-alive\n\n"
                if framed is None:
                    break
                await send({"type": "http.response.body", "body": framed, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            self.hub.forget(listener)
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    # -- the page ---------------------------------------------------------------------------

    async def _static_file(self, send: Send, path: str) -> None:
        name = "index.html" if path in ("/", "/index.html") else path.removeprefix("/static/")
        suffix = "." + name.rsplit(".", 1)[-1] if "." in name else ""
        # Only plain names of files shipped in static/: no folders, no way out of it.
        if "/" in name or "\\" in name or name.startswith(".") or suffix not in _STATIC_TYPES:
            await _json(send, 404, {"error": f"no page at {path}"})
            return
        resource = self._static.joinpath(name)
        if not resource.is_file():
            await _json(send, 404, {"error": f"no page at {path}"})
            return
        content = resource.read_bytes()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", _STATIC_TYPES[suffix].encode()),
                    (b"content-length", str(len(content)).encode()),
                    (b"cache-control", b"no-cache"),
                    (b"content-security-policy", _CSP.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": content})

    # -- guards -----------------------------------------------------------------------------

    def _from_our_page(self, scope: Scope) -> bool:
        """Not sent by a page of another site: ``Sec-Fetch-Site`` (browsers send it on
        every request, an ``<img>`` and a form post too), except a navigation to the page
        itself (a link to it: the page holds nothing, and its API calls carry the token)."""
        headers = dict(scope.get("headers") or [])
        site = headers.get(b"sec-fetch-site")
        if site is None or site in _SAME_SITE:
            return True
        navigating = headers.get(b"sec-fetch-mode") == b"navigate"
        return navigating and scope["method"] == "GET" and not scope["path"].startswith("/api/")

    def _has_token(self, scope: Scope) -> bool:
        headers = dict(scope.get("headers") or [])
        given = headers.get(TOKEN_HEADER)
        if given is None and scope["path"] == "/api/events":
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
            given = query.get("token", "").encode("latin-1", "replace")
        return given is not None and hmac.compare_digest(given, self.token.encode())

    def _addressed_to_us(self, scope: Scope) -> bool:
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1").lower()
        if not self.any_host and _host_name(host) not in self.allowed_hosts:
            return False
        origin = headers.get(b"origin")
        if origin is not None:
            netloc = urlsplit(origin.decode("latin-1")).netloc.lower()
            if netloc != host:
                return False
        return True

    async def _lifespan_protocol(self, receive: Receive, send: Send) -> None:
        """The ASGI lifespan, for servers other than peerwire's (uvicorn)."""
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        lifespan = self.lifespan()
        try:
            await lifespan.__aenter__()
        except Exception as exc:
            await send({"type": "lifespan.startup.failed", "message": describe_error(exc)})
            return
        await send({"type": "lifespan.startup.complete"})
        await receive()  # lifespan.shutdown
        await lifespan.__aexit__(None, None, None)
        await send({"type": "lifespan.shutdown.complete"})


def _host_name(host: str) -> str:
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if ":" in host else host


async def _read_json(scope: Scope, receive: Receive) -> dict[str, Any]:
    headers = dict(scope.get("headers") or [])
    content_type = headers.get(b"content-type", b"").decode("latin-1")
    chunks = []
    size = 0
    more = True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise InspectorError("the page went away", 400)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            raise InspectorError(f"the request is larger than {MAX_REQUEST_BYTES} bytes", 413)
        chunks.append(chunk)
        more = message.get("more_body", False)
    raw = b"".join(chunks)
    if not raw:
        return {}
    if not content_type.startswith("application/json"):
        raise InspectorError("send JSON (Content-Type: application/json)", 415)
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise InspectorError(f"the request is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise InspectorError("the request must be a JSON object")
    return body


async def _json(send: Send, status: int, body: Any) -> None:
    content = json.dumps(body, ensure_ascii=False).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(content)).encode()),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": content})
