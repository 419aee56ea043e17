"""Golden ProtoJSON vectors (tests/vectors/*.json) round-trip byte-for-byte.

Vector files are pretty-printed for reading. Each holds ``{"type": <name>, "vectors": [{"name",
"value"}]}`` (enums: ``{"type", "enum": [{"name", "number", "class"}]}``; errors.json: the
expected JSON-RPC error object and REST google.rpc.Status body of one error each). A value is
written in canonical form: camelCase, members in the declaration order of the Struct's fields,
timestamps with milliseconds and ``Z``, standard base64 with padding, no exponent-form floats.
Its canonical bytes are the compact re-encoding of the parsed value (``compact`` below, which
keeps member order); ``encode(decode(bytes, T))`` must reproduce them exactly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

import peerwire.types as types
from peerwire import errors
from peerwire.types import Model, Role, TaskState, decode, encode

VECTOR_DIR = Path(__file__).resolve().parents[1] / "vectors"

# The 44 top-level messages of the A2A 1.0 proto (a2a.proto).
INVENTORY = [
    "SendMessageConfiguration",
    "Task",
    "TaskStatus",
    "Part",
    "Message",
    "Artifact",
    "TaskStatusUpdateEvent",
    "TaskArtifactUpdateEvent",
    "AuthenticationInfo",
    "AgentInterface",
    "AgentCard",
    "AgentProvider",
    "AgentCapabilities",
    "AgentExtension",
    "AgentSkill",
    "AgentCardSignature",
    "TaskPushNotificationConfig",
    "StringList",
    "SecurityRequirement",
    "SecurityScheme",
    "APIKeySecurityScheme",
    "HTTPAuthSecurityScheme",
    "OAuth2SecurityScheme",
    "OpenIdConnectSecurityScheme",
    "MutualTlsSecurityScheme",
    "OAuthFlows",
    "AuthorizationCodeOAuthFlow",
    "ClientCredentialsOAuthFlow",
    "ImplicitOAuthFlow",
    "PasswordOAuthFlow",
    "DeviceCodeOAuthFlow",
    "SendMessageRequest",
    "GetTaskRequest",
    "ListTasksRequest",
    "ListTasksResponse",
    "CancelTaskRequest",
    "GetTaskPushNotificationConfigRequest",
    "DeleteTaskPushNotificationConfigRequest",
    "SubscribeToTaskRequest",
    "ListTaskPushNotificationConfigsRequest",
    "GetExtendedAgentCardRequest",
    "SendMessageResponse",
    "StreamResponse",
    "ListTaskPushNotificationConfigsResponse",
]
ENUMS = ["TaskState", "Role"]
# Names from the spec's prose that do not exist in the 1.0 proto.
NOT_IN_1_0 = [
    "PushNotificationConfig",
    "CreateTaskPushNotificationConfigRequest",
    "SendStreamingMessageResponse",
    "MessageSendParams",
    "TextPart",
    "FilePart",
    "DataPart",
    "TaskIdParams",
    "TaskQueryParams",
]


def compact(value: Any) -> bytes:
    """Canonical bytes of a parsed vector: no whitespace, member order kept, UTF-8 unescaped."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _load(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return doc


VECTOR_FILES = sorted(VECTOR_DIR.glob("*.json"))
MESSAGE_FILES = [p for p in VECTOR_FILES if p.stem in INVENTORY]
MESSAGE_VECTORS = [
    pytest.param(doc["type"], vector["value"], id=f"{doc['type']}:{vector['name']}")
    for doc in map(_load, MESSAGE_FILES)
    for vector in doc["vectors"]
]
ERROR_VECTORS = [
    pytest.param(vector, id=vector["name"])
    for vector in _load(VECTOR_DIR / "errors.json")["vectors"]
]


# --- inventory --------------------------------------------------------------------------------


def test_inventory_lists_the_44_messages_of_facts_3_8() -> None:
    assert len(INVENTORY) == 44
    assert len(set(INVENTORY)) == 44


