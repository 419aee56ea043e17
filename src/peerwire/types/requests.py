"""Request and response messages of the eleven operations (A2A spec §3.1)."""

from __future__ import annotations

from typing import Any

from ._base import Model, TaskState, Timestamp
from .content import Message
from .push import TaskPushNotificationConfig
from .task import Task

__all__ = [
    "CancelTaskRequest",
    "DeleteTaskPushNotificationConfigRequest",
    "GetExtendedAgentCardRequest",
    "GetTaskPushNotificationConfigRequest",
    "GetTaskRequest",
    "ListTaskPushNotificationConfigsRequest",
    "ListTaskPushNotificationConfigsResponse",
    "ListTasksRequest",
    "ListTasksResponse",
    "SendMessageConfiguration",
    "SendMessageRequest",
    "SubscribeToTaskRequest",
]


class SendMessageConfiguration(Model, frozen=True, kw_only=True):
    accepted_output_modes: list[str] = []
    task_push_notification_config: TaskPushNotificationConfig | None = None
    history_length: int | None = None
    return_immediately: bool = False


class SendMessageRequest(Model, frozen=True, kw_only=True):
    """SendMessage and SendStreamingMessage take the same request."""

    tenant: str = ""
    message: Message
    configuration: SendMessageConfiguration | None = None
    metadata: dict[str, Any] | None = None


class GetTaskRequest(Model, frozen=True, kw_only=True):
    tenant: str = ""
    id: str
    history_length: int | None = None


class ListTasksRequest(Model, frozen=True, kw_only=True):
    tenant: str = ""
    context_id: str = ""
    status: TaskState = TaskState.UNSPECIFIED
    page_size: int | None = None
    page_token: str = ""
    history_length: int | None = None
    status_timestamp_after: Timestamp | None = None
    include_artifacts: bool | None = None


class ListTasksResponse(Model, frozen=True, kw_only=True, omit_defaults=False):
    """All four members are REQUIRED on the wire, even when empty (``nextPageToken: ""``)."""

    tasks: list[Task] = []
    next_page_token: str = ""
    page_size: int = 0
    total_size: int = 0


class CancelTaskRequest(Model, frozen=True, kw_only=True):
    tenant: str = ""
    id: str
    metadata: dict[str, Any] | None = None


class SubscribeToTaskRequest(Model, frozen=True, kw_only=True):
    tenant: str = ""
    id: str


class GetTaskPushNotificationConfigRequest(Model, frozen=True, kw_only=True):
    tenant: str = ""
    task_id: str
    id: str


class DeleteTaskPushNotificationConfigRequest(Model, frozen=True, kw_only=True):
    tenant: str = ""
    task_id: str
    id: str


class ListTaskPushNotificationConfigsRequest(Model, frozen=True, kw_only=True):
    tenant: str = ""
    task_id: str
    page_size: int = 0
    page_token: str = ""


class ListTaskPushNotificationConfigsResponse(Model, frozen=True, kw_only=True):
    configs: list[TaskPushNotificationConfig] = []
    next_page_token: str = ""


class GetExtendedAgentCardRequest(Model, frozen=True, kw_only=True):
    tenant: str = ""
