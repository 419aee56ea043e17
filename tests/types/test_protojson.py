"""ProtoJSON rules of peerwire.types (A2A spec §5.5-§5.7): presence, lenient input,
rejections, identity.

Expected bytes here are written out by hand from the spec's rules, not produced by the encoder.
"""

from __future__ import annotations

import base64
import string
from datetime import datetime
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from peerwire.errors import InvalidParamsError, JSONParseError
from peerwire.types import (
    AgentCapabilities,
    AgentCard,
    AgentCardSignature,
    AgentExtension,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    APIKeySecurityScheme,
    Artifact,
    AuthenticationInfo,
    AuthorizationCodeOAuthFlow,
    ClientCredentialsOAuthFlow,
    DeviceCodeOAuthFlow,
    GetTaskRequest,
    HTTPAuthSecurityScheme,
    ImplicitOAuthFlow,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    MutualTlsSecurityScheme,
    OAuth2SecurityScheme,
    OAuthFlows,
    OpenIdConnectSecurityScheme,
    Part,
    PasswordOAuthFlow,
    Role,
    SecurityRequirement,
    SecurityScheme,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    StringList,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    decode,
    encode,
    from_builtins,
)

TS = "2026-01-01T00:00:00.000Z"


def text_part(text: str = "hi") -> Part:
    return Part(text=text)


def user_message(**overrides: Any) -> Message:
    fields: dict[str, Any] = {"message_id": "m-1", "role": Role.USER, "parts": [text_part()]}
    fields.update(overrides)
    return Message(**fields)


def invalid(data: bytes | str, type_: type[Any]) -> InvalidParamsError:
    """Decode ``data`` expecting InvalidParamsError; return it for inspection."""
    with pytest.raises(InvalidParamsError) as caught:
        decode(data, type_)
    return caught.value


def violation_fields(err: InvalidParamsError) -> list[str]:
    return [v.field for v in err.field_violations]


# --- presence rules: what the encoder emits ----------------------------------------------------


