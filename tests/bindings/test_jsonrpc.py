"""The JSON-RPC codec (peerwire.bindings.jsonrpc): envelopes in, bytes out, ids echoed exactly."""

from __future__ import annotations

import json
from typing import Any

import pytest

from peerwire import errors
from peerwire.bindings import jsonrpc
from peerwire.errors import (
    InvalidParamsError,
    InvalidRequestError,
    JSONParseError,
    MethodNotFoundError,
    TaskNotFoundError,
)
from peerwire.types import (
    Encoded,
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SendMessageResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    encode,
)

SPEC_METHODS = {
    "SendMessage": ("send_message", False),
    "SendStreamingMessage": ("send_streaming_message", True),
    "GetTask": ("get_task", False),
    "ListTasks": ("list_tasks", False),
    "CancelTask": ("cancel_task", False),
    "SubscribeToTask": ("subscribe_to_task", True),
    "CreateTaskPushNotificationConfig": ("create_task_push_notification_config", False),
    "GetTaskPushNotificationConfig": ("get_task_push_notification_config", False),
    "ListTaskPushNotificationConfigs": ("list_task_push_notification_configs", False),
    "DeleteTaskPushNotificationConfig": ("delete_task_push_notification_config", False),
    "GetExtendedAgentCard": ("get_extended_agent_card", False),
}


def body(**members: Any) -> bytes:
    return json.dumps(members).encode()


def test_the_eleven_methods_and_only_they() -> None:
    assert {name: (m.operation, m.streaming) for name, m in jsonrpc.METHODS.items()} == SPEC_METHODS
    assert jsonrpc.METHODS["CreateTaskPushNotificationConfig"].params is TaskPushNotificationConfig


def test_decode_a_request() -> None:
    message = {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    request = jsonrpc.decode_request(
        body(jsonrpc="2.0", id="r-1", method="SendMessage", params={"message": message})
    )
    assert request.id == b'"r-1"'
    assert request.method.name == "SendMessage"
    assert request.params == SendMessageRequest(
        message=Message(message_id="m", role=Role.USER, parts=[Part(text="hi")])
    )


@pytest.mark.parametrize(
    ("request_id", "encoded"),
    [(7, b"7"), (0, b"0"), (-1, b"-1"), ("7", b'"7"'), ("", b'""'), ('é"', b'"\xc3\xa9\\""')],
)
def test_ids_keep_their_type(request_id: Any, encoded: bytes) -> None:
    raw = body(jsonrpc="2.0", id=request_id, method="GetTask", params={"id": "t"})
    request = jsonrpc.decode_request(raw)
    assert request.id == encoded
    assert json.loads(request.id) == request_id
    assert jsonrpc.request_id_of(raw) == encoded


@pytest.mark.parametrize("params", [None, {}])
def test_absent_or_null_params_mean_an_empty_request(params: Any) -> None:
    members: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard"}
    raw = body(**members) if params is None else body(**members, params=None)
    assert jsonrpc.decode_request(raw).params == GetExtendedAgentCardRequest()


@pytest.mark.parametrize(
    ("raw", "error", "words"),
    [
        (b"{", JSONParseError, "Invalid JSON"),
        (b"\xff\xfe", JSONParseError, "Invalid JSON"),
        (b"[]", InvalidRequestError, "batch"),
        (b"null", InvalidRequestError, "JSON object"),
        (body(id=1, method="GetTask"), InvalidRequestError, '"jsonrpc"'),
        (body(jsonrpc="2.1", id=1, method="GetTask"), InvalidRequestError, '"2.0"'),
        (body(jsonrpc="2.0", id=1), InvalidRequestError, '"method" is missing'),
        (body(jsonrpc="2.0", id=1, method=None), InvalidRequestError, '"method" must be'),
        (body(jsonrpc="2.0", method="GetTask"), InvalidRequestError, "needs an id"),
        (body(jsonrpc="2.0", id=None, method="GetTask"), InvalidRequestError, "needs an id"),
        (
            body(jsonrpc="2.0", id=2.5, method="GetTask"),
            InvalidRequestError,
            "string or an integer",
        ),
        (body(jsonrpc="2.0", id=False, method="GetTask"), InvalidRequestError, "string or an int"),
        (body(jsonrpc="2.0", id=1, method="message/send"), MethodNotFoundError, "'message/send'"),
        (
            body(jsonrpc="2.0", id=1, method="GetTask", params={"id": 3}),
            InvalidParamsError,
            "params.id",
        ),
        (body(jsonrpc="2.0", id=1, method="GetTask", params=[1]), InvalidParamsError, "params"),
        # What fuzzing found: each of these once escaped as a 500 with a traceback.
        (b'{"jsonrpc":1,', JSONParseError, "truncated"),
        (b'{"jsonrpc":1}x', JSONParseError, "trailing"),
        (b'{"jsonrpc":1}', InvalidRequestError, '"method" is missing'),
        (b'{"id":1e999}', InvalidRequestError, '"method" is missing'),
        (
            b'{"jsonrpc":"2.0","id":1e999,"method":"GetTask"}',
            InvalidRequestError,
            "string or an integer",
        ),
        (b'{"jsonrpc":"2.0","id":"\xff","method":"GetTask"}', JSONParseError, "UTF-8"),
        (b'{"jsonrpc":1,"id":"\xff"}', JSONParseError, "UTF-8"),
        (b'{"jsonrpc":"2.0","id":1,"method":"GetTask","x":"\xff"}', JSONParseError, "UTF-8"),
        (b'{"jsonrpc":"2.0","id":"\\ud800","method":"GetTask"}', JSONParseError, "Invalid JSON"),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"\\udc00x"}}',
            JSONParseError,
            "Invalid JSON",
        ),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t","historyLength":1e999}}',
            JSONParseError,
            "out of range",
        ),
        (b"", JSONParseError, "Invalid JSON"),
        (b"  ", JSONParseError, "Invalid JSON"),
        (b"[" * 1000 + b"]" * 1000, JSONParseError, "more than 32 levels"),
        (b"[" * 100_000, JSONParseError, "more than 32 levels"),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":%b}'
            % (b'{"a":' * 5000 + b"1" + b"}" * 5000),
            JSONParseError,
            "more than 32 levels",
        ),
    ],
)
def test_what_is_not_a_request(raw: bytes, error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=None) as caught:
        jsonrpc.decode_request(raw)
    assert type(caught.value) is error
    assert words in str(caught.value)


