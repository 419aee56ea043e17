"""Validating JWT bearer tokens (RFC 7519, RFC 8725 best practices) against a JWKS.

A token is accepted only when all of this holds, checked in this order so that nothing is
believed before the signature is:

1. It is a compact JWS (three dot-separated parts; encrypted tokens and unencoded payloads,
   ``b64: false``, are refused) no larger than ``max_token_bytes``.
2. Its ``alg`` is on the validator's explicit allow-list (``none`` can never be on it) and a
   key of the matching type, found by ``kid``, verifies the signature (``keys.check_key_for``).
3. Its claims: ``exp`` (required by default) not passed, ``nbf`` and ``iat`` not in the
   future, each with ``leeway`` seconds of clock skew; ``iss`` one of the expected issuers;
   ``aud`` naming one of the expected audiences; a subject to identify the caller.

Every refusal raises ``AuthenticationError`` whose message says which rule failed, in words
safe to show the caller (no token content, no key material); keys that cannot be fetched
raise ``ServerBusyError`` (temporary, the caller is not at fault).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from joserfc import jws
from joserfc.errors import BadSignatureError, JoseError
from joserfc.jwk import Key

from ..errors import AuthenticationError, ServerBusyError
from ._fetch import FetchError
from .keys import (
    ASYMMETRIC_ALGORITHMS,
    JWKSource,
    KeyMismatch,
    as_jwk_source,
    check_algorithms,
    check_key_for,
)

__all__ = ["JWTValidator", "decode_protected_header", "parse_protected_header", "token_scopes"]

log = logging.getLogger("peerwire.security")

# Header parameters that change how the signature is computed or checked: refused, as RFC 7515
# demands for an unknown ``crit``. Key-bearing ones (``jwk``, ``jku``, ``x5c``, ``x5u``) are
# simply never used to find a key: keys come from the validator's JWKS only.
_REFUSED_HEADERS = ("b64", "crit")
_MAX_CANDIDATE_KEYS = 8


class JWTValidator:
    """Validates JWTs from one issuer (or a few) for one audience (or a few).

    ``jwks`` is a ``JWKSource`` (``StaticJWKS``, ``RemoteJWKS``) or anything
    ``StaticJWKS`` accepts (a JWKS document, JWK dicts, joserfc keys). ``algorithms`` is the
    explicit allow-list; HMAC algorithms are only usable with a static shared key.
    """

    def __init__(
        self,
        *,
        jwks: JWKSource | Any,
        issuer: str | Iterable[str],
        audience: str | Iterable[str],
        algorithms: Iterable[str] = ASYMMETRIC_ALGORITHMS,
        leeway: float = 30.0,
        require_exp: bool = True,
        subject_claim: str = "sub",
        max_token_bytes: int = 16 * 1024,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.jwks: JWKSource = as_jwk_source(jwks)
        self.issuers = _names(issuer, "issuer")
        self.audiences = _names(audience, "audience")
        self.algorithms = check_algorithms(algorithms)
        if leeway < 0:
            raise ValueError("leeway must not be negative")
        self.leeway = leeway
        self.require_exp = require_exp
        self.subject_claim = subject_claim
        self.max_token_bytes = max_token_bytes
        self._clock = clock

    async def validate(self, token: str) -> dict[str, Any]:
        """The token's claims, or ``AuthenticationError`` saying why it is refused."""
        header, payload = await self._verified(token)
        claims = _claims(payload)
        self._check_claims(claims)
        log.debug("peerwire: accepted a token (alg %s, kid %r)", header["alg"], header.get("kid"))
        return claims

    def subject(self, claims: Mapping[str, Any]) -> str:
        value = claims.get(self.subject_claim)
        if not isinstance(value, str) or not value:
            raise AuthenticationError(f"The token has no {self.subject_claim!r} claim")
        return value

    # -- the signature --------------------------------------------------------------------

    async def _verified(self, token: str) -> tuple[dict[str, Any], bytes]:
        if len(token) > self.max_token_bytes:
            raise AuthenticationError(f"The token is larger than {self.max_token_bytes} bytes")
        header = parse_protected_header(token, what="token")
        alg = header.get("alg")
        if not isinstance(alg, str) or alg.lower() == "none":
            raise AuthenticationError("The token is not signed (alg none is never accepted)")
        if alg not in self.algorithms:
            raise AuthenticationError(f"The token's algorithm {alg} is not accepted here")
        for name in _REFUSED_HEADERS:
            if name in header:
                raise AuthenticationError(f"The token's header parameter {name!r} is not supported")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise AuthenticationError("The token's kid is not a string")
        candidates = await self._candidates(kid, alg)
        mismatch = ""
        for key in candidates[:_MAX_CANDIDATE_KEYS]:
            try:
                check_key_for(key, alg)
            except KeyMismatch as exc:
                mismatch = str(exc)
                continue
            return header, _verify(token, key, alg)
        if mismatch:
            raise AuthenticationError(f"The token's signing key does not fit {alg}: {mismatch}")
        which = f"key id {kid!r}" if kid is not None else "no key id"
        raise AuthenticationError(f"No trusted key verifies the token ({which})")

    async def _candidates(self, kid: str | None, alg: str) -> list[Key]:
        keys = await self._keys()
        found = _select(keys, kid)
        if not found and kid is not None:
            found = _select(await self._keys(refresh=True), kid)  # the issuer may have rotated
        return found

    async def _keys(self, *, refresh: bool = False) -> Sequence[Key]:
        try:
            return await self.jwks.keys(refresh=refresh)
        except FetchError as exc:
            log.warning("peerwire: cannot check tokens, the issuer's keys are unavailable: %s", exc)
            # Not the caller's fault, and temporary: not a 401 (A2A spec §3.3.2).
            raise ServerBusyError(
                "The token cannot be checked now: the issuer's keys are unavailable; retry later"
            ) from None

    # -- the claims -----------------------------------------------------------------------

    def _check_claims(self, claims: Mapping[str, Any]) -> None:
        now = self._clock()
        exp = _number(claims, "exp")
        if exp is None and self.require_exp:
            raise AuthenticationError("The token has no expiry (exp)")
        if exp is not None and now >= exp + self.leeway:
            raise AuthenticationError("The token has expired")
        nbf = _number(claims, "nbf")
        if nbf is not None and nbf > now + self.leeway:
            raise AuthenticationError("The token is not valid yet (nbf)")
        iat = _number(claims, "iat")
        if iat is not None and iat > now + self.leeway:
            raise AuthenticationError("The token was issued in the future (iat)")
        issuer = claims.get("iss")
        if issuer not in self.issuers:
            raise AuthenticationError("The token comes from an issuer this agent does not trust")
        audience = claims.get("aud")
        audiences = [audience] if isinstance(audience, str) else audience
        if not isinstance(audiences, list) or not any(a in self.audiences for a in audiences):
            raise AuthenticationError("The token is meant for another audience")
        self.subject(claims)


