"""Client credentials: what a client presents to an agent, chosen by the agent card.

Give a ``Credentials`` the credentials you hold; ``await credentials.for_card(card)`` picks the
first of the card's security requirement alternatives (or a skill's, with ``skill=``) that
they can satisfy completely and returns the ``RequestAuth`` to send: headers (and query
parameters, for API keys the card puts in the query string). Nothing is sent to an agent whose
card asks for nothing.

* ``APIKey``: for ``apiKeySecurityScheme``, in its header, query parameter or cookie.
* ``BearerToken``: a token you already have (or an async function returning one), for HTTP
  Bearer, OAuth2 and OpenID Connect schemes.
* ``BasicAuth``: for ``httpAuthSecurityScheme`` with scheme Basic.
* ``OAuth2ClientCredentials``: fetches tokens from your authorization server with the client
  credentials grant (RFC 6749 §4.4), caches them per scope set and renews them before they
  expire (with the refresh token when the server issued one).
* ``ClientCertificate``: for ``mtlsSecurityScheme``; contributes no header but an
  ``ssl.SSLContext`` the HTTP client must be built with (``Credentials.ssl_context()``), and
  the same as PEM bytes for gRPC channels (``Credentials.client_tls()``). ``Client.connect``
  uses both.

Which credential serves which scheme: a credential given for a scheme name
(``Credentials(by_scheme={"oidc": ...})``) serves that scheme; otherwise the first credential
whose kind fits. A credential that is a secret tied to one server is only offered where the
card points at that server: ``OAuth2ClientCredentials`` serves an OAuth2 scheme only when the
scheme's ``tokenUrl`` is the configured one, and an OpenID Connect scheme only for the
configured ``issuer``; name the scheme in ``by_scheme`` to override. Its secret goes to the
configured token URL only, never to one read from a card.
"""

from __future__ import annotations

import base64
import re
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

import anyio
import httpx

from ..errors import A2AConnectionError, AuthenticationError, InvalidResponseError
from ..security._fetch import check_fetch_url
from ..types import AgentCard, SecurityRequirement, SecurityScheme
from .transports.base import ClientTLS

__all__ = [
    "APIKey",
    "BasicAuth",
    "BearerToken",
    "ClientCertificate",
    "Credential",
    "Credentials",
    "OAuth2ClientCredentials",
    "RequestAuth",
]


@dataclass(frozen=True, slots=True)
class RequestAuth:
    """What to add to every request: headers, query parameters, and the schemes they satisfy."""

    headers: Mapping[str, str] = field(default_factory=dict)
    query: Mapping[str, str] = field(default_factory=dict)
    schemes: tuple[str, ...] = ()

    def __repr__(self) -> str:
        # Names only: the values are secrets.
        return (
            f"RequestAuth(headers={sorted(self.headers)!r}, query={sorted(self.query)!r}, "
            f"schemes={self.schemes!r})"
        )


class Credential(Protocol):
    """One credential; ``apply`` returns what it adds to a request for one card scheme."""

    def supports(self, scheme: SecurityScheme) -> bool: ...

    async def apply(self, scheme: SecurityScheme, scopes: frozenset[str]) -> RequestAuth: ...


# -- static credentials -----------------------------------------------------------------------


class APIKey:
    """An API key, sent where the card's ``apiKeySecurityScheme`` says."""

    def __init__(self, key: str) -> None:
        if not key:
            raise ValueError("the API key must not be empty")
        self._key = key

    def supports(self, scheme: SecurityScheme) -> bool:
        return scheme.api_key_security_scheme is not None

    async def apply(self, scheme: SecurityScheme, scopes: frozenset[str]) -> RequestAuth:
        spec = scheme.api_key_security_scheme
        assert spec is not None
        if spec.location == "query":
            return RequestAuth(query={spec.name: self._key})
        if spec.location == "cookie":
            return RequestAuth(headers={"Cookie": f"{spec.name}={quote(self._key, safe='')}"})
        return RequestAuth(headers={spec.name: self._key})

    def __repr__(self) -> str:
        return "APIKey(***)"


TokenSource = str | Callable[[], Awaitable[str]]


class BearerToken:
    """A bearer token, or an async function that returns a current one."""

    def __init__(self, token: TokenSource) -> None:
        if isinstance(token, str) and not token:
            raise ValueError("the bearer token must not be empty")
        self._token = token

    def supports(self, scheme: SecurityScheme) -> bool:
        return _is_bearer(scheme)

    async def apply(self, scheme: SecurityScheme, scopes: frozenset[str]) -> RequestAuth:
        token = self._token if isinstance(self._token, str) else await self._token()
        return RequestAuth(headers={"Authorization": f"Bearer {token}"})

    def __repr__(self) -> str:
        return "BearerToken(***)"


