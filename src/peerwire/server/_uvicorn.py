"""Serving an ``A2AApp`` on uvicorn instead of peerwire's HTTP server (the ``uvicorn`` extra).

uvicorn's own shutdown waits for open connections to finish their answers and only then runs
the app's lifespan shutdown, which is where the runner drains. A blocking SendMessage on a
working task, or a stream following one, would hold its connection until uvicorn's timeout
cut it off without an outcome. ``UvicornServer`` therefore shuts down in the order
``peerwire.httpd.HTTPServer`` does: stop accepting, close idle connections, drain the runner
(working tasks get the shutdown grace, then fail, and their callers get that outcome), give
the answers still being written ``connection_grace`` seconds, then exit the lifespan.

What uvicorn cannot do is refused here, before it starts: it does not put the client
certificate in the ASGI TLS extension, so an mTLS security scheme could never authenticate
anyone.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import math
import signal
import socket
import ssl
from collections.abc import Generator
from typing import Any

try:
    import uvicorn
except ImportError as exc:  # tests/sample_agents/test_serve_command.py hides uvicorn
    raise ImportError(
        "serving on uvicorn needs uvicorn installed: pip install 'peerwire[uvicorn]'"
    ) from exc

from ..errors import PeerwireError
from ..httpd import ServerTLS
from .asgi import A2AApp

__all__ = [
    "UvicornServer",
    "UvicornStartError",
    "refuse_unservable",
    "run_uvicorn",
    "uvicorn_config",
]

# How often a shutdown in progress looks whether a second signal asked to skip the grace
# (uvicorn's own loop polls its flags at the same pace).
_POLL_S = 0.1


class UvicornStartError(PeerwireError, RuntimeError):
    """uvicorn did not start: the app's startup failed, or the address cannot be bound."""


def refuse_unservable(app: A2AApp) -> None:
    """Raise ``ValueError`` when ``app`` needs what uvicorn does not provide."""
    authenticator = app.authenticator
    if authenticator is None:
        return
    mtls = sorted(
        name
        for name, scheme in authenticator.schemes.items()
        if scheme.mtls_security_scheme is not None and name in authenticator.verifiers
    )
    if mtls:
        raise ValueError(
            f"the card's mTLS security scheme ({', '.join(mtls)}) identifies callers by their "
            "client certificate, which reaches the app only through the ASGI TLS extension; "
            "uvicorn does not provide it, so no caller could authenticate with it. Serve on "
            "peerwire's HTTP server (http='peerwire', peerwire serve --http peerwire)"
        )


def uvicorn_config(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    tls: ServerTLS | None = None,
    log_level: str | int | None = "warning",
    log_config: Any = uvicorn.config.LOGGING_CONFIG,
    connection_grace: float,
) -> uvicorn.Config:
    """uvicorn's settings for an A2A app: its lifespan on (store, runner, gRPC), no WebSocket
    upgrades (A2A has none), TLS from the very ``SSLContext`` peerwire's server would use."""
    options: dict[str, Any] = {}
    if tls is not None:
        if "ssl_context_factory" not in inspect.signature(uvicorn.Config).parameters:
            raise RuntimeError(
                f"TLS on uvicorn needs uvicorn 0.47 or later (installed: {uvicorn.__version__}): "
                "pip install 'peerwire[uvicorn]'"
            )
        # The same context as peerwire's server: TLS 1.2 at least, client CAs, verify mode.
        options["ssl_context_factory"] = _context_factory(tls)
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        lifespan="on",
        ws="none",
        # peerwire's own access log (``create_app(access_log=True)``) reads the same on
        # either server; uvicorn's would say each request a second time.
        access_log=False,
        log_level=log_level,
        log_config=log_config,
        timeout_graceful_shutdown=math.ceil(connection_grace),
        **options,
    )


def _context_factory(tls: ServerTLS) -> Any:
    def factory(config: uvicorn.Config, default: Any) -> ssl.SSLContext:
        return tls.ssl_context()

    return factory


