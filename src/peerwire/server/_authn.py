"""Authentication on the HTTP bindings (JSON-RPC and REST): who sent a request, and the
``WWW-Authenticate`` challenge that goes with a refusal.

Both bindings call ``authenticate_http`` before they parse the request, so an unauthenticated
caller learns nothing about what it sent, and answer every error, the dispatcher's included,
with ``challenge_headers``: the challenge of an authentication or permission error, and the
``Retry-After`` of an outage (``ServiceUnavailableError``; gRPC sends both as trailers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import A2AError, AuthenticationError, PermissionDeniedError, retry_after_of
from ..security.credentials import RequestCredentials
from ._http import Scope

if TYPE_CHECKING:
    from ..security import Authenticator, Principal

__all__ = ["authenticate_http", "challenge_headers"]


async def authenticate_http(authenticator: Authenticator | None, scope: Scope) -> Principal | None:
    """The caller of an ASGI HTTP request; ``None`` when the agent authenticates nobody.

    Raises what the authenticator raises: ``AuthenticationError``, ``PermissionDeniedError``,
    or ``ServerBusyError`` when an issuer cannot be reached.
    """
    if authenticator is None:
        return None
    return await authenticator.authenticate(RequestCredentials.from_asgi(scope))


def challenge_headers(
    error: A2AError, authenticator: Authenticator | None
) -> list[tuple[bytes, bytes]]:
    """The headers of an error response beyond its body: ``WWW-Authenticate`` if the error
    calls for a challenge, ``Retry-After`` (RFC 9110 §10.2.3, seconds) if it says when to
    retry."""
    retry_after = retry_after_of(error)
    if retry_after is not None:
        return [(b"retry-after", str(retry_after).encode())]
    challenge = ""
    if isinstance(error, AuthenticationError):
        # RFC 9110 §15.5.2: a 401 always carries a challenge.
        challenge = error.www_authenticate or (
            authenticator.challenge() if authenticator is not None else "Bearer"
        )
    elif isinstance(error, PermissionDeniedError):
        challenge = error.www_authenticate  # RFC 6750 insufficient_scope, when known
    if not challenge:
        return []
    return [(b"www-authenticate", challenge.encode("latin-1"))]