class TestPresence:
    def test_optional_capability_flags_are_emitted_when_false(self) -> None:
        assert encode(AgentCapabilities(streaming=False)) == b'{"streaming":false}'
        assert encode(
            AgentCapabilities(streaming=False, push_notifications=False, extended_agent_card=False)
        ) == (b'{"streaming":false,"pushNotifications":false,"extendedAgentCard":false}')

    def test_unset_optional_capability_flags_are_omitted(self) -> None:
        assert encode(AgentCapabilities()) == b"{}"

    def test_optional_int32_zero_is_emitted(self) -> None:
        assert encode(GetTaskRequest(id="t", history_length=0)) == b'{"id":"t","historyLength":0}'
        assert encode(SendMessageConfiguration(history_length=0)) == b'{"historyLength":0}'
        assert encode(ListTasksRequest(page_size=0, history_length=0)) == (
            b'{"pageSize":0,"historyLength":0}'
        )

    def test_optional_bool_false_is_emitted(self) -> None:
        assert encode(ListTasksRequest(include_artifacts=False)) == b'{"includeArtifacts":false}'

    def test_optional_card_urls_are_emitted_when_empty(self) -> None:
        card = _card(documentation_url="", icon_url="")
        raw = encode(card)
        assert b'"documentationUrl":""' in raw
        assert b'"iconUrl":""' in raw
        assert b"documentationUrl" not in encode(_card())

    def test_oneof_members_are_emitted_even_when_default(self) -> None:
        assert encode(Part(text="")) == b'{"text":""}'
        assert encode(Part(raw=b"")) == b'{"raw":""}'
        assert encode(Part(data=None)) == b'{"data":null}'
        assert encode(Part(data=0)) == b'{"data":0}'
        assert encode(Part(data=False)) == b'{"data":false}'

    def test_plain_defaults_are_omitted(self) -> None:
        message = user_message(context_id="", task_id="", extensions=[], reference_task_ids=[])
        assert encode(message) == b'{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}]}'
        assert encode(Part(text="x", filename="", media_type="")) == b'{"text":"x"}'
        assert encode(AgentExtension(uri="u", required=False)) == b'{"uri":"u"}'
        assert encode(
            AgentInterface(url="u", protocol_binding="JSONRPC", protocol_version="1.0")
        ) == (b'{"url":"u","protocolBinding":"JSONRPC","protocolVersion":"1.0"}')
        assert encode(SendMessageConfiguration(return_immediately=False)) == b"{}"
        assert encode(ListTasksRequest(status=TaskState.UNSPECIFIED, page_token="")) == b"{}"
        assert encode(ListTaskPushNotificationConfigsRequest(task_id="t", page_size=0)) == (
            b'{"taskId":"t"}'
        )
        assert encode(StringList(list=[])) == b"{}"
        assert encode(SecurityRequirement(schemes={"key": StringList()})) == (
            b'{"schemes":{"key":{}}}'
        )

    def test_task_artifacts_history_and_metadata_are_omitted_when_empty(self) -> None:
        task = Task(id="t", status=TaskStatus(state=TaskState.WORKING), artifacts=[], history=[])
        assert encode(task) == b'{"id":"t","status":{"state":"TASK_STATE_WORKING"}}'

    def test_event_flags_are_plain_bools(self) -> None:
        event = TaskArtifactUpdateEvent(
            task_id="t", context_id="c", artifact=Artifact(artifact_id="a", parts=[text_part()])
        )
        raw = encode(event)
        assert b"append" not in raw
        assert b"lastChunk" not in raw
        assert b'"lastChunk":true' in encode(msgspec.structs.replace(event, last_chunk=True))

    def test_required_members_are_emitted_even_when_empty(self) -> None:
        # A2A spec §8.4: REQUIRED fields always included ("description": "", "skills": []).
        raw = encode(
            AgentCard(
                name="Example Agent",
                description="",
                supported_interfaces=[],
                version="",
                capabilities=AgentCapabilities(),
                default_input_modes=[],
                default_output_modes=[],
                skills=[],
            )
        )
        assert raw == (
            b'{"name":"Example Agent","description":"","supportedInterfaces":[],"version":"",'
            b'"capabilities":{},"defaultInputModes":[],"defaultOutputModes":[],"skills":[]}'
        )
        event = TaskStatusUpdateEvent(
            task_id="t", context_id="", status=TaskStatus(state=TaskState.WORKING)
        )
        assert encode(event) == (
            b'{"taskId":"t","contextId":"","status":{"state":"TASK_STATE_WORKING"}}'
        )

    def test_list_tasks_response_always_has_all_four_members(self) -> None:
        assert encode(ListTasksResponse()) == (
            b'{"tasks":[],"nextPageToken":"","pageSize":0,"totalSize":0}'
        )
        assert encode(ListTasksResponse(tasks=[], next_page_token="", page_size=50)) == (
            b'{"tasks":[],"nextPageToken":"","pageSize":50,"totalSize":0}'
        )

    def test_list_tasks_response_tasks_still_omit_their_own_defaults(self) -> None:
        task = Task(id="t", status=TaskStatus(state=TaskState.WORKING))
        raw = encode(ListTasksResponse(tasks=[task], page_size=1, total_size=1))
        assert raw == (
            b'{"tasks":[{"id":"t","status":{"state":"TASK_STATE_WORKING"}}],'
            b'"nextPageToken":"","pageSize":1,"totalSize":1}'
        )

    def test_raw_bytes_are_standard_padded_base64(self) -> None:
        assert encode(Part(raw=b"\xfb\xff")) == b'{"raw":"+/8="}'
        assert encode(Part(raw=b"hello")) == b'{"raw":"aGVsbG8="}'

    def test_enums_are_emitted_by_name(self) -> None:
        assert encode(TaskStatus(state=TaskState.CANCELED)) == b'{"state":"TASK_STATE_CANCELED"}'
        assert b'"role":"ROLE_AGENT"' in encode(user_message(role=Role.AGENT))


# --- lenient input ------------------------------------------------------------------------------


