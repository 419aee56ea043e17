"""A2A 0.3's JSON-RPC methods onto the 1.0 operations (sans I/O), both directions.

``METHODS`` maps each 0.3 method name (``message/send``, ``tasks/get``, ...) to the 1.0
operation it stands for. A server decodes a request with ``decode_request``: the JSON-RPC
envelope is ``bindings.jsonrpc``'s (one set of envelope rules), the params are translated
into the 1.0 request, and the ``Call`` it returns says which ``Dispatcher`` method to run and
how its result becomes 0.3's. A client encodes with ``encode_request`` and reads results with
``decode_result`` / ``decode_event``.

Decisions (docs/COMPATIBILITY.md):

* ``tasks/pushNotificationConfig/get`` without ``pushNotificationConfigId`` answers the
  task's first config (as the 0.3 reference SDK), TaskNotFoundError when it has none.
* ``tasks/pushNotificationConfig/set`` without a config ``id`` stores it under the task's
  id (the 0.3 reference SDK's convention, so a 0.3 client can get it back by that id).
* ``agent/getAuthenticatedExtendedCard`` answers the dual card document (1.0 and 0.3
  members, ``card.dual_card_document``).
* ListTasks has no 0.3 JSON-RPC method: ``encode_request`` refuses it
  (``UnsupportedOperationError``) rather than send something a 0.3 agent cannot answer.
* ``metadata`` of ``tasks/get`` and of the push-config methods has no 1.0 field: dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

import msgspec

from ...bindings.jsonrpc import decode_envelope
from ...errors import (
    JSONParseError,
    MethodNotFoundError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from ...types import (
    AgentCard,
    Binding,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    decode,
    encode,
)
from .card import card_from_v03, dual_card_document, is_v03_card
from .translate import (
    JSON,
    bad,
    decode_as,
    event_from_v03,
    obj,
    push_config_from_v03,
    push_config_to_v03,
    send_params_from_v03,
    send_params_to_v03,
    send_result_from_v03,
    send_result_to_v03,
    task_from_v03,
    task_to_v03,
)

__all__ = [
    "METHODS",
    "Call",
    "Method",
    "decode_event",
    "decode_request",
    "decode_result",
    "encode_request",
    "is_v03_method",
    "method_for",
]

HTTP_BINDINGS = (Binding.JSONRPC, Binding.HTTP_JSON)


@dataclass(frozen=True, slots=True)
class Method:
    """One 0.3 method and the 1.0 operation (gRPC rpc name) it stands for."""

    name: str
    operation: str
    streaming: bool = False


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method("message/send", "SendMessage"),
        Method("message/stream", "SendStreamingMessage", streaming=True),
        Method("tasks/get", "GetTask"),
        Method("tasks/cancel", "CancelTask"),
        Method("tasks/resubscribe", "SubscribeToTask", streaming=True),
        Method("tasks/pushNotificationConfig/set", "CreateTaskPushNotificationConfig"),
        Method("tasks/pushNotificationConfig/get", "GetTaskPushNotificationConfig"),
        Method("tasks/pushNotificationConfig/list", "ListTaskPushNotificationConfigs"),
        Method("tasks/pushNotificationConfig/delete", "DeleteTaskPushNotificationConfig"),
        Method("agent/getAuthenticatedExtendedCard", "GetExtendedAgentCard"),
    )
}
_BY_OPERATION = {m.operation: m for m in METHODS.values()}


def is_v03_method(name: str | None) -> bool:
    """Whether ``name`` is a 0.3 JSON-RPC method (none of them is a 1.0 one)."""
    return name in METHODS


def method_for(operation: str) -> Method:
    """The 0.3 method of a 1.0 operation; ``UnsupportedOperationError`` when 0.3 has none."""
    method = _BY_OPERATION.get(operation)
    if method is None:
        raise UnsupportedOperationError(
            f"{operation} has no A2A 0.3 JSON-RPC method, and this agent speaks 0.3"
        )
    return method


# -- server side -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Call:
    """What a 0.3 request asks of the Dispatcher: the method to run (``dispatch``), its 1.0
    request, and ``result``, which turns the Dispatcher's answer into 0.3's result value
    (unused for a stream: each event goes through ``encode_event``)."""

    method: Method
    dispatch: str
    request: Any
    result: Callable[[Any], JSON]


def _id_param(params: dict[str, Any], name: str = "id") -> str:
    value = params.get(name)
    if not isinstance(value, str) or not value:
        raise bad(f"params.{name}", "is required: a non-empty string")
    return value


def _first_config(response: ListTaskPushNotificationConfigsResponse, task_id: str) -> JSON:
    if not response.configs:
        raise TaskNotFoundError(
            f"Task {task_id} has no push notification config", metadata={"taskId": task_id}
        )
    return push_config_to_v03(response.configs[0])


def _call(method: Method, params: dict[str, Any], card_bindings: Collection[str]) -> Call:
    operation = method.operation
    if operation in ("SendMessage", "SendStreamingMessage"):
        request: Any = send_params_from_v03(params)
        dispatch = "send_message" if operation == "SendMessage" else "send_streaming_message"
        return Call(method, dispatch, request, send_result_to_v03)
    if operation == "GetTask":
        history = params.get("historyLength")
        request = decode_as(
            {"id": _id_param(params), "historyLength": history}, GetTaskRequest, "params"
        )
        return Call(method, "get_task", request, task_to_v03)
    if operation == "CancelTask":
        document = {"id": _id_param(params), "metadata": params.get("metadata")}
        request = decode_as(document, CancelTaskRequest, "params")
        return Call(method, "cancel_task", request, task_to_v03)
    if operation == "SubscribeToTask":
        request = SubscribeToTaskRequest(id=_id_param(params))
        return Call(method, "subscribe_to_task", request, _no_result)
    if operation == "CreateTaskPushNotificationConfig":
        config = push_config_from_v03(params)
        if not config.id:
            config = msgspec.structs.replace(config, id=config.task_id)
        return Call(method, "create_task_push_notification_config", config, push_config_to_v03)
    if operation == "GetTaskPushNotificationConfig":
        task_id = _id_param(params)
        config_id = params.get("pushNotificationConfigId")
        if config_id is None:
            listing = ListTaskPushNotificationConfigsRequest(task_id=task_id)
            return Call(
                method,
                "list_task_push_notification_configs",
                listing,
                lambda response: _first_config(response, task_id),
            )
        request = decode_as(
            {"taskId": task_id, "id": config_id}, GetTaskPushNotificationConfigRequest, "params"
        )
        return Call(method, "get_task_push_notification_config", request, push_config_to_v03)
    if operation == "ListTaskPushNotificationConfigs":
        request = ListTaskPushNotificationConfigsRequest(task_id=_id_param(params))
        return Call(
            method,
            "list_task_push_notification_configs",
            request,
            lambda response: [push_config_to_v03(c) for c in response.configs],
        )
    if operation == "DeleteTaskPushNotificationConfig":
        document = {
            "taskId": _id_param(params),
            "id": _id_param(params, "pushNotificationConfigId"),
        }
        request = decode_as(document, DeleteTaskPushNotificationConfigRequest, "params")
        return Call(method, "delete_task_push_notification_config", request, lambda _: None)
    assert operation == "GetExtendedAgentCard"
    return Call(
        method,
        "get_extended_agent_card",
        GetExtendedAgentCardRequest(),
        lambda card: dual_card_document(card, card_bindings),
    )


def _no_result(_: Any) -> JSON:
    return None


def decode_request(
    body: bytes, *, card_bindings: Collection[str] = HTTP_BINDINGS
) -> tuple[bytes, Call]:
    """A 0.3 request: its id (JSON, to echo) and what it asks of the Dispatcher.

    Raises an ``A2AError`` (answer it with ``errors.encode_jsonrpc_error``):
    ``MethodNotFoundError`` for a method 0.3 does not have, ``InvalidParamsError`` naming the
    bad member. ``card_bindings`` are the bindings the served card offers 0.3 on (for the
    extended card's 0.3 members).
    """
    request_id, name, raw_params = decode_envelope(body)
    method = METHODS.get(name)
    if method is None:
        raise MethodNotFoundError(f"Method not found: {name!r}")
    try:
        params = msgspec.json.decode(raw_params)
    except msgspec.DecodeError as exc:
        raise JSONParseError(f"Invalid JSON payload: {exc}") from None
    return request_id, _call(method, obj(params, "params"), card_bindings)


# -- client side -----------------------------------------------------------------------------


def _params_out(operation: str, request: Any) -> JSON:
    if operation in ("SendMessage", "SendStreamingMessage"):
        assert isinstance(request, SendMessageRequest)
        return send_params_to_v03(request)
    if operation == "GetTask":
        params: dict[str, Any] = {"id": request.id}
        if request.history_length is not None:
            params["historyLength"] = request.history_length
        return params
    if operation == "CancelTask":
        params = {"id": request.id}
        if request.metadata:
            params["metadata"] = request.metadata
        return params
    if operation == "SubscribeToTask":
        return {"id": request.id}
    if operation == "CreateTaskPushNotificationConfig":
        assert isinstance(request, TaskPushNotificationConfig)
        return push_config_to_v03(request)
    if operation in ("GetTaskPushNotificationConfig", "DeleteTaskPushNotificationConfig"):
        return {"id": request.task_id, "pushNotificationConfigId": request.id}
    if operation == "ListTaskPushNotificationConfigs":
        return {"id": request.task_id}
    return {}


def encode_request(request_id: int | str, method: str, params: Any) -> bytes:
    """The 0.3 JSON-RPC request for the 1.0 operation ``method`` (its 1.0 method name) and
    its typed request ``params`` (the same signature as ``bindings.jsonrpc.encode_request``)."""
    v03 = method_for(method)
    return b'{"jsonrpc":"2.0","id":%b,"method":%b,"params":%b}' % (
        msgspec.json.encode(request_id),
        msgspec.json.encode(v03.name),
        encode(_params_out(method, params)),
    )


def decode_result(operation: str, value: JSON, path: str = "result") -> Any:
    """A 0.3 result value as the 1.0 answer of ``operation``. Raises ``InvalidParamsError``
    naming what is wrong (a client reports it as the server's invalid answer)."""
    if operation == "SendMessage":
        return send_result_from_v03(value, path)
    if operation in ("GetTask", "CancelTask"):
        return task_from_v03(value, path)
    if operation in ("CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig"):
        return push_config_from_v03(value, path)
    if operation == "ListTaskPushNotificationConfigs":
        configs = value if isinstance(value, list) else obj(value, path).get("configs", [])
        return ListTaskPushNotificationConfigsResponse(
            configs=[push_config_from_v03(c, f"{path}[{i}]") for i, c in enumerate(configs)]
        )
    if operation == "GetExtendedAgentCard":
        if is_v03_card(value):
            return card_from_v03(value, path)
        return decode(encode(value), AgentCard, path=path)
    if operation == "DeleteTaskPushNotificationConfig":
        return None
    raise UnsupportedOperationError(f"{operation} has no A2A 0.3 JSON-RPC method")


def decode_event(value: JSON, path: str = "result") -> StreamResponse:
    """A 0.3 stream event (a bare object with its ``kind``) as a ``StreamResponse``."""
    return event_from_v03(value, path)
