"""The error tree, its wire table and the three bindings' converters."""

from __future__ import annotations

import pickle
import re
from typing import Any

import pytest

from peerwire import errors
from peerwire.errors import (
    BAD_REQUEST_TYPE,
    ERROR_DOMAIN,
    ERROR_INFO_TYPE,
    PEERWIRE_ERROR_DOMAIN,
    A2AConnectionError,
    A2AError,
    A2ATimeoutError,
    AuthenticationError,
    ClientError,
    ContentTypeNotSupportedError,
    FieldViolation,
    IllegalTransitionError,
    InternalError,
    InvalidAgentResponseError,
    InvalidParamsError,
    InvalidResponseError,
    MethodNotFoundError,
    PermissionDeniedError,
    PushNotificationNotSupportedError,
    ServerBusyError,
    ServiceUnavailableError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnknownA2AError,
    UnsupportedOperationError,
    VersionConflictError,
    VersionNotSupportedError,
    error_details,
    error_for_reason,
    from_grpc_status,
    from_jsonrpc_error,
    from_rest_error,
    grpc_status_of,
    retry_after_of,
    to_jsonrpc_error,
    to_rest_error,
    wire_info,
)

# Copied from the A2A spec (§9.5, the 1.0.1 table of §5.4, §3.3.2), not from errors.py, so a typo
# in the module's table fails here. Reasons of the JSON-RPC standard errors follow the a2a-sdk.
# (class name, JSON-RPC code, HTTP status, gRPC status, gRPC number, ErrorInfo reason)
SPEC_TABLE = [
    ("JSONParseError", -32700, 400, "INVALID_ARGUMENT", 3, "PARSE_ERROR"),
    ("InvalidRequestError", -32600, 400, "INVALID_ARGUMENT", 3, "INVALID_REQUEST"),
    ("MethodNotFoundError", -32601, 404, "UNIMPLEMENTED", 12, "METHOD_NOT_FOUND"),
    ("InvalidParamsError", -32602, 400, "INVALID_ARGUMENT", 3, "INVALID_PARAMS"),
    ("InternalError", -32603, 500, "INTERNAL", 13, "INTERNAL_ERROR"),
    ("TaskNotFoundError", -32001, 404, "NOT_FOUND", 5, "TASK_NOT_FOUND"),
    ("TaskNotCancelableError", -32002, 400, "FAILED_PRECONDITION", 9, "TASK_NOT_CANCELABLE"),
    (
        "PushNotificationNotSupportedError",
        -32003,
        400,
        "FAILED_PRECONDITION",
        9,
        "PUSH_NOTIFICATION_NOT_SUPPORTED",
    ),
    ("UnsupportedOperationError", -32004, 400, "FAILED_PRECONDITION", 9, "UNSUPPORTED_OPERATION"),
    (
        "ContentTypeNotSupportedError",
        -32005,
        400,
        "INVALID_ARGUMENT",
        3,
        "CONTENT_TYPE_NOT_SUPPORTED",
    ),
    ("InvalidAgentResponseError", -32006, 500, "INTERNAL", 13, "INVALID_AGENT_RESPONSE"),
    (
        "ExtendedAgentCardNotConfiguredError",
        -32007,
        400,
        "FAILED_PRECONDITION",
        9,
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
    ),
    (
        "ExtensionSupportRequiredError",
        -32008,
        400,
        "FAILED_PRECONDITION",
        9,
        "EXTENSION_SUPPORT_REQUIRED",
    ),
    ("VersionNotSupportedError", -32009, 400, "FAILED_PRECONDITION", 9, "VERSION_NOT_SUPPORTED"),
    ("AuthenticationError", None, 401, "UNAUTHENTICATED", 16, "UNAUTHENTICATED"),
    ("PermissionDeniedError", None, 403, "PERMISSION_DENIED", 7, "PERMISSION_DENIED"),
]

SPEC_MESSAGES = {  # A2A spec §9.5
    "JSONParseError": "Invalid JSON payload",
    "InvalidRequestError": "Request payload validation error",
    "MethodNotFoundError": "Method not found",
    "InvalidParamsError": "Invalid parameters",
    "InternalError": "Internal error",
}

