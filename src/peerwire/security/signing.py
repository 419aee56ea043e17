"""Signed agent cards (A2A spec §8.4): JWS with a detached payload over the canonical card.

Signing (``CardSigner``): the payload is ``protocol.card_canonical.canonical_card_payload`` of
the card exactly as it is served; the protected header carries ``alg``, ``typ: "JOSE"``,
``kid`` and, when configured, ``jku``; the card gets one ``AgentCardSignature``
``{protected, signature}`` per signer (several signers = key rotation).

Verifying (``verify_card`` / ``verify_card_async``) follows the spec's procedure: rebuild the
canonical payload from the *received* document (unknown members included), and accept the
card when at least one signature verifies with a trusted key:

* a key pinned in the ``Trust`` (found by ``kid``), or
* a key from the JWKS at the signature's ``jku``, if that URL is on the trust's allow-list
  (fetched over HTTPS, or HTTP to loopback; cached).

The algorithm must be on the trust's allow-list (never ``none``) and fit the key's type. A
header with ``crit`` or ``b64`` is refused (neither is part of the card signature format).
``typ`` may be absent, ``JOSE`` (the spec's value) or ``JWT`` (what PyJWT-based signers such as
a2a-sdk's emit when not told otherwise); any other ``typ`` means the JWS is something else.
A ``null`` ``jku``, ``kid`` or ``typ`` counts as absent (a2a-sdk writes ``"jku": null``).
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx
import msgspec
from joserfc import jws
from joserfc.errors import BadSignatureError, JoseError
from joserfc.jwk import ECKey, JWKRegistry, Key, OKPKey, RSAKey
from joserfc.registry import HeaderParameter, is_str, is_url

from ..errors import AuthenticationError, CardSignatureError, InvalidAgentCardError
from ..protocol.card_canonical import canonical_card_payload
from ..types import AgentCard, AgentCardSignature, encode
from ._fetch import FetchError, check_fetch_url
from .jwt import decode_protected_header
from .keys import (
    ASYMMETRIC_ALGORITHMS,
    KeyMismatch,
    RemoteJWKS,
    check_algorithms,
    check_key_for,
    load_keys,
)

__all__ = ["CardSigner", "Trust", "sign_card", "verify_card", "verify_card_async"]

log = logging.getLogger("peerwire.security")

_ACCEPTED_TYP = frozenset({"jose", "jwt"})
_MAX_SIGNATURES = 8


def _null_or(check: Callable[[Any], None]) -> Callable[[Any], None]:
    def validate(value: Any) -> None:
        if value is not None:
            check(value)

    return validate


# a2a-sdk's ProtectedHeader declares every member required, so its signers write
# ``"jku": null`` (and may write ``"typ": null``): null is read as "absent".
_CARD_HEADERS = {
    "jku": HeaderParameter("JWK Set URL", _null_or(is_url)),
    "kid": HeaderParameter("Key ID", _null_or(is_str)),
    "typ": HeaderParameter("Type", _null_or(is_str)),
}


class CardSigner:
    """Signs agent cards with one private key.

    ``key`` is a joserfc private key, a private JWK dict, or PEM bytes/text. ``alg`` defaults
    from the key (RSA: RS256, EC: ES256/ES384/ES512 by curve, Ed25519: Ed25519); ``kid``
    defaults to the key's own ``kid`` or its RFC 7638 thumbprint. ``jku`` is the URL where
    verifiers can fetch the public key (``public_jwks()`` is the document to serve there).
    """

    def __init__(
        self,
        key: Key | Mapping[str, Any] | bytes | str,
        *,
        kid: str | None = None,
        alg: str | None = None,
        jku: str | None = None,
        header: Mapping[str, Any] | None = None,
    ) -> None:
        self.key = _private_key(key)
        self.alg = alg or _default_alg(self.key)
        check_algorithms([self.alg])
        try:
            check_key_for(self.key, self.alg, private=True)
        except KeyMismatch as exc:
            raise ValueError(f"cannot sign agent cards with this key: {exc}") from None
        self.kid = kid or self.key.kid or self.key.thumbprint()
        if jku is not None:
            check_fetch_url(jku, "jku")
        self.jku = jku
        self.header = dict(header) if header else None

    def protected_header(self) -> dict[str, str]:
        protected = {"alg": self.alg, "typ": "JOSE", "kid": self.kid}
        if self.jku is not None:
            protected["jku"] = self.jku
        return protected

    def signature(self, document: Mapping[str, Any]) -> AgentCardSignature:
        """A signature over the card JSON ``document`` (its ``signatures`` are ignored)."""
        payload = canonical_card_payload(document)
        compact = jws.serialize_compact(
            self.protected_header(), payload, self.key, algorithms=[self.alg]
        )
        protected, _, signature = compact.split(".")
        return AgentCardSignature(protected=protected, signature=signature, header=self.header)

    def sign(self, card: AgentCard) -> AgentCard:
        """``card`` with this signer's signature added to any it already has."""
        document = json.loads(encode(card))
        signature = self.signature(document)
        return msgspec.structs.replace(card, signatures=[*card.signatures, signature])

    def public_jwks(self) -> dict[str, Any]:
        """The JWKS holding this signer's public key, to serve at ``jku``."""
        public = self.key.as_dict(private=False)
        public.update({"kid": self.kid, "alg": self.alg, "use": "sig"})
        return {"keys": [public]}


