"""Errors on the gRPC binding (A2A spec §10): a status code, a message, and a serialized
``google.rpc.Status`` whose ``details`` carry an ``ErrorInfo`` (reason, domain ``a2a-protocol.org``,
metadata) and, for bad fields, a ``BadRequest``; it travels in the ``grpc-status-details-bin``
trailer. The codes and reasons come from ``peerwire.errors``; this module only changes their form.

Both trailers count against the receiver's metadata limit (grpc-core: 8 KiB by default, past
which the client reports RESOURCE_EXHAUSTED instead of the error), and the message travels
twice, percent-encoded in ``grpc-message`` (up to 12 bytes for a character) and inside the
details (base64). ``peerwire.errors`` bounds each text; here the texts are cut further when
the two trailers would still take more than ``TRAILER_BUDGET`` bytes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2, status_pb2

from ...errors import (
    BAD_REQUEST_TYPE,
    ERROR_INFO_TYPE,
    MAX_ERROR_TEXT,
    A2AError,
    error_details,
    from_grpc_status,
    grpc_status_of,
    wire_message,
)

__all__ = [
    "DETAILS_KEY",
    "TRAILER_BUDGET",
    "carries_error_info",
    "decode_status",
    "encode_status",
]

DETAILS_KEY = "grpc-status-details-bin"
"""The trailing-metadata key of the serialized ``google.rpc.Status``."""

TRAILER_BUDGET = 4096
"""The most bytes ``grpc-message`` and ``grpc-status-details-bin`` take on the wire, together:
half of a default client's metadata limit, the rest left for other trailers."""
# Each pass cuts every text to a quarter; past the last, only the reason and domain are left.
_SHORTER_LIMITS = (MAX_ERROR_TEXT // 4, MAX_ERROR_TEXT // 16)


def encode_status(
    error: A2AError, *, code: int | None = None, prefix: str = ""
) -> tuple[int, str, bytes]:
    """The status code number, message and serialized ``google.rpc.Status`` for ``error``,
    within ``TRAILER_BUDGET``.

    ``code`` replaces the code of the wire table and ``prefix`` is put before the message
    (the 0.3 binding's ``"TaskNotFoundError: "``); by default, the 1.0 binding's status."""
    table_code, message = grpc_status_of(error)
    code = table_code if code is None else code
    message = prefix + message
    details = _serialized(code, message, error_details(error))
    for limit in _SHORTER_LIMITS:
        if _wire_size(message, details) <= TRAILER_BUDGET:
            break
        message = prefix + wire_message(error, limit)
        details = _serialized(code, message, error_details(error, limit))
    else:
        if _wire_size(message, details) > TRAILER_BUDGET:
            # Hundreds of metadata entries or violations: which error it is still travels.
            details = _serialized(code, message, _reason_only(error))
    return code, message, details


def _reason_only(error: A2AError) -> list[dict[str, Any]]:
    return [
        {key: value for key, value in detail.items() if key != "metadata"}
        for detail in error_details(error)
        if detail["@type"] == ERROR_INFO_TYPE
    ]


def _wire_size(message: str, details: bytes) -> int:
    # grpc-message is percent-encoded (RFC 3986, all but printable ASCII); -bin is base64.
    encoded = message.encode()
    escaped = sum(1 for byte in encoded if byte < 0x20 or byte > 0x7E or byte == 0x25)
    return len(encoded) + 2 * escaped + 4 * math.ceil(len(details) / 3)


def _serialized(code: int, message: str, details: list[dict[str, Any]]) -> bytes:
    status = status_pb2.Status(code=code, message=message)
    for detail in details:
        packed = status.details.add()
        if detail["@type"] == ERROR_INFO_TYPE:
            packed.Pack(
                error_details_pb2.ErrorInfo(
                    reason=detail["reason"],
                    domain=detail["domain"],
                    metadata=detail.get("metadata", {}),
                )
            )
        elif detail["@type"] == BAD_REQUEST_TYPE:
            bad_request = error_details_pb2.BadRequest()
            for violation in detail["fieldViolations"]:
                bad_request.field_violations.add(
                    field=violation["field"], description=violation["description"]
                )
            packed.Pack(bad_request)
    serialized: bytes = status.SerializeToString()
    return serialized


def decode_status(code: int, message: str, details: bytes | None) -> A2AError:
    """The error a gRPC status stands for; never raises.

    ``details`` is the ``grpc-status-details-bin`` trailer if there was one. Details that do not
    parse, or whose status code contradicts the call's, are ignored rather than trusted.
    """
    return from_grpc_status(code, message, _details(code, details))


def carries_error_info(code: int, details: bytes | None) -> bool:
    """Whether ``details`` (a ``grpc-status-details-bin`` trailer) is a status of ``code``
    holding an ``ErrorInfo``: an error ``decode_status`` classifies by its reason."""
    return any(d["@type"] == ERROR_INFO_TYPE and d["reason"] for d in _details(code, details))


def _details(code: int, raw: bytes | None) -> list[dict[str, Any]]:
    if not raw:
        return []
    status = status_pb2.Status()
    try:
        status.ParseFromString(raw)
    except DecodeError:
        return []
    if status.code != code:
        return []
    return list(_as_dicts(status.details))


def _as_dicts(details: Iterable[Any]) -> Iterable[dict[str, Any]]:
    """Details in the ProtoJSON ``Any`` form ``peerwire.errors`` reads; unknown kinds skipped."""
    for packed in details:
        if packed.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            packed.Unpack(info)
            yield {
                "@type": ERROR_INFO_TYPE,
                "reason": info.reason,
                "domain": info.domain,
                "metadata": dict(info.metadata),
            }
        elif packed.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad_request = error_details_pb2.BadRequest()
            packed.Unpack(bad_request)
            yield {
                "@type": BAD_REQUEST_TYPE,
                "fieldViolations": [
                    {"field": v.field, "description": v.description}
                    for v in bad_request.field_violations
                ],
            }