WIRE_CLASSES: list[type[A2AError]] = [getattr(errors, row[0]) for row in SPEC_TABLE]
JSONRPC_CLASSES = [cls for cls, row in zip(WIRE_CLASSES, SPEC_TABLE, strict=True) if row[1]]

METADATA = {"taskId": "t-1", "attempt": "2"}
VIOLATIONS = (FieldViolation("message.parts[0]", "must not be empty"),)


def _ids(classes: list[type[A2AError]]) -> list[str]:
    return [cls.__name__ for cls in classes]


def assert_same_error(decoded: A2AError, original: A2AError, cls: type[A2AError]) -> None:
    assert type(decoded) is cls
    assert decoded.message == original.message
    assert decoded.metadata == original.metadata
    assert decoded.field_violations == original.field_violations


def rich(cls: type[A2AError]) -> A2AError:
    return cls(f"{cls.__name__} happened", metadata=METADATA, field_violations=VIOLATIONS)


# --- the table ---------------------------------------------------------------------------------


@pytest.mark.parametrize("row", SPEC_TABLE, ids=[row[0] for row in SPEC_TABLE])
def test_wire_info_matches_the_spec(row: tuple[Any, ...]) -> None:
    name, jsonrpc_code, http_status, grpc_status, grpc_code, reason = row
    info = wire_info(getattr(errors, name))
    assert (info.jsonrpc_code, info.http_status, info.grpc_status) == (
        jsonrpc_code,
        http_status,
        grpc_status,
    )
    assert (info.grpc_code, info.reason) == (grpc_code, reason)
    assert error_for_reason(reason) is getattr(errors, name)


@pytest.mark.parametrize(("name", "message"), SPEC_MESSAGES.items())
def test_jsonrpc_standard_errors_default_to_the_spec_message(name: str, message: str) -> None:
    assert getattr(errors, name)().message == message


def test_every_a2a_error_has_a_one_line_default_message() -> None:
    for cls in WIRE_CLASSES:
        assert cls().message and "\n" not in cls().message


def test_subclasses_travel_as_their_parent() -> None:
    assert wire_info(IllegalTransitionError("x", "y")) == wire_info(InvalidAgentResponseError)
    assert wire_info(InvalidResponseError()) == wire_info(InvalidAgentResponseError)
    # A handler raising a bare A2AError must still produce a sane answer.
    assert wire_info(A2AError()) == wire_info(InternalError)


def test_unknown_reason_has_no_class() -> None:
    assert error_for_reason("NO_SUCH_REASON") is None


# --- JSON-RPC ----------------------------------------------------------------------------------


def test_jsonrpc_error_shape() -> None:
    err = TaskNotFoundError("Task t-1 was not found", metadata={"taskId": "t-1"})
    assert to_jsonrpc_error(err) == {
        "code": -32001,
        "message": "Task t-1 was not found",
        "data": [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "TASK_NOT_FOUND",
                "domain": "a2a-protocol.org",
                "metadata": {"taskId": "t-1"},
            }
        ],
    }


def test_empty_metadata_is_omitted_and_violations_follow_error_info() -> None:
    data = to_jsonrpc_error(InvalidParamsError(field_violations=VIOLATIONS))["data"]
    assert "metadata" not in data[0]
    assert data[1] == {
        "@type": "type.googleapis.com/google.rpc.BadRequest",
        "fieldViolations": [{"field": "message.parts[0]", "description": "must not be empty"}],
    }


@pytest.mark.parametrize("cls", JSONRPC_CLASSES, ids=_ids(JSONRPC_CLASSES))
def test_jsonrpc_round_trip(cls: type[A2AError]) -> None:
    original = rich(cls)
    assert_same_error(from_jsonrpc_error(to_jsonrpc_error(original)), original, cls)


