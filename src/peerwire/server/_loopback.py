"""An agent served on loopback in the caller's event loop: ``live_server``.

It binds port 0 on 127.0.0.1 *before* building the app, so the card advertises the address
clients really use and no other process can take the port in between. The server runs in the
caller's event loop, in a task the context manager owns, so handlers and the caller share one
loop. It is peerwire's HTTP server, or uvicorn with ``http="uvicorn"``: the same app.

Serving, not a test helper: ``peerwire demo`` runs its agents with it, and
``peerwire.testing`` offers it to tests (the command line imports no test helpers).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol

import anyio

from ..httpd import ServerTLS
from .agent import Agent
from .app import create_app
from .asgi import A2AApp

if TYPE_CHECKING:
    from ._http import Receive, Scope, Send

__all__ = ["AppSource", "build_app", "live_server"]


AppSource = Agent | A2AApp | Callable[[str], A2AApp]
"""An agent (the app is built for the real URL), a ready app, or ``factory(public_url)``."""

_LOOPBACK = "127.0.0.1"
_STARTUP_TIMEOUT_S = 30.0
# How much longer than the runner's grace open connections get before the server drops them.
_CONNECTION_SLACK_S = 2.0


@contextlib.asynccontextmanager
async def live_server(
    source: AppSource,
    *,
    tls: ServerTLS | None = None,
    http: Literal["peerwire", "uvicorn"] = "peerwire",
    **create_app_options: Any,
) -> AsyncIterator[str]:
    """Serve ``source`` on 127.0.0.1 and a free port; yield its base URL.

    ``http`` is the HTTP server: ``"peerwire"`` (peerwire's own, as ``peerwire serve``
    runs by default) or ``"uvicorn"`` (the ``uvicorn`` extra; as ``peerwire serve --http
    uvicorn``), so a suite can check the app on both.

    ``tls`` serves HTTPS (mutual TLS when it names client CAs), and gRPC over TLS too when
    ``source`` is an ``Agent`` served with ``grpc_port``. On peerwire's server requests carry
    the client certificate in the ASGI TLS extension; uvicorn does not provide it, and an app
    with an mTLS security scheme is refused there (``ValueError``).

    ``create_app_options`` go to ``create_app`` (only when ``source`` is an ``Agent``); the
    card's ``public_url`` is the real address. On exit the server shuts down as ``serve``
    does: working tasks get the shutdown grace to finish (then fail), callers waiting on them
    get that outcome, then the connections close. An app that cannot start raises its
    startup error (on uvicorn, a ``RuntimeError`` carrying its message). Works in a test
    body and in an async fixture alike.
    """
    if http not in ("peerwire", "uvicorn"):
        raise ValueError(f"unknown HTTP server {http!r} (known: peerwire, uvicorn)")
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets that say so, and
    # accepted connections inherit it; without it each response waits ~40 ms on Nagle.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.bind((_LOOPBACK, 0))
        url = f"{'http' if tls is None else 'https'}://{_LOOPBACK}:{sock.getsockname()[1]}"
        if (
            tls is not None
            and isinstance(source, Agent)
            and create_app_options.get("grpc_port") is not None
        ):
            create_app_options = {"grpc_tls": tls, **create_app_options}
        app = build_app(source, url, create_app_options)
        grace = app.dispatcher.runner.shutdown_grace
        connection_grace = grace + _CONNECTION_SLACK_S
        server = (
            _OnUvicorn(app, tls, connection_grace)
            if http == "uvicorn"
            else _OnPeerwire(app, tls, connection_grace)
        )
        # One task owned by this context manager, awaited on every exit path. Not a task
        # group around the ``yield``: pytest-asyncio runs a fixture's setup and teardown in
        # different tasks, and a cancel scope must be exited in the task that entered it.
        serving = asyncio.get_running_loop().create_task(
            server.serve(sock), name=f"peerwire live_server {url}"
        )
        try:
            await _wait_started(server, serving)
            yield url
        finally:
            await _stop(server, serving, limit=2 * grace + 2 * _CONNECTION_SLACK_S + 5)
            failure = None if serving.cancelled() else serving.exception()
        if failure is not None:
            raise failure  # a server that crashed while the caller used it fails the caller
    finally:
        sock.close()


class _Served(Protocol):
    """What ``live_server`` needs of a server, whichever it is."""

    @property
    def started(self) -> asyncio.Event: ...

    async def serve(self, sock: socket.socket) -> None: ...

    def request_exit(self, *, force: bool = False) -> None: ...


class _OnPeerwire:
    """peerwire's HTTP server."""

    def __init__(self, app: A2AApp, tls: ServerTLS | None, connection_grace: float) -> None:
        # The "server" extra, imported here so that peerwire.testing imports without it.
        from ..httpd import HTTPServer

        self._server = HTTPServer(
            app,
            ssl_context=None if tls is None else tls.ssl_context(),
            connection_grace=connection_grace,
        )
        self.started = self._server.started

    async def serve(self, sock: socket.socket) -> None:
        await self._server.serve(sock=sock)

    def request_exit(self, *, force: bool = False) -> None:
        self._server.request_exit(force=force)


