"""Errors on the A2A 0.3 wire (sans I/O): codes from ``peerwire.errors``' one table.

0.3's JSON-RPC codes are 1.0's (-32001 TaskNotFound ... -32007, 0.3's
AuthenticatedExtendedCardNotConfigured being 1.0's ExtendedAgentCardNotConfigured), but its
``data`` is a free-form object, not 1.0's array of typed details. peerwire sends what the
ErrorInfo and BadRequest details say as one object::

    {"reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org",
     "metadata": {"taskId": "..."}, "fieldViolations": [{"field": ..., "description": ...}]}

1.0's -32008 (ExtensionSupportRequired) and -32009 (VersionNotSupported) have no 0.3 code and
are sent as they are (in 0.3's range of A2A codes). 0.3 had no REST error format; the
official SDKs answer ``{code, message, data}`` with the JSON-RPC code (JavaScript) or
``{message}`` (Python), which is what ``rest_error`` sends (with the HTTP status of the wire
table) and ``rest_error_from`` reads (``{message}`` by the Python SDK's statuses).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...bindings.jsonrpc import HTTP_LEVEL_ERROR_CODE
from ...errors import (
    BAD_REQUEST_TYPE,
    ERROR_INFO_TYPE,
    A2AError,
    ContentTypeNotSupportedError,
    InternalError,
    InvalidAgentResponseError,
    InvalidParamsError,
    InvalidRequestError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
    error_details,
    from_jsonrpc_error,
    from_rest_error,
    wire_info,
    wire_message,
)
from ...types import encode

__all__ = [
    "encode_jsonrpc_error",
    "error_from_v03",
    "error_object",
    "rest_error",
    "rest_error_from",
]

# The statuses the official Python SDK's 0.3 REST server answers with a bare {message}.
_BY_PYTHON_SDK_STATUS: dict[int, type[A2AError]] = {
    400: InvalidRequestError,
    404: TaskNotFoundError,
    409: TaskNotCancelableError,
    415: ContentTypeNotSupportedError,
    422: InvalidParamsError,
    500: InternalError,
    501: UnsupportedOperationError,
    502: InvalidAgentResponseError,
}


def _data(error: A2AError) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for detail in error_details(error):
        if detail.get("@type") == ERROR_INFO_TYPE:
            data["reason"] = detail["reason"]
            data["domain"] = detail["domain"]
            if detail.get("metadata"):
                data["metadata"] = detail["metadata"]
        elif detail.get("@type") == BAD_REQUEST_TYPE:
            data["fieldViolations"] = detail["fieldViolations"]
    return data


def error_object(error: A2AError) -> dict[str, Any]:
    """The 0.3 JSON-RPC ``error`` member: ``{code, message, data}``, ``data`` an object.
    Errors without a JSON-RPC code (authentication, permission) get -32000, as on 1.0: the
    binding answers them at HTTP level."""
    code = wire_info(error).jsonrpc_code
    out: dict[str, Any] = {
        "code": HTTP_LEVEL_ERROR_CODE if code is None else code,
        "message": wire_message(error),
    }
    data = _data(error)
    if data:
        out["data"] = data
    return out


def encode_jsonrpc_error(request_id: bytes, error: A2AError) -> bytes:
    """A 0.3 JSON-RPC error response (``request_id`` is JSON, echoed as it came)."""
    return b'{"jsonrpc":"2.0","id":%b,"error":%b}' % (request_id, encode(error_object(error)))


def error_from_v03(obj: object) -> A2AError:
    """A 0.3 JSON-RPC ``error`` member (peerwire's or another server's) as peerwire's error:
    by code, refined by the ``reason`` of an object ``data``."""
    value = obj
    if isinstance(value, Mapping) and isinstance(value.get("data"), Mapping):
        data = value["data"]
        if isinstance(data.get("reason"), str) and "@type" not in data:
            info: dict[str, Any] = {"@type": ERROR_INFO_TYPE, "reason": data["reason"]}
            for name in ("domain", "metadata"):
                if name in data:
                    info[name] = data[name]
            details: list[dict[str, Any]] = [info]
            if isinstance(data.get("fieldViolations"), list):
                details.append(
                    {"@type": BAD_REQUEST_TYPE, "fieldViolations": data["fieldViolations"]}
                )
            value = {**value, "data": details}
    return from_jsonrpc_error(value)


def rest_error(error: A2AError) -> tuple[int, bytes]:
    """HTTP status and body of a 0.3 REST error: the wire table's status, ``error_object``."""
    return wire_info(error).http_status, encode(error_object(error))


def rest_error_from(status: int, body: bytes | str | object) -> A2AError:
    """A 0.3 REST error answer as peerwire's error: ``{code, message, data}`` by its
    JSON-RPC code, ``{message}`` by the Python SDK's statuses, else as a 1.0 answer."""
    document = body
    if isinstance(body, bytes | str):
        try:
            document = json.loads(body)
        except ValueError:
            return from_rest_error(status, body)
    if isinstance(document, Mapping):
        code = document.get("code")
        if isinstance(code, int) and not isinstance(code, bool) and code < 0:
            return error_from_v03(document)
        message = document.get("message")
        if isinstance(message, str) and "error" not in document and len(document) == 1:
            cls = _BY_PYTHON_SDK_STATUS.get(status)
            if cls is UnsupportedOperationError and "push" in message.lower():
                cls = PushNotificationNotSupportedError
            if cls is not None:
                return cls(message)
    return from_rest_error(status, document)
