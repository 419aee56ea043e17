"""The translation layer on its own (``peerwire.compat.v03``): every decision of
docs/COMPATIBILITY.md, both 0.3 shapes (JSON-RPC's JSON and the 0.3 proto's JSON), both ways."""

from __future__ import annotations

from typing import Any

import pytest

from peerwire.compat.v03 import card as cards
from peerwire.compat.v03 import errors, jsonrpc, proto, rest, streams
from peerwire.compat.v03 import translate as t
from peerwire.compat.v03.version import names_v1, speaks_v03
from peerwire.errors import (
    InternalError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    StreamEndedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from peerwire.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Artifact,
    AuthenticationInfo,
    AuthorizationCodeOAuthFlow,
    DeviceCodeOAuthFlow,
    Message,
    OAuth2SecurityScheme,
    OAuthFlows,
    Part,
    Role,
    SecurityScheme,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)


def message(*parts: Part, role: Role = Role.USER, **fields: Any) -> Message:
    return Message(message_id="m-1", role=role, parts=list(parts) or [Part(text="hi")], **fields)


def status_update(state: TaskState) -> StreamResponse:
    event = TaskStatusUpdateEvent(task_id="t", context_id="c", status=TaskStatus(state=state))
    return StreamResponse(status_update=event)


# -- versions ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "v1"),
    [
        (None, False),
        ("", False),
        ("0.3", False),
        ("1.0", True),
        ("1.0.1, 1.1", True),
        ("1.0, 0.3", False),
        ("x", False),
    ],
)
def test_which_headers_name_1_x(header: str | None, v1: bool) -> None:
    assert names_v1(header) is v1


def test_which_versions_are_0_3() -> None:
    assert speaks_v03("0.3") and speaks_v03("0.3.0") and speaks_v03(" 0.3.2 ")
    assert not speaks_v03("0.2.9") and not speaks_v03("1.0") and not speaks_v03(None)


# -- enums ------------------------------------------------------------------------------------


def test_every_state_both_ways() -> None:
    spelled = {
        TaskState.SUBMITTED: ("submitted", "TASK_STATE_SUBMITTED"),
        TaskState.WORKING: ("working", "TASK_STATE_WORKING"),
        TaskState.INPUT_REQUIRED: ("input-required", "TASK_STATE_INPUT_REQUIRED"),
        TaskState.COMPLETED: ("completed", "TASK_STATE_COMPLETED"),
        TaskState.CANCELED: ("canceled", "TASK_STATE_CANCELLED"),
        TaskState.FAILED: ("failed", "TASK_STATE_FAILED"),
        TaskState.REJECTED: ("rejected", "TASK_STATE_REJECTED"),
        TaskState.AUTH_REQUIRED: ("auth-required", "TASK_STATE_AUTH_REQUIRED"),
        TaskState.UNSPECIFIED: ("unknown", "TASK_STATE_UNSPECIFIED"),
    }
    assert set(spelled) == set(TaskState)
    for state, (json_name, proto_name) in spelled.items():
        assert t.state_to_v03(state) == json_name and t.state_from_v03(json_name) is state
        assert proto.state_to_proto(state) == proto_name
        assert proto.state_from_proto(proto_name) is state
        assert proto.state_from_proto(state.number) is state
    assert proto.state_from_proto("TASK_STATE_CANCELED") is TaskState.CANCELED, "1.0's, too"
    with pytest.raises(InvalidParamsError, match="state"):
        t.state_from_v03("done")


def test_roles() -> None:
    assert t.role_to_v03(Role.USER) == "user" and t.role_to_v03(Role.AGENT) == "agent"
    assert t.role_from_v03("agent") is Role.AGENT
    with pytest.raises(InvalidParamsError) as caught:
        t.message_from_v03({"messageId": "m", "role": "ROLE_USER", "parts": []}, "params.message")
    assert caught.value.field_violations[0].field == "params.message.role"


# -- parts ------------------------------------------------------------------------------------


def test_parts_in_json_rpc_shape_both_ways() -> None:
    cases = [
        (Part(text="hi", metadata={"a": 1}), {"kind": "text", "text": "hi", "metadata": {"a": 1}}),
        (
            Part(raw=b"hi", media_type="text/plain", filename="a.txt"),
            {"kind": "file", "file": {"bytes": "aGk=", "mimeType": "text/plain", "name": "a.txt"}},
        ),
        (Part(url="https://x/y.png"), {"kind": "file", "file": {"uri": "https://x/y.png"}}),
        (Part(data={"n": 1}), {"kind": "data", "data": {"n": 1}}),
        (
            Part(data=[1, 2]),
            {"kind": "data", "data": {"value": [1, 2]}, "metadata": {"data_part_compat": True}},
        ),
        (
            Part(data=None, metadata={"k": "v"}),
            {
                "kind": "data",
                "data": {"value": None},
                "metadata": {"k": "v", "data_part_compat": True},
            },
        ),
    ]
    for part, v03 in cases:
        assert t.part_to_v03(part) == v03
        assert t.part_from_v03(v03) == part


