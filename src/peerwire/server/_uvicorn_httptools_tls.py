"""uvicorn's httptools protocol with the ASGI TLS extension (see ``uvicorn_tls``); a module
of its own because httptools is optional and importing this fails without it."""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .uvicorn_tls import with_tls

__all__ = ["TLSHttpToolsProtocol"]


class TLSHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, adding the ASGI TLS extension on TLS connections."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        # One wrapper per connection: its requests share the handshake's outcome.
        self.app = with_tls(self.app, transport)
