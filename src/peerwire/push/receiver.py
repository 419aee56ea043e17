"""Receiving push notifications: check that one really comes from the agent, for your task.

A webhook handler calls ``verify_notification`` (or keeps a ``NotificationVerifier``, which
caches a fetched JWKS) with the request's headers and raw body, and answers 2xx once it has
handled what comes back; delivery is at-least-once, so deduplicate by the
``X-A2A-Notification-Id`` header::

    update = await verify_notification(
        request.headers, await request.body(),
        token="the token you registered",
        expected_task_ids={"the task id"},
    )

Checked, in this order (a receiver MUST authenticate notifications and MUST check the task
id: A2A spec §4.3.3, where §13.2 only says SHOULD):

1. ``token``: the ``X-A2A-Notification-Token`` header equals it.
2. ``authorization``: the ``Authorization`` header equals it (``"Bearer <credentials>"``, as
   registered in the config's ``authentication``).
3. ``jwks`` / ``jwks_url``: the ``X-A2A-Notification-JWT`` header is a JWT signed by one of
   those keys (``alg`` on the allow-list, no ``none``), not expired, issued by ``issuer`` (the
   agent's public URL) for ``audience`` (your webhook URL), whose ``bodySha256`` is the body's
   and whose ``taskId`` is the body's task.
4. The body is one ``StreamResponse``, about a task ``expected_task_ids`` accepts; or, from an
   agent notifying a config registered over A2A 0.3, the bare 0.3 Task (``"kind": "task"``,
   as both 0.3 SDKs send it), returned as a ``StreamResponse`` holding that task.

Refusals raise ``AuthenticationError`` (answer 401), ``PermissionDeniedError`` for a task you
do not expect (403), ``InvalidRequestError`` for a body that is not a notification (400) and
``ServerBusyError`` when the agent's keys cannot be fetched now (503: the agent retries).
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable, Container, Iterable, Mapping
from typing import Any

import httpx
import msgspec

from ..compat.v03.translate import task_from_v03
from ..errors import (
    A2AError,
    AuthenticationError,
    InvalidRequestError,
    PermissionDeniedError,
)
from ..security.jwt import JWTValidator
from ..security.keys import ASYMMETRIC_ALGORITHMS, JWKSource, RemoteJWKS
from ..types import StreamResponse, decode
from ._wire import JWT_HEADER, TOKEN_HEADER, body_digest, task_id_of

__all__ = ["NotificationVerifier", "verify_notification"]

Headers = Mapping[str, str] | Iterable[tuple[str, str]]
TaskIds = Container[str] | Callable[[str], bool]

DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024


class NotificationVerifier:
    """The checks of one webhook, reusable across notifications (see the module docstring).

    At least one of ``token``, ``authorization``, ``jwks`` or ``jwks_url`` is required: a
    receiver that checks nothing would believe anyone. With a JWKS, ``issuer`` and
    ``audience`` are required too. ``expected_task_ids`` is a container of task ids or a
    predicate over one.
    """

    def __init__(
        self,
        *,
        expected_task_ids: TaskIds,
        token: str | None = None,
        authorization: str | None = None,
        jwks: JWKSource | Any = None,
        jwks_url: str | None = None,
        issuer: str | None = None,
        audience: str | None = None,
        algorithms: Iterable[str] = ASYMMETRIC_ALGORITHMS,
        leeway: float = 30.0,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        http: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if token is None and authorization is None and jwks is None and jwks_url is None:
            raise ValueError(
                "give token=, authorization=, jwks= or jwks_url=: a notification must be "
                "authenticated (A2A spec §4.3.3)"
            )
        if jwks is not None and jwks_url is not None:
            raise ValueError("give jwks= or jwks_url=, not both")
        self.expected_task_ids = expected_task_ids
        self.token = token
        self.authorization = authorization
        self.max_body_bytes = max_body_bytes
        self._jwt: JWTValidator | None = None
        if jwks is not None or jwks_url is not None:
            if not issuer or not audience:
                raise ValueError(
                    "checking the notification JWT needs issuer= (the agent's public URL) and "
                    "audience= (this webhook's URL as registered)"
                )
            source = jwks if jwks_url is None else RemoteJWKS(jwks_url, http=http)
            self._jwt = JWTValidator(
                jwks=source,
                issuer=issuer,
                audience=audience,
                algorithms=algorithms,
                leeway=leeway,
                subject_claim="taskId",
                clock=clock,
            )

    async def verify(self, headers: Headers, body: bytes) -> StreamResponse:
        """The notification, once every configured check has passed; raises otherwise."""
        presented = _lower(headers)
        if self.token is not None:
            _check_secret(presented.get(TOKEN_HEADER.lower()), self.token, TOKEN_HEADER)
        if self.authorization is not None:
            _check_secret(presented.get("authorization"), self.authorization, "Authorization")
        if len(body) > self.max_body_bytes:
            raise InvalidRequestError(
                f"The notification body is larger than {self.max_body_bytes} bytes"
            )
        claims = None
        if self._jwt is not None:
            token = presented.get(JWT_HEADER.lower())
            if not token:
                raise AuthenticationError(f"The notification has no {JWT_HEADER} header")
            claims = await self._jwt.validate(token)
            if claims.get("bodySha256") != body_digest(body):
                raise AuthenticationError("The notification body is not the one its JWT signs")
            if not isinstance(claims.get("jti"), str) or not claims["jti"]:
                raise AuthenticationError("The notification JWT has no jti")
        notification = _decode(body)
        task_id = task_id_of(notification)
        if claims is not None and claims.get("taskId") != task_id:
            raise AuthenticationError("The notification JWT is for another task than its body")
        if not task_id or not _expected(self.expected_task_ids, task_id):
            raise PermissionDeniedError(
                "The notification is about a task this receiver does not expect",
                metadata={"taskId": task_id},
            )
        return notification


async def verify_notification(
    headers: Headers,
    body: bytes,
    *,
    expected_task_ids: TaskIds,
    token: str | None = None,
    authorization: str | None = None,
    jwks: JWKSource | Any = None,
    jwks_url: str | None = None,
    issuer: str | None = None,
    audience: str | None = None,
    algorithms: Iterable[str] = ASYMMETRIC_ALGORITHMS,
    leeway: float = 30.0,
) -> StreamResponse:
    """Verify one notification (see the module docstring); returns its ``StreamResponse``.

    With ``jwks_url`` the keys are fetched on every call: keep a ``NotificationVerifier`` to
    cache them between notifications.
    """
    verifier = NotificationVerifier(
        expected_task_ids=expected_task_ids,
        token=token,
        authorization=authorization,
        jwks=jwks,
        jwks_url=jwks_url,
        issuer=issuer,
        audience=audience,
        algorithms=algorithms,
        leeway=leeway,
    )
    return await verifier.verify(headers, body)


def _lower(headers: Headers) -> dict[str, str]:
    items = headers.items() if isinstance(headers, Mapping) else headers
    return {str(name).lower(): str(value) for name, value in items}


def _check_secret(presented: str | None, expected: str, name: str) -> None:
    if presented is None:
        raise AuthenticationError(f"The notification has no {name} header")
    # Constant time: how much of a guess matched must not show in how long the refusal takes.
    if not hmac.compare_digest(presented.encode(), expected.encode()):
        raise AuthenticationError(f"The notification's {name} header does not match")


def _decode(body: bytes) -> StreamResponse:
    try:
        document = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise InvalidRequestError(f"The notification body is not JSON: {exc}") from None
    if isinstance(document, dict) and document.get("kind") == "task":
        # A 0.3 notification: a 1.0 StreamResponse has no "kind".
        try:
            return StreamResponse(task=task_from_v03(document, "body"))
        except A2AError as exc:
            raise InvalidRequestError(
                f"The notification body is not an A2A 0.3 Task: {exc}"
            ) from None
    try:
        return decode(body, StreamResponse)
    except A2AError as exc:
        raise InvalidRequestError(f"The notification body is not a StreamResponse: {exc}") from None
    except ValueError as exc:  # more or fewer than one member set
        raise InvalidRequestError(f"The notification body is not a StreamResponse: {exc}") from None


def _expected(expected: TaskIds, task_id: str) -> bool:
    if callable(expected):
        return bool(expected(task_id))
    return task_id in expected