@pytest.mark.parametrize("cls", [AuthenticationError, PermissionDeniedError])
def test_auth_errors_have_no_jsonrpc_code(cls: type[A2AError]) -> None:
    # The JSON-RPC binding answers these at HTTP level (A2A spec §3.3.2).
    with pytest.raises(ValueError, match=str(wire_info(cls).http_status)):
        to_jsonrpc_error(cls())


def test_unknown_jsonrpc_code_is_kept_for_re_encoding() -> None:
    err = from_jsonrpc_error({"code": -32042, "message": "Quota exceeded"})
    assert isinstance(err, UnknownA2AError)
    assert to_jsonrpc_error(err) == {"code": -32042, "message": "Quota exceeded"}


def test_jsonrpc_reason_classifies_a_private_code() -> None:
    # §7.3 lets JSON-RPC servers use a "custom error" for authentication.
    err = from_jsonrpc_error(
        {"code": -32099, "message": "who?", "data": [_error_info("UNAUTHENTICATED")]}
    )
    assert type(err) is AuthenticationError


def test_jsonrpc_0_3_object_data_becomes_metadata() -> None:
    err = from_jsonrpc_error({"code": -32001, "data": {"taskId": "t-9", "n": 3, "x": [1]}})
    assert type(err) is TaskNotFoundError
    assert err.message == "Task not found"
    assert err.metadata == {"taskId": "t-9", "n": "3"}


@pytest.mark.parametrize(
    "obj",
    [
        None,
        "boom",
        [],
        {},
        {"code": "x"},
        {"code": True, "message": 5},
        {"code": -32001, "data": "junk"},
        {"code": -32001, "data": [1, None, {"@type": 3}, {"@type": BAD_REQUEST_TYPE}]},
        {"code": -32602, "data": [{"@type": BAD_REQUEST_TYPE, "fieldViolations": "nope"}]},
        {"code": -32001, "data": [{"@type": ERROR_INFO_TYPE, "reason": 7, "metadata": [1]}]},
    ],
)
def test_jsonrpc_garbage_still_gives_an_error(obj: object) -> None:
    err = from_jsonrpc_error(obj)
    assert isinstance(err, A2AError)
    assert err.message


# --- REST --------------------------------------------------------------------------------------


def test_rest_error_shape() -> None:
    status, body = to_rest_error(TaskNotCancelableError("Task t-1 is completed"))
    assert status == 400
    assert body == {
        "error": {
            "code": 400,
            "status": "FAILED_PRECONDITION",
            "message": "Task t-1 is completed",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "TASK_NOT_CANCELABLE",
                    "domain": "a2a-protocol.org",
                }
            ],
        }
    }


@pytest.mark.parametrize("cls", WIRE_CLASSES, ids=_ids(WIRE_CLASSES))
def test_rest_round_trip(cls: type[A2AError]) -> None:
    original = rich(cls)
    assert_same_error(from_rest_error(*to_rest_error(original)), original, cls)


def test_rest_body_may_be_raw_bytes() -> None:
    body = b'{"error": {"code": 404, "status": "NOT_FOUND", "message": "gone"}}'
    err = from_rest_error(404, body)
    assert type(err) is TaskNotFoundError
    assert err.message == "gone"


