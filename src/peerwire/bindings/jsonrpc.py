"""The JSON-RPC 2.0 binding as a pure codec (facts §6.1): envelopes in, bytes out.

Decisions where the spec is silent: request ids are echoed exactly (a string stays a string, a
number a number); batches, requests without an id, ids that are null, fractional or boolean
are ``InvalidRequestError`` (-32600); an error found before the id is known answers with
``"id": null``. Authentication and permission errors have no JSON-RPC code (facts §7.3): they
are answered at HTTP level (``response_status``: 401 / 403) with a JSON-RPC error body all the
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
    decode,
    encode,
)

__all__ = [
    "HTTP_LEVEL_ERROR_CODE",
    "METHODS",
    "Method",
    "Request",
    "decode_request",
    "encode_error",
    "encode_request",
    "encode_result",
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


class Request(msgspec.Struct, frozen=True, gc=False):
    """A decoded request: its id as JSON bytes (echoed verbatim), method and typed params.

    A Struct, not a frozen dataclass: one is built per request, several times faster.
    """

    id: bytes
    method: Method
    params: Any


def request_id_of(body: bytes) -> bytes:
    """The request's id as JSON, if ``body`` has a usable one, else ``null`` (for errors)."""
    try:
        document = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return b"null"
    if isinstance(document, dict):
        value = document.get("id")
        if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
            return msgspec.json.encode(value)
    return b"null"


def decode_request(body: bytes) -> Request:
    """Decode a JSON-RPC request. Raises an ``A2AError``; ``request_id_of`` gives its id."""
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


def _envelope_problem(body: bytes) -> A2AError:
    """Say precisely what is wrong with a JSON document that is not a request envelope."""
    document = msgspec.json.decode(body)
    if isinstance(document, list):
        return InvalidRequestError(
            "Request payload validation error: batch requests are not supported"
        )
    if not isinstance(document, dict):
        return InvalidRequestError("Request payload validation error: expected a JSON object")
    if "method" not in document:
        return InvalidRequestError('Request payload validation error: "method" is missing')
    if not isinstance(document.get("method"), str):
        return InvalidRequestError('Request payload validation error: "method" must be a string')
    if not isinstance(document.get("jsonrpc"), str):
        return InvalidRequestError('Request payload validation error: "jsonrpc" must be "2.0"')
    if "id" in document:
        return InvalidRequestError(
            "Request payload validation error: the id must be a string or an integer"
        )
    return InvalidRequestError("Request payload validation error")


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
            "message": error.message,
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
