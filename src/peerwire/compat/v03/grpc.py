"""A2A 0.3 over gRPC (service ``a2a.v1.A2AService``): each rpc as a codec onto the 1.0
operation it stands for.

The messages are those of our 0.3 proto (``peerwire/bindings/grpc/a2a_v03.proto``, generated
into ``bindings.grpc._gen.a2a_v03_pb2``). Their translation is the one the 0.3 HTTP+JSON
binding uses (``proto``, ``card``): a message crosses as its ProtoJSON form
(``google.protobuf.json_format``), so every 0.3 rule has one home. Both directions are here:
a server reads a request (``read_request``) and writes the answer (``write_response``); a
client writes a request (``write_request``) and reads the answer (``read_response``). In
between, everything is 1.0: ``peerwire.types`` and the operation names of the 1.0 rpc table
(``bindings.grpc.service.RPCS``), so one dispatcher and one client serve both versions.

The 0.3 rpcs and their 1.0 operations: SendMessage, SendStreamingMessage, GetTask,
CancelTask, TaskSubscription (SubscribeToTask), CreateTaskPushNotificationConfig,
GetTaskPushNotificationConfig, ListTaskPushNotificationConfig
(ListTaskPushNotificationConfigs), DeleteTaskPushNotificationConfig, and GetAgentCard,
which a client calls for GetExtendedAgentCard (the 0.3 SDKs call it to fetch the card a
caller is entitled to; a server answers it with its public card when it offers no
extended one, see ``peerwire.server.grpc``). 0.3 has no ListTasks.

Reading raises ``InvalidRequestError`` for bytes that are not the message and
``InvalidParamsError`` (naming the JSON path) for a message that makes no valid request.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError

from ...bindings.grpc._gen import a2a_v03_pb2 as pb
from ...bindings.grpc.service import RPCS
from ...errors import InvalidRequestError
from ...types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    Model,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
)
from . import card as cards
from . import proto
from .files import FileBytes, FileForm, files_in, files_out
from .translate import Doc

__all__ = ["RPCS_V03", "SERVICE_V03", "RpcV03", "by_operation", "card_message"]

SERVICE_V03 = "a2a.v1.A2AService"

Reader = Callable[[Doc], Any]
Writer = Callable[[Any], Doc]


@dataclass(frozen=True, slots=True)
class RpcV03:
    """One 0.3 rpc. ``operation`` names the 1.0 rpc (and so the dispatcher method) it is;
    ``request`` and ``response`` are its 1.0 types (``response`` ``None``: Empty)."""

    name: str
    operation: str
    streaming: bool
    request: type[Model]
    response: type[Model] | None
    request_message: Any  # the 0.3 protobuf classes
    response_message: Any
    _read_request: Reader
    _write_request: Writer
    _read_response: Reader | None
    _write_response: Writer | None

    @property
    def path(self) -> str:
        return f"/{SERVICE_V03}/{self.name}"

    # -- server side ------------------------------------------------------------------------

    def read_request(
        self, data: bytes, file_bytes: FileBytes = "auto", *, mark: bool = False
    ) -> Model:
        """The 1.0 request a serialized 0.3 request stands for; a message's file bytes read
        under ``file_bytes`` (``mark``: their form kept in its metadata, ``files.files_in``)."""
        document = _document(self.request_message, data)
        files_in(document, file_bytes, path="request", mark=mark)
        request: Model = self._read_request(document)
        return request

    def response_document(self, value: Any) -> Doc | None:
        """A 1.0 answer (``Encoded`` too) as the ProtoJSON of the 0.3 answer, file bytes in
        the content form; ``None`` for Empty."""
        if self._write_response is None:
            return None
        return self._write_response(value)

    def write_response(self, value: Any, file_form: FileForm = "content") -> bytes:
        """A 1.0 answer (``Encoded`` too) as the serialized 0.3 answer, file bytes in
        ``file_form``; ``b""`` for Empty."""
        return self.write_document(self.response_document(value), file_form)

    def write_document(self, document: Doc | None, file_form: FileForm = "content") -> bytes:
        """A ``response_document`` serialized, its file bytes in ``file_form``."""
        if document is None:
            return b""
        return _serialized(self.response_message, files_out(document, file_form))

    # -- client side ------------------------------------------------------------------------

    def write_request(self, value: Model, file_form: FileForm = "content") -> bytes:
        return _serialized(self.request_message, files_out(self._write_request(value), file_form))

    def read_response(self, data: bytes, file_bytes: FileBytes = "auto") -> Any:
        """The 1.0 answer a serialized 0.3 answer stands for (``None`` for Empty), file bytes
        read under ``file_bytes``."""
        if self._read_response is None:
            return None
        document = _document(self.response_message, data)
        files_in(document, file_bytes, path="response")
        return self._read_response(document)


def _document(message_class: Any, data: bytes) -> Doc:
    message = message_class()
    try:
        message.ParseFromString(data)
    except DecodeError as exc:
        raise InvalidRequestError(
            f"Request payload validation error: the bytes are not a valid "
            f"{message_class.DESCRIPTOR.full_name} protobuf message ({exc})"
        ) from None
    document: Doc = json_format.MessageToDict(message)
    return document


def _serialized(message_class: Any, document: Doc) -> bytes:
    # The translation writes only members the 0.3 proto has: a stray one is a bug here, and
    # ParseDict says so rather than sending a message without it.
    message = json_format.ParseDict(document, message_class())
    data: bytes = message.SerializeToString()
    return data


def card_message(card: AgentCard, bindings: Collection[str] | None = None) -> bytes:
    """``card`` as the serialized 0.3 AgentCard; ``bindings`` as for ``card.card_to_proto``
    (the bindings that serve 0.3; ``None``: the interfaces at 0.3, else all of them)."""
    return _serialized(pb.AgentCard, cards.card_to_proto(card, bindings))


# --- the requests whose 0.3 form is a resource name -----------------------------------------------


def _get_task_in(document: Doc) -> GetTaskRequest:
    return GetTaskRequest(
        id=proto.task_id_of_name(document.get("name")),
        history_length=document.get("historyLength") or None,
    )


def _get_task_out(request: GetTaskRequest) -> Doc:
    out: Doc = {"name": proto.task_name(request.id)}
    if request.history_length:  # 0.3 reads 0 as the whole history: "none" cannot be said
        out["historyLength"] = request.history_length
    return out


def _cancel_in(document: Doc) -> CancelTaskRequest:
    return CancelTaskRequest(id=proto.task_id_of_name(document.get("name")))


def _subscribe_in(document: Doc) -> SubscribeToTaskRequest:
    return SubscribeToTaskRequest(id=proto.task_id_of_name(document.get("name")))


def _named_task_out(request: CancelTaskRequest | SubscribeToTaskRequest) -> Doc:
    return {"name": proto.task_name(request.id)}


def _create_config_in(document: Doc) -> TaskPushNotificationConfig:
    task_id = proto.task_id_of_name(document.get("parent"), "parent")
    return proto.create_push_config_from_proto(document, task_id=task_id)


def _get_config_in(document: Doc) -> GetTaskPushNotificationConfigRequest:
    task_id, config_id = proto.ids_of_config_name(document.get("name"))
    return GetTaskPushNotificationConfigRequest(task_id=task_id, id=config_id)


def _delete_config_in(document: Doc) -> DeleteTaskPushNotificationConfigRequest:
    task_id, config_id = proto.ids_of_config_name(document.get("name"))
    return DeleteTaskPushNotificationConfigRequest(task_id=task_id, id=config_id)


def _named_config_out(
    request: GetTaskPushNotificationConfigRequest | DeleteTaskPushNotificationConfigRequest,
) -> Doc:
    return {"name": proto.config_name(request.task_id, request.id)}


def _list_configs_in(document: Doc) -> ListTaskPushNotificationConfigsRequest:
    return ListTaskPushNotificationConfigsRequest(
        task_id=proto.task_id_of_name(document.get("parent"), "parent"),
        page_size=document.get("pageSize", 0),
        page_token=document.get("pageToken", ""),
    )


def _list_configs_out(request: ListTaskPushNotificationConfigsRequest) -> Doc:
    out: Doc = {"parent": proto.task_name(request.task_id)}
    if request.page_size:
        out["pageSize"] = request.page_size
    if request.page_token:
        out["pageToken"] = request.page_token
    return out


def _card_request_in(document: Doc) -> GetExtendedAgentCardRequest:
    return GetExtendedAgentCardRequest()  # 0.3 has no tenants: the request is empty


def _card_request_out(request: GetExtendedAgentCardRequest) -> Doc:
    return {}


def _card_out(card: AgentCard) -> Doc:
    return cards.card_to_proto(card)


# --- the table ------------------------------------------------------------------------------------

_TABLE: tuple[tuple[str, str, Any, Reader, Writer, Any, Reader | None, Writer | None], ...] = (
    (
        "SendMessage",
        "SendMessage",
        pb.SendMessageRequest,
        proto.send_request_from_proto,
        proto.send_request_to_proto,
        pb.SendMessageResponse,
        proto.send_result_from_proto,
        proto.send_result_to_proto,
    ),
    (
        "SendStreamingMessage",
        "SendStreamingMessage",
        pb.SendMessageRequest,
        proto.send_request_from_proto,
        proto.send_request_to_proto,
        pb.StreamResponse,
        proto.event_from_proto,
        proto.event_to_proto,
    ),
    (
        "GetTask",
        "GetTask",
        pb.GetTaskRequest,
        _get_task_in,
        _get_task_out,
        pb.Task,
        proto.task_from_proto,
        proto.task_to_proto,
    ),
    (
        "CancelTask",
        "CancelTask",
        pb.CancelTaskRequest,
        _cancel_in,
        _named_task_out,
        pb.Task,
        proto.task_from_proto,
        proto.task_to_proto,
    ),
    (
        "TaskSubscription",
        "SubscribeToTask",
        pb.TaskSubscriptionRequest,
        _subscribe_in,
        _named_task_out,
        pb.StreamResponse,
        proto.event_from_proto,
        proto.event_to_proto,
    ),
    (
        "CreateTaskPushNotificationConfig",
        "CreateTaskPushNotificationConfig",
        pb.CreateTaskPushNotificationConfigRequest,
        _create_config_in,
        proto.create_push_config_to_proto,
        pb.TaskPushNotificationConfig,
        proto.push_config_from_proto,
        proto.push_config_to_proto,
    ),
    (
        "GetTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        pb.GetTaskPushNotificationConfigRequest,
        _get_config_in,
        _named_config_out,
        pb.TaskPushNotificationConfig,
        proto.push_config_from_proto,
        proto.push_config_to_proto,
    ),
    (
        "ListTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        pb.ListTaskPushNotificationConfigRequest,
        _list_configs_in,
        _list_configs_out,
        pb.ListTaskPushNotificationConfigResponse,
        proto.list_push_configs_from_proto,
        proto.list_push_configs_to_proto,
    ),
    (
        "GetAgentCard",
        "GetExtendedAgentCard",
        pb.GetAgentCardRequest,
        _card_request_in,
        _card_request_out,
        pb.AgentCard,
        cards.card_from_proto,
        _card_out,
    ),
    (
        "DeleteTaskPushNotificationConfig",
        "DeleteTaskPushNotificationConfig",
        pb.DeleteTaskPushNotificationConfigRequest,
        _delete_config_in,
        _named_config_out,
        None,
        None,
        None,
    ),
)


def _rpcs() -> dict[str, RpcV03]:
    service = pb.DESCRIPTOR.services_by_name["A2AService"]
    table = {}
    for name, operation, request, read, write, response, read_back, write_back in _TABLE:
        method = service.methods_by_name[name]
        rpc = RPCS[operation]
        # The table and our proto agree, or importing this fails (a proto edit needs both).
        if (
            method.input_type is not request.DESCRIPTOR
            or (response is None) != (method.output_type.full_name == "google.protobuf.Empty")
            or (response is not None and method.output_type is not response.DESCRIPTOR)
            or rpc.streaming is not method.server_streaming
        ):
            raise RuntimeError(f"the 0.3 rpc table disagrees with a2a_v03.proto on {name}")
        table[name] = RpcV03(
            name=name,
            operation=operation,
            streaming=method.server_streaming,
            request=rpc.request,
            response=rpc.response,
            request_message=request,
            response_message=response,
            _read_request=read,
            _write_request=write,
            _read_response=read_back,
            _write_response=write_back,
        )
    missing = {m.name for m in service.methods} - set(table)
    if missing:
        raise RuntimeError(f"the 0.3 rpc table lacks {sorted(missing)}")
    return table


RPCS_V03: dict[str, RpcV03] = _rpcs()
"""The 0.3 rpcs by their 0.3 names."""

_BY_OPERATION = {rpc.operation: rpc for rpc in RPCS_V03.values()}


def by_operation(operation: str) -> RpcV03 | None:
    """The 0.3 rpc that carries the 1.0 ``operation`` (``None``: 0.3 has none, ListTasks)."""
    return _BY_OPERATION.get(operation)