@pytest.mark.parametrize(
    ("http_status", "grpc_status", "reason", "expected"),
    [
        # With the ErrorInfo a 1.0.0 server must send, the reason decides.
        (409, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE", TaskNotCancelableError),
        (
            400,
            "UNIMPLEMENTED",
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
            PushNotificationNotSupportedError,
        ),
        (400, "UNIMPLEMENTED", "UNSUPPORTED_OPERATION", UnsupportedOperationError),
        (415, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED", ContentTypeNotSupportedError),
        (502, "INTERNAL", "INVALID_AGENT_RESPONSE", InvalidAgentResponseError),
        (400, "UNIMPLEMENTED", "VERSION_NOT_SUPPORTED", VersionNotSupportedError),
        # Without one, the statuses 1.0.0 used only for one error still identify it.
        (409, "FAILED_PRECONDITION", None, TaskNotCancelableError),
        (415, "INVALID_ARGUMENT", None, ContentTypeNotSupportedError),
        (502, "INTERNAL", None, InvalidAgentResponseError),
    ],
)
def test_rest_accepts_the_1_0_0_table(
    http_status: int, grpc_status: str, reason: str | None, expected: type[A2AError]
) -> None:
    status: dict[str, Any] = {"code": http_status, "status": grpc_status, "message": "m"}
    if reason:
        status["details"] = [_error_info(reason)]
    assert type(from_rest_error(http_status, {"error": status})) is expected


@pytest.mark.parametrize(
    ("http_status", "problem", "expected"),
    [
        (404, {"type": "about:blank", "title": "Not Found", "status": 404}, TaskNotFoundError),
        (
            400,
            {"type": "https://a2a-protocol.org/errors/task-not-cancelable", "status": 400},
            TaskNotCancelableError,
        ),
        (400, {"title": "Unsupported Operation", "status": 400}, UnsupportedOperationError),
        (400, {"title": "ContentTypeNotSupportedError"}, ContentTypeNotSupportedError),
        (400, {"title": "Bad Request", "status": 400}, InvalidParamsError),
        (401, {"title": "Unauthorized", "status": 401}, AuthenticationError),
        (500, {"title": "Oops"}, InternalError),
    ],
)
def test_rest_accepts_problem_json(
    http_status: int, problem: dict[str, Any], expected: type[A2AError]
) -> None:
    assert type(from_rest_error(http_status, problem)) is expected


def test_problem_json_detail_and_extension_members_are_kept() -> None:
    problem = {"title": "Task not found", "status": 404, "detail": "No task t-9", "taskId": "t-9"}
    err = from_rest_error(404, problem)
    assert (err.message, err.metadata) == ("No task t-9", {"taskId": "t-9"})


def test_rest_404_without_a2a_body_points_at_the_url() -> None:
    # A router's 404 must not look like TaskNotFoundError, or callers would act on a missing task.
    err = from_rest_error(404, b"<html><body>Not Found</body></html>")
    assert type(err) is MethodNotFoundError
    assert "Not Found" in err.message
    assert "interface URL" in err.message


def test_rest_unknown_status_keeps_its_wire_info() -> None:
    err = from_rest_error(
        503, {"error": {"code": 503, "status": "UNAVAILABLE", "message": "later"}}
    )
    assert isinstance(err, UnknownA2AError)
    assert to_rest_error(err) == (
        503,
        {"error": {"code": 503, "status": "UNAVAILABLE", "message": "later"}},
    )


@pytest.mark.parametrize(
    "body",
    [
        None,
        b"",
        b"\xff\xfe",
        "<html>oops</html>",
        [1, 2],
        {"error": 5},
        {"error": "something broke"},
        {"error": {"details": "x", "status": 7}},
        {"error": {"details": [1, {"@type": 3}, {"@type": ERROR_INFO_TYPE}]}},
        {"type": 5, "title": ["x"], "status": "?"},
    ],
)
@pytest.mark.parametrize("http_status", [400, 404, 418, 500])
def test_rest_garbage_still_gives_a_helpful_error(http_status: int, body: object) -> None:
    err = from_rest_error(http_status, body)
    assert isinstance(err, A2AError)
    assert err.message
    assert 400 <= wire_info(err).http_status <= 599


# --- gRPC --------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", WIRE_CLASSES, ids=_ids(WIRE_CLASSES))
def test_grpc_round_trip(cls: type[A2AError]) -> None:
    original = rich(cls)
    code, message = grpc_status_of(original)
    assert code == wire_info(cls).grpc_code
    assert_same_error(from_grpc_status(code, message, error_details(original)), original, cls)


def test_grpc_1_0_0_unimplemented_is_classified_by_reason() -> None:
    err = from_grpc_status(12, "", [_error_info("VERSION_NOT_SUPPORTED")])
    assert type(err) is VersionNotSupportedError
    assert err.message == VersionNotSupportedError().message


def test_grpc_prefers_the_a2a_error_info_over_foreign_ones() -> None:
    foreign = {"@type": ERROR_INFO_TYPE, "reason": "RATE_LIMITED", "domain": "example.com"}
    err = from_grpc_status(9, "m", [foreign, _error_info("TASK_NOT_CANCELABLE")])
    assert type(err) is TaskNotCancelableError


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (3, InvalidParamsError),
        (5, TaskNotFoundError),
        (12, MethodNotFoundError),
        (16, AuthenticationError),
    ],
)
def test_grpc_without_details_falls_back_to_the_generic_category(
    code: int, expected: type[A2AError]
) -> None:
    assert type(from_grpc_status(code, "m")) is expected


