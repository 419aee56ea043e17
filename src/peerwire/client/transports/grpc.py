"""The gRPC binding, client side (A2A spec §10): unary and server-streaming calls on a
``grpc.aio`` channel.

Every call carries ``a2a-version: 1.0`` metadata, the extensions asked for as
``a2a-extensions``, and the call's extra headers (credentials) as lower-cased metadata, each
key once (a header named like a service parameter does not repeat it).
Requests and answers cross the channel as bytes and are converted here, so an answer that is
not a valid A2A message is an ``InvalidResponseError``, not an exception inside gRPC.

Failures: a status with A2A details decodes to its error class (``ErrorInfo.reason`` first);
DEADLINE_EXCEEDED is ``A2ATimeoutError``; UNAVAILABLE, and CANCELLED we did not ask for, are
``A2AConnectionError`` (the server is unreachable, or went away mid-call).

Decisions the spec leaves open:

* The interface URL is ``host:port``; a ``scheme://`` prefix and any path are stripped (the
  proto says ``host:port``, the spec's sample cards write ``https://host/a2a/grpc``).
  ``https``/``grpcs`` mean TLS, ``http``/``grpc`` plaintext; a bare ``host:port`` uses TLS
  unless the host is a loopback address (the binding is TLS by spec, and local test servers
  are not). ``secure=`` or ``credentials=`` override this.
* Credentials travel as metadata (``authorization``, API-key header names in lower case).
  Query parameters cannot: a call asked to carry an API key in the query string is refused
  with ``AuthenticationError`` instead of being sent without it. A client certificate
  (``client_tls``) is presented on TLS channels.
* ``timeout`` bounds a unary call and the wait for a stream's first event. Later events may
  take as long as the task needs: gRPC has no keep-alive events to tell a quiet stream from a
  dead one, so dead connections are found by HTTP/2 keep-alive pings instead, and
  ``stream_idle_timeout`` (off by default) only applies when asked for.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any, TypeVar, cast

import grpc
import grpc.aio

from ..._hosts import is_loopback_host
from ...bindings.grpc.convert import from_bytes, to_bytes
from ...bindings.grpc.service import RPCS, Rpc
from ...bindings.grpc.status import DETAILS_KEY, decode_status
from ...errors import (
    A2AConnectionError,
    A2AError,
    A2ATimeoutError,
    AuthenticationError,
    InvalidRequestError,
    InvalidResponseError,
    MethodNotFoundError,
    PeerwireError,
)
from ...protocol import PROTOCOL_VERSION, format_extensions
from ...types import AgentInterface, Binding, StreamResponse
from .base import CallOptions, ClientTLS, Operation, TransportSettings

__all__ = ["GrpcTransport", "create_transport", "grpc_target", "is_loopback_target"]

T = TypeVar("T")

DEFAULT_MAX_RECEIVE_BYTES = 64 * 1024 * 1024
# Pings while a call is open find a dead connection under a stream that is simply quiet. Five
# minutes is what servers accept by default (grpc's min_recv_ping_interval_without_data).
_KEEPALIVE_MS = 300_000
_KEEPALIVE_TIMEOUT_MS = 20_000
_SECURE_SCHEMES = {"https": True, "grpcs": True, "http": False, "grpc": False}


def grpc_target(url: str) -> tuple[str, bool | None]:
    """The ``host:port`` to dial for an interface URL, and whether its scheme asks for TLS
    (``None`` when it names no scheme). Raises ``ValueError`` for an unknown scheme."""
    text = url.strip()
    secure: bool | None = None
    if "://" in text:
        scheme, _, text = text.partition("://")
        if scheme.lower() not in _SECURE_SCHEMES:
            raise ValueError(f"{url!r} is not a gRPC address (host:port or a URL)")
        secure = _SECURE_SCHEMES[scheme.lower()]
        text = text.split("/", 1)[0]
        if text and not _has_port(text):
            text = f"{text}:{443 if secure else 80}"
    if not text:
        raise ValueError(f"{url!r} names no host")
    return text, secure


def _has_port(hostport: str) -> bool:
    if hostport.startswith("["):
        return "]:" in hostport
    return ":" in hostport


def is_loopback_target(target: str) -> bool:
    """Whether a ``host[:port]`` target is this machine: where a target naming no scheme gets
    an insecure channel."""
    return is_loopback_host(target.rsplit(":", 1)[0] if _has_port(target) else target)


class GrpcTransport:
    """Calls one gRPC interface. The channel opens on first use, inside the running loop."""

    binding = Binding.GRPC

    def __init__(
        self,
        url: str,
        *,
        channel: grpc.aio.Channel | None = None,
        secure: bool | None = None,
        credentials: grpc.ChannelCredentials | None = None,
        client_tls: ClientTLS | None = None,
        timeout: float | None = 30.0,
        stream_idle_timeout: float | None = None,
        max_receive_bytes: int = DEFAULT_MAX_RECEIVE_BYTES,
        channel_options: Sequence[tuple[str, Any]] = (),
    ) -> None:
        self.url, scheme_secure = grpc_target(url)
        if credentials is not None:
            secure = True
        elif secure is None:
            secure = (
                scheme_secure if scheme_secure is not None else not is_loopback_target(self.url)
            )
        self.secure = secure
        self._credentials = credentials
        self._client_tls = client_tls
        self._timeout = timeout
        self._stream_idle_timeout = stream_idle_timeout
        self._options = [
            ("grpc.max_receive_message_length", max_receive_bytes),
            ("grpc.keepalive_time_ms", _KEEPALIVE_MS),
            ("grpc.keepalive_timeout_ms", _KEEPALIVE_TIMEOUT_MS),
            *channel_options,
        ]
        self._channel = channel
        self._owns_channel = channel is None

    # -- the Transport protocol -------------------------------------------------------------

    async def call(
        self, operation: Operation, request: Any, response_type: type[T], options: CallOptions
    ) -> T:
        rpc = self._rpc(operation, streaming=False)
        payload = self._encode(rpc, request)
        timeout = options.timeout if options.timeout is not None else self._timeout
        method = self._open().unary_unary(rpc.path)
        try:
            answer = await method(payload, metadata=self._metadata(options), timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            raise self._failure(exc, operation, operation, len(payload)) from None
        return cast(T, self._answer(rpc, answer, operation))

    async def stream(
        self, operation: Operation, request: Any, options: CallOptions
    ) -> AsyncIterator[StreamResponse]:
        rpc = self._rpc(operation, streaming=True)
        payload = self._encode(rpc, request)
        wait = options.timeout if options.timeout is not None else self._timeout
        call = self._open().unary_stream(rpc.path)(payload, metadata=self._metadata(options))
        try:
            while True:
                try:
                    async with asyncio.timeout(wait):
                        raw = await call.read()
                except TimeoutError:
                    raise A2ATimeoutError(
                        f"the {operation} stream from {self.url} sent nothing for {wait} s",
                        url=self.url,
                    ) from None
                except grpc.aio.AioRpcError as exc:
                    raise self._failure(
                        exc, f"the {operation} stream", operation, len(payload)
                    ) from None
                if raw is grpc.aio.EOF:
                    return
                yield self._answer(rpc, raw, operation)
                wait = self._stream_idle_timeout
        finally:
            call.cancel()  # a no-op once the call has ended; else it ends the server's stream

    async def aclose(self) -> None:
        """Close the channel, if this transport opened it."""
        channel, self._channel = self._channel, None
        if channel is not None and self._owns_channel:
            await channel.close()

    # -- helpers ----------------------------------------------------------------------------

    def _open(self) -> grpc.aio.Channel:
        if self._channel is None:
            if self.secure:
                credentials = self._credentials or _channel_credentials(self._client_tls)
                self._channel = grpc.aio.secure_channel(self.url, credentials, self._options)
            else:
                self._channel = grpc.aio.insecure_channel(self.url, self._options)
            self._owns_channel = True
        return self._channel

    # The protocol version's own parts; a subclass for another version replaces these.

    def _rpc(self, operation: Operation, *, streaming: bool) -> Any:
        """The rpc that carries ``operation``: anything with a ``path``."""
        return _rpc(operation, streaming=streaming)

    def _encode(self, rpc: Any, request: Any) -> bytes:
        return _encode(rpc, request)

    def _answer(self, rpc: Any, raw: bytes, operation: str) -> Any:
        """The answer's bytes as our type (``None`` for Empty); InvalidResponseError when
        they do not make one."""
        if rpc.response is None:
            return None
        try:
            return from_bytes(raw, rpc.response)
        except A2AError as exc:
            raise self._invalid(operation, rpc.response, exc) from None

    def _metadata(self, options: CallOptions) -> tuple[tuple[str, str], ...]:
        return _metadata(options)

    def _status(self, code: int, message: str, details: bytes | None, operation: str) -> A2AError:
        """The error an (A2A) status stands for."""
        return decode_status(code, message, details)

    def _invalid(self, operation: str, type_: type[Any], exc: A2AError) -> InvalidResponseError:
        # The server's answer does not fit the protocol: not the caller's invalid params.
        return InvalidResponseError(
            f"{operation} to {self.url} got an invalid answer: it is not a valid "
            f"{type_.__name__}: {exc.message}",
            url=self.url,
        )

    def _failure(
        self, exc: grpc.aio.AioRpcError, what: str, operation: str, sent: int
    ) -> PeerwireError:
        code = exc.code()
        message = exc.details() or ""
        details = _trailer(exc.trailing_metadata(), DETAILS_KEY)
        if not details:
            too_large = _TOO_LARGE.search(message)
            if code is grpc.StatusCode.RESOURCE_EXHAUSTED and too_large is not None:
                return self._too_large(what, int(too_large[1]), int(too_large[2]), sent)
            if code is grpc.StatusCode.DEADLINE_EXCEEDED:
                return A2ATimeoutError(f"{what} to {self.url} timed out", url=self.url)
            if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED):
                detail = message or code.name
                if self.secure and code is grpc.StatusCode.UNAVAILABLE and _tls_trouble(detail):
                    detail += (
                        " (the TLS handshake failed: a server certificate this client does not "
                        "trust, or, if the server requires client certificates, none or one it "
                        "does not accept)"
                    )
                return A2AConnectionError(f"{what} to {self.url} failed: {detail}", url=self.url)
        return self._status(code.value[0], message, details, operation)

    def _too_large(self, what: str, size: int, limit: int, sent: int) -> PeerwireError:
        """gRPC's own size refusal, on either side, as the error the HTTP bindings give."""
        if size == sent:
            # The request is one message of exactly that size: the server refused it, as an
            # HTTP binding would with 413 and InvalidRequestError.
            return InvalidRequestError(
                f"Request payload validation error: {what} to {self.url} is {size} bytes, "
                f"larger than the {limit} bytes the server accepts"
            )
        return InvalidResponseError(
            f"{what} to {self.url}: the answer is {size} bytes, larger than this transport's "
            f"max_receive_bytes ({limit} bytes)",
            url=self.url,
        )