class TestLenientInput:
    def test_snake_case_names_are_accepted_at_every_depth(self) -> None:
        snake = (
            b'{"status_update":{"task_id":"t","context_id":"c","status":{"state":'
            b'"TASK_STATE_INPUT_REQUIRED","message":{"message_id":"m","context_id":"c",'
            b'"task_id":"t","role":"ROLE_AGENT","parts":[{"text":"?","media_type":"text/plain"}],'
            b'"reference_task_ids":["t0"]}}}}'
        )
        camel = (
            b'{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":'
            b'"TASK_STATE_INPUT_REQUIRED","message":{"messageId":"m","contextId":"c",'
            b'"taskId":"t","role":"ROLE_AGENT","parts":[{"text":"?","mediaType":"text/plain"}],'
            b'"referenceTaskIds":["t0"]}}}}'
        )
        assert decode(snake, StreamResponse) == decode(camel, StreamResponse)
        assert encode(decode(snake, StreamResponse)) == camel

    def test_snake_case_card_keeps_user_chosen_map_keys(self) -> None:
        snake = (
            b'{"name":"n","description":"d","supported_interfaces":[{"url":"u",'
            b'"protocol_binding":"JSONRPC","protocol_version":"1.0"}],"version":"1",'
            b'"capabilities":{"push_notifications":true,"extended_agent_card":false},'
            b'"security_schemes":{"my_oauth":{"oauth2_security_scheme":{"flows":'
            b'{"client_credentials":{"token_url":"https://t","scopes":{"read_all":"Read"}}}}}},'
            b'"security_requirements":[{"schemes":{"my_oauth":{"list":["read_all"]}}}],'
            b'"default_input_modes":["text/plain"],"default_output_modes":["text/plain"],'
            b'"skills":[],"icon_url":"https://i"}'
        )
        card = decode(snake, AgentCard)
        assert set(card.security_schemes) == {"my_oauth"}
        flow = card.security_schemes["my_oauth"].oauth2_security_scheme
        assert flow is not None and flow.flows.client_credentials is not None
        assert flow.flows.client_credentials.scopes == {"read_all": "Read"}
        assert card.security_requirements[0].schemes == {"my_oauth": StringList(list=["read_all"])}
        assert card.capabilities.push_notifications is True
        assert card.capabilities.extended_agent_card is False
        assert card.icon_url == "https://i"
        assert encode(card) == (
            b'{"name":"n","description":"d","supportedInterfaces":[{"url":"u",'
            b'"protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"version":"1",'
            b'"capabilities":{"pushNotifications":true,"extendedAgentCard":false},'
            b'"securitySchemes":{"my_oauth":{"oauth2SecurityScheme":{"flows":'
            b'{"clientCredentials":{"tokenUrl":"https://t","scopes":{"read_all":"Read"}}}}}},'
            b'"securityRequirements":[{"schemes":{"my_oauth":{"list":["read_all"]}}}],'
            b'"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],'
            b'"skills":[],"iconUrl":"https://i"}'
        )

    @pytest.mark.parametrize(("number", "role"), [(1, Role.USER), (2, Role.AGENT)])
    def test_role_by_number(self, number: int, role: Role) -> None:
        raw = f'{{"messageId":"m","role":{number},"parts":[{{"text":"x"}}]}}'
        assert decode(raw, Message).role is role

    @pytest.mark.parametrize(
        ("number", "name"),
        [
            (1, "TASK_STATE_SUBMITTED"),
            (2, "TASK_STATE_WORKING"),
            (3, "TASK_STATE_COMPLETED"),
            (4, "TASK_STATE_FAILED"),
            (5, "TASK_STATE_CANCELED"),
            (6, "TASK_STATE_INPUT_REQUIRED"),
            (7, "TASK_STATE_REJECTED"),
            (8, "TASK_STATE_AUTH_REQUIRED"),
        ],
    )
    def test_task_state_by_number(self, number: int, name: str) -> None:
        task = decode(f'{{"id":"t","status":{{"state":{number}}}}}', Task)
        assert task.status.state.value == name
        assert encode(task) == f'{{"id":"t","status":{{"state":"{name}"}}}}'.encode()

    def test_list_filter_status_by_number(self) -> None:
        assert decode(b'{"status":6}', ListTasksRequest).status is TaskState.INPUT_REQUIRED
        assert decode(b'{"status":0}', ListTasksRequest).status is TaskState.UNSPECIFIED

    def test_int32_as_numeric_string(self) -> None:
        assert decode(b'{"pageSize":"5"}', ListTasksRequest).page_size == 5
        assert decode(b'{"id":"t","historyLength":"0"}', GetTaskRequest).history_length == 0
        # range is the protocol layer's business; the codec only reads the number
        assert decode(b'{"id":"t","historyLength":"-3"}', GetTaskRequest).history_length == -3
        response = decode(
            b'{"tasks":[],"nextPageToken":"","pageSize":"10","totalSize":"7"}', ListTasksResponse
        )
        assert (response.page_size, response.total_size) == (10, 7)

    @pytest.mark.parametrize(
        ("spelling", "expected"),
        [
            ("+/8=", b"\xfb\xff"),  # canonical
            ("-_8=", b"\xfb\xff"),  # URL-safe alphabet, padded
            ("-_8", b"\xfb\xff"),  # URL-safe, unpadded
            ("+/8", b"\xfb\xff"),  # standard, unpadded
            ("aGVsbG8", b"hello"),
            ("aGVsbA", b"hell"),
        ],
    )
    def test_base64_spellings(self, spelling: str, expected: bytes) -> None:
        raw = f'{{"messageId":"m","role":"ROLE_USER","parts":[{{"raw":"{spelling}"}}]}}'
        message = decode(raw, Message)
        assert message.parts[0].raw == expected
        assert b'"raw":"' + base64.b64encode(expected) + b'"' in encode(message)

    def test_unknown_fields_are_ignored_at_every_depth(self) -> None:
        canonical = b'{"id":"t","status":{"state":"TASK_STATE_WORKING"}}'
        noisy = b'{"id":"t","kind":"task","future":{"x":1},"status":{"state":2,"final":true}}'
        assert decode(noisy, Task) == decode(canonical, Task)
        # also on the fast path (canonical spellings only)
        noisy_fast = b'{"id":"t","kind":"task","status":{"state":"TASK_STATE_WORKING","x":[]}}'
        assert encode(decode(noisy_fast, Task)) == canonical

    def test_null_for_a_message_field_means_unset(self) -> None:
        status = decode(b'{"state":"TASK_STATE_WORKING","message":null}', TaskStatus)
        assert status.message is None
        request = decode(
            b'{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]},'
            b'"configuration":null,"metadata":null}',
            SendMessageRequest,
        )
        assert request.configuration is None
        assert request.metadata is None
        config = decode(b'{"url":"u","authentication":null}', TaskPushNotificationConfig)
        assert config.authentication is None

    def test_null_for_scalar_and_repeated_fields_means_unset(self) -> None:
        # ProtoJSON: null for any non-Value field is "not set"
        message = decode(
            b'{"messageId":"m","contextId":null,"taskId":null,"role":"ROLE_USER",'
            b'"parts":[{"text":"x","filename":null}],"extensions":null}',
            Message,
        )
        assert encode(message) == b'{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}'
        assert decode(b'{"status":null,"pageSize":null}', ListTasksRequest) == ListTasksRequest()

    def test_data_null_is_a_valid_data_part(self) -> None:
        part = decode(b'{"data":null}', Part)
        assert part.kind == "data"
        assert part.data is None
        assert encode(part) == b'{"data":null}'
        # and a null text next to it is merely "not set"
        assert decode(b'{"text":null,"data":null}', Part) == part

    def test_keys_inside_metadata_and_data_are_never_rewritten(self) -> None:
        free_form = (
            b'{"snake_key":1,"role":1,"status":2,"state":3,"raw":"-_8","historyLength":"5",'
            b'"nested":{"task_id":"x","media_type":null}}'
        )
        # the outer snake_case member forces the lenient pass
        template = (
            b'{"message_id":"m","role":"ROLE_USER",'
            b'"parts":[{"data":@@,"metadata":@@}],"metadata":@@}'
        )
        raw = template.replace(b"@@", free_form)
        message = decode(raw, Message)
        expected = msgspec.json.decode(free_form)
        assert message.metadata == expected
        assert message.parts[0].data == expected
        assert message.parts[0].metadata == expected

    def test_keys_inside_extension_params_and_signature_header_are_kept(self) -> None:
        extension = decode(b'{"uri":"u","params":{"max_tokens":"5","role":2}}', AgentExtension)
        assert extension.params == {"max_tokens": "5", "role": 2}
        signature = decode(
            b'{"protected":"p","signature":"s","header":{"key_id":"k","status":1}}',
            AgentCardSignature,
        )
        assert signature.header == {"key_id": "k", "status": 1}

    def test_timestamps_are_taken_liberally_and_kept_verbatim(self) -> None:
        for stamp in ("2026-01-01T00:00:00Z", "2026-01-01T00:00:00.123456789Z"):
            raw = f'{{"state":"TASK_STATE_WORKING","timestamp":"{stamp}"}}'.encode()
            assert encode(decode(raw, TaskStatus)) == raw

    def test_from_builtins_accepts_the_same_spellings(self) -> None:
        message = from_builtins({"message_id": "m", "role": 2, "parts": [{"raw": "-_8"}]}, Message)
        assert message == Message(message_id="m", role=Role.AGENT, parts=[Part(raw=b"\xfb\xff")])

    def test_str_input_is_accepted(self) -> None:
        assert decode('{"id":"t"}', GetTaskRequest) == GetTaskRequest(id="t")