@pytest.mark.parametrize(("code", "details"), [(9, []), (14, []), (99, None), (0, [5, "x"])])
def test_grpc_unclassifiable_status_is_unknown(code: int, details: Any) -> None:
    err = from_grpc_status(code, "", details)
    assert isinstance(err, UnknownA2AError)
    assert err.message


# --- construction and the rest of the tree -----------------------------------------------------


def test_metadata_values_must_be_strings() -> None:
    with pytest.raises(TypeError, match="map<string,string>"):
        TaskNotFoundError(metadata={"attempt": 2})  # type: ignore[dict-item]


def test_illegal_transition_says_from_where_to_where() -> None:
    err = IllegalTransitionError("TASK_STATE_COMPLETED", "TASK_STATE_WORKING", task_id="t-1")
    assert "TASK_STATE_COMPLETED" in err.message
    assert "TASK_STATE_WORKING" in err.message
    assert err.metadata == {
        "fromState": "TASK_STATE_COMPLETED",
        "toState": "TASK_STATE_WORKING",
        "taskId": "t-1",
    }
    assert isinstance(err, InvalidAgentResponseError)


def test_invalid_response_error_is_a_client_error_and_a_wire_error() -> None:
    err = InvalidResponseError("not JSON", url="https://agent.example/a2a")
    assert isinstance(err, ClientError)
    assert to_jsonrpc_error(err)["code"] == wire_info(InvalidAgentResponseError).jsonrpc_code
    assert (err.message, err.url) == ("not JSON", "https://agent.example/a2a")


def test_client_errors_are_also_builtin_errors() -> None:
    # So generic `except TimeoutError` / `except OSError` code keeps working.
    assert isinstance(A2ATimeoutError("slow"), TimeoutError)
    assert isinstance(A2AConnectionError("refused", url="http://x"), ConnectionError)
    assert str(A2AConnectionError("refused")) == "refused"


def test_version_conflict_carries_its_facts() -> None:
    err = VersionConflictError("t-1", expected=3, actual=4)
    assert (err.task_id, err.expected, err.actual) == ("t-1", 3, 4)
    assert not isinstance(err, A2AError)


@pytest.mark.parametrize(
    "err",
    [
        rich(TaskNotFoundError),
        IllegalTransitionError(None, "TASK_STATE_WORKING"),
        UnknownA2AError("u", jsonrpc_code=-32042),
        InvalidResponseError("bad", url="u"),
        A2ATimeoutError("slow", url="u"),
        VersionConflictError("t-1", 1, None),
        ServiceUnavailableError(dependency="task_store", retry_after=5),
    ],
    ids=type,
)
def test_errors_survive_pickling(err: errors.PeerwireError) -> None:
    # Worker processes hand errors back to the server across process boundaries.
    copy = pickle.loads(pickle.dumps(err))
    assert type(copy) is type(err)
    assert (str(copy), copy.__dict__) == (str(err), err.__dict__)


def test_docstring_tree_and_all_name_every_error_class() -> None:
    defined = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type)
        and issubclass(value, Exception)
        and value.__module__ == errors.__name__
    }
    tree = errors.__doc__ or ""
    assert sorted(name for name in defined if not re.search(rf"\b{name}\b", tree)) == []
    assert defined <= set(errors.__all__)


def test_all_is_complete_and_importable() -> None:
    assert all(hasattr(errors, name) for name in errors.__all__)
    assert ERROR_DOMAIN == "a2a-protocol.org"


def _error_info(reason: str) -> dict[str, Any]:
    return {"@type": ERROR_INFO_TYPE, "reason": reason, "domain": ERROR_DOMAIN}