class BasicAuth:
    """HTTP Basic credentials (RFC 7617), for ``httpAuthSecurityScheme`` scheme Basic."""

    def __init__(self, username: str, password: str) -> None:
        if ":" in username:
            raise ValueError("a Basic username cannot contain ':'")
        self._value = base64.b64encode(f"{username}:{password}".encode()).decode("ascii")

    def supports(self, scheme: SecurityScheme) -> bool:
        http = scheme.http_auth_security_scheme
        return http is not None and http.scheme.lower() == "basic"

    async def apply(self, scheme: SecurityScheme, scopes: frozenset[str]) -> RequestAuth:
        return RequestAuth(headers={"Authorization": f"Basic {self._value}"})

    def __repr__(self) -> str:
        return "BasicAuth(***)"


class ClientCertificate:
    """A client certificate for mutual TLS (PEM files). It adds no header: build the HTTP
    client with ``ssl_context()`` (``Credentials.ssl_context()`` does it for you)."""

    def __init__(
        self,
        certfile: str | Path,
        keyfile: str | Path | None = None,
        *,
        password: str | None = None,
        cafile: str | Path | None = None,
    ) -> None:
        self.certfile = Path(certfile)
        self.keyfile = Path(keyfile) if keyfile is not None else None
        self._password = password
        self.cafile = Path(cafile) if cafile is not None else None
        self.ssl_context()  # unreadable files fail here, not on the first call

    def supports(self, scheme: SecurityScheme) -> bool:
        return scheme.mtls_security_scheme is not None

    async def apply(self, scheme: SecurityScheme, scopes: frozenset[str]) -> RequestAuth:
        return RequestAuth()

    def ssl_context(self) -> ssl.SSLContext:
        """A client TLS context presenting this certificate (server certificates verified
        against ``cafile`` when given, else the system's trust store)."""
        context = ssl.create_default_context(
            cafile=str(self.cafile) if self.cafile is not None else None
        )
        context.load_cert_chain(
            str(self.certfile),
            str(self.keyfile) if self.keyfile is not None else None,
            password=self._password,
        )
        return context

    def tls_material(self) -> ClientTLS:
        """The certificate chain, its key (decrypted in memory) and the trusted CAs as PEM
        bytes: what a gRPC channel takes instead of an ``SSLContext``."""
        certificates = self.certfile.read_bytes()
        key_source = self.keyfile.read_bytes() if self.keyfile is not None else certificates
        chain = b"\n".join(_PEM_CERTIFICATE.findall(certificates))
        keys = [found.group(0) for found in _PEM_PRIVATE_KEY.finditer(key_source)]
        if not chain or not keys:
            raise ValueError(
                f"{self.certfile} (with its key file) does not hold a PEM certificate and key"
            )
        return ClientTLS(
            root_certificates=self.cafile.read_bytes() if self.cafile is not None else None,
            private_key=_unencrypted(keys[0], self._password),
            certificate_chain=chain,
        )

    def __repr__(self) -> str:
        return f"ClientCertificate({str(self.certfile)!r})"


_PEM_CERTIFICATE = re.compile(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.S)
_PEM_PRIVATE_KEY = re.compile(
    rb"-----BEGIN ([A-Z ]*)PRIVATE KEY-----.+?-----END \1PRIVATE KEY-----", re.S
)


def _unencrypted(key: bytes, password: str | None) -> bytes:
    """grpcio takes unencrypted PEM keys only: decrypt in memory when there is a password."""
    if password is None and b"ENCRYPTED" not in key:
        return key
    from cryptography.hazmat.primitives import serialization

    loaded = serialization.load_pem_private_key(
        key, password.encode() if password is not None else None
    )
    return loaded.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


# -- OAuth2 client credentials ----------------------------------------------------------------


@dataclass(slots=True)
class _Token:
    access_token: str
    expires_at: float  # clock time; math.inf when the server gave no lifetime
    refresh_token: str | None