def parse_protected_header(compact: str, *, what: str) -> dict[str, Any]:
    """The protected header of a compact JWS, checked to be one (``AuthenticationError``)."""
    parts = compact.split(".")
    if len(parts) != 3:
        kind = "an encrypted JWT (JWE)" if len(parts) == 5 else "not a compact JWS"
        raise AuthenticationError(f"The {what} is {kind}")
    return decode_protected_header(parts[0], what=what)


def decode_protected_header(segment: str, *, what: str) -> dict[str, Any]:
    """A base64url-encoded JWS protected header as a JSON object (``AuthenticationError``)."""
    try:
        header = json.loads(_b64decode(segment))
    except (ValueError, binascii.Error):
        raise AuthenticationError(f"The {what}'s header is not base64url-encoded JSON") from None
    if not isinstance(header, dict):
        raise AuthenticationError(f"The {what}'s header is not a JSON object")
    return header


def token_scopes(claims: Mapping[str, Any]) -> frozenset[str]:
    """Scopes granted by a token: ``scope`` (space-separated, RFC 8693/9068) or ``scp``."""
    found: set[str] = set()
    for name in ("scope", "scp"):
        value = claims.get(name)
        if isinstance(value, str):
            found.update(value.split())
        elif isinstance(value, list):
            found.update(v for v in value if isinstance(v, str))
    return frozenset(found)


def _verify(token: str, key: Key, alg: str) -> bytes:
    try:
        registry = jws.JWSRegistry(algorithms=[alg], strict_check_header=False)
        verified = jws.deserialize_compact(token, key, registry=registry)
    except BadSignatureError:
        raise AuthenticationError("The token's signature does not verify") from None
    except (JoseError, ValueError) as exc:
        raise AuthenticationError(f"The token is malformed ({type(exc).__name__})") from None
    return verified.payload


def _select(keys: Sequence[Key], kid: str | None) -> list[Key]:
    if kid is None:
        return list(keys)
    return [key for key in keys if key.kid == kid]


def _claims(payload: bytes) -> dict[str, Any]:
    try:
        claims = json.loads(payload)
    except ValueError:
        raise AuthenticationError("The token's claims are not JSON") from None
    if not isinstance(claims, dict):
        raise AuthenticationError("The token's claims are not a JSON object")
    return claims


def _number(claims: Mapping[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise AuthenticationError(f"The token's {name} claim is not a number")
    return float(value)


def _b64decode(segment: str) -> bytes:
    if not segment or "=" in segment:
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))


def _names(value: str | Iterable[str], what: str) -> frozenset[str]:
    names = frozenset([value] if isinstance(value, str) else value)
    if not names or not all(isinstance(n, str) and n for n in names):
        raise ValueError(f"at least one non-empty {what} is required")
    return names
