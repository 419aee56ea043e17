"""A2A 0.3's HTTP+JSON routes onto the 1.0 operations (sans I/O), both directions.

0.3's REST binding is the HTTP transcoding of its proto: routes under ``/v1`` relative to the
interface URL, bodies and answers in the ProtoJSON of the 0.3 proto (``proto``), streams as
SSE whose ``data`` is a 0.3 ``StreamResponse``, errors as ``errors.rest_error``. The routes::

    POST   /v1/message:send                                   SendMessage
    POST   /v1/message:stream                                 SendStreamingMessage
    GET    /v1/tasks/{id}?historyLength=N                     GetTask
    POST   /v1/tasks/{id}:cancel                              CancelTask
    GET    /v1/tasks/{id}:subscribe   (POST too)              SubscribeToTask
    POST   /v1/tasks/{id}/pushNotificationConfigs             CreateTaskPushNotificationConfig
    GET    /v1/tasks/{id}/pushNotificationConfigs             ListTaskPushNotificationConfigs
    GET    /v1/tasks/{id}/pushNotificationConfigs/{configId}  GetTaskPushNotificationConfig
    DELETE /v1/tasks/{id}/pushNotificationConfigs/{configId}  DeleteTaskPushNotificationConfig
    GET    /v1/card                                           GetExtendedAgentCard

``/v1/...`` is also where a 1.0 tenant named ``v1`` lives: a server takes a path that matches
a 0.3 route as 0.3 unless its ``A2A-Version`` names 1.x (``version.names_v1``).

Decisions (docs/COMPATIBILITY.md): a create body may be the Python SDK's
CreateTaskPushNotificationConfigRequest, the JavaScript SDK's bare TaskPushNotificationConfig
or a bare PushNotificationConfig; a config without an id is stored under the task's id (as
on JSON-RPC); a cancel's body is ignored (an empty one and ``null`` included); the path's
ids win over ``name``s in bodies; DELETE answers ``{}``; ListTasks (``GET /v1/tasks``) is no
0.3 route here.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote

import msgspec

from ...bindings.rest import HttpRequest, MethodNotAllowed, decode_path_segment
from ...errors import FieldViolation, InvalidParamsError, JSONParseError, UnsupportedOperationError
from ...types import (
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    check_document,
    encode,
)
from . import proto
from .card import card_from_proto, card_to_proto
from .files import FileBytes, FileForm, files_in, files_out
from .translate import JSON

__all__ = [
    "PREFIX",
    "Route",
    "RouteMatch",
    "build_request",
    "decode_event",
    "decode_result",
    "encode_event",
    "encode_request",
    "encode_result",
    "match_route",
]

PREFIX = "/v1/"
"""Every 0.3 route starts with this, below the interface URL."""


@dataclass(frozen=True, slots=True)
class Route:
    operation: str  # the 1.0 operation (gRPC rpc name)
    dispatch: str  # the Dispatcher method
    streaming: bool = False
    has_body: bool = False


_ROUTES = {
    "SendMessage": Route("SendMessage", "send_message", has_body=True),
    "SendStreamingMessage": Route(
        "SendStreamingMessage", "send_streaming_message", streaming=True, has_body=True
    ),
    "GetTask": Route("GetTask", "get_task"),
    "CancelTask": Route("CancelTask", "cancel_task", has_body=True),
    "SubscribeToTask": Route("SubscribeToTask", "subscribe_to_task", streaming=True),
    "CreateTaskPushNotificationConfig": Route(
        "CreateTaskPushNotificationConfig", "create_task_push_notification_config", has_body=True
    ),
    "ListTaskPushNotificationConfigs": Route(
        "ListTaskPushNotificationConfigs", "list_task_push_notification_configs"
    ),
    "GetTaskPushNotificationConfig": Route(
        "GetTaskPushNotificationConfig", "get_task_push_notification_config"
    ),
    "DeleteTaskPushNotificationConfig": Route(
        "DeleteTaskPushNotificationConfig", "delete_task_push_notification_config"
    ),
    "GetExtendedAgentCard": Route("GetExtendedAgentCard", "get_extended_agent_card"),
}


@dataclass(frozen=True, slots=True)
class RouteMatch:
    """A request line naming a 0.3 route; ``task_id``/``config_id`` decoded from the path."""

    route: Route
    task_id: str = ""
    config_id: str = ""


# -- server side: matching -------------------------------------------------------------------


def _invalid(name: str, description: str) -> InvalidParamsError:
    return InvalidParamsError(
        f"Invalid parameters: {name} {description}",
        field_violations=(FieldViolation(field=name, description=description),),
    )


def _by_verb(
    path: str, method: str, verbs: dict[str, str], **ids: str
) -> RouteMatch | MethodNotAllowed:
    operation = verbs.get(method)
    if operation is None:
        return MethodNotAllowed(path, method, tuple(verbs))
    return RouteMatch(_ROUTES[operation], **ids)


def match_route(method: str, path: str) -> RouteMatch | MethodNotAllowed | None:
    """The 0.3 route of a request line; ``path`` is raw (percent-encoded), below the
    interface URL, without the query. ``None``: no 0.3 route has this path."""
    if not path.startswith(PREFIX):
        return None
    segments = path[len(PREFIX) :].split("/")
    count = len(segments)
    if count == 1:
        verbs = {
            "message:send": {"POST": "SendMessage"},
            "message:stream": {"POST": "SendStreamingMessage"},
            "card": {"GET": "GetExtendedAgentCard"},
        }.get(segments[0])
        return None if verbs is None else _by_verb(path, method, verbs)
    if segments[0] != "tasks":
        return None
    if count == 2:
        head, colon, verb = segments[1].rpartition(":")
        if colon and verb == "cancel":
            return _by_verb(
                path, method, {"POST": "CancelTask"}, task_id=decode_path_segment("id", head)
            )
        if colon and verb == "subscribe":
            verbs = {"GET": "SubscribeToTask", "POST": "SubscribeToTask"}
            return _by_verb(path, method, verbs, task_id=decode_path_segment("id", head))
        return _by_verb(
            path, method, {"GET": "GetTask"}, task_id=decode_path_segment("id", segments[1])
        )
    if segments[2] != "pushNotificationConfigs" or count > 4:
        return None
    task_id = decode_path_segment("id", segments[1])
    if count == 3:
        verbs = {
            "POST": "CreateTaskPushNotificationConfig",
            "GET": "ListTaskPushNotificationConfigs",
        }
        return _by_verb(path, method, verbs, task_id=task_id)
    verbs = {"GET": "GetTaskPushNotificationConfig", "DELETE": "DeleteTaskPushNotificationConfig"}
    return _by_verb(
        path, method, verbs, task_id=task_id, config_id=decode_path_segment("configId", segments[3])
    )


# -- server side: requests and answers --------------------------------------------------------


def _document(body: bytes) -> Any:
    if not body.strip():
        return None
    check_document(body)
    try:
        return msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise JSONParseError(f"Invalid JSON payload: {exc}") from None


def _history_length(query: bytes | str) -> int | None:
    text = query.decode("latin-1") if isinstance(query, bytes) else query
    for name, value in parse_qsl(text, keep_blank_values=True):
        if name in ("historyLength", "history_length"):
            if not value.isdigit() or len(value) > 9:
                raise _invalid("historyLength", f"must be a non-negative integer, got {value!r}")
            return int(value) or None  # 0: no presence in 0.3, so "all of it"
    return None


def build_request(
    match: RouteMatch,
    *,
    query: bytes | str = b"",
    body: bytes = b"",
    file_bytes: FileBytes = "auto",
) -> Any:
    """The 1.0 request of a matched 0.3 route, from its path, query and body; a message's file
    bytes read under ``file_bytes``, their form kept in its metadata (``files.files_in``)."""
    operation = match.route.operation
    if operation in ("SendMessage", "SendStreamingMessage"):
        document = _document(body)
        document = {} if document is None else document
        files_in(document, file_bytes, mark=True)
        return proto.send_request_from_proto(document)
    if operation == "GetTask":
        return GetTaskRequest(id=match.task_id, history_length=_history_length(query))
    if operation == "CancelTask":
        _document(body)  # screened, then ignored: the path names the task
        return CancelTaskRequest(id=match.task_id)
    if operation == "SubscribeToTask":
        return SubscribeToTaskRequest(id=match.task_id)
    if operation == "CreateTaskPushNotificationConfig":
        document = _document(body)
        config = proto.create_push_config_from_proto(
            {} if document is None else document, task_id=match.task_id
        )
        return config if config.id else msgspec.structs.replace(config, id=match.task_id)
    if operation == "ListTaskPushNotificationConfigs":
        return ListTaskPushNotificationConfigsRequest(task_id=match.task_id)
    if operation == "GetTaskPushNotificationConfig":
        return GetTaskPushNotificationConfigRequest(task_id=match.task_id, id=match.config_id)
    if operation == "DeleteTaskPushNotificationConfig":
        return DeleteTaskPushNotificationConfigRequest(task_id=match.task_id, id=match.config_id)
    return GetExtendedAgentCardRequest()


def result_document(route: Route, result: Any, *, card_bindings: Collection[str] = ()) -> Any:
    """The 0.3 answer of a unary route (``result``: the Dispatcher's) as ProtoJSON, file bytes
    in the content form (``encode_result`` writes it in another)."""
    operation = route.operation
    if operation == "SendMessage":
        return proto.send_result_to_proto(result)
    if operation in ("GetTask", "CancelTask"):
        return proto.task_to_proto(result)
    if operation in ("CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig"):
        return proto.push_config_to_proto(result)
    if operation == "ListTaskPushNotificationConfigs":
        return proto.list_push_configs_to_proto(result)
    if operation == "GetExtendedAgentCard":
        return card_to_proto(result, card_bindings or None)
    return {}


def encode_result(document: Any, file_form: FileForm = "content") -> bytes:
    """The body of a ``result_document``, its file bytes in ``file_form``."""
    return encode(files_out(document, file_form))


def encode_event(event: StreamResponse, file_form: FileForm = "content") -> bytes:
    """One SSE ``data`` of a 0.3 REST stream, its file bytes in ``file_form``."""
    return encode(files_out(proto.event_to_proto(event), file_form))


# -- client side -----------------------------------------------------------------------------


def _path(*segments: str) -> str:
    return PREFIX + "/".join(segments)


def _id(value: str, name: str) -> str:
    if not value:
        raise _invalid(name, "must not be empty: it is part of the path")
    return quote(value, safe="")


def encode_request(operation: str, request: Any, *, file_form: FileForm = "content") -> HttpRequest:
    """The 0.3 HTTP request for a 1.0 operation and its typed request, file bytes in
    ``file_form``. ListTasks has no 0.3 route (``UnsupportedOperationError``)."""
    if operation in ("SendMessage", "SendStreamingMessage"):
        verb = "send" if operation == "SendMessage" else "stream"
        body = encode(files_out(proto.send_request_to_proto(request), file_form))
        return HttpRequest("POST", _path(f"message:{verb}"), body=body)
    if operation == "GetTask":
        query = (
            ()
            if request.history_length is None
            else (("historyLength", str(request.history_length)),)
        )
        return HttpRequest("GET", _path("tasks", _id(request.id, "id")), query)
    if operation == "CancelTask":
        body = encode({"name": proto.task_name(request.id)})
        return HttpRequest("POST", _path("tasks", _id(request.id, "id") + ":cancel"), body=body)
    if operation == "SubscribeToTask":
        # GET: the Python SDK's 0.3 server has only that verb (the JavaScript one has both).
        return HttpRequest("GET", _path("tasks", _id(request.id, "id") + ":subscribe"))
    if operation in ("CreateTaskPushNotificationConfig", "ListTaskPushNotificationConfigs"):
        path = _path("tasks", _id(request.task_id, "taskId"), "pushNotificationConfigs")
        if operation == "ListTaskPushNotificationConfigs":
            return HttpRequest("GET", path)
        return HttpRequest("POST", path, body=encode(proto.create_push_config_to_proto(request)))
    if operation in ("GetTaskPushNotificationConfig", "DeleteTaskPushNotificationConfig"):
        path = _path(
            "tasks",
            _id(request.task_id, "taskId"),
            "pushNotificationConfigs",
            _id(request.id, "id"),
        )
        return HttpRequest("GET" if operation.startswith("Get") else "DELETE", path)
    if operation == "GetExtendedAgentCard":
        return HttpRequest("GET", _path("card"))
    raise UnsupportedOperationError(
        f"{operation} has no A2A 0.3 REST route, and this agent speaks 0.3"
    )


def is_streaming(operation: str) -> bool:
    return operation in ("SendStreamingMessage", "SubscribeToTask")


def decode_result(
    operation: str, value: JSON, path: str = "body", *, file_bytes: FileBytes = "auto"
) -> Any:
    """A 0.3 answer body (parsed JSON) as the 1.0 answer of ``operation``, file bytes read
    under ``file_bytes``. Raises ``InvalidParamsError`` naming what is wrong."""
    files_in(value, file_bytes, path=path)
    if operation == "SendMessage":
        return proto.send_result_from_proto(value, path)
    if operation in ("GetTask", "CancelTask"):
        return proto.task_from_proto(value, path)
    if operation in ("CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig"):
        return proto.push_config_from_proto(value, path)
    if operation == "ListTaskPushNotificationConfigs":
        return proto.list_push_configs_from_proto(value, path)
    if operation == "GetExtendedAgentCard":
        return card_from_proto(value, path)
    return None


def decode_event(
    value: JSON, path: str = "event", *, file_bytes: FileBytes = "auto"
) -> StreamResponse:
    files_in(value, file_bytes, path=path)
    return proto.event_from_proto(value, path)