class OAuth2ClientCredentials:
    """Access tokens from ``token_url`` with the client credentials grant, cached per scope set.

    A token is renewed ``refresh_margin`` seconds before it expires (by the refresh token
    grant when the server issued a refresh token, else by a new client credentials grant).
    ``auth_method`` is ``"client_secret_basic"`` (RFC 6749 §2.3.1, the default) or
    ``"client_secret_post"``. ``extra_params`` go into every token request (e.g. RFC 8707
    ``resource`` or an ``audience``). ``invalidate()`` drops cached tokens (after a 401).
    """

    def __init__(
        self,
        client_id: str,
        client_secret: str,
        *,
        token_url: str,
        issuer: str | None = None,
        scopes: Sequence[str] = (),
        extra_params: Mapping[str, str] | None = None,
        auth_method: str = "client_secret_basic",
        refresh_margin: float = 30.0,
        http: httpx.AsyncClient | None = None,
        timeout: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not client_id:
            raise ValueError("client_id must not be empty")
        if auth_method not in ("client_secret_basic", "client_secret_post"):
            raise ValueError("auth_method must be 'client_secret_basic' or 'client_secret_post'")
        self.client_id = client_id
        self._secret = client_secret
        self.token_url = check_fetch_url(token_url, "token URL")
        self.issuer = issuer
        self.scopes = frozenset(scopes)
        self._extra = dict(extra_params or {})
        self.auth_method = auth_method
        self._margin = refresh_margin
        self._http = http
        self._timeout = timeout
        self._clock = clock
        self._tokens: dict[frozenset[str], _Token] = {}
        self._lock = anyio.Lock()

    def supports(self, scheme: SecurityScheme) -> bool:
        oauth2 = scheme.oauth2_security_scheme
        if oauth2 is not None:
            flow = oauth2.flows.client_credentials
            return flow is not None and flow.token_url == self.token_url
        oidc = scheme.open_id_connect_security_scheme
        if oidc is not None and self.issuer is not None:
            from ..security.discovery import metadata_urls

            return oidc.open_id_connect_url in metadata_urls(self.issuer)
        return False

    async def apply(self, scheme: SecurityScheme, scopes: frozenset[str]) -> RequestAuth:
        token = await self.token(scopes)
        return RequestAuth(headers={"Authorization": f"Bearer {token}"})

    async def token(self, scopes: frozenset[str] = frozenset()) -> str:
        """A current access token for ``scopes`` (plus the configured ones)."""
        wanted = frozenset(scopes) | self.scopes
        async with self._lock:
            cached = self._tokens.get(wanted)
            if cached is not None and self._clock() < cached.expires_at - self._margin:
                return cached.access_token
            token = None
            if cached is not None and cached.refresh_token:
                try:
                    token = await self._request(
                        {"grant_type": "refresh_token", "refresh_token": cached.refresh_token}
                    )
                except AuthenticationError:
                    token = None  # refresh token expired or revoked: start over
            if token is None:
                grant = {"grant_type": "client_credentials"}
                if wanted:
                    grant["scope"] = " ".join(sorted(wanted))
                token = await self._request(grant)
            self._tokens[wanted] = token
            return token.access_token

    def invalidate(self) -> None:
        self._tokens.clear()

    async def _request(self, grant: dict[str, str]) -> _Token:
        form = {**self._extra, **grant}
        headers = {"Accept": "application/json"}
        if self.auth_method == "client_secret_basic":
            # RFC 6749 §2.3.1: form-urlencode id and secret before joining them.
            pair = f"{quote(self.client_id, safe='')}:{quote(self._secret, safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        else:
            form.update(client_id=self.client_id, client_secret=self._secret)
        started = self._clock()
        try:
            if self._http is not None:
                response = await self._post(self._http, form, headers)
            else:
                async with httpx.AsyncClient(follow_redirects=False) as http:
                    response = await self._post(http, form, headers)
        except httpx.HTTPError as exc:
            detail = str(exc) or type(exc).__name__
            raise A2AConnectionError(
                f"the token request to {self.token_url} failed: {detail}", url=self.token_url
            ) from None
        return self._parse(response, started)

    async def _post(
        self, http: httpx.AsyncClient, form: dict[str, str], headers: dict[str, str]
    ) -> httpx.Response:
        return await http.post(self.token_url, data=form, headers=headers, timeout=self._timeout)

    def _parse(self, response: httpx.Response, started: float) -> _Token:
        try:
            body: Any = response.json()
        except ValueError:
            body = None
        if response.status_code != 200:
            error = body.get("error") if isinstance(body, dict) else None
            reason = f" ({error})" if isinstance(error, str) else ""
            raise AuthenticationError(
                f"The token endpoint {self.token_url} refused the request: "
                f"HTTP {response.status_code}{reason}"
            )
        if not isinstance(body, dict) or not isinstance(body.get("access_token"), str):
            raise InvalidResponseError(
                f"The token endpoint {self.token_url} answered without an access_token",
                url=self.token_url,
            )
        token_type = body.get("token_type")
        if not isinstance(token_type, str) or token_type.lower() != "bearer":
            raise InvalidResponseError(
                f"The token endpoint {self.token_url} issued a {token_type!r} token, not a "
                "Bearer token",
                url=self.token_url,
            )
        expires_in = body.get("expires_in")
        lifetime = (
            float(expires_in)
            if isinstance(expires_in, int | float) and not isinstance(expires_in, bool)
            else float("inf")
        )
        refresh = body.get("refresh_token")
        return _Token(
            access_token=body["access_token"],
            expires_at=started + lifetime,
            refresh_token=refresh if isinstance(refresh, str) else None,
        )

    def __repr__(self) -> str:
        return f"OAuth2ClientCredentials({self.client_id!r}, token_url={self.token_url!r})"


# -- choosing by the card ---------------------------------------------------------------------


class Credentials:
    """The credentials a client holds, and the choice among them a card calls for."""

    def __init__(
        self, *credentials: Credential, by_scheme: Mapping[str, Credential] | None = None
    ) -> None:
        self.credentials = tuple(credentials)
        self.by_scheme = dict(by_scheme or {})

    async def for_card(self, card: AgentCard, *, skill: str | None = None) -> RequestAuth:
        """What to send to the agent of ``card`` (for ``skill``, when it has requirements)."""
        requirements = _requirements(card, skill)
        if not requirements:
            return RequestAuth()
        anonymous = False
        for requirement in requirements:
            if not requirement.schemes:
                anonymous = True
                continue
            chosen = self._choose(card, requirement)
            if chosen is None:
                continue
            applied = [
                (name, await credential.apply(card.security_schemes[name], scopes))
                for name, credential, scopes in chosen
            ]
            merged = _merge(applied)
            if merged is not None:
                return merged
        if anonymous:
            return RequestAuth()
        raise AuthenticationError(
            f"No credentials for the agent {card.name!r}: it needs "
            + " or ".join(_describe(r) for r in requirements)
        )

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context of the client certificate among these credentials, if any."""
        certificate = self.client_certificate()
        return certificate.ssl_context() if certificate is not None else None

    def client_tls(self) -> ClientTLS | None:
        """The client certificate among these credentials as PEM bytes (for gRPC), if any."""
        certificate = self.client_certificate()
        return certificate.tls_material() if certificate is not None else None

    def client_certificate(self) -> ClientCertificate | None:
        for credential in (*self.by_scheme.values(), *self.credentials):
            if isinstance(credential, ClientCertificate):
                return credential
        return None

    def _choose(
        self, card: AgentCard, requirement: SecurityRequirement
    ) -> list[tuple[str, Credential, frozenset[str]]] | None:
        chosen = []
        for name, scopes in requirement.schemes.items():
            scheme = card.security_schemes.get(name)
            if scheme is None:
                return None  # the card requires a scheme it never declares
            credential = self.by_scheme.get(name)
            if credential is None:
                credential = next((c for c in self.credentials if c.supports(scheme)), None)
            if credential is None:
                return None
            chosen.append((name, credential, frozenset(scopes.list)))
        return chosen

    def __repr__(self) -> str:
        return f"Credentials({self.credentials!r}, by_scheme={sorted(self.by_scheme)!r})"


def _requirements(card: AgentCard, skill: str | None) -> list[SecurityRequirement]:
    if skill is not None:
        for entry in card.skills:
            if entry.id == skill and entry.security_requirements:
                return list(entry.security_requirements)
    return list(card.security_requirements)


def _merge(applied: list[tuple[str, RequestAuth]]) -> RequestAuth | None:
    """One RequestAuth from several; None when two schemes want the same header or param."""
    headers: dict[str, str] = {}
    query: dict[str, str] = {}
    for _, part in applied:
        for name, value in part.headers.items():
            if name.lower() == "cookie" and "cookie" in {h.lower() for h in headers}:
                key = next(h for h in headers if h.lower() == "cookie")
                headers[key] = f"{headers[key]}; {value}"
                continue
            if name.lower() in {h.lower() for h in headers}:
                return None
            headers[name] = value
        for name, value in part.query.items():
            if name in query:
                return None
            query[name] = value
    return RequestAuth(headers=headers, query=query, schemes=tuple(name for name, _ in applied))


def _is_bearer(scheme: SecurityScheme) -> bool:
    http = scheme.http_auth_security_scheme
    return (
        (http is not None and http.scheme.lower() == "bearer")
        or scheme.oauth2_security_scheme is not None
        or scheme.open_id_connect_security_scheme is not None
    )


def _describe(requirement: SecurityRequirement) -> str:
    if not requirement.schemes:
        return "nothing"
    parts = []
    for name, scopes in requirement.schemes.items():
        parts.append(f"{name} (scopes {' '.join(scopes.list)})" if scopes.list else name)
    return " and ".join(parts)
