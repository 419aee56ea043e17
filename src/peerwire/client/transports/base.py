"""The one interface every client transport implements (JSON-RPC, REST, gRPC, in-process ASGI).

A transport moves one typed request to the agent and one typed response (or a stream of
``StreamResponse``) back. It knows its binding's wire format and nothing else: choosing the
interface, tenants, retries and resubscription live in ``Client``. Failures surface as the
error tree of ``peerwire.errors``: the agent's A2A errors as their classes, and local
failures as ``A2AConnectionError``, ``A2ATimeoutError`` or ``InvalidResponseError``.

The client builds transports through factories registered per binding
(``peerwire.client.register_transport``): a ``TransportFactory`` takes the chosen
``AgentInterface`` and the client's ``TransportSettings`` and returns a transport, or ``None``
when it cannot serve that interface under those settings (a network-only binding asked to
reach an in-process app). A built-in binding's module (``transports/rest.py``,
``transports/grpc.py``) is imported on first need and either calls ``register_transport`` at
import time or defines a module-level ``create_transport`` factory.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import httpx

from ...types import AgentInterface, StreamResponse

if TYPE_CHECKING:
    from ...compat.v03.files import FileBytes
    from ._exchange import HTTPExchange

__all__ = [
    "CallOptions",
    "ClientTLS",
    "Operation",
    "Transport",
    "TransportFactory",
    "TransportSettings",
]

T = TypeVar("T")

# The operation names are the gRPC rpc names, which are also the JSON-RPC method names.
Operation = str


@dataclass(frozen=True, slots=True)
class CallOptions:
    """Per-call settings: service parameters, extra headers (credentials), query parameters
    (API keys a card wants in the query string), a timeout.

    ``query`` is added to the URL of the HTTP bindings; gRPC has no query string, and its
    transport refuses a call that carries any rather than drop a credential silently.
    """

    extensions: tuple[str, ...] = ()
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float | None = None
    query: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ClientTLS:
    """TLS material for transports that cannot take an ``ssl.SSLContext`` (gRPC): PEM bytes of
    the CAs to trust (``None``: the system's), and of the client certificate's key and chain."""

    root_certificates: bytes | None = None
    private_key: bytes | None = None
    certificate_chain: bytes | None = None

    def __repr__(self) -> str:
        # Never the key.
        return f"ClientTLS(client_certificate={self.certificate_chain is not None})"


class Transport(Protocol):
    binding: str
    """The ``AgentInterface.protocolBinding`` this transport speaks."""

    url: str
    """The interface URL (``host:port`` for gRPC)."""

    async def call(
        self, operation: Operation, request: Any, response_type: type[T], options: CallOptions
    ) -> T:
        """A unary operation. ``response_type`` is ``type(None)`` for the Empty result."""
        ...

    def stream(
        self, operation: Operation, request: Any, options: CallOptions
    ) -> AsyncIterator[StreamResponse]:
        """A streaming operation (SendStreamingMessage, SubscribeToTask).

        Errors the agent reports before the stream starts are raised from the first
        ``__anext__``; closing the iterator (``aclose``) ends the call cleanly, without
        surfacing an error for a stream the caller chose to stop.
        """
        ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class TransportSettings:
    """What the client gives every transport it builds."""

    http: httpx.AsyncClient | HTTPExchange
    """The client's HTTP connection pool (HTTP bindings use it; the client closes it): its
    native one, or an ``httpx.AsyncClient`` (the caller's, or the in-process one)."""

    timeout: float | None = 30.0
    """Seconds a unary call (and connecting, sending, the first byte of a stream) may take."""

    stream_idle_timeout: float | None = 60.0
    """Seconds a stream may stay silent; servers send keep-alives far more often than that."""

    in_process: bool = False
    """``http`` reaches an ASGI app in this process, not the network."""

    client_tls: ClientTLS | None = None
    """TLS for transports that dial their own connections (gRPC): a client certificate, and
    the CAs to trust (the HTTP pool was built with the same, as an ``ssl.SSLContext``)."""

    v03_file_bytes: FileBytes = "auto"
    """How an A2A 0.3 HTTP+JSON or gRPC transport reads file bytes, and sends them
    (``"base64"``: a2a-sdk's form; else the content): ``peerwire.compat.v03.files``."""


class TransportFactory(Protocol):
    def __call__(
        self, interface: AgentInterface, settings: TransportSettings
    ) -> Transport | None: ...
