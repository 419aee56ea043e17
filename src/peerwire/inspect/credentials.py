"""The credentials the user typed into the page, one per security scheme of the card.

They live in the backend's memory only (``CredentialStore``), never on disk and never sent
back to the page: the page only learns which schemes have a credential, and of what kind.
Each becomes the ``peerwire.client.auth`` credential of its scheme (``Credentials(by_scheme=
...)``), so the ``Client`` chooses per call what the card asks for, as any client would.

What the page can give, by the scheme's type:

* API key (``apiKeySecurityScheme``): ``{"kind": "apiKey", "key": ...}``;
* HTTP Bearer, and OpenID Connect with a token already in hand: ``{"kind": "bearer",
  "token": ...}``; HTTP Basic: ``{"kind": "basic", "username": ..., "password": ...}``;
* OAuth 2.0 client credentials: ``{"kind": "oauth2", "clientId", "clientSecret",
  "tokenUrl" (default: the card's), "scopes": [...]}``: tokens are fetched and renewed;
* mutual TLS: ``{"kind": "mtls", "certFile", "keyFile", "caFile", "password"}``: paths of
  PEM files on this machine, read (never copied) when the client connects.

Credentials are bound to the agent they were typed for (its origin, ``bound_to``): they are
dropped when the page switches to an agent at another origin, and never presented to an
interface elsewhere, whatever its card names its schemes (``may_go_to``). A name such as
``key`` is easy to guess, so a stranger's card must not receive a key typed for another.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..client.auth import (
    APIKey,
    BasicAuth,
    BearerToken,
    ClientCertificate,
    Credential,
    Credentials,
    OAuth2ClientCredentials,
)
from ..errors import PeerwireError
from ..types import SecurityScheme

__all__ = ["CredentialError", "CredentialStore", "origin_of", "same_agent", "scheme_form"]


class CredentialError(PeerwireError, ValueError):
    """What the page sent cannot be a credential (said in words the page shows)."""


_DEFAULT_PORTS = {"http": 80, "https": 443, "grpc": 443, "grpcs": 443}


def origin_of(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of ``url``; a gRPC target without a scheme (``host:port``) is
    read as one. None: no host to be had."""
    text = url.strip()
    parts = urlsplit(text if "://" in text else f"grpc://{text}")
    try:
        port = parts.port
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    if not host:
        return None
    scheme = parts.scheme.lower()
    return scheme, host, port if port is not None else _DEFAULT_PORTS.get(scheme, 0)


def same_agent(agent_url: str, url: str, *, grpc: bool = False) -> bool:
    """Whether credentials typed for the agent at ``agent_url`` may go to ``url``: an HTTP
    URL at the very same origin; a gRPC target (``grpc``: served on a port of its own) on
    the same host."""
    bound = origin_of(agent_url)
    return bound is not None and _within(bound, url, grpc)


def _within(bound: tuple[str, str, int], url: str, grpc: bool) -> bool:
    target = origin_of(url)
    if target is None:
        return False
    return target[1] == bound[1] if grpc else target == bound


def scheme_form(name: str, scheme: SecurityScheme) -> dict[str, Any]:
    """What the page asks for one scheme of the card: its kind and where it goes."""
    if (api_key := scheme.api_key_security_scheme) is not None:
        return {
            "name": name,
            "kind": "apiKey",
            "where": f"{api_key.location} {api_key.name}",
            "description": api_key.description,
        }
    if (http := scheme.http_auth_security_scheme) is not None:
        basic = http.scheme.lower() == "basic"
        return {
            "name": name,
            "kind": "basic" if basic else "bearer",
            "where": f"Authorization: {http.scheme}"
            + (f" ({http.bearer_format})" if http.bearer_format else ""),
            "description": http.description,
        }
    if (oauth2 := scheme.oauth2_security_scheme) is not None:
        flow = oauth2.flows.client_credentials
        return {
            "name": name,
            "kind": "oauth2" if flow is not None else "bearer",
            "where": "OAuth 2.0 " + ("client credentials" if flow else "token (no client flow)"),
            "tokenUrl": flow.token_url if flow is not None else "",
            "scopes": sorted(flow.scopes) if flow is not None else [],
            "description": oauth2.description,
        }
    if (oidc := scheme.open_id_connect_security_scheme) is not None:
        return {
            "name": name,
            "kind": "bearer",
            "where": f"OpenID Connect ({oidc.open_id_connect_url})",
            "description": oidc.description,
        }
    if (mtls := scheme.mtls_security_scheme) is not None:
        return {
            "name": name,
            "kind": "mtls",
            "where": "client certificate (TLS)",
            "description": mtls.description,
        }
    return {"name": name, "kind": "unknown", "where": "a scheme this inspector does not know"}


def _text(fields: Mapping[str, Any], key: str, *, required: bool = True) -> str:
    value = fields.get(key, "")
    if not isinstance(value, str):
        raise CredentialError(f"{key} must be text")
    value = value.strip()
    if required and not value:
        raise CredentialError(f"{key} is empty")
    return value


