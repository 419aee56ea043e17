"""Errors on the gRPC binding (facts §6.3, §7.4): a status code, a message, and a serialized
``google.rpc.Status`` whose ``details`` carry an ``ErrorInfo`` (reason, domain ``a2a-protocol.org``,
metadata) and, for bad fields, a ``BadRequest``; it travels in the ``grpc-status-details-bin``
trailer. The codes and reasons come from ``peerwire.errors``; this module only changes their form.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2, status_pb2

from ...errors import (
    BAD_REQUEST_TYPE,
    ERROR_INFO_TYPE,
    A2AError,
    error_details,
    from_grpc_status,
    grpc_status_of,
)

__all__ = ["DETAILS_KEY", "decode_status", "encode_status"]

DETAILS_KEY = "grpc-status-details-bin"
"""The trailing-metadata key of the serialized ``google.rpc.Status``."""


def encode_status(error: A2AError) -> tuple[int, str, bytes]:
    """The status code number, message and serialized ``google.rpc.Status`` for ``error``."""
    code, message = grpc_status_of(error)
    status = status_pb2.Status(code=code, message=message)
    for detail in error_details(error):
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
    return code, message, status.SerializeToString()


def decode_status(code: int, message: str, details: bytes | None) -> A2AError:
    """The error a gRPC status stands for; never raises.

    ``details`` is the ``grpc-status-details-bin`` trailer if there was one. Details that do not
    parse, or whose status code contradicts the call's, are ignored rather than trusted.
    """
    return from_grpc_status(code, message, _details(code, details))


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