# gRPC core's words when a message exceeds a receive limit, on the client or the server.
_TOO_LARGE = re.compile(r"larger than max \((\d+) vs\. (\d+)\)")


def _tls_trouble(message: str) -> bool:
    """Whether gRPC's words for a failed connection point at the TLS handshake: a server
    that refuses a client certificate just closes the socket."""
    lowered = message.lower()
    return any(sign in lowered for sign in ("socket closed", "handshake", "ssl", "tls"))


def _rpc(operation: Operation, *, streaming: bool) -> Rpc:
    rpc = RPCS.get(operation)
    if rpc is None:
        raise MethodNotFoundError(f"{operation!r} is not an A2A operation")
    if rpc.streaming != streaming:
        use = "stream()" if rpc.streaming else "call()"
        kind = "streams" if rpc.streaming else "does not stream"
        raise TypeError(f"{operation} {kind}: use the transport's {use}")
    return rpc


def _encode(rpc: Rpc, request: Any) -> bytes:
    if not isinstance(request, rpc.request):
        raise TypeError(
            f"{rpc.name} takes a {rpc.request.__name__}, not a {type(request).__name__}"
        )
    return to_bytes(request)


def _channel_credentials(tls: ClientTLS | None) -> grpc.ChannelCredentials:
    if tls is None:
        return grpc.ssl_channel_credentials()
    return grpc.ssl_channel_credentials(
        root_certificates=tls.root_certificates,
        private_key=tls.private_key,
        certificate_chain=tls.certificate_chain,
    )


