"""The plain ASGI application: agent card, JSON-RPC endpoint, SSE streams, request limits.

Raw ASGI on purpose: measured here, Starlette's routing and the task group it adds to every
stream cost 30-50% of throughput. Routing is a dict lookup on the path; everything A2A happens
in the dispatcher. ``serve`` runs it on peerwire's own HTTP server (``peerwire.httpd``); any
ASGI server can run it too (it speaks the lifespan protocol).

Mounted in another application (docs/howto/mounting.md): under a prefix (Starlette's and
FastAPI's ``Mount``, Litestar's ``is_mount``, ``uvicorn --root-path``) it routes on the path
below the prefix (``_mount``) and serves its card there with URLs under the prefix
(``card_at``). A trailing slash is accepted on the JSON-RPC, card and REST paths (Litestar
adds one). The host need not run its lifespan: the first request that finds the store and
runner stopped starts them (``_first_use``; they stop when the event loop ends); a host that
runs it (``lifespan=app.lifespan``, or ``app.lifespan()`` entered from its own) gets the
graceful drain at its shutdown, as ``serve`` does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from time import perf_counter
from typing import TYPE_CHECKING

from ..bindings import jsonrpc
from ..bindings.sse import event_framer, frame
from ..compat.v03.files import FileBytes
from ..compat.v03.jsonrpc import is_v03_method
from ..errors import (
    A2AError,
    ContentTypeNotSupportedError,
    InternalError,
    InvalidRequestError,
    MethodNotFoundError,
    ServerBusyError,
    VersionNotSupportedError,
)
from ..ops import health, tracing
from ..ops.logs import ACCESS_SCOPE_KEY, AccessLog
from ..protocol import PROTOCOL_VERSION, check_version, format_extensions, negotiate_extensions
from ._authn import authenticate_http, challenge_headers
from ._first_use import FirstUse
from ._http import BodyCutShort as _BodyCutShort
from ._http import BodyTooLarge as _BodyTooLarge
from ._http import Headers as _Headers
from ._http import Receive, Scope, Send, send_event_stream
from ._http import header as _header
from ._http import is_json as _is_json
from ._http import plain as _plain
from ._http import query_param as _query_param
from ._http import read_body as _read_body
from ._http import respond as _respond
from ._mount import mount_prefix, route_path
from ._origin import RequestOrigin
from ._v03 import V03Server
from .card import CARD_PATH, CardForms, DocumentSigner, v03_bindings_of
from .dispatch import CallContext, Dispatcher, TaskStream
from .rest import RestHandler

if TYPE_CHECKING:
    from ..security import Authenticator
    from ..security.principal import Principal
    from ..types import AgentCard, StreamResponse

__all__ = ["A2AApp", "ASGIApp"]

log = logging.getLogger("peerwire.server")

ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# Cards kept encoded by origin and mount prefix: callers pick both (a ``Host`` header, a
# mount path that takes parameters, ``/{tenant}/a2a``), so the cache is bounded, the least
# recently served dropped first.
_MAX_MOUNTED_CARDS = 64


class A2AApp:
    """An agent as an ASGI application."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        *,
        rpc_path: str = "/",
        rest_path: str | None = "/rest",
        max_body_bytes: int = 10 * 1024 * 1024,
        lenient_version: bool = False,
        card_max_age: int = 300,
        keepalive_seconds: float = 15.0,
        lifespan: Callable[[], contextlib.AbstractAsyncContextManager[None]] | None = None,
        authenticator: Authenticator | None = None,
        documents: Mapping[str, bytes] | None = None,
        card_at: Callable[[str | None, str], AgentCard] | None = None,
        origins: RequestOrigin | None = None,
        serve_v03: bool = True,
        v03_bindings: Collection[str] | None = None,
        card_signer: DocumentSigner | None = None,
        v03_file_bytes: FileBytes = "auto",
        routes: Mapping[str, ASGIApp] | None = None,
        readiness: health.Readiness | None = None,
        access_log: bool = False,
    ) -> None:
        """``card_at(origin, prefix)`` is the card as served to a request that reached
        ``origin`` (``scheme://host[:port]``; ``None``: the card's own) under a mount prefix
        (``/a2a``, percent-encoded): its URLs there; ``None``: the dispatcher's card under
        any. ``origins`` tells each request's origin (``None``: the card's URLs are fixed).

        ``serve_v03``: also answer A2A 0.3 requests (JSON-RPC, and REST under ``rest_path``),
        told apart by their shape (docs/COMPATIBILITY.md); off, their methods get -32601 and
        their routes 404. ``v03_bindings``: the bindings the card offers 0.3 on (its 0.3
        members ``url``, ``preferredTransport``, ...); by default those this app serves 0.3
        on (``card.v03_bindings_of``). The card is served in two forms then: the 1.0 card to a
        request whose ``A2A-Version`` names 1.x, the dual document to the others
        (``card.CardForms``); ``card_signer`` signs the dual document as served (the card's
        own signatures are over its 1.0 members). ``v03_file_bytes``: how 0.3 REST file bytes
        are read (``compat.v03.files``).

        ``routes``: exact paths served by an ASGI app of their own (``/metrics``), before
        every A2A route, without A2A authentication (each checks what it needs itself) and
        without starting the agent on first use.

        ``/healthz`` (liveness) and ``/readyz`` (readiness: ``readiness``, by default the
        store's ``check_health`` while the runner accepts work) are answered before
        authentication, under the mount prefix when mounted (docs/OPERATIONS.md).
        ``access_log``: one ``peerwire.access`` record per request (``ops.logs.AccessLog``)."""
        self.dispatcher = dispatcher
        # Operations routes (``/metrics``) by exact path; looked up before everything else.
        self._routes = dict(routes or {})
        # Liveness needs nothing started; readiness (below) starts the agent on first use,
        # or a mounted app whose host runs no lifespan would never become ready.
        self._routes.setdefault(health.HEALTHZ_PATH, self._liveness)
        self.readiness = readiness or health.Readiness(
            {"store": dispatcher.store.check_health},
            accepting=lambda: dispatcher.runner.accepting,
        )
        # None: no access log, and requests pay nothing for it.
        self._access_log = AccessLog(binding_of=self._binding_of) if access_log else None
        # None: metrics are off, and the JSON-RPC path does no metrics work at all.
        self._meter = None if dispatcher.metrics is None else dispatcher.metrics.requests("jsonrpc")
        # The SERVER spans of JSON-RPC requests (made only while ``tracing.STATE.tracer`` is set).
        self._spans = tracing.ServerSpans("JSONRPC", "1.0", dispatcher.card)
        tracing.refresh()
        # Public JSON documents by path (the push-signing JWKS), served like the card.
        self._documents = dict(documents or {})
        # Checks every request but the public card; None: the card requires no credentials.
        self.authenticator = authenticator
        self.rpc_path = rpc_path
        self.max_body_bytes = max_body_bytes
        self.lenient_version = lenient_version
        self.keepalive_seconds = keepalive_seconds
        self._card_max_age = card_max_age
        self._encoded_card: CardForms | None = None
        self._card_signer = card_signer
        self._card_at = card_at
        self._origins = origins
        self._vary = (
            [] if origins is None or not origins.vary else [(b"vary", b", ".join(origins.vary))]
        )
        self._mounted_cards: dict[tuple[str | None, str], tuple[AgentCard, CardForms]] = {}
        self._lifespan = lifespan
        # A host that mounts the app runs no lifespan of it: the first request starts it.
        self._first_use = (
            None
            if lifespan is None
            else FirstUse(
                lifespan,
                name=dispatcher.card().name,
                grace=dispatcher.runner.shutdown_grace,
                on_loop_end=self._ended_with_loop,
            )
        )
        self._start_on_first_use = lifespan is not None
        # The other spelling of each exact path (with or without a trailing slash).
        self._aliases = {_other_spelling(p): p for p in (rpc_path, CARD_PATH, *self._documents)}
        card = dispatcher.card()
        self._supported_extensions = tuple(e.uri for e in card.capabilities.extensions)
        self._required_extensions = tuple(e.uri for e in card.capabilities.extensions if e.required)
        # REST owns every path under its prefix; "" (or "/") puts it at the root, where the
        # exact JSON-RPC and card paths above still win.
        self.rest_path = None if rest_path is None else rest_path.rstrip("/")
        self.serve_v03 = serve_v03
        self.v03_bindings = (
            v03_bindings_of(serve_v03=serve_v03, rest=rest_path is not None)
            if v03_bindings is None
            else frozenset(v03_bindings)
        )
        self._v03 = (
            V03Server(
                dispatcher,
                bindings=self.v03_bindings,
                keepalive_seconds=keepalive_seconds,
                supported_extensions=self._supported_extensions,
                required_extensions=self._required_extensions,
                authenticator=authenticator,
                file_bytes=v03_file_bytes,
            )
            if serve_v03
            else None
        )
        self._rest = (
            None
            if self.rest_path is None
            else RestHandler(
                dispatcher,
                prefix=self.rest_path,
                max_body_bytes=max_body_bytes,
                lenient_version=lenient_version,
                keepalive_seconds=keepalive_seconds,
                supported_extensions=self._supported_extensions,
                required_extensions=self._required_extensions,
                authenticator=authenticator,
                v03=self._v03,
                reached=self._reached if card_at is not None else None,
            )
        )

    @contextlib.asynccontextmanager
    async def lifespan(self, host: object = None) -> AsyncIterator[None]:
        """Start the store, runner and bus; stop them on exit (for embedding in another app).

        ``host`` is ignored: it lets a host that calls its lifespan with itself take this one
        as is (``FastAPI(lifespan=a2a.lifespan)``, Starlette's, Litestar's ``lifespan=[...]``).
        Entered once a first request has started them (the host served the app before its
        lifespan began), it takes that run over: it stops it, with the drain, on exit.
        """
        tracing.refresh()  # a provider installed after the app was built, before it started
        if self._lifespan is None:
            yield
            return
        self._start_on_first_use = False
        first_use = self._first_use
        if first_use is not None and first_use.active:
            await first_use.start()
            try:
                yield
            finally:
                await first_use.stop()
            return
        async with self._lifespan():
            yield

    def _ended_with_loop(self) -> None:
        # The loop that ran the first request's start has ended: another may start it again.
        self._start_on_first_use = True

    @property
    def card(self) -> CardForms:
        card = self.dispatcher.card()
        # Re-encoded when the card changes (the gRPC interface joins it once its port is bound).
        if self._encoded_card is None or self._encoded_card.card is not card:
            self._encoded_card = self._forms_of(card)
        return self._encoded_card

    def _forms_of(self, card: AgentCard) -> CardForms:
        return CardForms.of(
            card, self._card_max_age, v03_bindings=self.v03_bindings, sign=self._card_signer
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            if self._access_log is not None and ACCESS_SCOPE_KEY not in scope:
                await self._access_log.around(self, scope, receive, send)
                return
            path = scope["path"]
            root = scope.get("root_path")
            if root:  # mounted under a prefix (_mount.py)
                path = route_path(path, root)
            if self._routes and path in self._routes:
                await self._routes[path](scope, receive, send)
                return
            if self._start_on_first_use and not await self._first_request(scope, send, path):
                return
            if path == self.rpc_path:
                await self._jsonrpc(scope, receive, send)
            elif path == CARD_PATH:
                await self._serve_card(scope, send)
            elif path in self._documents:
                await self._serve_document(scope, send, self._documents[path])
            elif path in self._aliases:
                await self._serve_alias(scope, receive, send, self._aliases[path])
            elif path == health.READYZ_PATH:
                await health.answer(path, scope, send, self.readiness)
            elif self._rest is not None and self._rest.owns(path):
                await self._rest.handle(scope, receive, send, path)
            elif path[:1] != "/" and path:  # Litestar's mount at "/" drops the leading slash
                await self({**scope, "path": "/" + path}, receive, send)
            else:
                await _plain(send, 404, b"Not Found")
        elif kind == "lifespan":
            await self._run_lifespan(receive, send)

    def _binding_of(self, scope: Scope) -> str:
        """What a request reached, for an access log line no binding noted."""
        path: str = scope["path"]
        root = scope.get("root_path")
        if root:
            path = route_path(path, root)
        path = self._aliases.get(path) or path
        if path == self.rpc_path:
            return "jsonrpc"
        if path == CARD_PATH:
            return "card"
        if path in (health.HEALTHZ_PATH, health.READYZ_PATH):
            return "health"
        if self._rest is not None and self._rest.owns(path):
            return "rest"
        return ""

    async def _liveness(self, scope: Scope, receive: Receive, send: Send) -> None:
        await health.answer(health.HEALTHZ_PATH, scope, send, None)

    async def _serve_alias(self, scope: Scope, receive: Receive, send: Send, path: str) -> None:
        if path == self.rpc_path:
            await self._jsonrpc(scope, receive, send)
        elif path == CARD_PATH:
            await self._serve_card(scope, send)
        else:
            await self._serve_document(scope, send, self._documents[path])

    async def _first_request(self, scope: Scope, send: Send, path: str) -> bool:
        """Start the lifespan no host ran; ``False`` if this request was refused for it."""
        assert self._first_use is not None
        try:
            await self._first_use.start()
            self._start_on_first_use = False  # until the loop that runs it ends
            return True
        except Exception:  # logged where it was raised; the next request tries again
            pass
        path = self._aliases.get(path, path)
        if path == CARD_PATH or path in self._documents:
            return True  # served without the runner
        error = ServerBusyError("The agent could not start (see the server's log); retry later")
        if path == self.rpc_path:
            await self._jsonrpc_error(send, b"null", error)
        elif self._rest is not None and self._rest.owns(path):
            await self._rest.refuse(send, error)
        else:
            return True  # a 404 is a 404
        return False

    # -- lifespan -----------------------------------------------------------------------------

    async def _run_lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        assert message["type"] == "lifespan.startup"
        try:
            async with self.lifespan():
                await send({"type": "lifespan.startup.complete"})
                message = await receive()
                assert message["type"] == "lifespan.shutdown"
        except Exception as exc:
            log.exception("peerwire: lifespan failed")
            failed = (
                "lifespan.shutdown.failed"
                if message["type"] == "lifespan.shutdown"
                else "lifespan.startup.failed"
            )
            await send({"type": failed, "message": str(exc)})
            return
        await send({"type": "lifespan.shutdown.complete"})

    # -- the agent card -----------------------------------------------------------------------

    async def _serve_card(self, scope: Scope, send: Send) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await _plain(send, 405, b"Method Not Allowed", [(b"allow", b"GET, HEAD")])
            return
        forms = self.card if self._card_at is None else self._card_under(scope)
        header = _header(scope, b"a2a-version")
        version = header.decode("latin-1") if header is not None else None
        if version is None:
            version = _query_param(scope, "A2A-Version")
        if version is None and self.lenient_version:
            version = PROTOCOL_VERSION  # lenient: a request without the header is a 1.0 one
        card = forms.for_version(version)
        headers = forms.headers_of(card)
        if card.not_modified(
            _header(scope, b"if-none-match"), _header(scope, b"if-modified-since")
        ):
            await send(
                {
                    "type": "http.response.start",
                    "status": 304,
                    "headers": [*headers[1:], *self._vary],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return
        body = b"" if scope["method"] == "HEAD" else card.body
        headers.extend([*self._vary, (b"content-length", b"%d" % len(card.body))])
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _reached(self, scope: Scope, path: str) -> tuple[str | None, str]:
        """Where a request for ``path`` (below any mount prefix) reached the app: its origin
        (``None`` without one to go by) and the mount prefix, as the card's URLs name them."""
        origin = None if self._origins is None else self._origins.of(scope)
        return origin, mount_prefix(scope, path)

    def _card_under(self, scope: Scope) -> CardForms:
        """The card with its URLs where this request came: its origin, under its prefix."""
        prefix = mount_prefix(scope, CARD_PATH)
        origin = None if self._origins is None else self._origins.of(scope)
        if not prefix and origin is None:
            return self.card
        base = self.dispatcher.card()
        key = (origin, prefix)
        cards = self._mounted_cards
        known = cards.pop(key, None)  # put back last: the most recently served
        if known is not None and known[0] is base:
            cards[key] = known
            return known[1]
        assert self._card_at is not None
        encoded = self._forms_of(self._card_at(origin, prefix))
        while len(cards) >= _MAX_MOUNTED_CARDS:
            del cards[next(iter(cards))]
        cards[key] = (base, encoded)
        return encoded

    async def _serve_document(self, scope: Scope, send: Send, document: bytes) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await _plain(send, 405, b"Method Not Allowed", [(b"allow", b"GET, HEAD")])
            return
        headers = [
            (b"content-type", b"application/json"),
            (b"cache-control", b"max-age=%d" % self._card_max_age),
            (b"content-length", b"%d" % len(document)),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        body = b"" if scope["method"] == "HEAD" else document
        await send({"type": "http.response.body", "body": body})

    # -- JSON-RPC -----------------------------------------------------------------------------

    async def _jsonrpc(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "POST":
            await _plain(send, 405, b"Method Not Allowed", [(b"allow", b"POST")])
            return
        meter = self._meter
        started = perf_counter() if meter is not None else 0.0
        headers = _Headers(scope)
        try:
            body = await _read_body(receive, self.max_body_bytes, headers.content_length)
        except _BodyTooLarge:
            error = InvalidRequestError(
                f"Request payload validation error: the body is larger than "
                f"{self.max_body_bytes} bytes"
            )
            await _respond(send, 413, jsonrpc.encode_error(b"null", error))
            if meter is not None:
                meter.failed("", error, started)
            return
        except _BodyCutShort:
            return  # the client left mid-body: nothing to dispatch, nobody to answer
        try:
            principal = (
                None
                if self.authenticator is None
                else await authenticate_http(self.authenticator, scope)
            )
        except A2AError as error:
            if self._v03 is not None and is_v03_method(jsonrpc.method_of(body)):
                await self._v03.jsonrpc_error(send, jsonrpc.request_id_of(body), error)
                return
            await self._jsonrpc_error(send, jsonrpc.request_id_of(body), error)
            if meter is not None:
                meter.failed(jsonrpc.method_of(body) or "", error, started)
            return
        try:
            if not _is_json(headers.content_type):
                raise ContentTypeNotSupportedError(
                    "JSON-RPC requests must be sent as application/json, not "
                    f"{(headers.content_type or b'(none)').decode(errors='replace')!r}"
                )
            version = headers.version
            if version is None:
                version = _query_param(scope, "A2A-Version")
            check_version(version, lenient=self.lenient_version)
            request = jsonrpc.decode_request(body)
            extensions = negotiate_extensions(
                headers.extensions, self._supported_extensions, self._required_extensions
            )
        except A2AError as error:
            await self._refused(scope, receive, send, body, headers, principal, error)
            if meter is not None and not is_v03_method(method := jsonrpc.method_of(body)):
                meter.failed(method or "", error, started)
            return
        call = CallContext.of(principal, extensions)
        if request.method.operation == "get_extended_agent_card" and self._card_at is not None:
            call = dataclasses.replace(
                call,
                reached=self._reached(
                    scope, route_path(scope["path"], scope.get("root_path") or "")
                ),
            )
        extra = [(b"a2a-extensions", format_extensions(extensions).encode())] if extensions else []
        operation = getattr(self.dispatcher, request.method.operation)
        access = scope.get(ACCESS_SCOPE_KEY)  # None unless the access log is on
        if access is not None:
            access.noted("jsonrpc", request.method.name, request.params)
        traced = None
        if tracing.STATE.tracer is not None:  # tracing off: this attribute read is all
            traced = self._spans.start(request.method.operation, scope["headers"], request.params)
            if access is not None:
                access.traced(*traced.ids())
        try:
            if traced is None:
                result = await operation(request.params, call)
            else:
                streaming = request.method.streaming
                result = await traced.run(operation, request.params, call, streaming=streaming)
            if access is not None:
                access.answered(result)
        except A2AError as error:
            await self._jsonrpc_error(send, request.id, error, extra)
            if meter is not None:
                meter.failed(request.method.name, error, started)
            return
        except Exception:
            log.exception("peerwire: %s failed", request.method.name)
            internal = InternalError(
                "Internal error: the server failed while handling this request"
            )
            await _respond(send, 200, jsonrpc.encode_error(request.id, internal), extra)
            if meter is not None:
                meter.failed(request.method.name, internal, started)
            return
        if not request.method.streaming:
            body = jsonrpc.encode_result(request.id, {} if result is None else result)
            await _respond(send, 200, body, extra)
            if meter is not None:
                meter.ok(request.method.name, started)
            return
        if meter is not None:
            meter.ok(request.method.name, started)  # the stream is open: its own gauge follows
        await self._stream(scope, receive, send, request.id, result, extra, traced)

    async def _refused(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        body: bytes,
        headers: _Headers,
        principal: Principal | None,
        error: A2AError,
    ) -> None:
        """A request the 1.0 path refused before dispatching it. One naming a 0.3 method is
        a 0.3 request (its shape decides, whatever ``A2A-Version`` says): served as 0.3, or,
        with 0.3 off, refused as an unknown method. Only here does a request pay for asking."""
        method = jsonrpc.method_of(body)
        if is_v03_method(method):
            if self._v03 is not None:
                await self._v03.jsonrpc(scope, receive, send, body, headers, principal)
                return
            if isinstance(error, VersionNotSupportedError | MethodNotFoundError):
                error = MethodNotFoundError(
                    f"Method not found: {method!r} is an A2A 0.3 method, and this server "
                    "serves A2A 1.0 only"
                )
        await _respond(send, 200, jsonrpc.encode_error(jsonrpc.error_id(body, error), error))

    async def _jsonrpc_error(
        self,
        send: Send,
        request_id: bytes,
        error: A2AError,
        extra: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        """An error response; authentication and permission errors at HTTP level (401 with
        ``WWW-Authenticate``, 403), the others as HTTP 200 (A2A spec §9, §3.3.2)."""
        headers = [*(extra or []), *challenge_headers(error, self.authenticator)]
        status = jsonrpc.response_status(error)
        await _respond(send, status, jsonrpc.encode_error(request_id, error), headers)

    async def _stream(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        request_id: bytes,
        stream: TaskStream,
        extra: list[tuple[bytes, bytes]],
        traced: tracing.ServerCall | None = None,
    ) -> None:
        event_frame: Callable[[StreamResponse], bytes] = event_framer(
            *jsonrpc.result_envelope(request_id)
        )
        error_frame: Callable[[A2AError], bytes] = lambda error: frame(  # noqa: E731
            jsonrpc.encode_error(request_id, error)
        )
        await send_event_stream(
            scope,
            receive,
            send,
            stream,
            event_frame=event_frame,
            error_frame=error_frame,
            keepalive_seconds=self.keepalive_seconds,
            extra=extra,
            open_streams=None if self._meter is None else self._meter.streams,
            traced=traced,
        )


def _other_spelling(path: str) -> str:
    """``path`` with a trailing slash, or without the one it has."""
    return path[:-1] if path.endswith("/") else path + "/"
