"""The JSON-RPC 2.0 binding as a pure codec (A2A spec §9): envelopes in, bytes out.

Decisions where the spec is silent: request ids are echoed exactly (a string stays a string, a
number a number); batches, requests without an id, ids that are null, fractional or boolean
are ``InvalidRequestError`` (-32600); an error found before the id is known answers with
``"id": null``, and so do a parse error (``error_id``) and a request whose id cannot be
echoed (not a string or an integer).
A body that is not JSON (also: invalid UTF-8, trailing bytes, lone surrogates, nesting
deeper than ``types.MAX_JSON_DEPTH``) is ``JSONParseError`` (-32700); valid JSON holding a
number beyond any JSON value's range (``1e999``) in the params is one too, the same number
as the id an ``InvalidRequestError``.

Authentication and permission errors have no JSON-RPC code (A2A spec §3.3.2): they are answered
at HTTP level (``response_status``: 401 / 403) with a JSON-RPC error body all the
same, whose code is ``HTTP_LEVEL_ERROR_CODE`` (-32000, JSON-RPC's implementation-defined
server error) and whose ErrorInfo reason (``UNAUTHENTICATED`` / ``PERMISSION_DENIED``) names
the error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from ..errors import (
    A2AError,
    InvalidRequestError,
    JSONParseError,
    MethodNotFoundError,
    error_details,
    wire_info,
    wire_message,
)
from ..errors import to_jsonrpc_error as _error_object
from ..types import (
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    check_document,
    decode,
    encode,
)

__all__ = [
    "HTTP_LEVEL_ERROR_CODE",
    "METHODS",
    "Method",
    "Request",
    "decode_envelope",
    "decode_request",
    "encode_error",
    "encode_request",
    "encode_result",
    "error_id",
    "method_of",
    "request_id_of",
    "response_status",
    "result_envelope",
]

HTTP_LEVEL_ERROR_CODE = -32000


@dataclass(frozen=True, slots=True)
class Method:
    """One JSON-RPC method: its params type, the dispatcher operation, whether it streams."""

    name: str
    params: type[Any]
    operation: str
    streaming: bool = False


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method("SendMessage", SendMessageRequest, "send_message"),
        Method("SendStreamingMessage", SendMessageRequest, "send_streaming_message", True),
        Method("GetTask", GetTaskRequest, "get_task"),
        Method("ListTasks", ListTasksRequest, "list_tasks"),
        Method("CancelTask", CancelTaskRequest, "cancel_task"),
        Method("SubscribeToTask", SubscribeToTaskRequest, "subscribe_to_task", True),
        Method(
            "CreateTaskPushNotificationConfig",
            TaskPushNotificationConfig,
            "create_task_push_notification_config",
        ),
        Method(
            "GetTaskPushNotificationConfig",
            GetTaskPushNotificationConfigRequest,
            "get_task_push_notification_config",
        ),
        Method(
            "ListTaskPushNotificationConfigs",
            ListTaskPushNotificationConfigsRequest,
            "list_task_push_notification_configs",
        ),
        Method(
            "DeleteTaskPushNotificationConfig",
            DeleteTaskPushNotificationConfigRequest,
            "delete_task_push_notification_config",
        ),
        Method("GetExtendedAgentCard", GetExtendedAgentCardRequest, "get_extended_agent_card"),
    )
}


class _Envelope(msgspec.Struct, frozen=True):
    jsonrpc: str
    method: str
    id: int | str | msgspec.UnsetType | None = msgspec.UNSET
    params: msgspec.Raw = msgspec.Raw(b"{}")


_envelope_decoder = msgspec.json.Decoder(_Envelope)

_NO_MEMBER = msgspec.Raw(b"")


class _RawEnvelope(msgspec.Struct, frozen=True):
    """The members of a document that is not a valid envelope, each as its JSON text: what is
    wrong is told member by member, and an id can be read whatever the rest holds."""

    jsonrpc: msgspec.Raw = _NO_MEMBER
    method: msgspec.Raw = _NO_MEMBER
    id: msgspec.Raw = _NO_MEMBER


_raw_envelope_decoder = msgspec.json.Decoder(_RawEnvelope)
_id_decoder: msgspec.json.Decoder[int | str | None] = msgspec.json.Decoder(int | str | None)
_text_decoder = msgspec.json.Decoder(str)


class Request(msgspec.Struct, frozen=True, gc=False):
    """A decoded request: its id as JSON bytes (echoed verbatim), method and typed params.

    A Struct, not a frozen dataclass: one is built per request, several times faster.
    """

    id: bytes
    method: Method
    params: Any


def request_id_of(body: bytes) -> bytes:
    """The request's id as JSON, if ``body`` is JSON with a usable one, else ``null`` (for
    errors). Never raises."""
    try:
        check_document(body)
        envelope = _raw_envelope_decoder.decode(body)
        value = _id_decoder.decode(envelope.id) if envelope.id else None
    except (A2AError, msgspec.DecodeError):
        return b"null"
    return b"null" if value is None else msgspec.json.encode(value)


def error_id(body: bytes, error: A2AError) -> bytes:
    """The id to answer a refused request with: ``null`` for a parse error (JSON-RPC 2.0 §5:
    no id read from text that is not JSON can be trusted), else ``request_id_of(body)``."""
    return b"null" if isinstance(error, JSONParseError) else request_id_of(body)


def decode_request(body: bytes) -> Request:
    """Decode a JSON-RPC request. Raises an ``A2AError``; ``request_id_of`` gives its id."""
    check_document(body)
    try:
        envelope = _envelope_decoder.decode(body)
    except msgspec.ValidationError:
        raise _envelope_problem(body) from None
    except msgspec.DecodeError as exc:
        raise JSONParseError(f"Invalid JSON payload: {exc}") from None
    if envelope.jsonrpc != "2.0":
        raise InvalidRequestError('Request payload validation error: "jsonrpc" must be "2.0"')
    if envelope.id is msgspec.UNSET or envelope.id is None:
        raise InvalidRequestError(
            "Request payload validation error: a request needs an id (notifications are not "
            "supported)"
        )
    method = METHODS.get(envelope.method)
    if method is None:
        raise MethodNotFoundError(f"Method not found: {envelope.method!r}")
    raw_params = bytes(envelope.params)
    if raw_params == b"null":
        raw_params = b"{}"
    params = decode(raw_params, method.params, path="params")
    return Request(id=msgspec.json.encode(envelope.id), method=method, params=params)


def decode_envelope(body: bytes) -> tuple[bytes, str, bytes]:
    """The id (as JSON, to echo), method name and raw params (``{}`` when absent or null) of
    a request, by every envelope rule of ``decode_request`` but none about the method: for a
    method table of another protocol version (A2A 0.3's, ``peerwire.compat.v03``)."""
    check_document(body)
    try:
        envelope = _envelope_decoder.decode(body)
    except msgspec.ValidationError:
        raise _envelope_problem(body) from None
    except msgspec.DecodeError as exc:
        raise JSONParseError(f"Invalid JSON payload: {exc}") from None
    if envelope.jsonrpc != "2.0":
        raise InvalidRequestError('Request payload validation error: "jsonrpc" must be "2.0"')
    if envelope.id is msgspec.UNSET or envelope.id is None:
        raise InvalidRequestError(
            "Request payload validation error: a request needs an id (notifications are not "
            "supported)"
        )
    raw_params = bytes(envelope.params)
    return (
        msgspec.json.encode(envelope.id),
        envelope.method,
        b"{}" if raw_params == b"null" else raw_params,
    )


def method_of(body: bytes) -> str | None:
    """The method a request names, if ``body`` is a JSON object with a string ``method``;
    never raises (for telling protocol versions apart on an error path)."""
    try:
        envelope = _raw_envelope_decoder.decode(body)
    except (msgspec.DecodeError, RecursionError):
        return None
    return _text(envelope.method) if envelope.method else None


def _envelope_problem(body: bytes) -> A2AError:
    """Say precisely what is wrong with a document the envelope decoder refused: not JSON
    after all (the member it stopped at was wrong, and the text breaks off later), or which
    member is wrong."""
    try:
        envelope = _raw_envelope_decoder.decode(body)
    except msgspec.ValidationError:
        # Valid JSON, but not an object.
        if body.lstrip(b" \t\r\n")[:1] == b"[":
            return _invalid_request("batch requests are not supported")
        return _invalid_request("expected a JSON object")
    except msgspec.DecodeError as exc:
        return JSONParseError(f"Invalid JSON payload: {exc}")
    if not envelope.method:
        return _invalid_request('"method" is missing')
    if _text(envelope.method) is None:
        return _invalid_request('"method" must be a string')
    if _text(envelope.jsonrpc) is None:
        return _invalid_request('"jsonrpc" must be "2.0"')
    # Every other member is one the envelope decoder takes: the id is what it refused.
    return _invalid_request("the id must be a string or an integer")


def _text(raw: msgspec.Raw) -> str | None:
    try:
        return _text_decoder.decode(raw)
    except msgspec.DecodeError:
        return None


def _invalid_request(what: str) -> InvalidRequestError:
    return InvalidRequestError(f"Request payload validation error: {what}")


_RESULT_HEAD = b'{"jsonrpc":"2.0","id":'
_RESULT_MEMBER = b',"result":'
_RESULT_TAIL = b"}"


def encode_result(request_id: bytes, result: Any) -> bytes:
    """A success response; ``result`` is an A2A object (or ``{}`` for Empty), or one already
    ``Encoded`` (spliced in as it is)."""
    return b"".join((_RESULT_HEAD, request_id, _RESULT_MEMBER, encode(result), _RESULT_TAIL))


def result_envelope(request_id: bytes) -> tuple[bytes, bytes]:
    """What comes before and after the result in ``encode_result``'s response: a stream
    wraps each of its events so."""
    return _RESULT_HEAD + request_id + _RESULT_MEMBER, _RESULT_TAIL


def encode_error(request_id: bytes, error: A2AError) -> bytes:
    if wire_info(error).jsonrpc_code is None:
        obj = {
            "code": HTTP_LEVEL_ERROR_CODE,
            "message": wire_message(error),
            "data": error_details(error),
        }
    else:
        obj = _error_object(error)
    return b'{"jsonrpc":"2.0","id":%b,"error":%b}' % (request_id, encode(obj))


def response_status(error: A2AError) -> int:
    """The HTTP status of a response carrying ``error``: 200, except for the errors JSON-RPC
    answers at HTTP level (401 authentication, 403 permission)."""
    info = wire_info(error)
    return 200 if info.jsonrpc_code is not None else info.http_status


def encode_request(request_id: int | str, method: str, params: Any) -> bytes:
    """A request (client side)."""
    return b'{"jsonrpc":"2.0","id":%b,"method":%b,"params":%b}' % (
        msgspec.json.encode(request_id),
        msgspec.json.encode(method),
        encode(params),
    )
