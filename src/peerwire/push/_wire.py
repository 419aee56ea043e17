"""How a push notification travels (A2A spec §4.3.3): its headers, its body, its signed JWT.

One notification is one HTTP ``POST`` to the webhook URL whose body is a ProtoJSON
``StreamResponse`` (``Content-Type: application/a2a+json``) with these headers:

``X-A2A-Notification-Id``
    The notification's id, the same on every attempt and after restarts: receivers
    acknowledge (2xx) and deduplicate by it, since delivery is at-least-once.
``X-A2A-Notification-Token``
    The config's ``token``, when it has one (as A2A 1.0.0 and the a2a-sdk send it).
``Authorization``
    ``<scheme> <credentials>`` from the config's ``authentication``, when it has one.
``X-A2A-Notification-JWT``
    When the agent signs notifications: a compact JWS (``typ: JWT``) over the claims ``iss``
    (the agent's public URL), ``aud`` (the webhook URL), ``iat``, ``exp``, ``jti`` (the
    notification id), ``taskId`` and ``bodySha256`` (base64url SHA-256 of the exact body),
    with the ``kid`` of a key the agent publishes at ``/.well-known/jwks.json``. A header of
    its own, not ``Authorization``, because the config's ``authentication`` owns that one.
"""

from __future__ import annotations

import base64
import hashlib

from ..types import StreamResponse

__all__ = [
    "CONTENT_TYPE",
    "JWKS_PATH",
    "JWT_HEADER",
    "NOTIFICATION_ID_HEADER",
    "TOKEN_HEADER",
    "V03_CONTENT_TYPE",
    "body_digest",
    "task_id_of",
]

CONTENT_TYPE = "application/a2a+json"
V03_CONTENT_TYPE = "application/json"
"""A notification to a config registered over A2A 0.3: its body is the bare 0.3 Task (the
JSON-RPC form, with ``kind``), as both 0.3 SDKs send and read it; the headers are the same,
without ``A2A-Version`` (0.3 had none)."""
NOTIFICATION_ID_HEADER = "X-A2A-Notification-Id"
TOKEN_HEADER = "X-A2A-Notification-Token"
JWT_HEADER = "X-A2A-Notification-JWT"
JWKS_PATH = "/.well-known/jwks.json"
"""Where a server that signs notifications publishes its public keys (a JWKS document)."""


def body_digest(body: bytes) -> str:
    """The ``bodySha256`` claim: unpadded base64url of the body's SHA-256."""
    return base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b"=").decode("ascii")


def task_id_of(response: StreamResponse) -> str:
    """The id of the task a notification is about (``""`` for a message without one)."""
    if response.task is not None:
        return response.task.id
    if response.status_update is not None:
        return response.status_update.task_id
    if response.artifact_update is not None:
        return response.artifact_update.task_id
    if response.message is not None:
        return response.message.task_id
    return ""
