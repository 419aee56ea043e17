"""Errors on the 0.3 gRPC binding: what 0.3 peers send and read.

0.3 specified no error details for gRPC. Its SDKs agree on this much: the status message is
``"<ErrorClass>: <message>"`` (a2a-sdk reads the class from that prefix), and the status code
names the error per rpc (@a2a-js/sdk reads NOT_FOUND as TaskNotFoundError, FAILED_PRECONDITION
on CancelTask as TaskNotCancelableError, UNIMPLEMENTED on the push rpcs as
PushNotificationNotSupportedError and on TaskSubscription/GetAgentCard as
UnsupportedOperationError). So a 0.3 status is the 1.0 binding's (``..status``, from the one
wire table of ``peerwire.errors``) with two changes: those last two errors travel as
UNIMPLEMENTED, and the message carries the 0.3 class name. The ``google.rpc.Status`` with
its ``ErrorInfo`` rides along as on 1.0; 0.3 peers ignore it, and peerwire's client reads it
first.

Reading a 0.3 peer's status (``decode_status_v03``): the ErrorInfo when there is one; else
the class named in the message; else the code as the JavaScript SDK reads it; else the
generic meaning of the code (``peerwire.errors.from_grpc_status``).
"""

from __future__ import annotations

from ...bindings.grpc.status import carries_error_info, decode_status, encode_status
from ...errors import (
    A2AError,
    ContentTypeNotSupportedError,
    ExtendedAgentCardNotConfiguredError,
    ExtensionSupportRequiredError,
    InternalError,
    InvalidAgentResponseError,
    InvalidParamsError,
    InvalidRequestError,
    JSONParseError,
    MethodNotFoundError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
    VersionNotSupportedError,
)

__all__ = ["ERROR_NAMES", "decode_status_v03", "encode_status_v03"]

_NOT_FOUND = 5
_FAILED_PRECONDITION = 9
_UNIMPLEMENTED = 12

ERROR_NAMES: dict[type[A2AError], str] = {
    JSONParseError: "JSONParseError",
    InvalidRequestError: "InvalidRequestError",
    MethodNotFoundError: "MethodNotFoundError",
    InvalidParamsError: "InvalidParamsError",
    InternalError: "InternalError",
    TaskNotFoundError: "TaskNotFoundError",
    TaskNotCancelableError: "TaskNotCancelableError",
    PushNotificationNotSupportedError: "PushNotificationNotSupportedError",
    UnsupportedOperationError: "UnsupportedOperationError",
    ContentTypeNotSupportedError: "ContentTypeNotSupportedError",
    InvalidAgentResponseError: "InvalidAgentResponseError",
    # 0.3's name for it.
    ExtendedAgentCardNotConfiguredError: "AuthenticatedExtendedCardNotConfiguredError",
    # 1.0 errors a 0.3 peer may meet on a peerwire server, by their 1.0 names.
    ExtensionSupportRequiredError: "ExtensionSupportRequiredError",
    VersionNotSupportedError: "VersionNotSupportedError",
}
"""The class name a 0.3 status message starts with, per error (its nearest listed parent)."""

_BY_NAME = {name: cls for cls, name in ERROR_NAMES.items()}
_BY_NAME["ExtendedAgentCardNotConfiguredError"] = ExtendedAgentCardNotConfiguredError
_CODES_V03 = {
    PushNotificationNotSupportedError: _UNIMPLEMENTED,
    UnsupportedOperationError: _UNIMPLEMENTED,
}
_PUSH_OPERATIONS = frozenset(
    {
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
    }
)


def _listed_parent(error: A2AError) -> type[A2AError] | None:
    for cls in type(error).__mro__:
        if cls in ERROR_NAMES:
            return cls
    return None


def encode_status_v03(error: A2AError) -> tuple[int, str, bytes]:
    """The status code number, message and serialized ``google.rpc.Status`` for ``error`` as
    a 0.3 peer reads them."""
    listed = _listed_parent(error)
    code = _CODES_V03.get(listed) if listed is not None else None
    prefix = f"{ERROR_NAMES[listed]}: " if listed is not None else ""
    return encode_status(error, code=code, prefix=prefix)


def decode_status_v03(code: int, message: str, details: bytes | None, operation: str) -> A2AError:
    """The error a 0.3 peer's status stands for, on a call of the 1.0 ``operation``; never
    raises."""
    name, separator, rest = message.partition(": ")
    named = _BY_NAME.get(name) if separator else None
    text = rest if named is not None else message
    if carries_error_info(code, details):
        return decode_status(code, text, details)
    if named is not None:
        return named(text or None)
    by_code = _by_code(code, operation)
    if by_code is not None:
        return by_code(message or None)
    return decode_status(code, message, None)


def _by_code(code: int, operation: str) -> type[A2AError] | None:
    if code == _NOT_FOUND:
        return TaskNotFoundError
    if code == _FAILED_PRECONDITION:
        if operation == "CancelTask":
            return TaskNotCancelableError
        if operation == "GetExtendedAgentCard":
            return ExtendedAgentCardNotConfiguredError
    if code == _UNIMPLEMENTED:
        if operation in _PUSH_OPERATIONS:
            return PushNotificationNotSupportedError
        if operation in ("SubscribeToTask", "GetExtendedAgentCard"):
            return UnsupportedOperationError
    return None