@pytest.mark.parametrize(
    "raw",
    [
        b"{",
        b"[1]",
        b'"x"',
        body(jsonrpc="2.0", method="GetTask"),
        body(jsonrpc="2.0", id=None),
        body(jsonrpc="2.0", id=1.5),
        body(jsonrpc="2.0", id=True),
        body(jsonrpc="2.0", id=[1]),
        b'{"id":1e999}',
        b'{"id":"\xff"}',
        b'{"id":1,' + b"[" * 5000,
        b"[" * 100_000,
    ],
)
def test_an_unusable_id_is_null(raw: bytes) -> None:
    assert jsonrpc.request_id_of(raw) == b"null"


@pytest.mark.parametrize(
    "raw",
    [
        b'{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":1e999}}',
        b'{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"t","historyLength":1e999}}',
        b'{"jsonrpc":1,"id":7}',
    ],
)
def test_the_id_of_a_request_with_a_bad_member_is_still_echoed(raw: bytes) -> None:
    assert jsonrpc.request_id_of(raw) == b"7"


def test_a_parse_error_is_answered_with_a_null_id() -> None:
    raw = b'{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":1e999}}'
    with pytest.raises(JSONParseError) as caught:
        jsonrpc.decode_request(raw)
    assert jsonrpc.error_id(raw, caught.value) == b"null"
    refused = body(jsonrpc="2.0", id=7, method="Nope")
    assert jsonrpc.error_id(refused, MethodNotFoundError()) == b"7"


def test_a_member_given_twice_counts_once_with_its_last_value() -> None:
    raw = b'{"jsonrpc":"2.0","id":1,"id":2,"method":"GetTask","params":{"id":"a","id":"b"}}'
    request = jsonrpc.decode_request(raw)
    assert (request.id, request.params.id) == (b"2", "b")
    assert jsonrpc.request_id_of(raw) == b"2"