def test_what_0_3_parts_cannot_carry_is_dropped() -> None:
    assert t.part_to_v03(Part(text="hi", media_type="text/markdown")) == {
        "kind": "text",
        "text": "hi",
    }
    assert t.part_to_v03(Part(data={}, filename="x.json")) == {"kind": "data", "data": {}}


def test_parts_without_kind_are_read_by_their_member() -> None:
    assert t.part_from_v03({"text": "hi"}) == Part(text="hi")
    assert t.part_from_v03({"file": {"uri": "u"}}) == Part(url="u")
    with pytest.raises(InvalidParamsError, match="exactly one of bytes or uri"):
        t.part_from_v03({"kind": "file", "file": {"uri": "u", "bytes": "aGk="}}, "p")
    with pytest.raises(InvalidParamsError, match="'video'"):
        t.part_from_v03({"kind": "video"}, "p")


def test_parts_in_proto_shape_both_ways() -> None:
    task = Task(
        id="t",
        context_id="c",
        status=TaskStatus(state=TaskState.COMPLETED),
        history=[
            message(
                Part(text="hi"),
                Part(raw=b"hi", media_type="text/plain", filename="a.txt"),
                Part(url="https://x"),
                Part(data={"n": 1}),
                Part(data="s"),
            )
        ],
    )
    document = proto.task_to_proto(task)
    assert document["history"][0]["content"] == [
        {"text": "hi"},
        {"file": {"fileWithBytes": "aGk=", "mimeType": "text/plain", "name": "a.txt"}},
        {"file": {"fileWithUri": "https://x"}},
        {"data": {"data": {"n": 1}}},
        {"data": {"data": {"value": "s"}}, "metadata": {"data_part_compat": True}},
    ]
    assert proto.task_from_proto(document) == task


def test_proto_input_takes_field_names_and_enum_numbers() -> None:
    document = {
        "id": "t",
        "context_id": "c",
        "status": {
            "state": 6,
            "update": {"message_id": "q", "role": 2, "content": [{"text": "?"}]},
        },
    }
    task = proto.task_from_proto(document)
    assert task.context_id == "c" and task.status.state is TaskState.INPUT_REQUIRED
    assert task.status.message is not None and task.status.message.role is Role.AGENT
    unpadded = proto.message_from_proto(
        {"messageId": "m", "role": "ROLE_USER", "content": [{"file": {"fileWithBytes": "aGk"}}]}
    )
    assert unpadded.parts[0].raw == b"hi"


# -- messages, tasks, events ------------------------------------------------------------------


def test_a_message_keeps_what_0_3_json_has() -> None:
    sent = message(
        context_id="c",
        task_id="t",
        metadata={"skill": "x"},
        extensions=["urn:e"],
        reference_task_ids=["t0"],
    )
    document = t.message_to_v03(sent)
    assert document == {
        "kind": "message",
        "messageId": "m-1",
        "contextId": "c",
        "taskId": "t",
        "role": "user",
        "parts": [{"kind": "text", "text": "hi"}],
        "metadata": {"skill": "x"},
        "extensions": ["urn:e"],
        "referenceTaskIds": ["t0"],
    }
    assert t.message_from_v03(document) == sent
    assert "referenceTaskIds" not in proto.message_to_proto(sent), "not in the 0.3 proto"


def test_timestamps_0_3_style() -> None:
    base = {"id": "t", "contextId": "c", "kind": "task"}
    naive = t.task_from_v03(
        {**base, "status": {"state": "working", "timestamp": "2025-01-02T03:04:05.123456"}}
    )
    assert naive.status.timestamp == "2025-01-02T03:04:05.123456Z"
    offset = t.task_from_v03(
        {**base, "status": {"state": "working", "timestamp": "2025-01-02T03:04:05+00:00"}}
    )
    assert offset.status.timestamp == "2025-01-02T03:04:05+00:00"
    junk = t.task_from_v03({**base, "status": {"state": "working", "timestamp": "yesterday"}})
    assert junk.status.timestamp is None


