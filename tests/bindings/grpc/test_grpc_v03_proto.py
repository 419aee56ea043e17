"""Our A2A 0.3 proto (a2a_v03.proto, package ``a2a.v1``) against the 0.3 proto, and how its
generated modules sit beside the 1.0 ones.

The rpcs and the fields below are those of the 0.3 proto the SDKs compiled (its descriptor,
read from a2a-sdk 0.3); the interop suite compares the whole descriptor with a2a-sdk 0.3's
(tests/interop/test_v03_proto.py).
"""

from __future__ import annotations

import sys

from google.protobuf import descriptor_pool

from peerwire.bindings.grpc._gen import a2a_pb2, a2a_v03_pb2, a2a_v03_pb2_grpc

SERVICE = a2a_v03_pb2.DESCRIPTOR.services_by_name["A2AService"]

# rpc -> (request, response, server streaming), in the proto's order.
RPCS = {
    "SendMessage": ("SendMessageRequest", "SendMessageResponse", False),
    "SendStreamingMessage": ("SendMessageRequest", "StreamResponse", True),
    "GetTask": ("GetTaskRequest", "Task", False),
    "CancelTask": ("CancelTaskRequest", "Task", False),
    "TaskSubscription": ("TaskSubscriptionRequest", "StreamResponse", True),
    "CreateTaskPushNotificationConfig": (
        "CreateTaskPushNotificationConfigRequest",
        "TaskPushNotificationConfig",
        False,
    ),
    "GetTaskPushNotificationConfig": (
        "GetTaskPushNotificationConfigRequest",
        "TaskPushNotificationConfig",
        False,
    ),
    "ListTaskPushNotificationConfig": (
        "ListTaskPushNotificationConfigRequest",
        "ListTaskPushNotificationConfigResponse",
        False,
    ),
    "GetAgentCard": ("GetAgentCardRequest", "AgentCard", False),
    "DeleteTaskPushNotificationConfig": (
        "DeleteTaskPushNotificationConfigRequest",
        "google.protobuf.Empty",
        False,
    ),
}

# message -> {field: (number, JSON name, oneof or None)}: where 0.3 differs from 1.0.
FIELDS: dict[str, dict[str, tuple[int, str, str | None]]] = {
    "Message": {
        "message_id": (1, "messageId", None),
        "context_id": (2, "contextId", None),
        "task_id": (3, "taskId", None),
        "role": (4, "role", None),
        "content": (5, "content", None),
        "metadata": (6, "metadata", None),
        "extensions": (7, "extensions", None),
    },
    "Part": {
        "text": (1, "text", "part"),
        "file": (2, "file", "part"),
        "data": (3, "data", "part"),
        "metadata": (4, "metadata", None),
    },
    "FilePart": {
        "file_with_uri": (1, "fileWithUri", "file"),
        "file_with_bytes": (2, "fileWithBytes", "file"),
        "mime_type": (3, "mimeType", None),
        "name": (4, "name", None),
    },
    "TaskStatus": {
        "state": (1, "state", None),
        "update": (2, "message", None),
        "timestamp": (3, "timestamp", None),
    },
    "Artifact": {
        "artifact_id": (1, "artifactId", None),
        "name": (3, "name", None),
        "description": (4, "description", None),
        "parts": (5, "parts", None),
        "metadata": (6, "metadata", None),
        "extensions": (7, "extensions", None),
    },
    "TaskStatusUpdateEvent": {
        "task_id": (1, "taskId", None),
        "context_id": (2, "contextId", None),
        "status": (3, "status", None),
        "final": (4, "final", None),
        "metadata": (5, "metadata", None),
    },
    "SendMessageConfiguration": {
        "accepted_output_modes": (1, "acceptedOutputModes", None),
        "push_notification": (2, "pushNotification", None),
        "history_length": (3, "historyLength", None),
        "blocking": (4, "blocking", None),
    },
    "SendMessageRequest": {
        "request": (1, "message", None),
        "configuration": (2, "configuration", None),
        "metadata": (3, "metadata", None),
    },
    "SendMessageResponse": {"task": (1, "task", "payload"), "msg": (2, "message", "payload")},
    "StreamResponse": {
        "task": (1, "task", "payload"),
        "msg": (2, "message", "payload"),
        "status_update": (3, "statusUpdate", "payload"),
        "artifact_update": (4, "artifactUpdate", "payload"),
    },
    "GetTaskRequest": {"name": (1, "name", None), "history_length": (2, "historyLength", None)},
    "CreateTaskPushNotificationConfigRequest": {
        "parent": (1, "parent", None),
        "config_id": (2, "configId", None),
        "config": (3, "config", None),
    },
    "TaskPushNotificationConfig": {
        "name": (1, "name", None),
        "push_notification_config": (2, "pushNotificationConfig", None),
    },
    "PushNotificationConfig": {
        "id": (1, "id", None),
        "url": (2, "url", None),
        "token": (3, "token", None),
        "authentication": (4, "authentication", None),
    },
    "AuthenticationInfo": {
        "schemes": (1, "schemes", None),
        "credentials": (2, "credentials", None),
    },
    "AgentInterface": {"url": (1, "url", None), "transport": (2, "transport", None)},
}

