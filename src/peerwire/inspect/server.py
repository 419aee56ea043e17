"""Serving the inspector: ``run_inspector`` (what ``peerwire inspect`` calls) and
``serve_inspector`` (the same, in the caller's event loop, for tests and embedding).

It runs on peerwire's own HTTP server (``peerwire.httpd``), bound to 127.0.0.1 unless told
otherwise: the backend holds the credentials the user typed in, so it is not for a network.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import webbrowser
from collections.abc import AsyncIterator

from .._hosts import is_loopback_host
from ..httpd import HTTPServer
from .app import InspectorApp

__all__ = ["DEFAULT_PORT", "run_inspector", "serve_inspector"]

DEFAULT_PORT = 8787
_STARTUP_TIMEOUT_S = 10.0


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        # Listening at once: a browser opened (or a URL printed) before the server's loop
        # accepts is queued, not refused.
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    return sock


def page_url(host: str, port: int, token: str = "") -> str:
    """The page's address; with ``token``, the one to open (it carries the launch token)."""
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}/" + (f"?token={token}" if token else "")


@contextlib.asynccontextmanager
async def serve_inspector(
    url: str = "",
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    timeout: float = 30.0,
    ledger: str | None = None,
) -> AsyncIterator[str]:
    """Serve the inspector in this event loop (``port`` 0: a free one); yield the page's
    URL (carrying the launch token: ``?token=``, which API calls send as
    ``X-Peerwire-Token``). On exit every run stops and every client closes. ``ledger``:
    the agent's delegation ledger (a store spec), to show each task's delegations."""
    app = InspectorApp(url=url, timeout=timeout, allowed_hosts=(host,), ledger=ledger)
    sock = _bind(host, port)
    server = HTTPServer(app, connection_grace=2.0)
    serving = asyncio.create_task(server.serve(sock=sock))
    try:
        started = asyncio.create_task(server.started.wait())
        done, _ = await asyncio.wait(
            {started, serving}, timeout=_STARTUP_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED
        )
        if serving in done:
            started.cancel()
            serving.result()  # raises why it could not start
        if started not in done:
            started.cancel()
            raise RuntimeError("the inspector did not start in time")
        yield page_url(host, sock.getsockname()[1], app.token)
    finally:
        server.request_exit()
        try:
            await asyncio.wait_for(serving, 10.0)
        except TimeoutError:
            server.request_exit(force=True)
        finally:
            sock.close()


def run_inspector(
    url: str = "",
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    open_browser: bool = False,
    timeout: float = 30.0,
    announce: bool = True,
    ledger: str | None = None,
) -> None:
    """Serve the inspector until SIGINT/SIGTERM; open it in a browser with ``open_browser``;
    ``ledger``: the agent's delegation ledger (a store spec), to show tasks' delegations."""
    app = InspectorApp(url=url, timeout=timeout, allowed_hosts=(host,), ledger=ledger)
    sock = _bind(host, port)
    address = page_url(host, sock.getsockname()[1], app.token)
    if announce:
        print(
            f"peerwire inspect: open {address}" + (f" (inspecting {url})" if url else ""),
            flush=True,
        )
        if not is_loopback_host(host):
            print(
                f"peerwire inspect: warning: listening on {host}, not loopback: anyone who "
                "can reach it can use the credentials you give it",
                flush=True,
            )
    if open_browser:
        # After the socket is bound, so the page the browser asks for is there to answer.
        webbrowser.open(address)
    server = HTTPServer(app, connection_grace=2.0)
    try:
        server.run(sock=sock)
    finally:
        sock.close()