@pytest.mark.parametrize("name", INVENTORY)
def test_every_inventory_message_has_a_model_type(name: str) -> None:
    cls = getattr(types, name, None)
    assert cls is not None, f"peerwire.types has no {name}"
    assert isinstance(cls, type)
    assert issubclass(cls, Model)
    assert name in types.__all__


@pytest.mark.parametrize("name", ENUMS)
def test_both_enums_exist(name: str) -> None:
    assert name in types.__all__
    assert getattr(types, name) in (TaskState, Role)


@pytest.mark.parametrize("name", NOT_IN_1_0)
def test_names_that_do_not_exist_in_1_0_are_absent(name: str) -> None:
    assert not hasattr(types, name)


@pytest.mark.parametrize("name", INVENTORY + ENUMS)
def test_every_inventory_name_has_a_vector_file_with_vectors(name: str) -> None:
    path = VECTOR_DIR / f"{name}.json"
    assert path.is_file(), f"no vector file for {name}"
    doc = _load(path)
    entries = doc.get("vectors") or doc.get("enum")
    assert entries, f"{path.name} holds no vectors"


@pytest.mark.parametrize("path", VECTOR_FILES, ids=lambda p: p.name)
def test_each_vector_file_names_its_type(path: Path) -> None:
    doc = _load(path)
    if path.stem == "errors":
        assert doc["type"] == "A2AError"
        return
    assert doc["type"] == path.stem
    assert doc["type"] in INVENTORY + ENUMS
    names = [v["name"] for v in doc.get("vectors", doc.get("enum", []))]
    assert len(names) == len(set(names)), "vector names must be unique within a file"


# --- messages ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("type_name", "value"), MESSAGE_VECTORS)
def test_vector_round_trips_byte_for_byte(type_name: str, value: Any) -> None:
    cls = getattr(types, type_name)
    canonical = compact(value)
    decoded = decode(canonical, cls)
    assert type(decoded) is cls
    assert encode(decoded) == canonical
    # Canonical input needs no lenient rewriting: the plain strict decoder takes it as is.
    assert msgspec.json.decode(canonical, type=cls) == decoded


def test_there_are_vectors_for_every_part_kind_and_data_shape() -> None:
    parts = [v["value"] for v in _load(VECTOR_DIR / "Part.json")["vectors"]]
    kinds = {next(k for k in ("text", "raw", "url", "data") if k in p) for p in parts}
    assert kinds == {"text", "raw", "url", "data"}
    data_shapes = {type(p["data"]).__name__ for p in parts if "data" in p}
    assert data_shapes >= {"dict", "list", "NoneType", "str", "int", "float", "bool"}
    assert any("mediaType" in p for p in parts)
    assert any("filename" in p for p in parts)
    assert any("metadata" in p for p in parts)


def test_there_are_task_vectors_in_every_real_state() -> None:
    states = {v["value"]["status"]["state"] for v in _load(VECTOR_DIR / "Task.json")["vectors"]}
    assert states == {s.value for s in TaskState if s is not TaskState.UNSPECIFIED}


def test_stream_and_send_responses_cover_every_member() -> None:
    members = {next(iter(v["value"])) for v in _load(VECTOR_DIR / "StreamResponse.json")["vectors"]}
    assert members == {"task", "message", "statusUpdate", "artifactUpdate"}
    members = {
        next(iter(v["value"])) for v in _load(VECTOR_DIR / "SendMessageResponse.json")["vectors"]
    }
    assert members == {"task", "message"}


def test_full_agent_card_vector_uses_every_scheme_and_flow() -> None:
    card = next(
        v["value"] for v in _load(VECTOR_DIR / "AgentCard.json")["vectors"] if v["name"] == "full"
    )
    schemes = card["securitySchemes"].values()
    assert {next(iter(s)) for s in schemes} == {
        "apiKeySecurityScheme",
        "httpAuthSecurityScheme",
        "oauth2SecurityScheme",
        "openIdConnectSecurityScheme",
        "mtlsSecurityScheme",
    }
    flows = {
        next(iter(s["oauth2SecurityScheme"]["flows"]))
        for s in schemes
        if "oauth2SecurityScheme" in s
    }
    assert flows == {"authorizationCode", "clientCredentials", "implicit", "password", "deviceCode"}
    assert "provider" in card and card["signatures"] and card["capabilities"]["extensions"]
    assert any(s.get("securityRequirements") for s in card["skills"])
    assert all(i.get("tenant") for i in card["supportedInterfaces"])