@dataclass(frozen=True)
class _Held:
    kind: str
    credential: Credential
    secrets: tuple[str, ...]


class CredentialStore:
    """Credentials by scheme name, in memory."""

    def __init__(self) -> None:
        self._held: dict[str, _Held] = {}
        self.bound_to: tuple[str, str, int] | None = None

    def set(
        self,
        scheme_name: str,
        fields: Mapping[str, Any],
        *,
        agent_url: str,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        """Hold the credential ``fields`` describe for ``scheme_name`` (replacing any), for
        the agent at ``agent_url`` only: the credentials held for an agent at another origin
        are dropped. ``http`` is the client token requests go through (OAuth 2.0)."""
        if not scheme_name:
            raise CredentialError("name the security scheme the credential is for")
        origin = origin_of(agent_url)
        if origin is None:
            raise CredentialError("connect to an agent first: a credential is for one agent")
        held = _build(fields, http)
        if origin != self.bound_to:
            self._held.clear()
            self.bound_to = origin
        self._held[scheme_name] = held

    def follow(self, agent_url: str) -> bool:
        """The page now shows the agent at ``agent_url``: drop every credential typed for
        an agent at another origin. True when some were dropped."""
        if self.bound_to is None or origin_of(agent_url) == self.bound_to:
            return False
        dropped = bool(self._held)
        self.clear()
        return dropped

    def may_go_to(self, url: str, *, grpc: bool = False) -> bool:
        """Whether an interface at ``url`` may be given these credentials: an HTTP one at
        the very origin they were typed for, a gRPC one (``grpc``: its own port) on the
        same host."""
        return self.bound_to is not None and _within(self.bound_to, url, grpc)

    def remove(self, scheme_name: str) -> None:
        self._held.pop(scheme_name, None)

    def clear(self) -> None:
        self._held.clear()
        self.bound_to = None

    def credentials(self) -> Credentials | None:
        if not self._held:
            return None
        # A client certificate belongs to the TLS connection, not to one scheme: it serves
        # any mTLS scheme of the card, whatever name the page gave it.
        certificates = [h.credential for h in self._held.values() if h.kind == "mtls"]
        return Credentials(
            *certificates, by_scheme={name: held.credential for name, held in self._held.items()}
        )

    def as_list(self) -> list[Credential]:
        return [held.credential for held in self._held.values()]

    def secrets(self) -> list[str]:
        return [secret for held in self._held.values() for secret in held.secrets]

    def summary(self) -> dict[str, str]:
        """Scheme name -> kind: all the page ever learns back."""
        return {name: held.kind for name, held in self._held.items()}


def _build(fields: Mapping[str, Any], http: httpx.AsyncClient | None) -> _Held:
    kind = fields.get("kind")
    try:
        if kind == "apiKey":
            key = _text(fields, "key")
            return _Held(kind, APIKey(key), (key,))
        if kind == "bearer":
            token = _text(fields, "token")
            return _Held(kind, BearerToken(token), (token,))
        if kind == "basic":
            user, password = _text(fields, "username"), _text(fields, "password", required=False)
            return _Held(kind, BasicAuth(user, password), (password,))
        if kind == "oauth2":
            secret = _text(fields, "clientSecret", required=False)
            scopes = fields.get("scopes") or []
            if not isinstance(scopes, list) or not all(isinstance(s, str) for s in scopes):
                raise CredentialError("scopes must be a list of text")
            credential = OAuth2ClientCredentials(
                _text(fields, "clientId"),
                secret,
                token_url=_text(fields, "tokenUrl"),
                scopes=scopes,
                http=http,
            )
            return _Held(kind, credential, (secret,))
        if kind == "mtls":
            key_password = _text(fields, "password", required=False) or None
            files = {
                "certFile": _text(fields, "certFile"),
                "keyFile": _text(fields, "keyFile", required=False),
                "caFile": _text(fields, "caFile", required=False),
            }
            for name, path in files.items():
                if path and not Path(path).is_file():
                    raise CredentialError(f"{name} {path}: no such file on this machine")
            try:
                certificate = ClientCertificate(
                    files["certFile"],
                    files["keyFile"] or None,
                    password=key_password,
                    cafile=files["caFile"] or None,
                )
            except (ValueError, OSError) as exc:
                raise CredentialError(
                    f"the certificate {files['certFile']} (with its key) cannot be used: {exc}"
                ) from None
            return _Held(kind, certificate, (key_password,) if key_password else ())
    except CredentialError:
        raise
    except (ValueError, OSError) as exc:
        # An unreadable certificate file, a token URL that is not HTTPS, an empty key...
        raise CredentialError(str(exc)) from None
    raise CredentialError(
        f"unknown credential kind {kind!r} (apiKey, bearer, basic, oauth2 or mtls)"
    )
