"""The gRPC binding of A2A 0.3, client side: ``a2a.v1.A2AService`` on a ``grpc.aio`` channel.

Everything the caller sees is 1.0: operations named as in 1.0, ``peerwire.types`` in and out
(``peerwire.compat.v03.grpc`` translates at the edge). The channel, TLS, timeouts and
connection failures are those of the 1.0 transport (``GrpcTransport``, which this extends);
what differs:

* 0.3 has no ListTasks: calling it raises ``UnsupportedOperationError`` before anything is
  sent. GetExtendedAgentCard is 0.3's GetAgentCard (a 0.3 server may answer with its public
  card).
* No ``a2a-version`` metadata (0.3 had none; the service names the version); requested
  extensions travel as ``x-a2a-extensions``, 0.3's header name.
* Errors: a peerwire server's ErrorInfo first; else the 0.3 class named in the status message
  (``"TaskNotFoundError: ..."``, a2a-sdk's servers); else the status code as the 0.3
  JavaScript SDK reads it per rpc (``compat.v03.grpc_status``).
* 1.0 fields 0.3 cannot carry are not sent: ``tenant``, ``referenceTaskIds``, CancelTask's
  ``metadata``, ``historyLength: 0`` (0.3 reads 0 as "the whole history").
* A resubscription reads as a 1.0 one: it begins with the task, and one refused because the
  task finished is UnsupportedOperationError (``_v03_follow.task_first``; a2a-sdk 0.3 begins
  with the next update and refuses with InvalidParamsError).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from ...compat.v03.files import FileBytes, check_file_bytes, sending_form
from ...compat.v03.grpc import RpcV03, by_operation
from ...compat.v03.grpc_status import decode_status_v03
from ...errors import A2AError, MethodNotFoundError, UnsupportedOperationError
from ...protocol import format_extensions
from ...types import AgentInterface, GetTaskRequest, StreamResponse, Task
from ._v03_follow import task_first
from .base import CallOptions, Operation, TransportSettings
from .grpc import GrpcTransport, _create, _metadata

__all__ = ["GrpcV03Transport", "create_transport"]

_VERSION_KEY = "a2a-version"
_EXTENSIONS_KEY = "a2a-extensions"
_EXTENSIONS_KEY_V03 = "x-a2a-extensions"


class GrpcV03Transport(GrpcTransport):
    """Calls one A2A 0.3 gRPC interface (options as for ``GrpcTransport``)."""

    protocol_version = "0.3"

    def __init__(self, url: str, *, v03_file_bytes: FileBytes = "auto", **options: Any) -> None:
        """``v03_file_bytes``: how file bytes are read, and (``"base64"``: a2a-sdk's form;
        else the content) sent (``compat.v03.files``); ``options`` as for ``GrpcTransport``."""
        super().__init__(url, **options)
        self._file_bytes = check_file_bytes(v03_file_bytes)
        self._file_form = sending_form(self._file_bytes)

    def _rpc(self, operation: Operation, *, streaming: bool) -> RpcV03:
        rpc = by_operation(operation)
        if rpc is None:
            if operation == "ListTasks":
                raise UnsupportedOperationError(
                    f"ListTasks is not part of A2A 0.3, which the agent at {self.url} speaks"
                )
            raise MethodNotFoundError(f"{operation!r} is not an A2A operation")
        if rpc.streaming != streaming:
            use = "stream()" if rpc.streaming else "call()"
            kind = "streams" if rpc.streaming else "does not stream"
            raise TypeError(f"{operation} {kind}: use the transport's {use}")
        return rpc

    def _encode(self, rpc: RpcV03, request: Any) -> bytes:
        if not isinstance(request, rpc.request):
            raise TypeError(
                f"{rpc.operation} takes a {rpc.request.__name__}, not a {type(request).__name__}"
            )
        return rpc.write_request(request, self._file_form)

    def _answer(self, rpc: RpcV03, raw: bytes, operation: str) -> Any:
        try:
            return rpc.read_response(raw, self._file_bytes)
        except A2AError as exc:
            raise self._invalid(operation, rpc.response or type(None), exc) from None

    def _metadata(self, options: CallOptions) -> tuple[tuple[str, str], ...]:
        # The 1.0 rules (credentials as metadata, one entry per key), less the 1.0 service
        # parameters, which 0.3 names differently or not at all.
        metadata = {
            key: value
            for key, value in _metadata(options)
            if key not in (_VERSION_KEY, _EXTENSIONS_KEY)
        }
        if options.extensions:
            metadata[_EXTENSIONS_KEY_V03] = format_extensions(options.extensions)
        return tuple(metadata.items())

    def _status(self, code: int, message: str, details: bytes | None, operation: str) -> A2AError:
        return decode_status_v03(code, message, details, operation)

    def stream(
        self, operation: Operation, request: Any, options: CallOptions
    ) -> AsyncIterator[StreamResponse]:
        events = super().stream(operation, request, options)
        if operation != "SubscribeToTask":
            return events

        async def get_task() -> Task:
            query = GetTaskRequest(id=request.id)
            task: Task = await self.call("GetTask", query, Task, options)
            return task

        return task_first(events, get_task)


def create_transport(
    interface: AgentInterface, settings: TransportSettings | None = None, **options: Any
) -> GrpcV03Transport | None:
    """The registry's factory for ``GRPC`` interfaces at protocol version 0.3; ``options`` go
    to ``GrpcV03Transport``. ``None`` when the client reaches an in-process app."""
    if settings is not None:
        options.setdefault("v03_file_bytes", settings.v03_file_bytes)
    return _create(GrpcV03Transport, interface, settings, options)
