"""Serving A2A 0.3 requests (JSON-RPC and HTTP+JSON) on the one Dispatcher.

``A2AApp`` (JSON-RPC) and ``RestHandler`` (REST) hand a request here once its shape says 0.3
(a 0.3 method name; a ``/v1/...`` route without a 1.x ``A2A-Version``; see
``peerwire.compat.v03``). The codecs of ``peerwire.compat.v03`` translate it into the 1.0
request, the Dispatcher runs it as any other, and the answer is translated back: results,
stream events (a status update that closes the stream is ``final``) and errors (0.3's
``data`` object) in 0.3's shapes. One task model, one store, one state machine: a task
started over 0.3 is the same task over 1.0.

Extensions: 0.3 named the header ``X-A2A-Extensions``; both names are read, and the active
extensions are echoed under both.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable
from time import perf_counter
from typing import TYPE_CHECKING, Any

from ..bindings.jsonrpc import METHODS, error_id, response_status, result_envelope
from ..bindings.sse import event_framer, frame
from ..compat.v03 import errors as v03_errors
from ..compat.v03 import jsonrpc as v03_jsonrpc
from ..compat.v03 import rest as v03_rest
from ..compat.v03.files import FORM_KEY, FileBytes, FileForm, form_of_history, has_file_bytes
from ..compat.v03.translate import event_to_v03
from ..compat.v03.version import PROTOCOL_VERSION as V03
from ..errors import A2AError, ContentTypeNotSupportedError, InternalError
from ..ops import tracing
from ..protocol import active_extensions, format_extensions, parse_extensions
from ..security.principal import Principal
from ..types import Encoded, GetTaskRequest, encode
from ._authn import challenge_headers
from ._http import (
    Headers,
    Receive,
    Scope,
    Send,
    is_json,
    respond,
    send_event_stream,
)
from ._http import header as _header
from .dispatch import CallContext, Dispatcher, TaskStream

if TYPE_CHECKING:
    from ..security import Authenticator

__all__ = ["V03Server", "answer_form"]

log = logging.getLogger("peerwire.server")

_LEGACY_EXTENSIONS = b"x-a2a-extensions"
_JSON = b"application/json"
_ERROR_EVENT = b"error"
# The A2A operation of each dispatcher method: a 0.3 request is metered under its 1.0 name.
_OPERATION_OF = {method.operation: method.name for method in METHODS.values()}


# The operations whose answers can carry file bytes, and the task each names.
_TASK_OPERATIONS = frozenset(
    ("SendMessage", "SendStreamingMessage", "GetTask", "CancelTask", "SubscribeToTask")
)


async def answer_form(
    dispatcher: Dispatcher, setting: FileBytes, operation: str, request: Any, call: CallContext
) -> FileForm:
    """The form of the 0.3 proto file bytes answering ``request`` (docs/COMPATIBILITY.md): the
    interface's setting when it forces one; else the form the request's own files arrived
    in; else the one its task's files last arrived in (kept in the task's history, so a
    restart or another replica answers alike); else the proto's, the content."""
    if setting != "auto":
        return setting
    if operation not in _TASK_OPERATIONS:
        return "content"
    message = getattr(request, "message", None)
    if message is not None:
        if message.metadata and message.metadata.get(FORM_KEY) in ("content", "base64"):
            form: FileForm = message.metadata[FORM_KEY]
            return form
        task_id = message.task_id
    else:
        task_id = getattr(request, "id", None)
    if not task_id:
        return "content"
    try:
        task = await dispatcher.get_task(
            GetTaskRequest(id=task_id, tenant=getattr(request, "tenant", "")), call
        )
    except A2AError:
        return "content"  # the answer will say why; it has no files to write
    if isinstance(task, Encoded):
        task = task.decode()
    return form_of_history(m.metadata for m in task.history) or "content"


