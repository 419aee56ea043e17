"""Verifiers: one per kind of card security scheme, each turning a request's credential into a
``Principal``.

A verifier answers for one named scheme of the card (it is given the scheme, so it knows
where to look, e.g. which header holds the API key):

* ``None``: the request carries no credential for this scheme (another alternative may apply);
* a ``Principal``: the credential is valid;
* ``AuthenticationError``: a credential is there and is not valid (forged, expired, unknown);
* ``ServerBusyError``: it cannot be checked right now (the issuer's keys are unreachable).

Verifiers never log or echo credential values.
"""

from __future__ import annotations

import datetime
import hashlib
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Protocol

import httpx
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.x509.oid import ExtendedKeyUsageOID

from ..errors import AuthenticationError, ServerBusyError
from ..types import (
    APIKeySecurityScheme,
    HTTPAuthSecurityScheme,
    MutualTlsSecurityScheme,
    OAuth2SecurityScheme,
    OpenIdConnectSecurityScheme,
    SecurityScheme,
)
from ._fetch import FetchError
from .credentials import PeerCertificate, RequestCredentials
from .discovery import MetadataCache
from .jwt import JWTValidator, token_scopes
from .keys import ASYMMETRIC_ALGORITHMS, RemoteJWKS, check_algorithms
from .principal import Principal

__all__ = [
    "APIKeyVerifier",
    "JWTVerifier",
    "MTLSVerifier",
    "OIDCVerifier",
    "Verifier",
    "bearer_token",
    "challenge",
]

log = logging.getLogger("peerwire.security")


class Verifier(Protocol):
    def supports(self, scheme: SecurityScheme) -> bool:
        """Whether this verifier can check credentials of ``scheme``'s kind."""
        ...

    async def verify(
        self, name: str, scheme: SecurityScheme, credentials: RequestCredentials
    ) -> Principal | None: ...


# -- API keys ---------------------------------------------------------------------------------


class APIKeyVerifier:
    """API keys, each mapped to a principal id (or a ``Principal`` carrying scopes/roles).

    Keys are held as SHA-256 digests only, and looked up by digest, so a timing difference
    cannot reveal how much of a guessed key was right.
    """

    def __init__(self, keys: Mapping[str, str | Principal]) -> None:
        if not keys:
            raise ValueError("at least one API key is required")
        self._principals: dict[bytes, Principal] = {}
        for key, who in keys.items():
            if not key:
                raise ValueError("an API key must not be empty")
            principal = who if isinstance(who, Principal) else Principal(id=who)
            if not principal.id:
                raise ValueError("an API key must map to a non-empty principal id")
            self._principals[_digest(key)] = principal

    def supports(self, scheme: SecurityScheme) -> bool:
        return scheme.api_key_security_scheme is not None

    async def verify(
        self, name: str, scheme: SecurityScheme, credentials: RequestCredentials
    ) -> Principal | None:
        spec = scheme.api_key_security_scheme
        assert spec is not None
        value = _api_key(spec, credentials)
        if value is None:
            return None
        principal = self._principals.get(_digest(value))
        if principal is None:
            raise AuthenticationError(f"The API key in {spec.location} {spec.name!r} is not valid")
        return Principal(
            id=principal.id, scheme=name, scopes=principal.scopes, claims=principal.claims
        )


def _api_key(spec: APIKeySecurityScheme, credentials: RequestCredentials) -> str | None:
    if spec.location == "header":
        value = credentials.header(spec.name)
    elif spec.location == "query":
        value = credentials.query.get(spec.name)
    else:
        value = credentials.cookies.get(spec.name)
    return value.strip() if value else None


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode("utf-8")).digest()


# -- bearer tokens ----------------------------------------------------------------------------

_TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


def bearer_token(credentials: RequestCredentials) -> str | None:
    """The token of ``Authorization: Bearer <token>`` (RFC 6750 §2.1), if there is one.

    Another authorization scheme (Basic, ...) counts as no bearer token; a Bearer header that
    is not one well-formed token is refused.
    """
    header = credentials.header("authorization")
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    token = token.strip()
    if not _TOKEN68.fullmatch(token):
        raise AuthenticationError("The Authorization header does not hold one bearer token")
    return token


def _is_bearer_scheme(scheme: SecurityScheme) -> bool:
    http = scheme.http_auth_security_scheme
    return (
        (http is not None and http.scheme.lower() == "bearer")
        or scheme.oauth2_security_scheme is not None
        or scheme.open_id_connect_security_scheme is not None
    )


def _token_principal(name: str, validator: JWTValidator, claims: dict[str, Any]) -> Principal:
    return Principal(
        id=validator.subject(claims),
        scheme=name,
        scopes=token_scopes(claims),
        claims=MappingProxyType(claims),
    )


