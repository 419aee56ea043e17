"""Signing push notifications: the agent's side of the ``X-A2A-Notification-JWT`` header.

The JWT binds itself to one notification (``jti``), one task (``taskId``), one webhook
(``aud``) and one exact body (``bodySha256``), and expires soon after it is made (``exp``),
so a receiver that verifies it (``peerwire.push.receiver``) knows the body came from this
agent, unchanged, for it. A retried notification gets a fresh JWT with the same ``jti``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from joserfc import jws
from joserfc.jwk import Key

from ..security.signing import CardSigner
from ._wire import body_digest

__all__ = ["NotificationSigner"]


class NotificationSigner:
    """Signs notifications with one private key, as ``issuer`` (the agent's public URL).

    ``key`` is a joserfc private key, a private JWK dict, or PEM bytes/text (asymmetric: the
    public half is published). ``alg`` defaults from the key (RSA: RS256, EC: by curve,
    Ed25519); ``kid`` defaults to the key's own or its RFC 7638 thumbprint. ``lifetime`` is
    how many seconds a JWT stays valid.
    """

    def __init__(
        self,
        key: Key | Mapping[str, Any] | bytes | str,
        *,
        issuer: str,
        kid: str | None = None,
        alg: str | None = None,
        lifetime: float = 300.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not issuer:
            raise ValueError("a notification signer needs an issuer (the agent's public URL)")
        if lifetime <= 0:
            raise ValueError(f"lifetime must be positive, got {lifetime}")
        # The card signer's checks are the ones wanted here too: a private key that fits alg.
        self._keys = CardSigner(key, kid=kid, alg=alg)
        if self._keys.alg.startswith("HS"):
            raise ValueError("notifications are signed with an asymmetric key: its JWKS is public")
        self.issuer = issuer
        self.lifetime = lifetime
        self._clock = clock

    @property
    def kid(self) -> str:
        return self._keys.kid

    @property
    def alg(self) -> str:
        return self._keys.alg

    def sign(self, *, notification_id: str, task_id: str, audience: str, body: bytes) -> str:
        """The compact JWT for one attempt at sending ``body`` to ``audience``."""
        now = int(self._clock())
        claims = {
            "iss": self.issuer,
            "aud": audience,
            "iat": now,
            "exp": now + int(self.lifetime),
            "jti": notification_id,
            "taskId": task_id,
            "bodySha256": body_digest(body),
        }
        header = {"alg": self.alg, "kid": self.kid, "typ": "JWT"}
        payload = json.dumps(claims, separators=(",", ":")).encode()
        return jws.serialize_compact(header, payload, self._keys.key, algorithms=[self.alg])

    def public_jwks(self) -> dict[str, Any]:
        """The JWKS document holding the public key, served at ``JWKS_PATH``."""
        return self._keys.public_jwks()
