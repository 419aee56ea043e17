"""Push-notification configuration (A2A spec §4.3); 1.0 has no separate PushNotificationConfig."""

from __future__ import annotations

from ._base import Model

__all__ = ["AuthenticationInfo", "TaskPushNotificationConfig"]


class AuthenticationInfo(Model, frozen=True, kw_only=True):
    """How the agent authenticates to a webhook: an HTTP auth scheme and its credentials."""

    scheme: str
    credentials: str = ""


class TaskPushNotificationConfig(Model, frozen=True, kw_only=True):
    """A webhook registered for a task; also the CreateTaskPushNotificationConfig request."""

    tenant: str = ""
    id: str = ""
    task_id: str = ""
    url: str
    token: str = ""
    authentication: AuthenticationInfo | None = None
