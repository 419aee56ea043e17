"""A2A 0.3 JSON (the JSON-RPC binding's shapes) to and from ``peerwire.types`` (sans I/O).

0.3's JSON schema tags every polymorphic object with ``kind`` (``text``/``file``/``data``
parts; ``message``, ``task``, ``status-update``, ``artifact-update``), spells roles
``user``/``agent`` and states in lower kebab case, and nests push configs as
``{taskId, pushNotificationConfig}``. Each ``*_to_v03`` takes a peerwire object and returns
the 0.3 JSON value (dicts, lists, str ...: encode it with ``peerwire.types.encode``); each
``*_from_v03`` takes a parsed 0.3 JSON value and returns the peerwire object, raising
``InvalidParamsError`` naming the JSON path (``path``) of what is wrong. Inbound, the 0.3
document is rewritten into its 1.0 ProtoJSON form and then decoded by ``types.from_builtins``
with every 1.0 check; the rewriting is lenient where 0.3 peers are (a missing ``kind`` is
inferred from the members present).

Decisions (docs/COMPATIBILITY.md lists them all):

* A 1.0 data part whose value is not an object travels as ``{"value": X}`` with the part
  metadata ``data_part_compat: true`` (0.3 data must be an object; the official SDKs' 1.x
  compatibility layers use the same convention), and is unwrapped on the way back.
* ``mediaType``/``filename`` of a text or data part have no 0.3 place and are dropped.
* Push authentication: 0.3 ``schemes`` (a list) becomes 1.0's one ``scheme`` (the first);
  1.0's scheme goes out as a one-element list.
* A status update is ``final`` exactly when its state closes a 1.0 stream (terminal or
  INPUT_REQUIRED; ``protocol.closes_stream``).
* ``blocking``: only ``false`` returns immediately (0.3's default is to block).
* A 0.3 timestamp without a zone is taken as UTC; one that is not a timestamp is dropped.
* ``tenant`` has no 0.3 counterpart: requests built from 0.3 have none, and one set is not sent.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

import msgspec

from ...errors import FieldViolation, InvalidParamsError
from ...protocol import closes_stream
from ...types import (
    Artifact,
    Encoded,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    from_builtins,
    to_builtins,
)

__all__ = [
    "DATA_PART_COMPAT",
    "artifact_from_v03",
    "artifact_to_v03",
    "event_from_v03",
    "event_to_v03",
    "message_from_v03",
    "message_to_v03",
    "part_from_v03",
    "part_to_v03",
    "push_config_from_v03",
    "push_config_to_v03",
    "role_from_v03",
    "role_to_v03",
    "send_params_from_v03",
    "send_params_to_v03",
    "send_result_from_v03",
    "send_result_to_v03",
    "state_from_v03",
    "state_to_v03",
    "task_from_v03",
    "task_to_v03",
]

T = TypeVar("T")
JSON = Any
Doc = dict[str, Any]

DATA_PART_COMPAT = "data_part_compat"
"""The part metadata key saying a 0.3 data part wraps a non-object 1.0 value as ``value``."""

_STATES_TO_V03 = {
    TaskState.SUBMITTED.value: "submitted",
    TaskState.WORKING.value: "working",
    TaskState.INPUT_REQUIRED.value: "input-required",
    TaskState.COMPLETED.value: "completed",
    TaskState.CANCELED.value: "canceled",
    TaskState.FAILED.value: "failed",
    TaskState.REJECTED.value: "rejected",
    TaskState.AUTH_REQUIRED.value: "auth-required",
    TaskState.UNSPECIFIED.value: "unknown",
}
_STATES_FROM_V03 = {v03: v10 for v10, v03 in _STATES_TO_V03.items()}
_ROLES_TO_V03 = {Role.USER.value: "user", Role.AGENT.value: "agent"}
_ROLES_FROM_V03 = {v03: v10 for v10, v03 in _ROLES_TO_V03.items()}

# RFC 3339 as 1.0 wants it, and the same without a zone (Python's naive isoformat()).
_ZONED = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})")
_NAIVE = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?")


# -- shared helpers (the proto shape uses them too) ------------------------------------------


def bad(path: str, description: str) -> InvalidParamsError:
    """The error for a member of a 0.3 document that cannot be translated."""
    return InvalidParamsError(
        f"Invalid parameters: {path} {description}",
        field_violations=(FieldViolation(field=path, description=description),),
    )


def obj(value: JSON, path: str) -> Doc:
    if not isinstance(value, dict):
        raise bad(path, f"must be an object, not {_kind_of(value)}")
    return value


def items(value: JSON, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad(path, f"must be an array, not {_kind_of(value)}")
    return value


def copy(source: Doc, target: Doc, *names: str) -> None:
    """Copy the members ``names`` that ``source`` sets (not null) to ``target``."""
    for name in names:
        value = source.get(name)
        if value is not None:
            target[name] = value


def decode_as(document: Doc, type_: type[T], path: str) -> T:
    """A rewritten (1.0 ProtoJSON) document as ``type_``, with every 1.0 check."""
    return from_builtins(document, type_, path=path)


def builtins_of(value: Any) -> Doc:
    """A peerwire object (or an ``Encoded`` one) as its 1.0 ProtoJSON value."""
    if isinstance(value, Encoded):
        decoded: Doc = msgspec.json.decode(value.json)
        return decoded
    converted: Doc = to_builtins(value)
    return converted


def timestamp_in(value: JSON) -> str | None:
    """A 0.3 timestamp as 1.0 takes it: zoned RFC 3339; naive means UTC; else dropped."""
    if not isinstance(value, str):
        return None
    if _ZONED.fullmatch(value):
        return value
    if _NAIVE.fullmatch(value):
        return value + "Z"
    return None


def _kind_of(value: JSON) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "a number"
    )


# -- enums -----------------------------------------------------------------------------------


def state_to_v03(state: TaskState) -> str:
    """``TaskState.INPUT_REQUIRED`` -> ``"input-required"`` (UNSPECIFIED -> ``"unknown"``)."""
    return _STATES_TO_V03[state.value]


def state_from_v03(value: JSON, path: str = "state") -> TaskState:
    name = _STATES_FROM_V03.get(value) if isinstance(value, str) else None
    if name is None:
        raise bad(path, f"must be one of {', '.join(_STATES_FROM_V03)}, not {value!r}")
    return TaskState(name)


def role_to_v03(role: Role) -> str:
    """``Role.USER`` -> ``"user"``, ``Role.AGENT`` -> ``"agent"``."""
    return _ROLES_TO_V03.get(role.value, "agent")


def role_from_v03(value: JSON, path: str = "role") -> Role:
    name = _ROLES_FROM_V03.get(value) if isinstance(value, str) else None
    if name is None:
        raise bad(path, f"must be 'user' or 'agent', not {value!r}")
    return Role(name)


# -- parts -----------------------------------------------------------------------------------


def _part_out(part: Doc) -> Doc:
    metadata = part.get("metadata")
    if "text" in part:
        out: Doc = {"kind": "text", "text": part["text"]}
    elif "raw" in part or "url" in part:
        file: Doc = {"bytes": part["raw"]} if "raw" in part else {"uri": part["url"]}
        if part.get("mediaType"):
            file["mimeType"] = part["mediaType"]
        if part.get("filename"):
            file["name"] = part["filename"]
        out = {"kind": "file", "file": file}
    else:
        data = part.get("data")
        if not isinstance(data, dict):
            data = {"value": data}
            metadata = {**(metadata or {}), DATA_PART_COMPAT: True}
        out = {"kind": "data", "data": data}
    if metadata is not None:
        out["metadata"] = metadata
    return out


def _part_in(value: JSON, path: str) -> Doc:
    part = obj(value, path)
    kind = part.get("kind")
    if kind is None:  # lenient: the member present says which part it is
        kind = next((k for k in ("text", "file", "data") if k in part), None)
    metadata = part.get("metadata")
    if kind == "text":
        text = part.get("text")
        if not isinstance(text, str):
            raise bad(f"{path}.text", "must be a string (a text part)")
        out: Doc = {"text": text}
    elif kind == "file":
        file = obj(part.get("file"), f"{path}.file")
        has_bytes, has_uri = file.get("bytes") is not None, file.get("uri") is not None
        if has_bytes == has_uri:
            raise bad(f"{path}.file", "must carry exactly one of bytes or uri")
        out = {"raw": file["bytes"]} if has_bytes else {"url": file["uri"]}
        if file.get("mimeType") is not None:
            out["mediaType"] = file["mimeType"]
        if file.get("name") is not None:
            out["filename"] = file["name"]
    elif kind == "data":
        if "data" not in part:
            raise bad(f"{path}.data", "is required (a data part)")
        data = part["data"]
        if isinstance(metadata, dict) and metadata.get(DATA_PART_COMPAT) is True:
            metadata = {k: v for k, v in metadata.items() if k != DATA_PART_COMPAT} or None
            if isinstance(data, dict) and "value" in data:
                data = data["value"]
        out = {"data": data}
    else:
        raise bad(f"{path}.kind", f"must be 'text', 'file' or 'data', not {kind!r}")
    if metadata is not None:
        out["metadata"] = metadata
    return out


def part_to_v03(part: Part) -> Doc:
    return _part_out(builtins_of(part))


def part_from_v03(value: JSON, path: str = "part") -> Part:
    return decode_as(_part_in(value, path), Part, path)


# -- messages and artifacts --------------------------------------------------------------------


FILE_FORM_KEY = "https://peerwire.dev/a2a-0.3/file-bytes"
"""Message metadata key: the form the message's file bytes arrived in over a 0.3 proto binding
(``files``); kept with the task, never written to a 0.3 caller."""


def copy_message_metadata(message: Doc, out: Doc) -> None:
    """A message's metadata into its 0.3 form, less ``FILE_FORM_KEY`` (peerwire's own)."""
    metadata = message.get("metadata")
    if isinstance(metadata, dict) and FILE_FORM_KEY in metadata:
        metadata = {k: v for k, v in metadata.items() if k != FILE_FORM_KEY}
    if metadata:
        out["metadata"] = metadata


def message_out(message: Doc) -> Doc:
    out: Doc = {"kind": "message", "messageId": message.get("messageId", "")}
    copy(message, out, "contextId", "taskId")
    out["role"] = _ROLES_TO_V03.get(message.get("role", ""), "agent")
    out["parts"] = [_part_out(p) for p in message.get("parts", ())]
    copy_message_metadata(message, out)
    copy(message, out, "extensions", "referenceTaskIds")
    return out


def message_in(value: JSON, path: str) -> Doc:
    message = obj(value, path)
    if message.get("kind", "message") != "message":
        raise bad(f"{path}.kind", f"must be 'message', not {message['kind']!r}")
    out: Doc = {}
    copy(message, out, "messageId", "contextId", "taskId")
    out["role"] = role_from_v03(message.get("role"), f"{path}.role").value
    out["parts"] = [
        _part_in(p, f"{path}.parts[{i}]")
        for i, p in enumerate(items(message.get("parts"), f"{path}.parts"))
    ]
    copy(message, out, "metadata", "extensions", "referenceTaskIds")
    return out


def message_to_v03(message: Message) -> Doc:
    return message_out(builtins_of(message))


def message_from_v03(value: JSON, path: str = "message") -> Message:
    return decode_as(message_in(value, path), Message, path)


def _artifact_out(artifact: Doc) -> Doc:
    out: Doc = {"artifactId": artifact.get("artifactId", "")}
    copy(artifact, out, "name", "description")
    out["parts"] = [_part_out(p) for p in artifact.get("parts", ())]
    copy(artifact, out, "metadata", "extensions")
    return out


def _artifact_in(value: JSON, path: str) -> Doc:
    artifact = obj(value, path)
    out: Doc = {}
    copy(artifact, out, "artifactId", "name", "description")
    out["parts"] = [
        _part_in(p, f"{path}.parts[{i}]")
        for i, p in enumerate(items(artifact.get("parts"), f"{path}.parts"))
    ]
    copy(artifact, out, "metadata", "extensions")
    return out


def artifact_to_v03(artifact: Artifact) -> Doc:
    return _artifact_out(builtins_of(artifact))


def artifact_from_v03(value: JSON, path: str = "artifact") -> Artifact:
    return decode_as(_artifact_in(value, path), Artifact, path)


# -- tasks and events --------------------------------------------------------------------------


def _status_out(status: Doc) -> Doc:
    out: Doc = {"state": _STATES_TO_V03.get(status.get("state", ""), "unknown")}
    if status.get("message") is not None:
        out["message"] = message_out(status["message"])
    copy(status, out, "timestamp")
    return out


def _status_in(value: JSON, path: str) -> Doc:
    status = obj(value, path)
    out: Doc = {"state": state_from_v03(status.get("state"), f"{path}.state").value}
    if status.get("message") is not None:
        out["message"] = message_in(status["message"], f"{path}.message")
    stamp = timestamp_in(status.get("timestamp"))
    if stamp is not None:
        out["timestamp"] = stamp
    return out


def task_out(task: Doc) -> Doc:
    out: Doc = {
        "kind": "task",
        "id": task.get("id", ""),
        "contextId": task.get("contextId", ""),  # REQUIRED in 0.3, even when empty
        "status": _status_out(task.get("status", {})),
    }
    if task.get("artifacts"):
        out["artifacts"] = [_artifact_out(a) for a in task["artifacts"]]
    if task.get("history"):
        out["history"] = [message_out(m) for m in task["history"]]
    copy(task, out, "metadata")
    return out


def task_in(value: JSON, path: str) -> Doc:
    task = obj(value, path)
    if task.get("kind", "task") != "task":
        raise bad(f"{path}.kind", f"must be 'task', not {task['kind']!r}")
    out: Doc = {}
    copy(task, out, "id", "contextId")
    out["status"] = _status_in(task.get("status"), f"{path}.status")
    out["artifacts"] = [
        _artifact_in(a, f"{path}.artifacts[{i}]")
        for i, a in enumerate(items(task.get("artifacts"), f"{path}.artifacts"))
    ]
    out["history"] = [
        message_in(m, f"{path}.history[{i}]")
        for i, m in enumerate(items(task.get("history"), f"{path}.history"))
    ]
    copy(task, out, "metadata")
    return out


def task_to_v03(task: Task | Encoded[Task]) -> Doc:
    return task_out(builtins_of(task))


def task_from_v03(value: JSON, path: str = "task") -> Task:
    return decode_as(task_in(value, path), Task, path)


def _event_out(event: Doc) -> Doc:
    if "task" in event:
        return task_out(event["task"])
    if "message" in event:
        return message_out(event["message"])
    if "statusUpdate" in event:
        update = event["statusUpdate"]
        status = update.get("status", {})
        state = status.get("state", TaskState.UNSPECIFIED.value)
        out: Doc = {
            "kind": "status-update",
            "taskId": update.get("taskId", ""),
            "contextId": update.get("contextId", ""),
            "status": _status_out(status),
            "final": closes_stream(TaskState(state)),
        }
        copy(update, out, "metadata")
        return out
    update = event["artifactUpdate"]
    out = {
        "kind": "artifact-update",
        "taskId": update.get("taskId", ""),
        "contextId": update.get("contextId", ""),
        "artifact": _artifact_out(update.get("artifact", {})),
    }
    copy(update, out, "append", "lastChunk", "metadata")
    return out


def _event_in(value: JSON, path: str) -> Doc:
    event = obj(value, path)
    kind = event.get("kind")
    if kind is None:  # lenient: infer from the members
        if "final" in event or ("status" in event and "taskId" in event):
            kind = "status-update"
        elif "artifact" in event:
            kind = "artifact-update"
        elif "messageId" in event:
            kind = "message"
        else:
            kind = "task"
    if kind == "task":
        return {"task": task_in(event, path)}
    if kind == "message":
        return {"message": message_in(event, path)}
    out: Doc = {}
    copy(event, out, "taskId", "contextId", "metadata")
    if kind == "status-update":
        out["status"] = _status_in(event.get("status"), f"{path}.status")
        return {"statusUpdate": out}
    if kind == "artifact-update":
        out["artifact"] = _artifact_in(event.get("artifact"), f"{path}.artifact")
        copy(event, out, "append", "lastChunk")
        return {"artifactUpdate": out}
    raise bad(
        f"{path}.kind",
        f"must be 'task', 'message', 'status-update' or 'artifact-update', not {kind!r}",
    )


def event_to_v03(event: StreamResponse) -> Doc:
    """One stream event as 0.3 sends it: the bare object with its ``kind`` (a status update
    with ``final``)."""
    return _event_out(builtins_of(event))


def event_from_v03(value: JSON, path: str = "result") -> StreamResponse:
    return decode_as(_event_in(value, path), StreamResponse, path)


def send_result_to_v03(result: SendMessageResponse | Encoded[SendMessageResponse]) -> Doc:
    """message/send's result: the bare Task or Message, with its ``kind``."""
    response = builtins_of(result)
    return task_out(response["task"]) if "task" in response else message_out(response["message"])


