"""Push notifications as they travel between an agent and a webhook (A2A spec §4.3, §13.2).

The wire format (headers, JWT claims, the JWKS path) is in ``_wire``'s docstring. Receivers
use ``verify_notification`` / ``NotificationVerifier`` (``receiver``); agents sign with
``NotificationSigner`` (``signing``), which ``create_app(push=PushSettings(signing_key=...))``
sets up (``peerwire.PushSettings``; the SSRF guard and the DNS resolver types are in
``peerwire.server``). The signing and JWT-checking parts need the ``security`` extra
(joserfc) and are imported on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._wire import (
    CONTENT_TYPE,
    JWKS_PATH,
    JWT_HEADER,
    NOTIFICATION_ID_HEADER,
    TOKEN_HEADER,
    body_digest,
    task_id_of,
)

if TYPE_CHECKING:
    from .receiver import NotificationVerifier, verify_notification
    from .signing import NotificationSigner

__all__ = [
    "CONTENT_TYPE",
    "JWKS_PATH",
    "JWT_HEADER",
    "NOTIFICATION_ID_HEADER",
    "TOKEN_HEADER",
    "NotificationSigner",
    "NotificationVerifier",
    "body_digest",
    "task_id_of",
    "verify_notification",
]

_LAZY = {
    "NotificationVerifier": "receiver",
    "verify_notification": "receiver",
    "NotificationSigner": "signing",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