def test_nesting_up_to_the_bound_is_a_request() -> None:
    data = b"[" * 27 + b"1" + b"]" * 27  # at the bound, under 5 levels of envelope and message
    raw = (
        b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m",'
        b'"role":"ROLE_USER","parts":[{"data":%b}]}}}' % data
    )
    request = jsonrpc.decode_request(raw)
    assert request.params.message.parts[0].data == json.loads(data)
    with pytest.raises(JSONParseError, match="32 levels"):
        jsonrpc.decode_request(raw.replace(data, b"[" + data + b"]"))


def test_an_error_echoing_huge_input_is_bounded() -> None:
    with pytest.raises(MethodNotFoundError) as caught:
        jsonrpc.decode_request(body(jsonrpc="2.0", id=1, method="x" * 100_000))
    answer = json.loads(jsonrpc.encode_error(b"1", caught.value))
    assert len(answer["error"]["message"]) == errors.MAX_ERROR_TEXT
    assert answer["error"]["message"].endswith("…")
    refused = errors.AuthenticationError("y" * 10_000, metadata={"k": "z" * 10_000})
    answer = json.loads(jsonrpc.encode_error(b"1", refused))  # answered at HTTP level
    assert len(answer["error"]["message"]) == errors.MAX_ERROR_TEXT
    assert len(answer["error"]["data"][0]["metadata"]["k"]) == errors.MAX_ERROR_TEXT


def test_encode_a_result() -> None:
    task = Task(id="t", context_id="c", status=TaskStatus(state=TaskState.COMPLETED))
    encoded = jsonrpc.encode_result(b'"r"', SendMessageResponse(task=task))
    assert json.loads(encoded) == {
        "jsonrpc": "2.0",
        "id": "r",
        "result": {
            "task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}
        },
    }
    # ListTasksResponse keeps its REQUIRED members even when empty (A2A spec §3.1.4).
    listed = json.loads(jsonrpc.encode_result(b"3", ListTasksResponse()))
    assert listed["result"] == {"tasks": [], "nextPageToken": "", "pageSize": 0, "totalSize": 0}
    assert json.loads(jsonrpc.encode_result(b"3", {}))["result"] == {}


def test_an_encoded_result_is_spliced_as_it_is() -> None:
    task = Task(id="t", context_id="c", status=TaskStatus(state=TaskState.COMPLETED))
    stored = encode(task)
    assert jsonrpc.encode_result(b'"r"', Encoded(stored, Task)) == (
        b'{"jsonrpc":"2.0","id":"r","result":' + stored + b"}"
    )
    assert jsonrpc.encode_result(b'"r"', Encoded(stored, Task)) == jsonrpc.encode_result(
        b'"r"', task
    )


def test_the_result_envelope_is_what_encode_result_puts_around_a_result() -> None:
    head, tail = jsonrpc.result_envelope(b"42")
    assert head + b'{"a":1}' + tail == jsonrpc.encode_result(b"42", {"a": 1})


def test_encode_an_error_with_its_error_info() -> None:
    error = TaskNotFoundError("Task t was not found", metadata={"taskId": "t"})
    assert json.loads(jsonrpc.encode_error(b"9", error)) == {
        "jsonrpc": "2.0",
        "id": 9,
        "error": {
            "code": -32001,
            "message": "Task t was not found",
            "data": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "TASK_NOT_FOUND",
                    "domain": "a2a-protocol.org",
                    "metadata": {"taskId": "t"},
                }
            ],
        },
    }
    assert json.loads(jsonrpc.encode_error(b"null", JSONParseError()))["id"] is None


def test_encode_a_request_round_trips() -> None:
    raw = jsonrpc.encode_request("q-1", "GetTask", GetTaskRequest(id="t", history_length=2))
    request = jsonrpc.decode_request(raw)
    assert (request.id, request.method.name) == (b'"q-1"', "GetTask")
    assert request.params == GetTaskRequest(id="t", history_length=2)