def sign_card(card: AgentCard, *signers: CardSigner) -> AgentCard:
    """``card`` signed by each of ``signers`` (in order)."""
    for signer in signers:
        card = signer.sign(card)
    return card


def _private_key(key: Key | Mapping[str, Any] | bytes | str) -> Key:
    if isinstance(key, Key):
        return key
    try:
        if isinstance(key, Mapping):
            return JWKRegistry.import_key(dict(key))
        # A PEM key does not say its JWK type as a JWK does: try the kinds cards are signed with.
        for key_type in ("EC", "RSA", "OKP"):
            with contextlib.suppress(JoseError, ValueError, TypeError):
                return JWKRegistry.import_key(key, key_type)
        return JWKRegistry.import_key(key)
    except (JoseError, ValueError, TypeError) as exc:
        raise ValueError(f"cannot read the card signing key: {type(exc).__name__}") from None


def _default_alg(key: Key) -> str:
    designed = key.get("alg")
    if isinstance(designed, str):
        return designed
    if isinstance(key, RSAKey):
        return "RS256"
    if isinstance(key, ECKey):
        by_curve = {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}
        if key.curve_name in by_curve:
            return by_curve[key.curve_name]
    if isinstance(key, OKPKey) and key.curve_name == "Ed25519":
        return "Ed25519"
    raise ValueError(f"pass alg=: no default signature algorithm for a {key.key_type} key")


class Trust:
    """Which card signatures a client believes.

    ``keys``: pinned verification keys (a JWKS document, JWK dicts, joserfc keys).
    ``jku_allowlist``: URLs whose JWKS may be fetched for a signature's ``jku``: an entry
    matches exactly, or as a prefix when it ends with ``/``. ``require_signature``: refuse
    unsigned cards (a card that is signed must verify either way).
    """

    def __init__(
        self,
        keys: Any = None,
        *,
        jku_allowlist: Sequence[str] = (),
        algorithms: Sequence[str] = ASYMMETRIC_ALGORITHMS,
        require_signature: bool = True,
        http: httpx.AsyncClient | None = None,
        cache_seconds: float = 300.0,
        timeout: float = 10.0,
    ) -> None:
        self.pinned: list[Key] = load_keys(keys) if keys is not None else []
        for entry in jku_allowlist:
            check_fetch_url(entry, "jku allow-list entry")
        self.jku_allowlist = tuple(jku_allowlist)
        if not self.pinned and not self.jku_allowlist:
            raise ValueError("a Trust needs pinned keys or a jku allow-list to verify anything")
        self.algorithms = check_algorithms(algorithms)
        self.require_signature = require_signature
        self._http = http
        self._cache_seconds = cache_seconds
        self._timeout = timeout
        self._remote: dict[str, RemoteJWKS] = {}

    def allows_jku(self, url: str) -> bool:
        return any(
            url == entry or (entry.endswith("/") and url.startswith(entry))
            for entry in self.jku_allowlist
        )

    def keys_for(self, kid: str | None, jku: str | None) -> list[Key]:
        """The keys already known (pinned, or fetched from an allowed ``jku``) for ``kid``."""
        keys = list(self.pinned)
        if jku is not None and jku in self._remote:
            keys += self._remote[jku].cached()
        return [key for key in keys if kid is None or key.kid == kid]

    async def fetch(self, jku: str, *, refresh: bool = False) -> None:
        """Fetch (or refresh) the JWKS at an allowed ``jku`` into the cache."""
        if not self.allows_jku(jku):
            return
        remote = self._remote.get(jku)
        if remote is None:
            remote = self._remote[jku] = RemoteJWKS(
                jku, http=self._http, cache_seconds=self._cache_seconds, timeout=self._timeout
            )
        await remote.keys(refresh=refresh)


def verify_card(document: Mapping[str, Any], trust: Trust) -> None:
    """Check the card's signatures with keys the trust already holds (no network).

    Raises ``CardSignatureError`` saying why no signature verifies, or that the card is
    unsigned when ``trust.require_signature``.
    """
    try:
        _verify(document, trust)
    except CardSignatureError as exc:
        log.info("peerwire: refused an agent card: %s", exc.message)
        raise