def send_result_from_v03(value: JSON, path: str = "result") -> SendMessageResponse:
    document = obj(value, path)
    kind = document.get("kind") or ("message" if "messageId" in document else "task")
    if kind == "message":
        return decode_as({"message": message_in(document, path)}, SendMessageResponse, path)
    if kind == "task":
        return decode_as({"task": task_in(document, path)}, SendMessageResponse, path)
    raise bad(f"{path}.kind", f"must be 'task' or 'message', not {kind!r}")


# -- push notification configs -----------------------------------------------------------------


def push_config_out(config: Doc) -> Doc:
    """A 1.0 TaskPushNotificationConfig document as 0.3's PushNotificationConfig (flat)."""
    out: Doc = {}
    copy(config, out, "id")
    out["url"] = config.get("url", "")
    copy(config, out, "token")
    authentication = config.get("authentication")
    if authentication is not None:
        out["authentication"] = {"schemes": [authentication.get("scheme", "")]}
        copy(authentication, out["authentication"], "credentials")
    return out


def push_config_in(value: JSON, path: str) -> Doc:
    """0.3's PushNotificationConfig as the members of a 1.0 TaskPushNotificationConfig."""
    config = obj(value, path)
    out: Doc = {}
    copy(config, out, "id", "url", "token")
    authentication = config.get("authentication")
    if authentication is not None:
        authentication = obj(authentication, f"{path}.authentication")
        schemes = items(authentication.get("schemes"), f"{path}.authentication.schemes")
        if not schemes or not isinstance(schemes[0], str):
            raise bad(f"{path}.authentication.schemes", "must name at least one scheme")
        out["authentication"] = {"scheme": schemes[0]}
        copy(authentication, out["authentication"], "credentials")
    return out


