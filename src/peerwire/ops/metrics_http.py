"""Serving the metrics page: ``/metrics`` on the agent's own HTTP port, or on a port of its own.

``MetricsEndpoint`` is the ASGI route the agent's app serves at ``/metrics`` (under its mount
prefix when mounted): GET or HEAD, exempt from the agent's A2A authentication (a scraper has
no A2A credentials), optionally behind a bearer token of its own. ``MetricsPort`` serves the
same page on a separate port, from a thread: a scrape is then answered even while the event
loop is busy, and the port can stay inside the cluster network while the agent's port is
public.

A scrape renders what the instruments hold (``Metrics.render``), after bringing what is
sampled at scrape time up to date (``Metrics.refresh``: the store's count of waiting tasks,
at most once per its interval, only for a scrape that was let in).
"""

from __future__ import annotations

import hmac
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from .metrics import Metrics

__all__ = ["METRICS_PATH", "MetricsEndpoint", "MetricsPort"]

log = logging.getLogger("peerwire.server")

METRICS_PATH = "/metrics"

_Scope = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
_Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class _Page:
    """What either server answers, decided once per scrape: (status, headers, body)."""

    def __init__(self, metrics: Metrics, token: str | None) -> None:
        if token is not None and not token.strip():
            raise ValueError("metrics_token must not be empty")
        self.metrics = metrics
        self._expected = None if token is None else f"Bearer {token}".encode()

    def refusal(
        self, method: str, authorization: bytes | None
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes] | None:
        """The answer to a scrape that is not let in; ``None``: it is."""
        if method not in ("GET", "HEAD"):
            return _text(405, b"Method Not Allowed", [(b"allow", b"GET, HEAD")])
        # Compared in constant time: the token must not leak by timing.
        if self._expected is not None and not hmac.compare_digest(
            authorization or b"", self._expected
        ):
            challenge = [(b"www-authenticate", b'Bearer realm="metrics"')]
            return _text(401, b"Unauthorized: this page needs its bearer token", challenge)
        return None

    def page(self, method: str, accept: str | None) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """The page of a scrape that was let in."""
        body, content_type = self.metrics.render(accept)
        headers = [
            (b"content-type", content_type.encode("latin-1")),
            (b"content-length", b"%d" % len(body)),
            (b"cache-control", b"no-store"),
        ]
        return 200, headers, b"" if method == "HEAD" else body


def _text(
    status: int, text: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", b"%d" % len(text)),
        *(extra or ()),
    ]
    return status, headers, text


class MetricsEndpoint:
    """The ASGI app of the ``/metrics`` route; ``token``: the bearer token a scrape must send
    (``Authorization: Bearer TOKEN``), ``None``: none."""

    def __init__(self, metrics: Metrics, *, token: str | None = None) -> None:
        self._page = _Page(metrics, token)

    @property
    def metrics(self) -> Metrics:
        return self._page.metrics

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        authorization = accept = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                authorization = value
            elif name == b"accept":
                accept = value.decode("latin-1")
        page = self._page
        answer = page.refusal(scope["method"], authorization)
        if answer is None:
            await page.metrics.refresh()
            answer = page.page(scope["method"], accept)
        status, headers, body = answer
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


class MetricsPort:
    """The metrics page on ``host``:``port`` of its own (``0``: a free one, see ``port``),
    served by a thread from ``start()`` to ``stop()``; ``token`` as for ``MetricsEndpoint``.
    Any path answers the page, as prometheus-client's own server does."""

    def __init__(
        self, metrics: Metrics, *, host: str = "127.0.0.1", port: int, token: str | None = None
    ) -> None:
        self._page = _Page(metrics, token)
        self._host = host
        self._wanted = port
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (once started)."""
        if self._server is None:
            raise RuntimeError("the metrics port is not started")
        return int(self._server.server_address[1])

    def start(self) -> None:
        from wsgiref.simple_server import WSGIRequestHandler, make_server

        from prometheus_client.exposition import ThreadingWSGIServer

        class Quiet(WSGIRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass  # one line per scrape on stderr is noise

        try:
            self._server = make_server(
                self._host, self._wanted, self._wsgi, ThreadingWSGIServer, handler_class=Quiet
            )
        except OSError as exc:
            raise OSError(f"cannot serve metrics on {self._host}:{self._wanted}: {exc}") from exc
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="peerwire metrics", daemon=True
        )
        self._thread.start()
        log.info("peerwire: metrics on http://%s:%d%s", self._host, self.port, METRICS_PATH)

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        self._server = self._thread = None
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(5.0)

    def _wsgi(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        authorization = environ.get("HTTP_AUTHORIZATION")
        method, page = environ["REQUEST_METHOD"], self._page
        answer = page.refusal(
            method, None if authorization is None else authorization.encode("latin-1")
        )
        if answer is None:
            page.metrics.refresh_from_thread()
            answer = page.page(method, environ.get("HTTP_ACCEPT"))
        status, headers, body = answer
        start_response(
            f"{status} {_REASONS[status]}",
            [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers],
        )
        return [body]


_REASONS = {200: "OK", 401: "Unauthorized", 405: "Method Not Allowed"}