class _OnUvicorn:
    """uvicorn, shutting down in the same order (`_uvicorn`)."""

    def __init__(self, app: A2AApp, tls: ServerTLS | None, connection_grace: float) -> None:
        from . import _uvicorn  # the "uvicorn" extra

        _uvicorn.refuse_unservable(app)
        self._noted = _StartupNoted(app)
        # No logging configuration of uvicorn's own: its records go to the caller's logging.
        config = _uvicorn.uvicorn_config(
            self._noted, tls=tls, log_level=None, log_config=None, connection_grace=connection_grace
        )
        self._server = _uvicorn.UvicornServer(config, app, handle_signals=False)
        self._start_error = _uvicorn.UvicornStartError
        self.started = self._server.listening

    async def serve(self, sock: socket.socket) -> None:
        try:
            await self._server.serve(sockets=[sock])
        except self._start_error as exc:
            if self._noted.startup_failure is None:
                raise
            raise RuntimeError(
                f"the app did not start on uvicorn: {self._noted.startup_failure}"
            ) from exc

    def request_exit(self, *, force: bool = False) -> None:
        self._server.should_exit = True
        if force:
            self._server.force_exit = True


class _StartupNoted:
    """The app as ``live_server`` hands it to uvicorn: uvicorn logs why the app's startup
    failed, this keeps the reason so that the caller gets it as an exception."""

    def __init__(self, app: A2AApp) -> None:
        self.app = app
        self.startup_failure: str | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return

        async def noting(message: Any) -> None:
            if message["type"] == "lifespan.startup.failed":
                self.startup_failure = message.get("message") or "(no reason given)"
            await send(message)

        await self.app(scope, receive, noting)


async def _wait_started(server: _Served, serving: asyncio.Task[None]) -> None:
    started = asyncio.ensure_future(server.started.wait())
    try:
        with anyio.fail_after(_STARTUP_TIMEOUT_S):
            await asyncio.wait({serving, started}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        started.cancel()
    if serving.done():
        serving.result()  # the application's startup error
        raise RuntimeError("the server stopped while starting")


async def _stop(server: _Served, serving: asyncio.Task[None], limit: float) -> None:
    """Shut the server down and wait for it, even if the caller is being cancelled."""
    server.request_exit()
    with anyio.CancelScope(shield=True):
        # The runner's drain and the connections' grace are each bounded; ``limit`` bounds
        # them all.
        await asyncio.wait({serving}, timeout=limit)
        if not serving.done():
            server.request_exit(force=True)
            await asyncio.wait({serving}, timeout=_CONNECTION_SLACK_S)
        if not serving.done():
            serving.cancel()
            await asyncio.wait({serving})


def build_app(source: AppSource, public_url: str, options: dict[str, Any]) -> A2AApp:
    if isinstance(source, Agent):
        return create_app(source, public_url=public_url, **options)
    if options:
        raise TypeError(
            f"create_app options ({', '.join(sorted(options))}) apply only to an Agent, "
            "not to a ready app"
        )
    if isinstance(source, A2AApp):
        return source
    return source(public_url)