def push_config_to_v03(config: TaskPushNotificationConfig) -> Doc:
    """``{taskId, pushNotificationConfig}``, 0.3's TaskPushNotificationConfig."""
    document = builtins_of(config)
    return {
        "taskId": document.get("taskId", ""),
        "pushNotificationConfig": push_config_out(document),
    }


def push_config_from_v03(value: JSON, path: str = "params") -> TaskPushNotificationConfig:
    document = obj(value, path)
    out = push_config_in(document.get("pushNotificationConfig"), f"{path}.pushNotificationConfig")
    copy(document, out, "taskId")
    return decode_as(out, TaskPushNotificationConfig, path)


# -- message/send and message/stream params -------------------------------------------------


def send_params_to_v03(request: SendMessageRequest) -> Doc:
    """MessageSendParams: ``blocking`` is sent whenever there is a configuration."""
    document = builtins_of(request)
    out: Doc = {"message": message_out(document["message"])}
    config = document.get("configuration")
    if config is not None:
        v03: Doc = {}
        copy(config, v03, "acceptedOutputModes", "historyLength")
        inline = config.get("taskPushNotificationConfig")
        if inline is not None:
            v03["pushNotificationConfig"] = push_config_out(inline)
        v03["blocking"] = not config.get("returnImmediately", False)
        out["configuration"] = v03
    copy(document, out, "metadata")
    return out


def send_params_from_v03(value: JSON, path: str = "params") -> SendMessageRequest:
    document = obj(value, path)
    out: Doc = {"message": message_in(document.get("message"), f"{path}.message")}
    config = document.get("configuration")
    if config is not None:
        config = obj(config, f"{path}.configuration")
        v10: Doc = {}
        copy(config, v10, "acceptedOutputModes", "historyLength")
        inline = config.get("pushNotificationConfig")
        if inline is not None:
            v10["taskPushNotificationConfig"] = push_config_in(
                inline, f"{path}.configuration.pushNotificationConfig"
            )
        v10["returnImmediately"] = config.get("blocking") is False
        out["configuration"] = v10
    copy(document, out, "metadata")
    return decode_as(out, SendMessageRequest, path)
