"""Our a2a.proto against the A2A project's normative a2a.proto, and its generated modules.

The field table below is transcribed from the A2A proto (number, and whether the field has
presence: ``optional`` scalars, oneof members and message fields). The interop suite also
compares the whole descriptor with a2a-sdk's (tests/interop/test_grpc_interop.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from google.protobuf import descriptor_pool

import peerwire.types as types
from peerwire.bindings.grpc._gen import a2a_pb2, a2a_pb2_grpc
from peerwire.bindings.grpc.service import RPCS
from peerwire.types import Role, TaskState

ROOT = Path(__file__).resolve().parents[3]
GEN_DIR = ROOT / "src" / "peerwire" / "bindings" / "grpc" / "_gen"

# message -> {field: (number, oneof or None)}; from the A2A proto.
FIELDS: dict[str, dict[str, tuple[int, str | None]]] = {
    "SendMessageConfiguration": {
        "accepted_output_modes": (1, None),
        "task_push_notification_config": (2, None),
        "history_length": (3, "_history_length"),
        "return_immediately": (4, None),
    },
    "Task": {
        "id": (1, None),
        "context_id": (2, None),
        "status": (3, None),
        "artifacts": (4, None),
        "history": (5, None),
        "metadata": (6, None),
    },
    "TaskStatus": {"state": (1, None), "message": (2, None), "timestamp": (3, None)},
    "Part": {
        "text": (1, "content"),
        "raw": (2, "content"),
        "url": (3, "content"),
        "data": (4, "content"),
        "metadata": (5, None),
        "filename": (6, None),
        "media_type": (7, None),
    },
    "Message": {
        "message_id": (1, None),
        "context_id": (2, None),
        "task_id": (3, None),
        "role": (4, None),
        "parts": (5, None),
        "metadata": (6, None),
        "extensions": (7, None),
        "reference_task_ids": (8, None),
    },
    "Artifact": {
        "artifact_id": (1, None),
        "name": (2, None),
        "description": (3, None),
        "parts": (4, None),
        "metadata": (5, None),
        "extensions": (6, None),
    },
    "TaskStatusUpdateEvent": {
        "task_id": (1, None),
        "context_id": (2, None),
        "status": (3, None),
        "metadata": (4, None),
    },
    "TaskArtifactUpdateEvent": {
        "task_id": (1, None),
        "context_id": (2, None),
        "artifact": (3, None),
        "append": (4, None),
        "last_chunk": (5, None),
        "metadata": (6, None),
    },
    "AuthenticationInfo": {"scheme": (1, None), "credentials": (2, None)},
    "AgentInterface": {
        "url": (1, None),
        "protocol_binding": (2, None),
        "tenant": (3, None),
        "protocol_version": (4, None),
    },
    "AgentCard": {
        "name": (1, None),
        "description": (2, None),
        "supported_interfaces": (3, None),
        "provider": (4, None),
        "version": (5, None),
        "documentation_url": (6, "_documentation_url"),
        "capabilities": (7, None),
        "security_schemes": (8, None),
        "security_requirements": (9, None),
        "default_input_modes": (10, None),
        "default_output_modes": (11, None),
        "skills": (12, None),
        "signatures": (13, None),
        "icon_url": (14, "_icon_url"),
    },
    "AgentProvider": {"url": (1, None), "organization": (2, None)},
    "AgentCapabilities": {
        "streaming": (1, "_streaming"),
        "push_notifications": (2, "_push_notifications"),
        "extensions": (3, None),
        "extended_agent_card": (4, "_extended_agent_card"),
    },
    "AgentExtension": {
        "uri": (1, None),
        "description": (2, None),
        "required": (3, None),
        "params": (4, None),
    },
    "AgentSkill": {
        "id": (1, None),
        "name": (2, None),
        "description": (3, None),
        "tags": (4, None),
        "examples": (5, None),
        "input_modes": (6, None),
        "output_modes": (7, None),
        "security_requirements": (8, None),
    },
    "AgentCardSignature": {"protected": (1, None), "signature": (2, None), "header": (3, None)},
    "TaskPushNotificationConfig": {
        "tenant": (1, None),
        "id": (2, None),
        "task_id": (3, None),
        "url": (4, None),
        "token": (5, None),
        "authentication": (6, None),
    },
    "StringList": {"list": (1, None)},
    "SecurityRequirement": {"schemes": (1, None)},
    "SecurityScheme": {
        "api_key_security_scheme": (1, "scheme"),
        "http_auth_security_scheme": (2, "scheme"),
        "oauth2_security_scheme": (3, "scheme"),
        "open_id_connect_security_scheme": (4, "scheme"),
        "mtls_security_scheme": (5, "scheme"),
    },
    "APIKeySecurityScheme": {"description": (1, None), "location": (2, None), "name": (3, None)},
    "HTTPAuthSecurityScheme": {
        "description": (1, None),
        "scheme": (2, None),
        "bearer_format": (3, None),
    },
    "OAuth2SecurityScheme": {
        "description": (1, None),
        "flows": (2, None),
        "oauth2_metadata_url": (3, None),
    },
    "OpenIdConnectSecurityScheme": {"description": (1, None), "open_id_connect_url": (2, None)},
    "MutualTlsSecurityScheme": {"description": (1, None)},
    "OAuthFlows": {
        "authorization_code": (1, "flow"),
        "client_credentials": (2, "flow"),
        "implicit": (3, "flow"),
        "password": (4, "flow"),
        "device_code": (5, "flow"),
    },
    "AuthorizationCodeOAuthFlow": {
        "authorization_url": (1, None),
        "token_url": (2, None),
        "refresh_url": (3, None),
        "scopes": (4, None),
        "pkce_required": (5, None),
    },
    "ClientCredentialsOAuthFlow": {
        "token_url": (1, None),
        "refresh_url": (2, None),
        "scopes": (3, None),
    },
    "ImplicitOAuthFlow": {
        "authorization_url": (1, None),
        "refresh_url": (2, None),
        "scopes": (3, None),
    },
    "PasswordOAuthFlow": {"token_url": (1, None), "refresh_url": (2, None), "scopes": (3, None)},
    "DeviceCodeOAuthFlow": {
        "device_authorization_url": (1, None),
        "token_url": (2, None),
        "refresh_url": (3, None),
        "scopes": (4, None),
    },
    "SendMessageRequest": {
        "tenant": (1, None),
        "message": (2, None),
        "configuration": (3, None),
        "metadata": (4, None),
    },
    "GetTaskRequest": {
        "tenant": (1, None),
        "id": (2, None),
        "history_length": (3, "_history_length"),
    },
    "ListTasksRequest": {
        "tenant": (1, None),
        "context_id": (2, None),
        "status": (3, None),
        "page_size": (4, "_page_size"),
        "page_token": (5, None),
        "history_length": (6, "_history_length"),
        "status_timestamp_after": (7, None),
        "include_artifacts": (8, "_include_artifacts"),
    },
    "ListTasksResponse": {
        "tasks": (1, None),
        "next_page_token": (2, None),
        "page_size": (3, None),
        "total_size": (4, None),
    },
    "CancelTaskRequest": {"tenant": (1, None), "id": (2, None), "metadata": (3, None)},
    "GetTaskPushNotificationConfigRequest": {
        "tenant": (1, None),
        "task_id": (2, None),
        "id": (3, None),
    },
    "DeleteTaskPushNotificationConfigRequest": {
        "tenant": (1, None),
        "task_id": (2, None),
        "id": (3, None),
    },
    "SubscribeToTaskRequest": {"tenant": (1, None), "id": (2, None)},
    "ListTaskPushNotificationConfigsRequest": {
        "tenant": (4, None),
        "task_id": (1, None),
        "page_size": (2, None),
        "page_token": (3, None),
    },
    "GetExtendedAgentCardRequest": {"tenant": (1, None)},
    "SendMessageResponse": {"task": (1, "payload"), "message": (2, "payload")},
    "StreamResponse": {
        "task": (1, "payload"),
        "message": (2, "payload"),
        "status_update": (3, "payload"),
        "artifact_update": (4, "payload"),
    },
    "ListTaskPushNotificationConfigsResponse": {"configs": (1, None), "next_page_token": (2, None)},
}

# The rpcs in the A2A proto's order, with their request, response and streaming flag.
SERVICE = [
    ("SendMessage", "SendMessageRequest", "SendMessageResponse", False),
    ("SendStreamingMessage", "SendMessageRequest", "StreamResponse", True),
    ("GetTask", "GetTaskRequest", "Task", False),
    ("ListTasks", "ListTasksRequest", "ListTasksResponse", False),
    ("CancelTask", "CancelTaskRequest", "Task", False),
    ("SubscribeToTask", "SubscribeToTaskRequest", "StreamResponse", True),
    (
        "CreateTaskPushNotificationConfig",
        "TaskPushNotificationConfig",
        "TaskPushNotificationConfig",
        False,
    ),
    (
        "GetTaskPushNotificationConfig",
        "GetTaskPushNotificationConfigRequest",
        "TaskPushNotificationConfig",
        False,
    ),
    (
        "ListTaskPushNotificationConfigs",
        "ListTaskPushNotificationConfigsRequest",
        "ListTaskPushNotificationConfigsResponse",
        False,
    ),
    ("GetExtendedAgentCard", "GetExtendedAgentCardRequest", "AgentCard", False),
    (
        "DeleteTaskPushNotificationConfig",
        "DeleteTaskPushNotificationConfigRequest",
        "google.protobuf.Empty",
        False,
    ),
]


def test_package_and_top_level_inventory_match_facts_3_8() -> None:
    file = a2a_pb2.DESCRIPTOR
    assert file.package == "lf.a2a.v1"
    assert list(file.message_types_by_name) == list(FIELDS)
    assert len(FIELDS) == 44
    assert sorted(file.enum_types_by_name) == ["Role", "TaskState"]
    imports = sorted(d.name for d in file.dependencies)
    assert imports == [
        "google/protobuf/empty.proto",
        "google/protobuf/struct.proto",
        "google/protobuf/timestamp.proto",
    ]


@pytest.mark.parametrize("message", list(FIELDS))
def test_fields_numbers_and_presence_match_the_facts(message: str) -> None:
    descriptor = a2a_pb2.DESCRIPTOR.message_types_by_name[message]
    actual = {
        f.name: (f.number, f.containing_oneof.name if f.containing_oneof else None)
        for f in descriptor.fields
    }
    assert actual == FIELDS[message]
    for field in descriptor.fields:
        oneof = FIELDS[message][field.name][1]
        # optional scalars (synthetic oneofs "_x"), oneof members and messages have presence
        expected = oneof is not None or (field.message_type is not None and not field.is_repeated)
        assert field.has_presence == expected, field.name


@pytest.mark.parametrize("message", list(FIELDS))
def test_fields_match_our_types_and_their_json_names(message: str) -> None:
    """Every field of ours has the proto field of the same name, with our ProtoJSON name."""
    descriptor = a2a_pb2.DESCRIPTOR.message_types_by_name[message]
    ours = {f.name: f.encode_name for f in msgspec.structs.fields(getattr(types, message))}
    assert ours == {f.name: f.json_name for f in descriptor.fields}


def test_enums_match_our_enums_by_name_and_number() -> None:
    for enum_cls in (TaskState, Role):
        proto_enum = a2a_pb2.DESCRIPTOR.enum_types_by_name[enum_cls.__name__]
        assert {v.name: v.number for v in proto_enum.values} == {
            member.value: member.number for member in enum_cls
        }


def test_deprecated_flows_are_marked() -> None:
    flows = a2a_pb2.DESCRIPTOR.message_types_by_name["OAuthFlows"]
    deprecated = {f.name for f in flows.fields if f.GetOptions().deprecated}
    assert deprecated == {"implicit", "password"}


def test_service_has_the_eleven_rpcs_in_order() -> None:
    service = a2a_pb2.DESCRIPTOR.services_by_name["A2AService"]
    assert service.full_name == "lf.a2a.v1.A2AService"
    actual = [
        (
            m.name,
            m.input_type.name,
            m.output_type.full_name
            if m.output_type.file.package != "lf.a2a.v1"
            else m.output_type.name,
            m.server_streaming,
        )
        for m in service.methods
    ]
    assert actual == SERVICE
    assert not any(m.client_streaming for m in service.methods)


def test_rpc_table_maps_every_rpc_to_our_types_and_dispatcher() -> None:
    assert list(RPCS) == [name for name, *_ in SERVICE]
    for name, request, response, streaming in SERVICE:
        rpc = RPCS[name]
        assert rpc.path == f"/lf.a2a.v1.A2AService/{name}"
        assert rpc.request is getattr(types, request)
        assert rpc.response is (
            None if response == "google.protobuf.Empty" else getattr(types, response)
        )
        assert rpc.streaming is streaming
    assert RPCS["SendStreamingMessage"].operation == "send_streaming_message"
    assert RPCS["DeleteTaskPushNotificationConfig"].operation == (
        "delete_task_push_notification_config"
    )


def test_generated_module_registers_the_package_in_the_default_pool() -> None:
    # The reason a2a-sdk may never be imported beside us: same names, same default pool.
    task = descriptor_pool.Default().FindMessageTypeByName("lf.a2a.v1.Task")
    assert task is a2a_pb2.Task.DESCRIPTOR


def test_generated_service_module_imports_its_messages_relatively() -> None:
    assert "a2a_pb2" not in sys.modules  # no top-level module leaked in
    assert a2a_pb2_grpc.a2a__pb2 is a2a_pb2
    assert hasattr(a2a_pb2_grpc, "A2AServiceStub")
    assert hasattr(a2a_pb2_grpc, "add_A2AServiceServicer_to_server")


def test_regenerating_yields_byte_identical_files(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_grpc.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    generated = sorted(p.name for p in tmp_path.iterdir())
    committed = sorted(p.name for p in GEN_DIR.iterdir() if p.is_file())
    assert generated == committed
    for name in generated:
        assert (tmp_path / name).read_bytes() == (GEN_DIR / name).read_bytes(), (
            f"_gen/{name} is stale: run `python scripts/gen_grpc.py` (with the pinned "
            "grpcio-tools of the test extra)"
        )