CARD_FIELDS = {
    "protocol_version": 16,
    "name": 1,
    "description": 2,
    "url": 3,
    "preferred_transport": 14,
    "additional_interfaces": 15,
    "provider": 4,
    "version": 5,
    "documentation_url": 6,
    "capabilities": 7,
    "security_schemes": 8,
    "security": 9,
    "default_input_modes": 10,
    "default_output_modes": 11,
    "skills": 12,
    "supports_authenticated_extended_card": 13,
    "signatures": 17,
    "icon_url": 18,
}


def test_the_service_and_its_rpcs() -> None:
    assert SERVICE.full_name == "a2a.v1.A2AService"
    seen = {
        m.name: (
            m.input_type.name,
            m.output_type.full_name
            if m.output_type.file.package != "a2a.v1"
            else m.output_type.name,
            m.server_streaming,
        )
        for m in SERVICE.methods
    }
    assert list(seen) == list(RPCS)
    assert seen == RPCS
    assert not any(m.client_streaming for m in SERVICE.methods)


def test_the_fields_that_differ_from_1_0() -> None:
    for name, fields in FIELDS.items():
        descriptor = a2a_v03_pb2.DESCRIPTOR.message_types_by_name[name]
        got = {
            f.name: (f.number, f.json_name, f.containing_oneof.name if f.containing_oneof else None)
            for f in descriptor.fields
        }
        assert got == fields, name


def test_the_card_names_its_endpoint_and_interfaces() -> None:
    card = a2a_v03_pb2.AgentCard.DESCRIPTOR
    assert {f.name: f.number for f in card.fields} == CARD_FIELDS
    capabilities = a2a_v03_pb2.AgentCapabilities.DESCRIPTOR
    assert [f.name for f in capabilities.fields] == [
        "streaming",
        "push_notifications",
        "extensions",
    ]


def test_the_enums() -> None:
    states = {v.name: v.number for v in a2a_v03_pb2.TaskState.DESCRIPTOR.values}
    assert states["TASK_STATE_CANCELLED"] == 5  # two Ls in 0.3; 1.0's CANCELED has the number
    assert {k: v for k, v in states.items() if k != "TASK_STATE_CANCELLED"} == {
        v.name: v.number for v in a2a_pb2.TaskState.DESCRIPTOR.values if v.number != 5
    }
    roles = {v.name: v.number for v in a2a_v03_pb2.Role.DESCRIPTOR.values}
    assert roles == {"ROLE_UNSPECIFIED": 0, "ROLE_USER": 1, "ROLE_AGENT": 2}


def test_both_versions_share_the_default_pool() -> None:
    pool = descriptor_pool.Default()
    assert pool.FindMessageTypeByName("a2a.v1.Task") is a2a_v03_pb2.Task.DESCRIPTOR
    assert pool.FindMessageTypeByName("lf.a2a.v1.Task") is a2a_pb2.Task.DESCRIPTOR
    # Files register by name: ours must not be a2a-sdk's "a2a.proto" (nor our 1.0 one's).
    assert a2a_v03_pb2.DESCRIPTOR.name == "a2a_v03.proto"
    assert a2a_pb2.DESCRIPTOR.name == "a2a.proto"


def test_the_service_module_imports_its_messages_relatively() -> None:
    assert "a2a_v03_pb2" not in sys.modules
    assert a2a_v03_pb2_grpc.a2a__v03__pb2 is a2a_v03_pb2
    assert hasattr(a2a_v03_pb2_grpc, "A2AServiceStub")