def test_a_task_always_has_its_context_id_in_0_3() -> None:
    task = Task(id="t", status=TaskStatus(state=TaskState.SUBMITTED))
    assert t.task_to_v03(task)["contextId"] == ""


@pytest.mark.parametrize("state", list(TaskState))
def test_final_marks_the_status_that_closes_the_stream(state: TaskState) -> None:
    closes = state in (
        TaskState.COMPLETED,
        TaskState.FAILED,
        TaskState.CANCELED,
        TaskState.REJECTED,
        TaskState.INPUT_REQUIRED,
    )
    assert t.event_to_v03(status_update(state))["final"] is closes
    assert proto.event_to_proto(status_update(state))["statusUpdate"].get("final", False) is closes


def test_events_both_ways() -> None:
    artifact = TaskArtifactUpdateEvent(
        task_id="t",
        context_id="c",
        artifact=Artifact(artifact_id="a", parts=[Part(text="x")]),
        append=True,
        last_chunk=True,
    )
    events = [
        StreamResponse(
            task=Task(id="t", context_id="c", status=TaskStatus(state=TaskState.WORKING))
        ),
        StreamResponse(message=message(role=Role.AGENT)),
        status_update(TaskState.COMPLETED),
        StreamResponse(artifact_update=artifact),
    ]
    kinds = [t.event_to_v03(e)["kind"] for e in events]
    assert kinds == ["task", "message", "status-update", "artifact-update"]
    for event in events:
        assert t.event_from_v03(t.event_to_v03(event)) == event
        assert proto.event_from_proto(proto.event_to_proto(event)) == event
        bare = {k: v for k, v in t.event_to_v03(event).items() if k != "kind"}
        assert t.event_from_v03(bare) == event, "kind inferred from the members"


# -- push configs and sends -------------------------------------------------------------------


def test_push_configs_both_shapes() -> None:
    config = TaskPushNotificationConfig(
        id="c1",
        task_id="t",
        url="https://hook",
        token="tok",
        authentication=AuthenticationInfo(scheme="Bearer", credentials="x"),
    )
    v03 = t.push_config_to_v03(config)
    assert v03 == {
        "taskId": "t",
        "pushNotificationConfig": {
            "id": "c1",
            "url": "https://hook",
            "token": "tok",
            "authentication": {"schemes": ["Bearer"], "credentials": "x"},
        },
    }
    assert t.push_config_from_v03(v03) == config
    two = {
        "taskId": "t",
        "pushNotificationConfig": {"url": "u", "authentication": {"schemes": ["Basic", "Bearer"]}},
    }
    assert t.push_config_from_v03(two).authentication == AuthenticationInfo(scheme="Basic")
    named = proto.push_config_to_proto(config)
    assert named["name"] == "tasks/t/pushNotificationConfigs/c1"
    assert proto.push_config_from_proto(named) == config
    request = proto.create_push_config_to_proto(config)
    assert request["parent"] == "tasks/t" and request["configId"] == "c1"
    assert proto.create_push_config_from_proto(request, task_id="t") == config
    assert proto.ids_of_config_name(named["name"]) == ("t", "c1")
    with pytest.raises(InvalidParamsError, match="task resource name"):
        proto.task_id_of_name("task/t")


def test_blocking_in_both_shapes() -> None:
    def immediately(request: SendMessageRequest) -> bool:
        return request.configuration is not None and request.configuration.return_immediately

    base: dict[str, Any] = {"message": t.message_to_v03(message())}
    assert not immediately(t.send_params_from_v03(base))
    assert not immediately(t.send_params_from_v03({**base, "configuration": {}}))
    assert immediately(t.send_params_from_v03({**base, "configuration": {"blocking": False}}))
    wire: dict[str, Any] = {"message": proto.message_to_proto(message())}
    assert not immediately(proto.send_request_from_proto(wire)), "no configuration: blocks"
    assert immediately(proto.send_request_from_proto({**wire, "configuration": {}}))
    blocking = {**wire, "configuration": {"blocking": True, "historyLength": 0}}
    parsed = proto.send_request_from_proto(blocking)
    assert not immediately(parsed)
    assert parsed.configuration is not None and parsed.configuration.history_length is None
    quick = SendMessageRequest(
        tenant="ignored",
        message=message(),
        configuration=SendMessageConfiguration(return_immediately=True, history_length=2),
    )
    assert t.send_params_to_v03(quick)["configuration"] == {"historyLength": 2, "blocking": False}
    assert proto.send_request_to_proto(SendMessageRequest(message=message()))["configuration"] == {
        "blocking": True
    }, "said explicitly: a 0.3 proto server takes silence as false"


