"""Security schemes and requirements declared by agent cards and skills (A2A spec §4.5)."""

from __future__ import annotations

import builtins

from ._base import Model

__all__ = [
    "APIKeySecurityScheme",
    "AuthorizationCodeOAuthFlow",
    "ClientCredentialsOAuthFlow",
    "DeviceCodeOAuthFlow",
    "HTTPAuthSecurityScheme",
    "ImplicitOAuthFlow",
    "MutualTlsSecurityScheme",
    "OAuth2SecurityScheme",
    "OAuthFlows",
    "OpenIdConnectSecurityScheme",
    "PasswordOAuthFlow",
    "SecurityRequirement",
    "SecurityScheme",
    "StringList",
]


class StringList(Model, frozen=True, kw_only=True):
    """A list of strings (the scopes of one scheme inside a SecurityRequirement)."""

    # ``builtins.list``: inside this class body the bare name ``list`` is the field itself, so
    # ``list[str]`` would not resolve when msgspec builds a decoder.
    list: builtins.list[str] = []


class SecurityRequirement(Model, frozen=True, kw_only=True):
    """Schemes that must all be satisfied (AND); a list of requirements is alternatives (OR)."""

    schemes: dict[str, StringList] = {}


class APIKeySecurityScheme(Model, frozen=True, kw_only=True):
    description: str = ""
    location: str
    name: str

    def __post_init__(self) -> None:
        if self.location not in ("header", "query", "cookie"):
            raise ValueError("location must be 'header', 'query' or 'cookie'")


class HTTPAuthSecurityScheme(Model, frozen=True, kw_only=True):
    description: str = ""
    scheme: str
    bearer_format: str = ""


class AuthorizationCodeOAuthFlow(Model, frozen=True, kw_only=True):
    authorization_url: str
    token_url: str
    refresh_url: str = ""
    scopes: dict[str, str]
    pkce_required: bool = False


class ClientCredentialsOAuthFlow(Model, frozen=True, kw_only=True):
    token_url: str
    refresh_url: str = ""
    scopes: dict[str, str]


class DeviceCodeOAuthFlow(Model, frozen=True, kw_only=True):
    device_authorization_url: str
    token_url: str
    refresh_url: str = ""
    scopes: dict[str, str]


class ImplicitOAuthFlow(Model, frozen=True, kw_only=True):
    """Deprecated by the spec; kept for compatibility."""

    authorization_url: str = ""
    refresh_url: str = ""
    scopes: dict[str, str] = {}


class PasswordOAuthFlow(Model, frozen=True, kw_only=True):
    """Deprecated by the spec; kept for compatibility."""

    token_url: str = ""
    refresh_url: str = ""
    scopes: dict[str, str] = {}


class OAuthFlows(Model, frozen=True, kw_only=True):
    """Exactly one OAuth flow (one flow per scheme in 1.0)."""

    authorization_code: AuthorizationCodeOAuthFlow | None = None
    client_credentials: ClientCredentialsOAuthFlow | None = None
    implicit: ImplicitOAuthFlow | None = None
    password: PasswordOAuthFlow | None = None
    device_code: DeviceCodeOAuthFlow | None = None

    def __post_init__(self) -> None:
        flows = (
            self.authorization_code,
            self.client_credentials,
            self.implicit,
            self.password,
            self.device_code,
        )
        if sum(f is not None for f in flows) != 1:
            raise ValueError("OAuthFlows carries exactly one flow")


class OAuth2SecurityScheme(Model, frozen=True, kw_only=True):
    description: str = ""
    flows: OAuthFlows
    oauth2_metadata_url: str = ""


class OpenIdConnectSecurityScheme(Model, frozen=True, kw_only=True):
    description: str = ""
    open_id_connect_url: str


class MutualTlsSecurityScheme(Model, frozen=True, kw_only=True):
    description: str = ""


class SecurityScheme(Model, frozen=True, kw_only=True):
    """One security scheme: exactly one member is set."""

    api_key_security_scheme: APIKeySecurityScheme | None = None
    http_auth_security_scheme: HTTPAuthSecurityScheme | None = None
    oauth2_security_scheme: OAuth2SecurityScheme | None = None
    open_id_connect_security_scheme: OpenIdConnectSecurityScheme | None = None
    mtls_security_scheme: MutualTlsSecurityScheme | None = None

    def __post_init__(self) -> None:
        if sum(v is not None for v in self._members()) != 1:
            raise ValueError("a SecurityScheme carries exactly one scheme")

    def _members(
        self,
    ) -> tuple[
        APIKeySecurityScheme | None,
        HTTPAuthSecurityScheme | None,
        OAuth2SecurityScheme | None,
        OpenIdConnectSecurityScheme | None,
        MutualTlsSecurityScheme | None,
    ]:
        return (
            self.api_key_security_scheme,
            self.http_auth_security_scheme,
            self.oauth2_security_scheme,
            self.open_id_connect_security_scheme,
            self.mtls_security_scheme,
        )

    @property
    def scheme(
        self,
    ) -> (
        APIKeySecurityScheme
        | HTTPAuthSecurityScheme
        | OAuth2SecurityScheme
        | OpenIdConnectSecurityScheme
        | MutualTlsSecurityScheme
    ):
        """The one scheme that is set."""
        for member in self._members():
            if member is not None:
                return member
        raise AssertionError("unreachable: validated in __post_init__")