def _verify(document: Mapping[str, Any], trust: Trust) -> None:
    signatures = _signatures(document)
    if not signatures:
        if trust.require_signature:
            raise CardSignatureError("The agent card is not signed")
        return
    try:
        payload = _b64encode(canonical_card_payload(document))
    except InvalidAgentCardError as exc:
        raise CardSignatureError(f"The agent card cannot be verified: {exc.message}") from None
    reasons = []
    for number, signature in enumerate(signatures[:_MAX_SIGNATURES], start=1):
        try:
            _verify_one(signature, payload, trust)
            return
        except _Refused as exc:
            reasons.append(f"signature {number}: {exc}")
    raise CardSignatureError("No signature on the agent card verifies (" + "; ".join(reasons) + ")")


async def verify_card_async(document: Mapping[str, Any], trust: Trust) -> None:
    """``verify_card``, first fetching the JWKS of every allowed ``jku`` the signatures name
    whose key the trust does not hold yet. What a client calls after fetching a card."""
    for signature in _signatures(document)[:_MAX_SIGNATURES]:
        try:
            header = _header(signature)
        except _Refused:
            continue
        jku, kid = header.get("jku"), _kid(header, signature)
        if not isinstance(jku, str) or not trust.allows_jku(jku):
            continue
        try:
            # Refetched once stale, so a key the publisher revoked stops being trusted.
            await trust.fetch(jku)
            if not trust.keys_for(kid, jku):
                await trust.fetch(jku, refresh=True)  # perhaps a key newer than our copy
        except FetchError:
            continue  # verify_card reports it as "no trusted key"
    verify_card(document, trust)


class _Refused(Exception):
    """Why one signature was not accepted (safe to show)."""


def _signatures(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    if not isinstance(document, Mapping):
        raise CardSignatureError("The agent card is not a JSON object")
    raw = document.get("signatures")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise CardSignatureError("The agent card's signatures are not a list")
    return [s for s in raw if isinstance(s, Mapping)]


def _header(signature: Mapping[str, Any]) -> dict[str, Any]:
    protected = signature.get("protected")
    if not isinstance(protected, str):
        raise _Refused("it has no protected header")
    try:
        return decode_protected_header(protected, what="signature")
    except AuthenticationError as exc:
        raise _Refused(exc.message) from None


def _kid(header: Mapping[str, Any], signature: Mapping[str, Any]) -> str | None:
    kid = header.get("kid")
    if kid is None:
        # An unprotected kid only picks the key: the signature must still verify with it.
        unprotected = signature.get("header")
        kid = unprotected.get("kid") if isinstance(unprotected, Mapping) else None
    return kid if isinstance(kid, str) else None


def _verify_one(signature: Mapping[str, Any], payload: str, trust: Trust) -> None:
    header = _header(signature)
    value = signature.get("signature")
    if not isinstance(value, str):
        raise _Refused("it has no signature value")
    alg = header.get("alg")
    if not isinstance(alg, str) or alg.lower() == "none":
        raise _Refused("it is unsigned (alg none)")
    if alg not in trust.algorithms:
        raise _Refused(f"the algorithm {alg} is not trusted")
    for name in ("crit", "b64"):
        if name in header:
            raise _Refused(f"the header parameter {name!r} is not supported")
    typ = header.get("typ")
    if typ is not None and (not isinstance(typ, str) or typ.lower() not in _ACCEPTED_TYP):
        raise _Refused(f"typ {typ!r} is not a card signature")
    kid = _kid(header, signature)
    jku = header.get("jku")
    keys = trust.keys_for(kid, jku if isinstance(jku, str) else None)
    if not keys:
        where = (
            f" (jku {jku} is not on the allow-list)" if jku and not trust.allows_jku(jku) else ""
        )
        raise _Refused(f"no trusted key has the key id {kid!r}{where}")
    mismatch = ""
    for key in keys:
        try:
            check_key_for(key, alg)
        except KeyMismatch as exc:
            mismatch = str(exc)
            continue
        registry = jws.JWSRegistry(
            header_registry=_CARD_HEADERS, algorithms=[alg], strict_check_header=False
        )
        compact = f"{signature['protected']}.{payload}.{value}"
        try:
            jws.deserialize_compact(compact, key, registry=registry)
        except BadSignatureError:
            raise _Refused(
                "the signature does not match the card (altered, or another key)"
            ) from None
        except (JoseError, ValueError) as exc:
            raise _Refused(f"it is malformed ({type(exc).__name__})") from None
        return
    raise _Refused(f"the trusted key does not fit {alg}: {mismatch}")


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")