# -- errors -----------------------------------------------------------------------------------


def test_errors_both_ways() -> None:
    error = TaskNotFoundError("Task t was not found", metadata={"taskId": "t"})
    member = errors.error_object(error)
    assert member == {
        "code": -32001,
        "message": "Task t was not found",
        "data": {
            "reason": "TASK_NOT_FOUND",
            "domain": "a2a-protocol.org",
            "metadata": {"taskId": "t"},
        },
    }
    back = errors.error_from_v03(member)
    assert isinstance(back, TaskNotFoundError) and back.metadata == {"taskId": "t"}
    ended = errors.error_from_v03(
        errors.error_object(StreamEndedError(task_id="t", cause="shutdown"))
    )
    assert isinstance(ended, StreamEndedError) and ended.task_id == "t"
    foreign = errors.error_from_v03({"code": -32002, "message": "no", "data": {"why": "done"}})
    assert isinstance(foreign, TaskNotCancelableError) and foreign.metadata == {"why": "done"}
    assert errors.rest_error(error)[0] == 404


@pytest.mark.parametrize(
    ("status", "body", "cls"),
    [
        (404, b'{"code": -32001, "message": "gone"}', TaskNotFoundError),
        (404, b'{"message": "Task not found"}', TaskNotFoundError),
        (
            501,
            b'{"message": "Push Notification is not supported"}',
            PushNotificationNotSupportedError,
        ),
        (501, b'{"message": "nope"}', UnsupportedOperationError),
        (500, b'{"error": {"code": 500, "status": "INTERNAL", "message": "x"}}', InternalError),
    ],
)
def test_rest_errors_of_the_0_3_sdks(status: int, body: bytes, cls: type[Exception]) -> None:
    assert type(errors.rest_error_from(status, body)) is cls


# -- method and route tables ------------------------------------------------------------------


def test_every_0_3_method_maps_to_a_1_0_operation() -> None:
    assert {m.name for m in jsonrpc.METHODS.values()} == {
        "message/send",
        "message/stream",
        "tasks/get",
        "tasks/cancel",
        "tasks/resubscribe",
        "tasks/pushNotificationConfig/set",
        "tasks/pushNotificationConfig/get",
        "tasks/pushNotificationConfig/list",
        "tasks/pushNotificationConfig/delete",
        "agent/getAuthenticatedExtendedCard",
    }
    with pytest.raises(UnsupportedOperationError):
        jsonrpc.method_for("ListTasks")
    assert not jsonrpc.is_v03_method("SendMessage")


@pytest.mark.parametrize(
    ("verb", "path", "operation"),
    [
        ("POST", "/v1/message:send", "SendMessage"),
        ("POST", "/v1/message:stream", "SendStreamingMessage"),
        ("GET", "/v1/tasks/a%2Fb", "GetTask"),
        ("POST", "/v1/tasks/t:cancel", "CancelTask"),
        ("GET", "/v1/tasks/t:subscribe", "SubscribeToTask"),
        ("POST", "/v1/tasks/t:subscribe", "SubscribeToTask"),
        ("POST", "/v1/tasks/t/pushNotificationConfigs", "CreateTaskPushNotificationConfig"),
        ("GET", "/v1/tasks/t/pushNotificationConfigs", "ListTaskPushNotificationConfigs"),
        ("GET", "/v1/tasks/t/pushNotificationConfigs/c", "GetTaskPushNotificationConfig"),
        ("DELETE", "/v1/tasks/t/pushNotificationConfigs/c", "DeleteTaskPushNotificationConfig"),
        ("GET", "/v1/card", "GetExtendedAgentCard"),
    ],
)
def test_0_3_routes(verb: str, path: str, operation: str) -> None:
    found = rest.match_route(verb, path)
    assert isinstance(found, rest.RouteMatch) and found.route.operation == operation
    if "a%2Fb" in path:
        assert found.task_id == "a/b"


def test_paths_no_0_3_route_has() -> None:
    for path in ("/message:send", "/v1/tasks", "/v1/other", "/v1/tasks/t/x", "/v2/card"):
        assert rest.match_route("GET", path) is None, path
    assert rest.match_route("PUT", "/v1/card").allow == ("GET",)  # type: ignore[union-attr]
    with pytest.raises(UnsupportedOperationError):
        rest.encode_request("ListTasks", None)


# -- cards ------------------------------------------------------------------------------------