# --- rejections ---------------------------------------------------------------------------------


class TestRejections:
    def test_not_json(self) -> None:
        with pytest.raises(JSONParseError):
            decode(b"{not json", Message)
        with pytest.raises(JSONParseError):
            decode(b'{"message_id": ', Message)  # also on the lenient path

    @pytest.mark.parametrize(
        ("raw", "type_", "path"),
        [
            (b'{"messageId":"m","role":"ROLE_USER","parts":[{"text":5}]}', Message, "$.parts[0].text"),  # noqa: E501
            (b'{"messageId":7,"role":"ROLE_USER","parts":[{"text":"x"}]}', Message, "$.messageId"),
            (b'{"messageId":"m","role":"ROLE_USER","parts":{"text":"x"}}', Message, "$.parts"),
            (b'{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}],"metadata":[1]}', Message, "$.metadata"),  # noqa: E501
            (b'{"id":"t","status":{"state":"TASK_STATE_WORKING"},"history":{}}', Task, "$.history"),
            (b'{"id":"t","status":"TASK_STATE_WORKING"}', Task, "$.status"),
            (b'{"id":"t","historyLength":"many"}', GetTaskRequest, "$.historyLength"),
            (b'{"id":"t","historyLength":1.5}', GetTaskRequest, "$.historyLength"),
            (b'{"includeArtifacts":"yes"}', ListTasksRequest, "$.includeArtifacts"),
            (b'{"streaming":"true"}', AgentCapabilities, "$.streaming"),
            (b'{"id":"t","status":{"state":"TASK_STATE_WORKING","timestamp":"yesterday"}}', Task, "$.status.timestamp"),  # noqa: E501
            (b'{"messageId":"m","role":"ROLE_USER","parts":[{"raw":"***"}]}', Message, "$.parts[0].raw"),  # noqa: E501
            (b"[]", Task, "$"),
        ],
    )  # fmt: skip
    def test_wrong_types_name_the_json_path(self, raw: bytes, type_: type[Any], path: str) -> None:
        err = invalid(raw, type_)
        assert violation_fields(err) == [path]
        assert f"(at {path})" in str(err)

    def test_path_prefix_is_applied(self) -> None:
        err = invalid(b'{"messageId":"m","role":"ROLE_USER","parts":[{"text":5}]}', Message)
        assert violation_fields(err) == ["$.parts[0].text"]
        with pytest.raises(InvalidParamsError) as caught:
            decode(b'{"message_id":"m","role":1,"parts":[{"text":5}]}', Message, path="params")
        assert [v.field for v in caught.value.field_violations] == ["params.parts[0].text"]

    @pytest.mark.parametrize(
        ("raw", "type_", "path"),
        [
            (b'{"messageId":"m","role":"ROLE_ADMIN","parts":[{"text":"x"}]}', Message, "$.role"),
            (b'{"messageId":"m","role":"user","parts":[{"text":"x"}]}', Message, "$.role"),
            (b'{"messageId":"m","role":9,"parts":[{"text":"x"}]}', Message, "$.role"),
            (b'{"id":"t","status":{"state":"TASK_STATE_CANCELLED"}}', Task, "$.status.state"),
            (b'{"id":"t","status":{"state":"completed"}}', Task, "$.status.state"),
            (b'{"id":"t","status":{"state":42}}', Task, "$.status.state"),
            (b'{"status":"TASK_STATE_DONE"}', ListTasksRequest, "$.status"),
        ],
    )
    def test_unknown_enum_values_are_rejected(
        self, raw: bytes, type_: type[Any], path: str
    ) -> None:
        assert violation_fields(invalid(raw, type_)) == [path]

    @pytest.mark.parametrize(
        ("raw", "type_", "path", "member"),
        [
            (b'{"role":"ROLE_USER","parts":[{"text":"x"}]}', Message, "$", "messageId"),
            (b'{"messageId":"m","parts":[{"text":"x"}]}', Message, "$", "role"),
            (b'{"messageId":"m","role":"ROLE_USER"}', Message, "$", "parts"),
            (b'{"parts":[{"text":"x"}]}', Artifact, "$", "artifactId"),
            (b'{"artifactId":"a"}', Artifact, "$", "parts"),
            (
                b'{"id":"t","status":{"state":"TASK_STATE_WORKING"},"artifacts":[{"parts":[{"text":"x"}]}]}',
                Task,
                "$.artifacts[0]",
                "artifactId",
            ),
            (b'{"status":{"state":"TASK_STATE_WORKING"}}', Task, "$", "id"),
            (b'{"id":"t"}', Task, "$", "status"),
            (b'{"id":"t","status":{}}', Task, "$.status", "state"),
            (b'{"configuration":{}}', SendMessageRequest, "$", "message"),
            (b'{"message":{"role":"ROLE_USER","parts":[{"text":"x"}]}}', SendMessageRequest, "$.message", "messageId"),  # noqa: E501
            (b'{"scheme":"Bearer","extra":1}', TaskPushNotificationConfig, "$", "url"),
            (b'{"credentials":"c"}', AuthenticationInfo, "$", "scheme"),
            (b'{"name":"x"}', AgentCard, "$", "description"),
        ],
    )  # fmt: skip
    def test_missing_required_members_are_rejected(
        self, raw: bytes, type_: type[Any], path: str, member: str
    ) -> None:
        err = invalid(raw, type_)
        assert violation_fields(err) == [path]
        assert member in str(err)

    def test_missing_required_member_is_found_on_the_lenient_path_too(self) -> None:
        err = invalid(b'{"context_id":"c","role":"ROLE_USER","parts":[{"text":"x"}]}', Message)
        assert "messageId" in str(err)

    def test_empty_ids_are_rejected(self) -> None:
        assert "messageId" in str(
            invalid(b'{"messageId":"","role":1,"parts":[{"text":"x"}]}', Message)
        )
        assert "artifactId" in str(invalid(b'{"artifactId":"","parts":[{"text":"x"}]}', Artifact))

    @pytest.mark.parametrize(
        "part",
        [
            b"{}",
            b'{"mediaType":"text/plain","filename":"a.txt"}',
            b'{"text":"a","url":"https://x"}',
            b'{"text":"a","data":{}}',
            b'{"raw":"AA==","data":null}',
            b'{"text":null,"url":null}',
        ],
    )
    def test_a_part_needs_exactly_one_member(self, part: bytes) -> None:
        raw = b'{"messageId":"m","role":"ROLE_USER","parts":[{"text":"ok"},' + part + b"]}"
        err = invalid(raw, Message)
        assert violation_fields(err) == ["$.parts[1]"]
        assert "exactly one" in str(err)

    def test_empty_parts_list_is_rejected(self) -> None:
        err = invalid(b'{"messageId":"m","role":"ROLE_USER","parts":[]}', Message)
        assert "part" in str(err)
        err = invalid(
            b'{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}', SendMessageRequest
        )
        assert violation_fields(err) == ["$.message"]
        err = invalid(b'{"artifactId":"a","parts":[]}', Artifact)
        assert "part" in str(err)

    @pytest.mark.parametrize("role", [b'"ROLE_UNSPECIFIED"', b"0"])
    def test_role_unspecified_is_rejected(self, role: bytes) -> None:
        raw = b'{"messageId":"m","role":' + role + b',"parts":[{"text":"x"}]}'
        assert "role" in str(invalid(raw, Message))

    @pytest.mark.parametrize(
        ("raw", "type_"),
        [
            (b'{"task":{"id":"t","status":{"state":2}},"message":{"messageId":"m","role":1,"parts":[{"text":"x"}]}}', StreamResponse),  # noqa: E501
            (b"{}", StreamResponse),
            (b"{}", SecurityScheme),
            (b'{"mtlsSecurityScheme":{},"httpAuthSecurityScheme":{"scheme":"Basic"}}', SecurityScheme),  # noqa: E501
            (b"{}", OAuthFlows),
            (b'{"implicit":{},"password":{}}', OAuthFlows),
        ],
    )  # fmt: skip
    def test_oneof_wrappers_need_exactly_one_member(self, raw: bytes, type_: type[Any]) -> None:
        invalid(raw, type_)

    def test_api_key_location_is_checked(self) -> None:
        err = invalid(b'{"apiKeySecurityScheme":{"location":"body","name":"k"}}', SecurityScheme)
        assert violation_fields(err) == ["$.apiKeySecurityScheme"]