class V03Server:
    """The 0.3 side of one app: its JSON-RPC requests and its REST routes."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        *,
        bindings: Collection[str],
        keepalive_seconds: float,
        supported_extensions: Iterable[str] = (),
        required_extensions: Iterable[str] = (),
        authenticator: Authenticator | None = None,
        file_bytes: FileBytes = "auto",
    ) -> None:
        self.dispatcher = dispatcher
        self.file_bytes = file_bytes  # how 0.3 REST file bytes are read (compat.v03.files)
        self.bindings = frozenset(bindings)
        self.keepalive_seconds = keepalive_seconds
        self._supported_extensions = tuple(supported_extensions)
        self._required_extensions = tuple(required_extensions)
        self.authenticator = authenticator
        # The SERVER spans of 0.3 requests (made only while ``tracing.STATE.tracer`` is set).
        self._jsonrpc_spans = tracing.ServerSpans("JSONRPC", "0.3", dispatcher.card)
        self._rest_spans = tracing.ServerSpans("HTTP+JSON", "0.3", dispatcher.card)
        # None: metrics are off, and 0.3 requests do no metrics work at all.
        metrics = dispatcher.metrics
        self._jsonrpc_meter = None if metrics is None else metrics.requests("jsonrpc")
        self._rest_meter = None if metrics is None else metrics.requests("rest")

    def _extensions(self, scope: Scope, headers: Headers) -> tuple[str, ...]:
        requested = list(headers.extensions)
        legacy = _header(scope, _LEGACY_EXTENSIONS)
        if legacy is not None:
            requested.append(legacy.decode("latin-1"))
        return active_extensions(
            parse_extensions(requested), self._supported_extensions, self._required_extensions
        )

    @staticmethod
    def _echo(extensions: tuple[str, ...]) -> list[tuple[bytes, bytes]]:
        if not extensions:
            return []
        value = format_extensions(extensions).encode()
        return [(b"a2a-extensions", value), (_LEGACY_EXTENSIONS, value)]

    async def _run(
        self,
        dispatch: str,
        request: Any,
        call: CallContext,
        what: str,
        traced: tracing.ServerCall | None = None,
        streaming: bool = False,
    ) -> Any:
        operation = getattr(self.dispatcher, dispatch)
        try:
            if traced is not None:
                return await traced.run(operation, request, call, streaming=streaming)
            return await operation(request, call)
        except A2AError:
            raise
        except Exception:
            log.exception("peerwire: %s (A2A 0.3) failed", what)
            raise InternalError(
                "Internal error: the server failed while handling this request"
            ) from None

    # -- JSON-RPC -----------------------------------------------------------------------------

    async def jsonrpc(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        body: bytes,
        headers: Headers,
        principal: Principal | None,
    ) -> None:
        """Answer a 0.3 JSON-RPC request whose body has been read and whose caller is known."""
        meter = self._jsonrpc_meter
        started = perf_counter() if meter is not None else 0.0
        try:
            if not is_json(headers.content_type):
                raise ContentTypeNotSupportedError(
                    "JSON-RPC requests must be sent as application/json, not "
                    f"{(headers.content_type or b'(none)').decode(errors='replace')!r}"
                )
            request_id, call = v03_jsonrpc.decode_request(body, card_bindings=self.bindings)
            extensions = self._extensions(scope, headers)
        except A2AError as error:
            await self.jsonrpc_error(send, error_id(body, error), error)
            if meter is not None:
                meter.failed("", error, started)
            return
        context = CallContext.of(principal, extensions, protocol_version=V03)
        extra = self._echo(extensions)
        traced = None
        if tracing.STATE.tracer is not None:
            traced = self._jsonrpc_spans.start(call.dispatch, scope["headers"], call.request)
        try:
            result = await self._run(
                call.dispatch,
                call.request,
                context,
                call.method.name,
                traced,
                call.method.streaming,
            )
            if call.method.streaming:
                stream: TaskStream = result
            else:
                value = call.result(result)
        except A2AError as error:
            await self.jsonrpc_error(send, request_id, error, extra)
            if meter is not None:
                meter.failed(_OPERATION_OF.get(call.dispatch, ""), error, started)
            return
        if meter is not None:
            meter.ok(_OPERATION_OF[call.dispatch], started)  # a stream: its gauge follows
        if not call.method.streaming:
            head, tail = result_envelope(request_id)
            await respond(send, 200, b"".join((head, encode(value), tail)), extra)
            return
        framed = event_framer(*result_envelope(request_id))
        await send_event_stream(
            scope,
            receive,
            send,
            stream,
            event_frame=lambda item: framed(event_to_v03(item)),
            error_frame=lambda error: frame(v03_errors.encode_jsonrpc_error(request_id, error)),
            keepalive_seconds=self.keepalive_seconds,
            extra=extra,
            open_streams=None if meter is None else meter.streams,
            traced=traced,
        )

    async def jsonrpc_error(
        self,
        send: Send,
        request_id: bytes,
        error: A2AError,
        extra: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        """A 0.3 error response (authentication and permission at HTTP level, as on 1.0)."""
        headers = [*(extra or []), *challenge_headers(error, self.authenticator)]
        body = v03_errors.encode_jsonrpc_error(request_id, error)
        await respond(send, response_status(error), body, headers)

    # -- REST ---------------------------------------------------------------------------------

    async def rest(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        match: v03_rest.RouteMatch,
        body: bytes,
        headers: Headers,
        principal: Principal | None,
    ) -> None:
        """Answer a request on a 0.3 REST route whose body has been read."""
        route = match.route
        meter = self._rest_meter
        started = perf_counter() if meter is not None else 0.0
        try:
            if body.strip() and not is_json(headers.content_type):
                raise ContentTypeNotSupportedError(
                    "REST request bodies must be application/json, not "
                    f"{(headers.content_type or b'(none)').decode(errors='replace')!r}"
                )
            request = v03_rest.build_request(
                match, query=scope.get("query_string", b""), body=body, file_bytes=self.file_bytes
            )
            extensions = self._extensions(scope, headers)
        except A2AError as error:
            await self.rest_error(send, error)
            if meter is not None:
                meter.failed(_OPERATION_OF.get(route.dispatch, ""), error, started)
            return
        context = CallContext.of(principal, extensions, protocol_version=V03)
        extra = self._echo(extensions)
        traced = None
        if tracing.STATE.tracer is not None:
            traced = self._rest_spans.start(route.dispatch, scope["headers"], request)
        try:
            result = await self._run(
                route.dispatch, request, context, route.operation, traced, route.streaming
            )
            if not route.streaming:
                document = v03_rest.result_document(route, result, card_bindings=self.bindings)
                form: FileForm = "content"
                if has_file_bytes(document):
                    form = await answer_form(
                        self.dispatcher, self.file_bytes, route.operation, request, context
                    )
                payload = v03_rest.encode_result(document, form)
            else:
                form = await answer_form(
                    self.dispatcher, self.file_bytes, route.operation, request, context
                )
        except A2AError as error:
            await self.rest_error(send, error, extra=extra)
            if meter is not None:
                meter.failed(_OPERATION_OF.get(route.dispatch, ""), error, started)
            return
        if meter is not None:
            meter.ok(_OPERATION_OF[route.dispatch], started)  # a stream: its gauge follows
        if not route.streaming:
            await respond(send, 200, payload, extra, content_type=_JSON)
            return
        await send_event_stream(
            scope,
            receive,
            send,
            result,
            event_frame=lambda item: frame(v03_rest.encode_event(item, form)),
            error_frame=lambda error: frame(v03_errors.rest_error(error)[1], _ERROR_EVENT),
            keepalive_seconds=self.keepalive_seconds,
            extra=extra,
            open_streams=None if meter is None else meter.streams,
            traced=traced,
        )

    async def rest_error(
        self,
        send: Send,
        error: A2AError,
        *,
        http_status: int | None = None,
        extra: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        status, body = v03_errors.rest_error(error)
        headers = [*(extra or []), *challenge_headers(error, self.authenticator)]
        await respond(send, http_status or status, body, headers, content_type=_JSON)
