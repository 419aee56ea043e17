"""The gRPC binding, server side (A2A spec §10): a ``grpc.aio`` service over the ``Dispatcher``.

Each rpc decodes its request, calls the dispatcher operation of the same name and encodes the
answer; the two streaming rpcs relay the dispatcher's ``TaskStream``. Requests arrive as raw
bytes and are parsed here rather than by gRPC, so a malformed message is answered with
INVALID_ARGUMENT and a clear message instead of an exception inside gRPC's machinery.
A message larger than the receive limit never reaches us: gRPC itself answers
RESOURCE_EXHAUSTED ("Received message larger than max").

Service parameters come from the call metadata: ``a2a-version`` (checked as on the HTTP
bindings, honouring the lenient option) and ``a2a-extensions``; the extensions that were
activated are echoed in the initial metadata. Errors leave as status code + message + a
``google.rpc.Status`` with ``ErrorInfo`` (and ``BadRequest``) in ``grpc-status-details-bin``.

Authentication comes first, as on the HTTP bindings, from the same ``Authenticator``: the
metadata stands in for the headers (``authorization``, an API key under its header name in
lower case, ``cookie``), and the client certificate of a mutual-TLS connection comes from the
auth context (``x509_pem_cert_chain`` / ``x509_pem_cert``, verified by the TLS handshake).
gRPC has no query string, so a scheme that wants its API key in the query cannot be satisfied
here. Refusals are UNAUTHENTICATED / PERMISSION_DENIED with ErrorInfo, and the challenge an
HTTP binding would send in ``WWW-Authenticate`` as trailing metadata of that name.

Beside it, on the same port, ``a2a.v1.A2AService``: A2A 0.3 over gRPC (``GrpcServiceV03``,
unless ``serve_v03`` is off). The service a call names decides its protocol. Its rpcs are
translated to the same dispatcher operations (``peerwire.compat.v03.grpc``), so tasks
started over either version are one task model in one store. 0.3 callers send no
``a2a-version`` (the service implies it) and name extensions in ``x-a2a-extensions`` (also
read: ``a2a-extensions``; activated ones are echoed as ``x-a2a-extensions``). Their errors
are 0.3 statuses (``"TaskNotFoundError: ..."``, see ``compat.v03.grpc_status``), and
GetAgentCard answers with the card in its 0.3 form: the extended card when the agent offers
one (authenticated as any call), else the public card (public, as on the HTTP bindings).
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from time import perf_counter
from typing import TYPE_CHECKING, Any

import grpc
import grpc.aio

from ..bindings.grpc.convert import from_bytes, to_bytes
from ..bindings.grpc.service import RPCS, SERVICE, Rpc
from ..bindings.grpc.status import DETAILS_KEY, encode_status
from ..compat.v03.files import FileBytes, FileForm, has_file_bytes
from ..compat.v03.grpc import RPCS_V03, SERVICE_V03, RpcV03, card_message
from ..compat.v03.grpc_status import encode_status_v03
from ..compat.v03.version import PROTOCOL_VERSION as V03
from ..errors import A2AError, InternalError
from ..httpd import CannotListenError, ServerTLS
from ..ops import tracing
from ..protocol import active_extensions, check_version, format_extensions, parse_extensions
from ..security.credentials import PeerCertificate, RequestCredentials
from ..types import AgentCard, Encoded, Model
from ._authn import challenge_headers
from ._v03 import answer_form
from .dispatch import CallContext, Dispatcher, TaskStream

if TYPE_CHECKING:
    from ..security import Authenticator, Principal

__all__ = [
    "DEFAULT_MAX_RECEIVE_BYTES",
    "GrpcService",
    "GrpcServiceV03",
    "call_credentials",
    "grpc_address",
    "serving_grpc",
    "start_grpc_server",
]

log = logging.getLogger("peerwire.server")

DEFAULT_MAX_RECEIVE_BYTES = 10 * 1024 * 1024
"""The largest request accepted, as for the HTTP bindings' bodies."""

_STATUS_CODES = {code.value[0]: code for code in grpc.StatusCode}

Unary = Callable[[bytes, grpc.aio.ServicerContext[Any, Any]], Awaitable[bytes]]
Streaming = Callable[[bytes, grpc.aio.ServicerContext[Any, Any]], AsyncIterator[bytes]]
StatusEncoder = Callable[[A2AError], tuple[int, str, bytes]]