# --- hypothesis: encode -> decode is the identity -------------------------------------------------

ids = st.text(alphabet=string.ascii_letters + string.digits + "-_.:", min_size=1, max_size=12)
words = st.text(max_size=12)
uris = st.builds(
    lambda s: f"https://ext.example/{s}/v1", st.text(string.ascii_lowercase, min_size=1, max_size=6)
)
timestamps = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 12, 31)).map(
    lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}Z"
)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
structs = st.dictionaries(st.text(max_size=10), json_values, max_size=3)
optional_structs = st.none() | structs

parts = st.one_of(
    st.builds(Part, text=st.text(max_size=20)),
    st.builds(Part, raw=st.binary(max_size=20)),
    st.builds(Part, url=st.text(min_size=1, max_size=20)),
    st.builds(Part, data=json_values),
).flatmap(
    lambda p: st.builds(
        msgspec.structs.replace,
        st.just(p),
        metadata=optional_structs,
        filename=words,
        media_type=st.sampled_from(["", "text/plain", "application/json", "image/png"]),
    )
)
messages = st.builds(
    Message,
    message_id=ids,
    context_id=st.just("") | ids,
    task_id=st.just("") | ids,
    role=st.sampled_from([Role.USER, Role.AGENT]),
    parts=st.lists(parts, min_size=1, max_size=3),
    metadata=optional_structs,
    extensions=st.lists(uris, max_size=2),
    reference_task_ids=st.lists(ids, max_size=2),
)
artifacts = st.builds(
    Artifact,
    artifact_id=ids,
    name=words,
    description=words,
    parts=st.lists(parts, min_size=1, max_size=3),
    metadata=optional_structs,
    extensions=st.lists(uris, max_size=2),
)
task_statuses = st.builds(
    TaskStatus,
    state=st.sampled_from([s for s in TaskState if s is not TaskState.UNSPECIFIED]),
    message=st.none() | messages,
    timestamp=st.none() | timestamps,
)
tasks = st.builds(
    Task,
    id=ids,
    context_id=st.just("") | ids,
    status=task_statuses,
    artifacts=st.lists(artifacts, max_size=2),
    history=st.lists(messages, max_size=2),
    metadata=optional_structs,
)
status_events = st.builds(
    TaskStatusUpdateEvent,
    task_id=ids,
    context_id=ids,
    status=task_statuses,
    metadata=optional_structs,
)
artifact_events = st.builds(
    TaskArtifactUpdateEvent,
    task_id=ids,
    context_id=ids,
    artifact=artifacts,
    append=st.booleans(),
    last_chunk=st.booleans(),
    metadata=optional_structs,
)
stream_responses = st.one_of(
    st.builds(StreamResponse, task=tasks),
    st.builds(StreamResponse, message=messages),
    st.builds(StreamResponse, status_update=status_events),
    st.builds(StreamResponse, artifact_update=artifact_events),
)

