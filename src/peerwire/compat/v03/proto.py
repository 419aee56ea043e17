"""The A2A 0.3 proto (package ``a2a.v1``) in its ProtoJSON form, to and from ``peerwire.types``.

0.3's HTTP+JSON binding carries the ProtoJSON of the 0.3 proto (not the JSON-RPC shapes of
``translate``), and its gRPC binding the same messages in binary: one translation serves
both. ``*_to_proto`` returns the ProtoJSON value (``google.protobuf.json_format.ParseDict``
makes the gRPC message of it); ``*_from_proto`` takes a ProtoJSON value (``MessageToDict``
of a gRPC message) and returns the peerwire object, raising ``InvalidParamsError`` naming
the JSON path of what is wrong. Output holds only members the 0.3 proto has (the official
Python SDK parses strictly); input takes both the JSON names and the proto field names
(``messageId`` / ``message_id``, ``message`` / ``update`` / ``msg`` / ``request``), and enum
numbers.

Shapes: a Message has ``content`` (not ``parts``) and no ``referenceTaskIds`` (dropped);
parts are ``{text}``, ``{file: {fileWithUri | fileWithBytes, mimeType, name}}`` or
``{data: {data: {...}}}``; states are ``TASK_STATE_*`` with 0.3's ``TASK_STATE_CANCELLED``;
resources are named ``tasks/{id}`` and ``tasks/{id}/pushNotificationConfigs/{configId}``.

Decisions (docs/COMPATIBILITY.md):

* ``blocking`` is a plain proto3 bool, so ``false`` and absent cannot be told apart: a send
  returns immediately when its ``configuration`` is present without ``blocking: true``; one
  without a configuration blocks. Outgoing sends always say ``blocking`` explicitly.
* ``historyLength`` 0 (absent) means no limit.
* ``fileWithBytes`` is the content itself (the proto's ``bytes``: its base64 in ProtoJSON), as
  the JavaScript SDK and the 1.0 binding have it. The official Python SDK's form (the base64
  *text* of the content in those bytes) is read and written by ``files`` around this module.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from ...protocol import closes_stream
from ...types import (
    Encoded,
    ListTaskPushNotificationConfigsResponse,
    Message,
    Role,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from .translate import (
    DATA_PART_COMPAT,
    JSON,
    Doc,
    bad,
    builtins_of,
    copy,
    copy_message_metadata,
    decode_as,
    items,
    obj,
    timestamp_in,
)

__all__ = [
    "config_name",
    "create_push_config_from_proto",
    "create_push_config_to_proto",
    "event_from_proto",
    "event_to_proto",
    "ids_of_config_name",
    "list_push_configs_from_proto",
    "list_push_configs_to_proto",
    "message_from_proto",
    "message_to_proto",
    "push_config_from_proto",
    "push_config_to_proto",
    "send_request_from_proto",
    "send_request_to_proto",
    "send_result_from_proto",
    "send_result_to_proto",
    "state_from_proto",
    "state_to_proto",
    "task_from_proto",
    "task_id_of_name",
    "task_name",
    "task_to_proto",
]

_CANCELLED = "TASK_STATE_CANCELLED"  # 0.3's spelling; 1.0 dropped an L
_STATE_NUMBERS = {
    0: TaskState.UNSPECIFIED,
    1: TaskState.SUBMITTED,
    2: TaskState.WORKING,
    3: TaskState.COMPLETED,
    4: TaskState.FAILED,
    5: TaskState.CANCELED,
    6: TaskState.INPUT_REQUIRED,
    7: TaskState.REJECTED,
    8: TaskState.AUTH_REQUIRED,
}
_ROLE_NUMBERS = {1: Role.USER, 2: Role.AGENT}
_CONFIGS = "/pushNotificationConfigs/"
_SNAKE = re.compile(r"(?<!^)(?=[A-Z])")


def _members(document: Doc, *names: str) -> Doc:
    """The members ``names`` that ``document`` sets, by JSON or proto field name."""
    out: Doc = {}
    for name in names:
        value = _get(document, name)
        if value is not None:
            out[name] = value
    return out


def _get(document: Doc, name: str, *aliases: str) -> Any:
    """A member by its JSON name, its proto field name (snake_case) or an alias."""
    for key in (name, _SNAKE.sub("_", name).lower(), *aliases):
        if key in document and document[key] is not None:
            return document[key]
    return None


# -- resource names --------------------------------------------------------------------------


def task_name(task_id: str) -> str:
    """``tasks/{id}``, the 0.3 resource name of a task."""
    return f"tasks/{task_id}"


def config_name(task_id: str, config_id: str) -> str:
    """``tasks/{id}/pushNotificationConfigs/{configId}``."""
    return f"tasks/{task_id}{_CONFIGS}{config_id}"


def task_id_of_name(name: JSON, path: str = "name") -> str:
    """The task id of ``tasks/{id}`` (also of a push config's name)."""
    if not isinstance(name, str) or not name.startswith("tasks/") or len(name) == 6:
        raise bad(path, f"must be a task resource name, tasks/{{id}}, not {name!r}")
    task_id = name[6:]
    return task_id.split(_CONFIGS, 1)[0] if _CONFIGS in task_id else task_id


def ids_of_config_name(name: JSON, path: str = "name") -> tuple[str, str]:
    """(task id, config id) of ``tasks/{id}/pushNotificationConfigs/{configId}``."""
    task_id = task_id_of_name(name, path)
    assert isinstance(name, str)
    config_id = name.rpartition(_CONFIGS)[2] if _CONFIGS in name else ""
    if not config_id:
        raise bad(path, f"must name a push config, tasks/{{id}}{_CONFIGS}{{id}}, not {name!r}")
    return task_id, config_id


# -- enums -----------------------------------------------------------------------------------


def state_to_proto(state: TaskState) -> str:
    return _CANCELLED if state is TaskState.CANCELED else state.value


def state_from_proto(value: JSON, path: str = "state") -> TaskState:
    if isinstance(value, int) and not isinstance(value, bool) and value in _STATE_NUMBERS:
        return _STATE_NUMBERS[value]
    if value == _CANCELLED:
        return TaskState.CANCELED
    try:
        return TaskState(value)
    except ValueError:
        names = ", ".join(state_to_proto(s) for s in _STATE_NUMBERS.values())
        raise bad(path, f"must be one of {names}, not {value!r}") from None


def _role_in(value: JSON, path: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value in _ROLE_NUMBERS:
        return _ROLE_NUMBERS[value].value
    if value in (Role.USER.value, Role.AGENT.value):
        return str(value)
    raise bad(path, f"must be ROLE_USER or ROLE_AGENT, not {value!r}")


# -- parts, messages, artifacts --------------------------------------------------------------


def _file_bytes_in(value: JSON, path: str) -> str:
    """The 1.0 ``raw`` (standard base64) of a proto ``fileWithBytes`` (any base64 ProtoJSON
    takes: URL-safe, unpadded)."""
    if not isinstance(value, str):
        raise bad(path, "must be base64 text")
    text = value.replace("-", "+").replace("_", "/").rstrip("=")
    try:
        content = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise bad(path, "is not valid base64") from None
    return base64.b64encode(content).decode("ascii")


def _part_out(part: Doc) -> Doc:
    metadata = part.get("metadata")
    if "text" in part:
        out: Doc = {"text": part["text"]}
    elif "raw" in part or "url" in part:
        file: Doc = (
            {"fileWithBytes": part["raw"]} if "raw" in part else {"fileWithUri": part["url"]}
        )
        if part.get("mediaType"):
            file["mimeType"] = part["mediaType"]
        if part.get("filename"):
            file["name"] = part["filename"]
        out = {"file": file}
    else:
        data = part.get("data")
        if not isinstance(data, dict):
            data = {"value": data}
            metadata = {**(metadata or {}), DATA_PART_COMPAT: True}
        out = {"data": {"data": data}}
    if metadata:
        out["metadata"] = metadata
    return out


def _part_in(value: JSON, path: str) -> Doc:
    part = obj(value, path)
    metadata = _get(part, "metadata")
    if isinstance(part.get("text"), str):
        out: Doc = {"text": part["text"]}
    elif part.get("file") is not None:
        file = obj(part["file"], f"{path}.file")
        uri, raw = _get(file, "fileWithUri"), _get(file, "fileWithBytes")
        if (uri is None) == (raw is None):
            raise bad(f"{path}.file", "must carry exactly one of fileWithUri or fileWithBytes")
        if uri is not None:
            out = {"url": uri}
        else:
            out = {"raw": _file_bytes_in(raw, f"{path}.file.fileWithBytes")}
        if _get(file, "mimeType"):
            out["mediaType"] = _get(file, "mimeType")
        if file.get("name"):
            out["filename"] = file["name"]
    elif part.get("data") is not None:
        wrapper = obj(part["data"], f"{path}.data")
        data = wrapper.get("data", {})
        if isinstance(metadata, dict) and metadata.get(DATA_PART_COMPAT) is True:
            metadata = {k: v for k, v in metadata.items() if k != DATA_PART_COMPAT}
            if isinstance(data, dict) and "value" in data:
                data = data["value"]
        out = {"data": data}
    else:
        raise bad(path, "must carry one of text, file or data")
    if metadata:
        out["metadata"] = metadata
    return out


def _message_out(message: Doc) -> Doc:
    out: Doc = {"messageId": message.get("messageId", "")}
    copy(message, out, "contextId", "taskId")
    out["role"] = message.get("role", Role.AGENT.value)
    out["content"] = [_part_out(p) for p in message.get("parts", ())]
    copy_message_metadata(message, out)
    copy(message, out, "extensions")
    return out


def _message_in(value: JSON, path: str) -> Doc:
    message = obj(value, path)
    out = _members(message, "messageId", "contextId", "taskId", "metadata", "extensions")
    out["role"] = _role_in(message.get("role"), f"{path}.role")
    parts = _get(message, "content", "parts")
    out["parts"] = [
        _part_in(p, f"{path}.content[{i}]") for i, p in enumerate(items(parts, f"{path}.content"))
    ]
    return out


def message_to_proto(message: Message) -> Doc:
    return _message_out(builtins_of(message))


def message_from_proto(value: JSON, path: str = "message") -> Message:
    return decode_as(_message_in(value, path), Message, path)


def _artifact_out(artifact: Doc) -> Doc:
    out: Doc = {"artifactId": artifact.get("artifactId", "")}
    copy(artifact, out, "name", "description")
    out["parts"] = [_part_out(p) for p in artifact.get("parts", ())]
    copy(artifact, out, "metadata", "extensions")
    return out


def _artifact_in(value: JSON, path: str) -> Doc:
    artifact = obj(value, path)
    out = _members(artifact, "artifactId", "name", "description", "metadata", "extensions")
    out["parts"] = [
        _part_in(p, f"{path}.parts[{i}]")
        for i, p in enumerate(items(artifact.get("parts"), f"{path}.parts"))
    ]
    return out


# -- tasks and events --------------------------------------------------------------------------


def _status_out(status: Doc) -> Doc:
    state = TaskState(status.get("state", TaskState.UNSPECIFIED.value))
    out: Doc = {"state": state_to_proto(state)}
    if status.get("message") is not None:
        out["message"] = _message_out(status["message"])
    copy(status, out, "timestamp")
    return out


def _status_in(value: JSON, path: str) -> Doc:
    status = obj(value, path)
    out: Doc = {"state": state_from_proto(status.get("state", 0), f"{path}.state").value}
    message = _get(status, "message", "update")
    if message is not None:
        out["message"] = _message_in(message, f"{path}.message")
    stamp = timestamp_in(status.get("timestamp"))
    if stamp is not None:
        out["timestamp"] = stamp
    return out


def _task_out(task: Doc) -> Doc:
    out: Doc = {"id": task.get("id", "")}
    copy(task, out, "contextId")
    out["status"] = _status_out(task.get("status", {}))
    if task.get("artifacts"):
        out["artifacts"] = [_artifact_out(a) for a in task["artifacts"]]
    if task.get("history"):
        out["history"] = [_message_out(m) for m in task["history"]]
    copy(task, out, "metadata")
    return out


def _task_in(value: JSON, path: str) -> Doc:
    task = obj(value, path)
    out = _members(task, "id", "contextId", "metadata")
    out["status"] = _status_in(task.get("status", {}), f"{path}.status")
    out["artifacts"] = [
        _artifact_in(a, f"{path}.artifacts[{i}]")
        for i, a in enumerate(items(task.get("artifacts"), f"{path}.artifacts"))
    ]
    out["history"] = [
        _message_in(m, f"{path}.history[{i}]")
        for i, m in enumerate(items(task.get("history"), f"{path}.history"))
    ]
    return out


def task_to_proto(task: Task | Encoded[Task]) -> Doc:
    return _task_out(builtins_of(task))


def task_from_proto(value: JSON, path: str = "task") -> Task:
    return decode_as(_task_in(value, path), Task, path)


def _event_out(event: Doc) -> Doc:
    if "task" in event:
        return {"task": _task_out(event["task"])}
    if "message" in event:
        return {"message": _message_out(event["message"])}
    if "statusUpdate" in event:
        update = event["statusUpdate"]
        status = update.get("status", {})
        out: Doc = {}
        copy(update, out, "taskId", "contextId")
        out["status"] = _status_out(status)
        state = TaskState(status.get("state", TaskState.UNSPECIFIED.value))
        if closes_stream(state):
            out["final"] = True
        copy(update, out, "metadata")
        return {"statusUpdate": out}
    update = event["artifactUpdate"]
    out = {}
    copy(update, out, "taskId", "contextId")
    out["artifact"] = _artifact_out(update.get("artifact", {}))
    copy(update, out, "append", "lastChunk", "metadata")
    return {"artifactUpdate": out}


def _event_in(value: JSON, path: str) -> Doc:
    event = obj(value, path)
    task = _get(event, "task")
    if task is not None:
        return {"task": _task_in(task, f"{path}.task")}
    message = _get(event, "message", "msg")
    if message is not None:
        return {"message": _message_in(message, f"{path}.message")}
    update = _get(event, "statusUpdate")
    if update is not None:
        where = f"{path}.statusUpdate"
        out = _members(obj(update, where), "taskId", "contextId", "metadata")
        out["status"] = _status_in(update.get("status", {}), f"{where}.status")
        return {"statusUpdate": out}
    update = _get(event, "artifactUpdate")
    if update is not None:
        where = f"{path}.artifactUpdate"
        out = _members(obj(update, where), "taskId", "contextId", "metadata", "append", "lastChunk")
        out["artifact"] = _artifact_in(update.get("artifact"), f"{where}.artifact")
        return {"artifactUpdate": out}
    raise bad(path, "must carry one of task, message, statusUpdate or artifactUpdate")


def event_to_proto(event: StreamResponse) -> Doc:
    """A StreamResponse of the 0.3 proto; a status update that closes the stream is ``final``."""
    return _event_out(builtins_of(event))


def event_from_proto(value: JSON, path: str = "event") -> StreamResponse:
    return decode_as(_event_in(value, path), StreamResponse, path)


def send_result_to_proto(result: SendMessageResponse | Encoded[SendMessageResponse]) -> Doc:
    response = builtins_of(result)
    if "task" in response:
        return {"task": _task_out(response["task"])}
    return {"message": _message_out(response["message"])}


def send_result_from_proto(value: JSON, path: str = "body") -> SendMessageResponse:
    response = obj(value, path)
    task = _get(response, "task")
    if task is not None:
        return decode_as({"task": _task_in(task, f"{path}.task")}, SendMessageResponse, path)
    message = _get(response, "message", "msg")
    if message is None:
        raise bad(path, "must carry a task or a message")
    document = {"message": _message_in(message, f"{path}.message")}
    return decode_as(document, SendMessageResponse, path)


# -- push notification configs -----------------------------------------------------------------


def _push_out(config: Doc) -> Doc:
    out: Doc = {}
    copy(config, out, "id", "url", "token")
    authentication = config.get("authentication")
    if authentication is not None:
        out["authentication"] = {"schemes": [authentication.get("scheme", "")]}
        copy(authentication, out["authentication"], "credentials")
    return out


def _push_in(value: JSON, path: str) -> Doc:
    config = obj(value, path)
    out: Doc = {}
    copy(config, out, "id", "url", "token")
    authentication = config.get("authentication")
    if authentication is not None:
        authentication = obj(authentication, f"{path}.authentication")
        schemes = items(authentication.get("schemes"), f"{path}.authentication.schemes")
        if schemes and isinstance(schemes[0], str) and schemes[0]:
            out["authentication"] = {"scheme": schemes[0]}
            copy(authentication, out["authentication"], "credentials")
    return out


def push_config_to_proto(config: TaskPushNotificationConfig) -> Doc:
    """``{name: tasks/{t}/pushNotificationConfigs/{c}, pushNotificationConfig}``."""
    document = builtins_of(config)
    return {
        "name": config_name(document.get("taskId", ""), document.get("id", "")),
        "pushNotificationConfig": _push_out(document),
    }


def push_config_from_proto(
    value: JSON, path: str = "body", *, task_id: str | None = None
) -> TaskPushNotificationConfig:
    """A 0.3 TaskPushNotificationConfig; ``task_id`` (from a request path) wins over its
    ``name``, which may then be empty."""
    document = obj(value, path)
    out = _push_in(_get(document, "pushNotificationConfig") or {}, f"{path}.pushNotificationConfig")
    name = document.get("name")
    if task_id is None:
        task_id = task_id_of_name(name, f"{path}.name")
    out["taskId"] = task_id
    if not out.get("id") and isinstance(name, str) and _CONFIGS in name:
        out["id"] = name.rpartition(_CONFIGS)[2]
    return decode_as(out, TaskPushNotificationConfig, path)


def create_push_config_to_proto(config: TaskPushNotificationConfig) -> Doc:
    """CreateTaskPushNotificationConfigRequest: ``{parent, configId, config}``."""
    document = builtins_of(config)
    out: Doc = {"parent": task_name(document.get("taskId", ""))}
    copy(document, out, "id")
    if "id" in out:
        out["configId"] = out.pop("id")
    out["config"] = push_config_to_proto(config)
    return out


def create_push_config_from_proto(
    value: JSON, path: str = "body", *, task_id: str
) -> TaskPushNotificationConfig:
    """The config of a create request for ``task_id``: a CreateTaskPushNotificationConfigRequest
    (``{parent, configId, config}``, the Python SDK's) or a bare TaskPushNotificationConfig
    (``{name, pushNotificationConfig}``, the JavaScript SDK's) or a bare PushNotificationConfig."""
    document = obj(value, path)
    if _get(document, "config") is not None:
        config = push_config_from_proto(_get(document, "config"), f"{path}.config", task_id=task_id)
        config_id = _get(document, "configId")
        if config_id and not config.id:
            return TaskPushNotificationConfig(
                id=str(config_id),
                task_id=config.task_id,
                url=config.url,
                token=config.token,
                authentication=config.authentication,
            )
        return config
    if _get(document, "pushNotificationConfig") is not None:
        return push_config_from_proto(document, path, task_id=task_id)
    out = _push_in(document, path)
    out["taskId"] = task_id
    return decode_as(out, TaskPushNotificationConfig, path)


def list_push_configs_to_proto(response: ListTaskPushNotificationConfigsResponse) -> Doc:
    out: Doc = {"configs": [push_config_to_proto(c) for c in response.configs]}
    if response.next_page_token:
        out["nextPageToken"] = response.next_page_token
    return out


def list_push_configs_from_proto(
    value: JSON, path: str = "body"
) -> ListTaskPushNotificationConfigsResponse:
    document = obj(value, path) if isinstance(value, dict) else {"configs": value}
    configs = [
        push_config_from_proto(c, f"{path}.configs[{i}]")
        for i, c in enumerate(items(document.get("configs"), f"{path}.configs"))
    ]
    token = _get(document, "nextPageToken")
    return ListTaskPushNotificationConfigsResponse(
        configs=configs, next_page_token=token if isinstance(token, str) else ""
    )


# -- SendMessage -------------------------------------------------------------------------------


def send_request_to_proto(request: SendMessageRequest) -> Doc:
    """SendMessageRequest of the 0.3 proto; ``configuration.blocking`` always says it."""
    document = builtins_of(request)
    config = document.get("configuration") or {}
    v03: Doc = {}
    copy(config, v03, "acceptedOutputModes", "historyLength")
    inline = config.get("taskPushNotificationConfig")
    if inline is not None:
        v03["pushNotification"] = _push_out(inline)
    v03["blocking"] = not config.get("returnImmediately", False)
    out: Doc = {"message": _message_out(document["message"]), "configuration": v03}
    copy(document, out, "metadata")
    return out


def send_request_from_proto(value: JSON, path: str = "body") -> SendMessageRequest:
    document = obj(value, path)
    message = _get(document, "message", "request")
    out: Doc = {"message": _message_in(message, f"{path}.message")}
    config = _get(document, "configuration")
    if config is not None:
        config = obj(config, f"{path}.configuration")
        v10: Doc = {}
        modes = _get(config, "acceptedOutputModes")
        if modes:
            v10["acceptedOutputModes"] = modes
        history = _get(config, "historyLength")
        if history:
            v10["historyLength"] = history
        inline = _get(config, "pushNotification")
        if inline is not None:
            v10["taskPushNotificationConfig"] = _push_in(
                inline, f"{path}.configuration.pushNotification"
            )
        v10["returnImmediately"] = config.get("blocking") is not True
        out["configuration"] = v10
    metadata = _get(document, "metadata")
    if metadata is not None:
        out["metadata"] = metadata
    return decode_as(out, SendMessageRequest, path)