# --- bounded texts ------------------------------------------------------------------------------


def test_every_text_an_error_carries_on_the_wire_is_bounded() -> None:
    limit = errors.MAX_ERROR_TEXT
    err = errors.InvalidParamsError(
        "m" * (limit + 1),
        metadata={"k" * 1000: "v" * 1000, "short": "ok"},
        field_violations=[errors.FieldViolation("f" * 1000, "d" * 1000)],
    )
    _, message = errors.grpc_status_of(err)
    _, rest = errors.to_rest_error(err)
    texts = [message, errors.to_jsonrpc_error(err)["message"], rest["error"]["message"]]
    details = errors.error_details(err)
    texts += [*details[0]["metadata"], *details[0]["metadata"].values()]
    texts += list(details[1]["fieldViolations"][0].values())
    assert all(len(text) <= limit for text in texts)
    assert message == "m" * (limit - 1) + "…"
    assert details[0]["metadata"]["short"] == "ok"  # short texts are kept as they are
    assert err.message == "m" * (limit + 1)  # the error itself keeps all of it


def test_bounded_text_cuts_with_an_ellipsis() -> None:
    assert errors.bounded_text("abcdef", 4) == "abc…"
    assert errors.bounded_text("abcd", 4) == "abcd"
    assert errors.wire_message(errors.TaskNotFoundError("x" * 9), 5) == "xxxx…"


# --- ServiceUnavailableError: an outage of what the server depends on -------------------------


def _outage() -> ServiceUnavailableError:
    return ServiceUnavailableError(dependency="task_store", retry_after=7)


def test_an_outage_travels_as_a_temporary_error_told_apart_by_its_reason() -> None:
    info = wire_info(ServiceUnavailableError)
    # A2A 1.0's System category (spec §3.3.2): -32603, 503, UNAVAILABLE; not a 500.
    assert (info.jsonrpc_code, info.http_status, info.grpc_status) == (-32603, 503, "UNAVAILABLE")
    assert info.reason == "SERVICE_UNAVAILABLE"
    assert isinstance(_outage(), ServerBusyError)
    (detail,) = error_details(_outage())
    assert detail == {
        "@type": ERROR_INFO_TYPE,
        "reason": "SERVICE_UNAVAILABLE",
        "domain": PEERWIRE_ERROR_DOMAIN,
        "metadata": {"dependency": "task_store", "retryAfterSeconds": "7"},
    }
    assert _outage().message == "The agent's task store is unavailable; retry in 7 s"
    assert retry_after_of(_outage()) == 7
    assert retry_after_of(ServerBusyError()) is None


@pytest.mark.parametrize(
    "decode",
    [
        lambda err: from_jsonrpc_error(to_jsonrpc_error(err)),
        lambda err: from_rest_error(*to_rest_error(err)),
        lambda err: from_grpc_status(*grpc_status_of(err), error_details(err)),
    ],
    ids=["jsonrpc", "rest", "grpc"],
)
def test_an_outage_decodes_as_itself_with_its_retry_after(decode: Any) -> None:
    decoded = decode(_outage())
    assert type(decoded) is ServiceUnavailableError
    assert (decoded.dependency, decoded.retry_after) == ("task_store", 7)
    assert decoded.message == _outage().message


def test_the_outage_reason_from_another_domain_is_only_its_status() -> None:
    foreign = {"@type": ERROR_INFO_TYPE, "reason": "SERVICE_UNAVAILABLE", "domain": "x.example"}
    err = from_jsonrpc_error({"code": -32603, "message": "m", "data": [foreign]})
    assert type(err) is InternalError


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [({"dependency": "mainframe"}, "dependency"), ({"retry_after": -1}, "retry_after")],
)
def test_an_outage_refuses_what_it_cannot_say(kwargs: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        ServiceUnavailableError(**kwargs)


def test_a_garbled_retry_after_reads_as_not_said() -> None:
    err = ServiceUnavailableError(metadata={"retryAfterSeconds": "soon"})
    assert err.retry_after is None and err.dependency == ""