urls = st.builds(lambda s: f"https://idp.example/{s}", st.text(string.ascii_lowercase, max_size=6))
scope_maps = st.dictionaries(st.text(max_size=8), words, max_size=3)
oauth_flows = st.one_of(
    st.builds(
        OAuthFlows,
        authorization_code=st.builds(
            AuthorizationCodeOAuthFlow,
            authorization_url=urls,
            token_url=urls,
            refresh_url=st.just("") | urls,
            scopes=scope_maps,
            pkce_required=st.booleans(),
        ),
    ),
    st.builds(
        OAuthFlows,
        client_credentials=st.builds(
            ClientCredentialsOAuthFlow,
            token_url=urls,
            refresh_url=st.just("") | urls,
            scopes=scope_maps,
        ),
    ),
    st.builds(
        OAuthFlows,
        device_code=st.builds(
            DeviceCodeOAuthFlow,
            device_authorization_url=urls,
            token_url=urls,
            refresh_url=st.just("") | urls,
            scopes=scope_maps,
        ),
    ),
    st.builds(
        OAuthFlows,
        implicit=st.builds(
            ImplicitOAuthFlow, authorization_url=st.just("") | urls, scopes=scope_maps
        ),
    ),
    st.builds(
        OAuthFlows,
        password=st.builds(PasswordOAuthFlow, token_url=st.just("") | urls, scopes=scope_maps),
    ),
)
security_schemes = st.one_of(
    st.builds(
        SecurityScheme,
        api_key_security_scheme=st.builds(
            APIKeySecurityScheme,
            description=words,
            location=st.sampled_from(["header", "query", "cookie"]),
            name=st.text(min_size=1, max_size=10),
        ),
    ),
    st.builds(
        SecurityScheme,
        http_auth_security_scheme=st.builds(
            HTTPAuthSecurityScheme,
            description=words,
            scheme=st.sampled_from(["Bearer", "Basic", "Digest"]),
            bearer_format=st.sampled_from(["", "JWT"]),
        ),
    ),
    st.builds(
        SecurityScheme,
        oauth2_security_scheme=st.builds(
            OAuth2SecurityScheme,
            description=words,
            flows=oauth_flows,
            oauth2_metadata_url=st.just("") | urls,
        ),
    ),
    st.builds(
        SecurityScheme,
        open_id_connect_security_scheme=st.builds(
            OpenIdConnectSecurityScheme, description=words, open_id_connect_url=urls
        ),
    ),
    st.builds(
        SecurityScheme, mtls_security_scheme=st.builds(MutualTlsSecurityScheme, description=words)
    ),
)
# scheme names include snake_case ones: they must survive the lenient pass untouched
scheme_names = st.text(alphabet=string.ascii_lowercase + "_", min_size=1, max_size=10)
security_requirements = st.builds(
    SecurityRequirement,
    schemes=st.dictionaries(
        scheme_names,
        st.builds(StringList, list=st.lists(st.text(max_size=8), max_size=2)),
        max_size=2,
    ),
)
skills = st.builds(
    AgentSkill,
    id=ids,
    name=words,
    description=words,
    tags=st.lists(words, max_size=3),
    examples=st.lists(words, max_size=2),
    input_modes=st.lists(st.sampled_from(["text/plain", "application/json"]), max_size=2),
    output_modes=st.lists(st.sampled_from(["text/plain", "image/png"]), max_size=2),
    security_requirements=st.lists(security_requirements, max_size=2),
)
interfaces = st.builds(
    AgentInterface,
    url=urls,
    protocol_binding=st.sampled_from(["JSONRPC", "GRPC", "HTTP+JSON"]),
    tenant=st.just("") | ids,
    protocol_version=st.sampled_from(["1.0", "0.3"]),
)
agent_cards = st.builds(
    AgentCard,
    name=words,
    description=words,
    supported_interfaces=st.lists(interfaces, max_size=3),
    provider=st.none() | st.builds(AgentProvider, url=urls, organization=words),
    version=words,
    documentation_url=st.none() | urls,
    capabilities=st.builds(
        AgentCapabilities,
        streaming=st.none() | st.booleans(),
        push_notifications=st.none() | st.booleans(),
        extensions=st.lists(
            st.builds(
                AgentExtension,
                uri=uris,
                description=words,
                required=st.booleans(),
                params=optional_structs,
            ),
            max_size=2,
        ),
        extended_agent_card=st.none() | st.booleans(),
    ),
    security_schemes=st.dictionaries(scheme_names, security_schemes, max_size=3),
    security_requirements=st.lists(security_requirements, max_size=2),
    default_input_modes=st.lists(st.sampled_from(["text/plain", "application/json"]), max_size=2),
    default_output_modes=st.lists(st.sampled_from(["text/plain", "application/json"]), max_size=2),
    skills=st.lists(skills, max_size=2),
    signatures=st.lists(
        st.builds(AgentCardSignature, protected=ids, signature=ids, header=optional_structs),
        max_size=2,
    ),
    icon_url=st.none() | urls,
)