# The metadata keys of requested extensions: 1.0's, and 0.3's (an HTTP header lower-cased).
_EXTENSIONS_KEY = "a2a-extensions"
_EXTENSIONS_KEY_V03 = "x-a2a-extensions"


class GrpcService:
    """``lf.a2a.v1.A2AService`` for one dispatcher; ``handler()`` is what a grpc server takes."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        *,
        lenient_version: bool = False,
        authenticator: Authenticator | None = None,
    ) -> None:
        self.dispatcher = dispatcher
        self.lenient_version = lenient_version
        # None: the card requires no credentials and every caller is anonymous.
        self.authenticator = authenticator
        # None: metrics are off, and the rpcs do no metrics work at all.
        self._meter = None if dispatcher.metrics is None else dispatcher.metrics.requests("grpc")
        extensions = dispatcher.card().capabilities.extensions
        self._supported_extensions = tuple(e.uri for e in extensions)
        self._required_extensions = tuple(e.uri for e in extensions if e.required)
        # The SERVER spans of its calls (made only while ``tracing.STATE.tracer`` is set).
        self._spans = tracing.ServerSpans("GRPC", "1.0", dispatcher.card)
        tracing.refresh()

    def handler(self) -> grpc.GenericRpcHandler:
        handlers = {
            rpc.name: (
                grpc.unary_stream_rpc_method_handler(self._streaming(rpc))
                if rpc.streaming
                else grpc.unary_unary_rpc_method_handler(self._unary(rpc))
            )
            for rpc in RPCS.values()
        }
        return grpc.method_handlers_generic_handler(SERVICE, handlers)

    def _unary(self, rpc: Rpc) -> Unary:
        operation = getattr(self.dispatcher, rpc.operation)

        async def handle(payload: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
            meter = self._meter
            started = perf_counter() if meter is not None else 0.0
            try:
                request, call = await self._accept(rpc, payload, context)
                if tracing.STATE.tracer is None:  # tracing off: this attribute read is all
                    result = await operation(request, call)
                else:
                    metadata = context.invocation_metadata() or ()
                    traced = self._spans.start(rpc.operation, metadata, request)
                    result = await traced.run(operation, request, call)
                if isinstance(result, Encoded):
                    result = result.decode()  # protobuf is built from the object, not its JSON
                answer = b"" if result is None else to_bytes(result)
                if meter is not None:
                    meter.ok(rpc.name, started)
                return answer
            except A2AError as error:
                if meter is not None:
                    meter.failed(rpc.name, error, started)
                await _abort(context, error, self.authenticator)
            except Exception:
                log.exception("peerwire: gRPC %s failed", rpc.name)
                if meter is not None:
                    meter.failed(rpc.name, _internal(), started)
                await _abort(context, _internal())
            raise AssertionError("unreachable: abort raises")

        return handle

    def _streaming(self, rpc: Rpc) -> Streaming:
        operation = getattr(self.dispatcher, rpc.operation)

        async def handle(
            payload: bytes, context: grpc.aio.ServicerContext[Any, Any]
        ) -> AsyncIterator[bytes]:
            stream: TaskStream | None = None
            traced: tracing.ServerCall | None = None
            meter = self._meter
            started = perf_counter() if meter is not None else 0.0
            opened = False  # counted as answered, and as an active stream until it ends
            try:
                request, call = await self._accept(rpc, payload, context)
                if tracing.STATE.tracer is None:  # tracing off: this attribute read is all
                    stream = await operation(request, call)
                else:
                    metadata = context.invocation_metadata() or ()
                    traced = self._spans.start(rpc.operation, metadata, request)
                    stream = await traced.run(operation, request, call, streaming=True)
                if meter is not None:
                    meter.ok(rpc.name, started)
                    meter.streams.inc()
                    opened = True
                # A client that goes away cancels this generator at its await: the stream is
                # closed below, so an abandoned stream stops following its task.
                async for event in stream:
                    if traced is not None:
                        traced.counted(event)
                    yield to_bytes(event)
            except A2AError as error:
                if traced is not None:
                    traced.failed(error)
                if meter is not None and not opened:
                    meter.failed(rpc.name, error, started)
                await _abort(context, error, self.authenticator)
            except Exception:
                log.exception("peerwire: gRPC %s failed", rpc.name)
                if meter is not None and not opened:
                    meter.failed(rpc.name, _internal(), started)
                if traced is not None:
                    traced.failed(_internal())
                await _abort(context, _internal())
            finally:
                if stream is not None:
                    stream.close()
                if traced is not None:
                    traced.end()
                if opened:
                    assert meter is not None
                    meter.streams.dec()

        return handle

    async def _accept(
        self, rpc: Rpc, payload: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> tuple[Model, CallContext]:
        """Authenticate, check the service parameters and decode the request, in the HTTP
        bindings' order."""
        principal = await self._authenticate(context)
        version: str | None = None
        requested: list[str] = []
        for key, value in context.invocation_metadata() or ():
            if key == "a2a-version" and isinstance(value, str):
                # Repeated entries are judged together, as a joined header is.
                version = value if version is None else f"{version},{value}"
            elif key == "a2a-extensions" and isinstance(value, str):
                requested.append(value)
        check_version(version, lenient=self.lenient_version)
        request = from_bytes(payload, rpc.request)
        extensions = active_extensions(
            parse_extensions(requested), self._supported_extensions, self._required_extensions
        )
        if extensions:
            await context.send_initial_metadata(
                (("a2a-extensions", format_extensions(extensions)),)
            )
        return request, CallContext.of(principal, extensions)

    async def _authenticate(self, context: grpc.aio.ServicerContext[Any, Any]) -> Principal | None:
        if self.authenticator is None:
            return None
        return await self.authenticator.authenticate(call_credentials(context))