def oauth(*, device: bool = False) -> SecurityScheme:
    if device:
        flow = OAuthFlows(
            device_code=DeviceCodeOAuthFlow(device_authorization_url="d", token_url="t", scopes={})
        )
    else:
        flow = OAuthFlows(
            authorization_code=AuthorizationCodeOAuthFlow(
                authorization_url="a", token_url="t", scopes={"s": "S"}, pkce_required=True
            )
        )
    return SecurityScheme(oauth2_security_scheme=OAuth2SecurityScheme(flows=flow))


def sample_card() -> AgentCard:
    return AgentCard(
        name="n",
        description="d",
        version="1",
        supported_interfaces=[
            AgentInterface(url="http://a/", protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url="a:1", protocol_binding="GRPC", protocol_version="1.0"),
            AgentInterface(
                url="http://a/rest", protocol_binding="HTTP+JSON", protocol_version="1.0"
            ),
        ],
        capabilities=AgentCapabilities(streaming=True, extended_agent_card=True),
        security_schemes={"o": oauth(), "dev": oauth(device=True)},
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="s", name="S", description="d", tags=["t"])],
    )


def test_the_dual_card_takes_its_endpoint_from_the_bindings_serving_0_3() -> None:
    document = cards.dual_card_document(sample_card(), {"JSONRPC", "HTTP+JSON"})
    assert document["url"] == "http://a/" and document["preferredTransport"] == "JSONRPC"
    assert [i["transport"] for i in document["additionalInterfaces"]] == ["JSONRPC", "HTTP+JSON"]
    assert document["supportsAuthenticatedExtendedCard"] is True
    assert len(document["supportedInterfaces"]) == 3
    only_rest = cards.dual_card_document(sample_card(), {"HTTP+JSON"})
    assert only_rest["url"] == "http://a/rest" and only_rest["preferredTransport"] == "HTTP+JSON"
    assert "url" not in cards.dual_card_document(sample_card(), ())


def test_oauth_flows_across() -> None:
    v03 = cards.card_to_v03(sample_card())
    code = v03["securitySchemes"]["o"]
    assert code == {
        "type": "oauth2",
        "flows": {
            "authorizationCode": {"authorizationUrl": "a", "tokenUrl": "t", "scopes": {"s": "S"}}
        },
    }, "pkceRequired has no 0.3 place"
    assert v03["securitySchemes"]["dev"] == {"type": "oauth2", "flows": {}}, "no 0.3 device flow"
    back = cards.card_from_v03(v03)
    assert set(back.security_schemes) == {"o"}, "a scheme without a flow 1.0 can hold is left out"
    several = {
        **v03,
        "securitySchemes": {
            "o": {
                "type": "oauth2",
                "flows": {
                    "clientCredentials": {"tokenUrl": "t", "scopes": {}},
                    "authorizationCode": {"authorizationUrl": "a", "tokenUrl": "t", "scopes": {}},
                },
            }
        },
    }
    flows = cards.card_from_v03(several).security_schemes["o"].oauth2_security_scheme
    assert flows is not None and flows.flows.authorization_code is not None, "the first of 0.3's"
    assert "deviceCode" not in str(cards.card_to_proto(sample_card()))


def test_cards_in_proto_shape_both_ways() -> None:
    document = cards.card_to_proto(sample_card(), {"JSONRPC"})
    assert document["url"] == "http://a/" and document["protocolVersion"] == "0.3.0"
    assert (
        "supportedInterfaces" not in document
        and "extendedAgentCard" not in document["capabilities"]
    )
    back = cards.card_from_proto(document)
    assert back.supported_interfaces == [
        AgentInterface(url="http://a/", protocol_binding="JSONRPC", protocol_version="0.3")
    ]
    assert back.capabilities.extended_agent_card is True
    assert back.skills == sample_card().skills


# -- how a 0.3 stream opens -------------------------------------------------------------------


def test_a_stream_opened_with_an_update_is_opened_with_its_task() -> None:
    sent = SendMessageRequest(message=message())
    working = status_update(TaskState.WORKING)
    [opened] = streams.opening(working, sent)
    assert opened.task is not None and opened.task.status.state is TaskState.WORKING
    assert [(m.task_id, m.context_id) for m in opened.task.history] == [("t", "c")]
    artifact = StreamResponse(
        artifact_update=TaskArtifactUpdateEvent(
            task_id="t", context_id="c", artifact=Artifact(artifact_id="a", parts=[Part(text="x")])
        )
    )
    task, same = streams.opening(artifact, None)
    assert task.task is not None and task.task.status.state is TaskState.SUBMITTED
    assert task.task.history == [] and same is artifact
    reply = StreamResponse(message=message(role=Role.AGENT))
    assert streams.opening(reply, sent) == [reply]