def test_empty_list_tasks_response_vector_keeps_all_four_members() -> None:
    vectors = _load(VECTOR_DIR / "ListTasksResponse.json")["vectors"]
    empty = next(v["value"] for v in vectors if v["name"] == "empty-last-page")
    assert compact(empty) == b'{"tasks":[],"nextPageToken":"","pageSize":50,"totalSize":0}'
    assert encode(decode(compact(empty), types.ListTasksResponse)) == compact(empty)


# --- enums ------------------------------------------------------------------------------------


@pytest.mark.parametrize("enum_cls", [TaskState, Role], ids=lambda e: e.__name__)
def test_enum_vectors_match_the_enum_exactly(enum_cls: type[TaskState] | type[Role]) -> None:
    entries = _load(VECTOR_DIR / f"{enum_cls.__name__}.json")["enum"]
    assert {e["name"] for e in entries} == {member.value for member in enum_cls}
    for entry in entries:
        wire = compact(entry["name"])
        member = decode(wire, enum_cls)
        assert encode(member) == wire
        assert member.number == entry["number"]
        assert enum_cls.from_number(entry["number"]) is member


def test_task_state_vector_classes_match_facts_4_1() -> None:
    by_class: dict[str, set[str]] = {}
    for entry in _load(VECTOR_DIR / "TaskState.json")["enum"]:
        by_class.setdefault(entry["class"], set()).add(entry["name"])
    assert by_class["terminal"] == {
        "TASK_STATE_COMPLETED",
        "TASK_STATE_FAILED",
        "TASK_STATE_CANCELED",
        "TASK_STATE_REJECTED",
    }
    assert by_class["interrupted"] == {"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"}
    assert by_class["active"] == {"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"}


# --- error payloads ---------------------------------------------------------------------------


def _build_error(vector: dict[str, Any]) -> errors.A2AError:
    cls = getattr(errors, vector["error"])
    violations = [
        errors.FieldViolation(v["field"], v["description"])
        for v in vector.get("fieldViolations", [])
    ]
    err: errors.A2AError = cls(
        vector["message"], metadata=vector.get("metadata"), field_violations=violations
    )
    return err


@pytest.mark.parametrize("vector", ERROR_VECTORS)
def test_error_encodes_to_the_jsonrpc_vector(vector: dict[str, Any]) -> None:
    err = _build_error(vector)
    if vector["jsonrpc"] is None:
        with pytest.raises(ValueError):
            errors.to_jsonrpc_error(err)
        return
    assert compact(errors.to_jsonrpc_error(err)) == compact(vector["jsonrpc"])


@pytest.mark.parametrize("vector", ERROR_VECTORS)
def test_error_encodes_to_the_rest_status_vector(vector: dict[str, Any]) -> None:
    status, body = errors.to_rest_error(_build_error(vector))
    assert status == vector["rest"]["httpStatus"]
    assert compact(body) == compact(vector["rest"]["body"])


@pytest.mark.parametrize("vector", ERROR_VECTORS)
def test_error_vectors_decode_back_to_the_same_error(vector: dict[str, Any]) -> None:
    original = _build_error(vector)
    decoded = [errors.from_rest_error(vector["rest"]["httpStatus"], vector["rest"]["body"])]
    if vector["jsonrpc"] is not None:
        decoded.append(errors.from_jsonrpc_error(vector["jsonrpc"]))
    for err in decoded:
        assert type(err) is type(original)
        assert err.message == original.message
        assert err.metadata == original.metadata
        assert err.field_violations == original.field_violations