class JWTVerifier:
    """Bearer JWTs checked by one configured ``JWTValidator`` (fixed issuer, audience, keys).

    Serves ``httpAuthSecurityScheme`` with scheme Bearer and OAuth2 / OpenID Connect schemes
    whose issuer the operator configures directly.
    """

    def __init__(self, validator: JWTValidator) -> None:
        self.validator = validator

    def supports(self, scheme: SecurityScheme) -> bool:
        return _is_bearer_scheme(scheme)

    async def verify(
        self, name: str, scheme: SecurityScheme, credentials: RequestCredentials
    ) -> Principal | None:
        token = bearer_token(credentials)
        if token is None:
            return None
        claims = await self.validator.validate(token)
        return _token_principal(name, self.validator, claims)


class OIDCVerifier:
    """Bearer JWTs from the issuer the card's scheme points at, found by discovery.

    For an ``openIdConnectSecurityScheme`` the ``openIdConnectUrl`` is fetched (OIDC
    Discovery), for an ``oauth2SecurityScheme`` its ``oauth2MetadataUrl`` (RFC 8414); the
    metadata gives the issuer (checked against the URL) and ``jwks_uri``. Tokens must name
    that issuer and ``audience``. Metadata and keys are cached.
    """

    def __init__(
        self,
        *,
        audience: str | Sequence[str],
        algorithms: Sequence[str] = ASYMMETRIC_ALGORITHMS,
        leeway: float = 30.0,
        http: httpx.AsyncClient | None = None,
        metadata_cache_seconds: float = 3600.0,
        jwks_cache_seconds: float = 300.0,
        timeout: float = 10.0,
    ) -> None:
        self._audience = audience
        self._algorithms = tuple(algorithms)
        self._leeway = leeway
        self._http = http
        self._jwks_cache_seconds = jwks_cache_seconds
        self._timeout = timeout
        self._metadata = MetadataCache(
            http=http, cache_seconds=metadata_cache_seconds, timeout=timeout
        )
        self._validators: dict[tuple[str, str], JWTValidator] = {}
        # Fail at configuration time, not on the first request.
        check_algorithms(self._algorithms)
        if not audience or (not isinstance(audience, str) and not all(audience)):
            raise ValueError("an audience is required: tokens for other services are refused")

    def supports(self, scheme: SecurityScheme) -> bool:
        oauth2 = scheme.oauth2_security_scheme
        return scheme.open_id_connect_security_scheme is not None or (
            oauth2 is not None and bool(oauth2.oauth2_metadata_url)
        )

    async def verify(
        self, name: str, scheme: SecurityScheme, credentials: RequestCredentials
    ) -> Principal | None:
        token = bearer_token(credentials)
        if token is None:
            return None
        validator = await self._validator(_metadata_url(scheme))
        claims = await validator.validate(token)
        return _token_principal(name, validator, claims)

    async def _validator(self, url: str) -> JWTValidator:
        try:
            metadata = await self._metadata.get(url)
        except FetchError as exc:
            log.warning("peerwire: cannot check tokens, issuer metadata unavailable: %s", exc)
            raise ServerBusyError(
                "The token cannot be checked now: the issuer's metadata is unavailable; retry later"
            ) from None
        key = (metadata.issuer, metadata.jwks_uri)
        validator = self._validators.get(key)
        if validator is None:
            validator = JWTValidator(
                jwks=RemoteJWKS(
                    metadata.jwks_uri,
                    http=self._http,
                    cache_seconds=self._jwks_cache_seconds,
                    timeout=self._timeout,
                ),
                issuer=metadata.issuer,
                audience=self._audience,
                algorithms=self._algorithms,
                leeway=self._leeway,
            )
            self._validators[key] = validator
        return validator


def _metadata_url(scheme: SecurityScheme) -> str:
    if scheme.open_id_connect_security_scheme is not None:
        return scheme.open_id_connect_security_scheme.open_id_connect_url
    assert scheme.oauth2_security_scheme is not None
    return scheme.oauth2_security_scheme.oauth2_metadata_url


# -- mutual TLS -------------------------------------------------------------------------------

PrincipalMapper = Callable[[x509.Certificate], "str | Principal | None"]