class GrpcServiceV03:
    """``a2a.v1.A2AService`` (A2A 0.3) for one dispatcher, translated onto its 1.0 operations;
    ``handler()`` is what a grpc server takes."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        *,
        authenticator: Authenticator | None = None,
        v03_bindings: Collection[str] | None = None,
        v03_file_bytes: FileBytes = "auto",
    ) -> None:
        self.dispatcher = dispatcher
        self.authenticator = authenticator
        self.file_bytes = v03_file_bytes  # how 0.3 file bytes are read (compat.v03.files)
        # The bindings that serve 0.3 (the 0.3 card names its endpoint among them); None:
        # the card's interfaces at 0.3, else all of them.
        self.v03_bindings = v03_bindings
        extensions = dispatcher.card().capabilities.extensions
        self._supported_extensions = tuple(e.uri for e in extensions)
        self._required_extensions = tuple(e.uri for e in extensions if e.required)
        # The public card in its 0.3 form, for the card it was made from (the served card is
        # replaced once, when the gRPC port is known).
        self._public_card: tuple[AgentCard, bytes] | None = None
        self._spans = tracing.ServerSpans("GRPC", "0.3", dispatcher.card)

    def handler(self) -> grpc.GenericRpcHandler:
        handlers = {
            rpc.name: (
                grpc.unary_stream_rpc_method_handler(self._streaming(rpc))
                if rpc.streaming
                else grpc.unary_unary_rpc_method_handler(self._unary(rpc))
            )
            for rpc in RPCS_V03.values()
        }
        return grpc.method_handlers_generic_handler(SERVICE_V03, handlers)

    def _unary(self, rpc: RpcV03) -> Unary:
        dispatch = RPCS[rpc.operation].operation
        operation = getattr(self.dispatcher, dispatch)
        public_card = rpc.name == "GetAgentCard"

        async def handle(payload: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
            try:
                if public_card and not self.dispatcher.card().capabilities.extended_agent_card:
                    return self._public_card_bytes()
                request, call = await self._accept(rpc, payload, context)
                if tracing.STATE.tracer is None:
                    result = await operation(request, call)
                else:
                    metadata = context.invocation_metadata() or ()
                    traced = self._spans.start(dispatch, metadata, request)
                    result = await traced.run(operation, request, call)
                if public_card:
                    return card_message(result, self.v03_bindings)
                document = rpc.response_document(result)
                form: FileForm = "content"
                if has_file_bytes(document):
                    form = await answer_form(
                        self.dispatcher, self.file_bytes, rpc.operation, request, call
                    )
                return rpc.write_document(document, form)
            except A2AError as error:
                await _abort(context, error, self.authenticator, encode_status_v03)
            except Exception:
                log.exception("peerwire: gRPC (A2A 0.3) %s failed", rpc.name)
                await _abort(context, _internal(), encode=encode_status_v03)
            raise AssertionError("unreachable: abort raises")

        return handle

    def _streaming(self, rpc: RpcV03) -> Streaming:
        dispatch = RPCS[rpc.operation].operation
        operation = getattr(self.dispatcher, dispatch)

        async def handle(
            payload: bytes, context: grpc.aio.ServicerContext[Any, Any]
        ) -> AsyncIterator[bytes]:
            stream: TaskStream | None = None
            traced: tracing.ServerCall | None = None
            try:
                request, call = await self._accept(rpc, payload, context)
                if tracing.STATE.tracer is None:
                    stream = await operation(request, call)
                else:
                    metadata = context.invocation_metadata() or ()
                    traced = self._spans.start(dispatch, metadata, request)
                    stream = await traced.run(operation, request, call, streaming=True)
                form = await answer_form(
                    self.dispatcher, self.file_bytes, rpc.operation, request, call
                )
                async for event in stream:
                    if traced is not None:
                        traced.counted(event)
                    yield rpc.write_response(event, form)
            except A2AError as error:
                if traced is not None:
                    traced.failed(error)
                await _abort(context, error, self.authenticator, encode_status_v03)
            except Exception:
                log.exception("peerwire: gRPC (A2A 0.3) %s failed", rpc.name)
                if traced is not None:
                    traced.failed(_internal())
                await _abort(context, _internal(), encode=encode_status_v03)
            finally:
                if stream is not None:
                    stream.close()
                if traced is not None:
                    traced.end()

        return handle

    async def _accept(
        self, rpc: RpcV03, payload: bytes, context: grpc.aio.ServicerContext[Any, Any]
    ) -> tuple[Model, CallContext]:
        """Authenticate and decode the request; no version check (the service is the
        version)."""
        principal = None
        if self.authenticator is not None:
            principal = await self.authenticator.authenticate(call_credentials(context))
        request = rpc.read_request(payload, self.file_bytes, mark=True)
        requested = [
            value
            for key, value in context.invocation_metadata() or ()
            if key in (_EXTENSIONS_KEY_V03, _EXTENSIONS_KEY) and isinstance(value, str)
        ]
        extensions = active_extensions(
            parse_extensions(requested), self._supported_extensions, self._required_extensions
        )
        if extensions:
            await context.send_initial_metadata(
                ((_EXTENSIONS_KEY_V03, format_extensions(extensions)),)
            )
        return request, CallContext.of(principal, extensions, protocol_version=V03)

    def _public_card_bytes(self) -> bytes:
        card = self.dispatcher.card()
        cached = self._public_card
        if cached is None or cached[0] is not card:
            cached = self._public_card = (card, card_message(card, self.v03_bindings))
        return cached[1]


def call_credentials(context: grpc.aio.ServicerContext[Any, Any]) -> RequestCredentials:
    """What a gRPC call presents: its metadata, and the client certificate of its TLS
    connection (only ever one the handshake verified)."""
    auth = context.auth_context() or {}
    pems = auth.get("x509_pem_cert_chain") or auth.get("x509_pem_cert") or ()
    try:
        peer = PeerCertificate.from_pem_bundle(b"".join(pems)) if pems else None
    except ValueError:
        # Unreadable: kept as an empty certificate, which an mTLS verifier refuses.
        peer = PeerCertificate(der=b"")
    return RequestCredentials.from_headers(
        context.invocation_metadata() or (), peer_certificate=peer
    )


def _internal() -> InternalError:
    return InternalError("Internal error: the server failed while handling this request")


async def _abort(
    context: grpc.aio.ServicerContext[Any, Any],
    error: A2AError,
    authenticator: Authenticator | None = None,
    encode: StatusEncoder = encode_status,
) -> None:
    code, message, details = encode(error)
    challenge = tuple(
        (name.decode(), value.decode("latin-1"))
        for name, value in challenge_headers(error, authenticator)
    )
    await context.abort(
        _STATUS_CODES.get(code, grpc.StatusCode.UNKNOWN),
        message,
        trailing_metadata=((DETAILS_KEY, details), *challenge),
    )


def grpc_address(host: str, port: int) -> str:
    """``host:port`` as gRPC (and ``AgentInterface.url``) write it; IPv6 hosts in brackets."""
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


async def start_grpc_server(
    dispatcher: Dispatcher,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    lenient_version: bool = False,
    max_receive_bytes: int = DEFAULT_MAX_RECEIVE_BYTES,
    authenticator: Authenticator | None = None,
    tls: ServerTLS | None = None,
    serve_v03: bool = True,
    v03_bindings: Collection[str] | None = None,
    v03_file_bytes: FileBytes = "auto",
) -> tuple[grpc.aio.Server, int]:
    """Start serving ``dispatcher`` over gRPC on ``host:port``; ``0``: a free port.

    ``authenticator`` checks every call (``None``: callers are anonymous); ``tls`` serves
    with TLS, and mutual TLS when it requires client certificates (``None``: plaintext).
    ``serve_v03`` also serves A2A 0.3 (``a2a.v1.A2AService``) beside 1.0; ``v03_bindings``
    are the bindings of the card that serve 0.3 (its 0.3 form, from GetAgentCard, lists
    those; ``None``: the card's interfaces at 0.3, else all); ``v03_file_bytes``: how its
    0.3 file bytes are read (``compat.v03.files``).
    Returns the started server and the port it is bound to. Stop it with ``await
    server.stop(grace)``. Raises ``CannotListenError`` (an ``OSError``) when the address
    cannot be bound, saying why (``cannot listen for gRPC on 127.0.0.1:50051: [Errno 98]
    Address already in use``).
    """
    server = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", max_receive_bytes),
            # Without this, Linux lets a second server bind a port already in use and the two
            # silently share its connections.
            ("grpc.so_reuseport", 0),
        ]
    )
    handlers = [
        GrpcService(
            dispatcher, lenient_version=lenient_version, authenticator=authenticator
        ).handler()
    ]
    if serve_v03:
        v03 = GrpcServiceV03(
            dispatcher,
            authenticator=authenticator,
            v03_bindings=v03_bindings,
            v03_file_bytes=v03_file_bytes,
        )
        handlers.append(v03.handler())
    server.add_generic_rpc_handlers(handlers)
    address = grpc_address(host, port)
    try:
        if tls is None:
            bound = server.add_insecure_port(address)
        else:
            bound = server.add_secure_port(address, tls.grpc_credentials())
    except RuntimeError as exc:
        raise CannotListenError(
            f"cannot listen for gRPC on {address}: {_bind_failure(host, port) or exc}"
        ) from None
    if bound == 0:
        reason = _bind_failure(host, port) or "the address cannot be bound"
        raise CannotListenError(f"cannot listen for gRPC on {address}: {reason}")
    await server.start()
    return server, bound


def _bind_failure(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be bound, as the operating system says it (``None``: it can
    now), found by trying: gRPC's own error only says that binding failed."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        with socket.socket(family, kind, proto) as probe:
            # As gRPC binds: a port whose old connections linger is not "in use".
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except OSError as exc:
        return str(exc)
    return None


@contextlib.asynccontextmanager
async def serving_grpc(
    dispatcher: Dispatcher,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    lenient_version: bool = False,
    max_receive_bytes: int = DEFAULT_MAX_RECEIVE_BYTES,
    grace: float = 10.0,
    authenticator: Authenticator | None = None,
    tls: ServerTLS | None = None,
    serve_v03: bool = True,
    v03_bindings: Collection[str] | None = None,
    v03_file_bytes: FileBytes = "auto",
) -> AsyncIterator[int]:
    """Serve gRPC for the duration of the block; yields the bound port (options as for
    ``start_grpc_server``).

    On exit new calls are refused and running ones get ``grace`` seconds before they are
    cancelled (their clients see CANCELLED and can resubscribe elsewhere).
    """
    server, bound = await start_grpc_server(
        dispatcher,
        host,
        port,
        lenient_version=lenient_version,
        max_receive_bytes=max_receive_bytes,
        authenticator=authenticator,
        tls=tls,
        serve_v03=serve_v03,
        v03_bindings=v03_bindings,
        v03_file_bytes=v03_file_bytes,
    )
    log.info("peerwire: serving gRPC on %s", grpc_address(host, bound))
    try:
        yield bound
    finally:
        await server.stop(grace)
