"""The gRPC error codec against the error vectors: the REST body of each vector names the gRPC
status (``status``) and holds the very details the gRPC status must carry (A2A spec §10)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from google.rpc import error_details_pb2, status_pb2

from peerwire import errors
from peerwire.bindings.grpc.status import decode_status, encode_status

VECTOR_DIR = Path(__file__).resolve().parents[2] / "vectors"
ERROR_VECTORS = [
    pytest.param(vector, id=vector["name"])
    for vector in json.loads((VECTOR_DIR / "errors.json").read_text(encoding="utf-8"))["vectors"]
]
GRPC_CODES = {
    "INVALID_ARGUMENT": 3,
    "NOT_FOUND": 5,
    "PERMISSION_DENIED": 7,
    "FAILED_PRECONDITION": 9,
    "UNIMPLEMENTED": 12,
    "INTERNAL": 13,
    "UNAUTHENTICATED": 16,
}


def _error(vector: dict[str, Any]) -> errors.A2AError:
    violations = [
        errors.FieldViolation(v["field"], v["description"])
        for v in vector.get("fieldViolations", [])
    ]
    cls = getattr(errors, vector["error"])
    err: errors.A2AError = cls(
        vector["message"], metadata=vector.get("metadata"), field_violations=violations
    )
    return err


@pytest.mark.parametrize("vector", ERROR_VECTORS)
def test_error_encodes_to_the_vectors_status(vector: dict[str, Any]) -> None:
    rest = vector["rest"]["body"]["error"]
    code, message, details = encode_status(_error(vector))
    assert code == GRPC_CODES[rest["status"]]
    assert message == rest["message"]
    status = status_pb2.Status.FromString(details)
    assert (status.code, status.message) == (code, message)
    as_json = json_format.MessageToDict(status)
    assert as_json.get("details", []) == rest.get("details", [])


@pytest.mark.parametrize("vector", ERROR_VECTORS)
def test_error_decodes_back_to_the_same_error(vector: dict[str, Any]) -> None:
    original = _error(vector)
    decoded = decode_status(*encode_status(original))
    assert type(decoded) is type(original)
    assert decoded.message == original.message
    assert decoded.metadata == original.metadata
    assert decoded.field_violations == original.field_violations


def test_every_a2a_error_has_error_info_in_the_a2a_domain() -> None:
    _, _, details = encode_status(errors.VersionNotSupportedError())
    [packed] = status_pb2.Status.FromString(details).details
    info = error_details_pb2.ErrorInfo()
    assert packed.Unpack(info)
    assert (info.reason, info.domain) == ("VERSION_NOT_SUPPORTED", "a2a-protocol.org")


def test_reason_wins_over_a_shared_or_legacy_status() -> None:
    # 1.0.0 servers answered UnsupportedOperationError with UNIMPLEMENTED (the 1.0.0 table).
    _, _, details = encode_status(errors.UnsupportedOperationError("no"))
    status = status_pb2.Status.FromString(details)
    status.code = 12
    decoded = decode_status(12, "no", status.SerializeToString())
    assert type(decoded) is errors.UnsupportedOperationError


def test_without_details_the_status_names_a_category() -> None:
    assert type(decode_status(5, "gone", None)) is errors.TaskNotFoundError
    assert type(decode_status(3, "bad", b"")) is errors.InvalidParamsError
    assert type(decode_status(12, "no such rpc", None)) is errors.MethodNotFoundError
    unknown = decode_status(9, "", None)
    assert type(unknown) is errors.UnknownA2AError
    assert "FAILED_PRECONDITION" in unknown.message


def test_garbage_or_contradicting_details_are_ignored() -> None:
    assert type(decode_status(5, "x", b"\xff\xfe garbage")) is errors.TaskNotFoundError
    _, _, details = encode_status(errors.TaskNotCancelableError("t"))
    # Details whose status code is not the call's are not trusted.
    assert type(decode_status(5, "x", details)) is errors.TaskNotFoundError


@pytest.mark.parametrize("text", ["x", "é", "😀", "%", "\n"])
def test_the_trailers_stay_within_budget_whatever_the_text(text: str) -> None:
    from peerwire.bindings.grpc.status import TRAILER_BUDGET

    err = errors.InvalidParamsError(
        text * 100_000,
        metadata={"requestedVersion": text * 100_000},
        field_violations=[errors.FieldViolation("id", text * 100_000)],
    )
    code, message, details = encode_status(err)
    encoded = message.encode()
    escaped = sum(1 for b in encoded if b < 0x20 or b > 0x7E or b == 0x25)
    assert len(encoded) + 2 * escaped + len(details) * 4 / 3 <= TRAILER_BUDGET
    back = decode_status(code, message, details)
    assert type(back) is errors.InvalidParamsError
    assert back.field_violations[0].field == "id" and back.metadata
    assert message.endswith("…") and len(message) <= errors.MAX_ERROR_TEXT


def test_past_the_budget_only_which_error_it_is_travels() -> None:
    metadata = {f"key-{i}": "😀" * 100 for i in range(200)}
    err = errors.TaskNotFoundError("Task t was not found", metadata=metadata)
    code, message, details = encode_status(err)
    back = decode_status(code, message, details)
    assert type(back) is errors.TaskNotFoundError
    assert (back.message, back.metadata) == ("Task t was not found", {})


def test_an_error_within_budget_travels_whole() -> None:
    err = errors.InvalidParamsError("bad", metadata={"k": "v"})
    code, message, details = encode_status(err)
    assert decode_status(code, message, details).metadata == {"k": "v"}