IDENTITY_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def assert_identity(value: Any) -> None:
    raw = encode(value)
    decoded = decode(raw, type(value))
    assert decoded == value
    assert encode(decoded) == raw


@IDENTITY_SETTINGS
@given(parts)
def test_part_identity(part: Part) -> None:
    assert_identity(part)


@IDENTITY_SETTINGS
@given(messages)
def test_message_identity(message: Message) -> None:
    assert_identity(message)


@IDENTITY_SETTINGS
@given(artifacts)
def test_artifact_identity(artifact: Artifact) -> None:
    assert_identity(artifact)


@IDENTITY_SETTINGS
@given(tasks)
def test_task_identity(task: Task) -> None:
    assert_identity(task)


@IDENTITY_SETTINGS
@given(status_events)
def test_status_update_event_identity(event: TaskStatusUpdateEvent) -> None:
    assert_identity(event)


@IDENTITY_SETTINGS
@given(artifact_events)
def test_artifact_update_event_identity(event: TaskArtifactUpdateEvent) -> None:
    assert_identity(event)


@IDENTITY_SETTINGS
@given(stream_responses)
def test_stream_response_identity(response: StreamResponse) -> None:
    assert_identity(response)


@IDENTITY_SETTINGS
@given(agent_cards)
def test_agent_card_identity(card: AgentCard) -> None:
    assert_identity(card)


def _card(**overrides: Any) -> AgentCard:
    fields: dict[str, Any] = {
        "name": "n",
        "description": "d",
        "supported_interfaces": [
            AgentInterface(url="https://a", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        "version": "1",
        "capabilities": AgentCapabilities(),
        "default_input_modes": ["text/plain"],
        "default_output_modes": ["text/plain"],
        "skills": [],
    }
    fields.update(overrides)
    return AgentCard(**fields)