class UvicornServer(uvicorn.Server):
    """uvicorn's server, shutting down in an A2A server's order (see the module docstring).

    ``handle_signals``: SIGINT and SIGTERM begin the shutdown, a second one skips the grace
    (off for a server embedded in a caller's loop, such as ``live_server``'s).
    """

    def __init__(self, config: uvicorn.Config, app: A2AApp, *, handle_signals: bool) -> None:
        super().__init__(config)
        self._runner = app.dispatcher.runner
        self._handle_signals = handle_signals
        self.listening = asyncio.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets=sockets)
        except SystemExit:
            # uvicorn exits the process here; as a library we say so and let the caller decide.
            config = self.config
            reason = (
                "the app's startup failed"
                if self.lifespan.should_exit
                else f"cannot listen on {config.host}:{config.port}"
            )
            raise UvicornStartError(f"uvicorn did not start: {reason} (its log says why)") from None
        self.listening.set()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        # Idle keep-alive connections close now; busy ones answer (saying "close") first.
        for connection in list(self.server_state.connections):
            connection.shutdown()
        if not self.force_exit:
            await self._drain()
        await super().shutdown(sockets=sockets)

    async def _drain(self) -> None:
        draining = asyncio.ensure_future(self._runner.drain())
        while not self.force_exit:
            done, _ = await asyncio.wait({draining}, timeout=_POLL_S)
            if done:
                draining.result()
                return
        # A second signal: the process exits without the grace (uvicorn then skips the
        # lifespan shutdown too).
        draining.cancel()
        await asyncio.wait({draining})

    def handle_exit(self, sig: int, frame: Any) -> None:
        # uvicorn forces only on a second SIGINT; a second SIGTERM does too here, as under
        # peerwire's own server.
        if self.should_exit:
            self.force_exit = True
        super().handle_exit(sig, frame)

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        """SIGINT and SIGTERM begin the shutdown. Unlike uvicorn's, the signal is not raised
        again once the server has shut down: the server did what it asked, and the process
        exits 0, as under peerwire's own server."""
        if not self._handle_signals:
            yield
            return
        loop = asyncio.get_running_loop()
        signals = (signal.SIGINT, signal.SIGTERM)
        for number in signals:
            loop.add_signal_handler(number, self.handle_exit, number, None)
        try:
            yield
        finally:
            for number in signals:
                loop.remove_signal_handler(number)


# uvicorn's loggers without handlers of their own: their records reach the root logger's, where
# ``serve`` put peerwire's JSON handler, so they are written (and rate-limited) as all others.
_JSON_LOG_CONFIG: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "loggers": {"uvicorn": {"level": "INFO", "propagate": True}},
}


def run_uvicorn(
    app: A2AApp,
    *,
    host: str,
    port: int,
    tls: ServerTLS | None,
    log_level: str,
    log_format: str = "text",
    sock: socket.socket | None = None,
) -> None:
    """Serve ``app`` on uvicorn in this process until SIGINT or SIGTERM (``serve``'s
    ``http="uvicorn"``); uvloop when installed, as uvicorn chooses. ``log_format="json"``
    leaves uvicorn's own records to the root logger's handler, which writes them as
    peerwire's (``ops.JSONFormatter``)."""
    refuse_unservable(app)
    config = uvicorn_config(
        app,
        host=host,
        port=port,
        tls=tls,
        # As a number: uvicorn knows fewer level names than logging ("warn", "notset").
        log_level=logging.getLevelNamesMapping()[log_level.upper()],
        log_config=_JSON_LOG_CONFIG if log_format == "json" else uvicorn.config.LOGGING_CONFIG,
        # Answers still being written when the runner has drained get this long, as under
        # peerwire's server.
        connection_grace=app.dispatcher.runner.shutdown_grace + 5.0,
    )
    server = UvicornServer(config, app, handle_signals=True)
    try:
        server.run(sockets=None if sock is None else [sock])  # ``sock``: bound by ``serve``
    except UvicornStartError as exc:
        raise SystemExit(f"peerwire: {exc}") from None