def _metadata(options: CallOptions) -> tuple[tuple[str, str], ...]:
    if options.query:
        raise AuthenticationError(
            f"The agent wants {', '.join(sorted(options.query))} in the query string, which "
            "the gRPC binding cannot carry (it has metadata, no query string): call it over "
            "JSON-RPC or HTTP+JSON"
        )
    # One entry per key: a server joins repeated metadata into one comma-separated value
    # (Node's does), and "1.0, 1.0" is no version it speaks. Names differing only in case
    # collapse to the last one given; an A2A-Version header (the Client hands every transport
    # one) is sent as given, else this transport's version.
    metadata = {name.lower(): value for name, value in options.headers.items()}
    metadata.setdefault("a2a-version", PROTOCOL_VERSION)
    if options.extensions:
        metadata["a2a-extensions"] = format_extensions(options.extensions)
    return tuple(metadata.items())


def _trailer(metadata: Any, key: str) -> bytes | None:
    for name, value in metadata or ():
        if name == key and isinstance(value, bytes):
            return value
    return None


def create_transport(
    interface: AgentInterface, settings: TransportSettings | None = None, **options: Any
) -> GrpcTransport | None:
    """The registry's factory for ``GRPC`` interfaces; ``options`` go to ``GrpcTransport``.

    Returns ``None`` when the client reaches an in-process app, which has no gRPC endpoint.
    (Interfaces at protocol version 0.3 have a factory of their own, ``grpc_v03``.)
    """
    return _create(GrpcTransport, interface, settings, options)


G = TypeVar("G", bound="GrpcTransport")


def _create(
    cls: type[G],
    interface: AgentInterface,
    settings: TransportSettings | None,
    options: dict[str, Any],
) -> G | None:
    if settings is not None:
        if settings.in_process:
            return None
        options.setdefault("timeout", settings.timeout)
        options.setdefault("client_tls", settings.client_tls)
    return cls(interface.url, **options)