class MTLSVerifier:
    """Client certificates issued (directly or through the client's intermediates) by one of
    ``trusted_cas``, within their validity period, and allowed for client authentication.

    ``principals`` maps a certificate to a principal: a dict keyed by subject DN (RFC 4514,
    e.g. ``"CN=billing,O=Example"``) or by SHA-256 fingerprint (hex), or a function of the
    certificate; it may give a principal id or a ``Principal`` with scopes. A certificate it
    does not map is refused. Without ``principals`` the subject DN is the principal id.
    """

    _MAX_CHAIN = 4

    def __init__(
        self,
        trusted_cas: Sequence[bytes | str | x509.Certificate],
        *,
        principals: Mapping[str, str | Principal] | PrincipalMapper | None = None,
        clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
    ) -> None:
        self._cas = [_certificate(ca) for ca in trusted_cas]
        if not self._cas:
            raise ValueError("at least one trusted CA certificate is required")
        self._principals = principals
        self._clock = clock

    def supports(self, scheme: SecurityScheme) -> bool:
        return scheme.mtls_security_scheme is not None

    async def verify(
        self, name: str, scheme: SecurityScheme, credentials: RequestCredentials
    ) -> Principal | None:
        peer = credentials.peer_certificate
        if peer is None:
            return None
        leaf, intermediates = _parse_peer(peer)
        now = self._clock()
        _check_valid(leaf, now, "client certificate")
        _check_client_usage(leaf)
        self._check_chain(leaf, intermediates, now)
        return self._principal(name, leaf)

    def _check_chain(
        self, leaf: x509.Certificate, intermediates: list[x509.Certificate], now: datetime.datetime
    ) -> None:
        current = leaf
        for _ in range(self._MAX_CHAIN):
            if any(_issued_by(current, ca) for ca in self._cas):
                return
            parent = next((c for c in intermediates if _issued_by(current, c)), None)
            if parent is None or not _is_ca(parent):
                break
            _check_valid(parent, now, "intermediate CA certificate")
            current = parent
        raise AuthenticationError("The client certificate is not issued by a trusted CA")

    def _principal(self, name: str, leaf: x509.Certificate) -> Principal:
        subject = leaf.subject.rfc4514_string()
        fingerprint = leaf.fingerprint(hashes.SHA256()).hex()
        claims = MappingProxyType(
            {
                "subject": subject,
                "issuer": leaf.issuer.rfc4514_string(),
                "serial": str(leaf.serial_number),
                "sha256": fingerprint,
            }
        )
        mapping = self._principals
        if mapping is None:
            who: str | Principal | None = subject
        elif callable(mapping):
            who = mapping(leaf)
        else:
            who = mapping.get(subject, mapping.get(fingerprint))
        if who is None:
            raise AuthenticationError("The client certificate is not allowed to call this agent")
        if isinstance(who, Principal):
            return Principal(id=who.id, scheme=name, scopes=who.scopes, claims=claims)
        return Principal(id=who, scheme=name, claims=claims)


def _certificate(value: bytes | str | x509.Certificate) -> x509.Certificate:
    if isinstance(value, x509.Certificate):
        return value
    data = value.encode("ascii") if isinstance(value, str) else value
    if data.lstrip().startswith(b"-----BEGIN"):
        return x509.load_pem_x509_certificate(data)
    return x509.load_der_x509_certificate(data)


def _parse_peer(peer: PeerCertificate) -> tuple[x509.Certificate, list[x509.Certificate]]:
    try:
        leaf = x509.load_der_x509_certificate(peer.der)
        chain = [x509.load_der_x509_certificate(der) for der in peer.chain]
    except ValueError:
        raise AuthenticationError("The client certificate cannot be parsed") from None
    return leaf, chain


def _issued_by(certificate: x509.Certificate, issuer: x509.Certificate) -> bool:
    if certificate.issuer != issuer.subject:
        return False
    try:
        certificate.verify_directly_issued_by(issuer)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _is_ca(certificate: x509.Certificate) -> bool:
    try:
        constraints = certificate.extensions.get_extension_for_class(x509.BasicConstraints)
    except x509.ExtensionNotFound:
        return False
    return constraints.value.ca


def _check_valid(certificate: x509.Certificate, now: datetime.datetime, what: str) -> None:
    if now < certificate.not_valid_before_utc:
        raise AuthenticationError(f"The {what} is not valid yet")
    if now > certificate.not_valid_after_utc:
        raise AuthenticationError(f"The {what} has expired")


def _check_client_usage(certificate: x509.Certificate) -> None:
    try:
        usage = certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage)
    except x509.ExtensionNotFound:
        return
    if ExtendedKeyUsageOID.CLIENT_AUTH not in usage.value:
        raise AuthenticationError("The client certificate is not meant for client authentication")


# -- challenges -------------------------------------------------------------------------------


def challenge(
    name: str,
    scheme: SecurityScheme,
    realm: str,
    *,
    error: str = "",
    description: str = "",
    scopes: Sequence[str] = (),
) -> str:
    """The ``WWW-Authenticate`` challenge for one scheme (RFC 9110 §11.6.1, RFC 6750 §3)."""
    params = [f'realm="{_quoted(realm)}"']
    member = scheme.scheme
    if isinstance(member, APIKeySecurityScheme):
        auth_scheme = "APIKey"
        params += [f'in="{_quoted(member.location)}"', f'name="{_quoted(member.name)}"']
    elif isinstance(member, MutualTlsSecurityScheme):
        auth_scheme = "MutualTLS"
    elif isinstance(member, HTTPAuthSecurityScheme) and member.scheme.lower() != "bearer":
        auth_scheme = member.scheme
    else:
        assert isinstance(
            member, HTTPAuthSecurityScheme | OAuth2SecurityScheme | OpenIdConnectSecurityScheme
        )
        auth_scheme = "Bearer"
    if error:
        params.append(f'error="{_quoted(error)}"')
    if description:
        params.append(f'error_description="{_quoted(description)}"')
    if scopes:
        params.append(f'scope="{_quoted(" ".join(scopes))}"')
    return f"{auth_scheme} " + ", ".join(params)


def _quoted(text: str) -> str:
    # RFC 6750 limits error_description to %x20-21 / %x23-5B / %x5D-7E: no quote, backslash.
    return "".join(c for c in text if 0x20 <= ord(c) <= 0x7E and c not in '"\\')
