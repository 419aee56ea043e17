"""The Authenticator: OR-of-AND requirements, scopes, challenges, anonymous access, config."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from peerwire.errors import AuthenticationError, PermissionDeniedError, ServerBusyError
from peerwire.security import (
    APIKeyVerifier,
    Authenticator,
    JWTValidator,
    JWTVerifier,
    MTLSVerifier,
    OIDCVerifier,
    PeerCertificate,
    Principal,
    RequestCredentials,
)
from peerwire.security.schemes import bearer_token
from peerwire.types import (
    APIKeySecurityScheme,
    HTTPAuthSecurityScheme,
    MutualTlsSecurityScheme,
    OpenIdConnectSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

from ._support import AUDIENCE, Keys, authority, client_certificate, mint, pem, public_jwks

ISSUER = "https://idp.example"

SCHEMES = {
    "key": SecurityScheme(
        api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-API-Key")
    ),
    "bearer": SecurityScheme(
        http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer", bearer_format="JWT")
    ),
    "mtls": SecurityScheme(mtls_security_scheme=MutualTlsSecurityScheme()),
}


def requirement(**schemes: list[str]) -> SecurityRequirement:
    return SecurityRequirement(schemes={k: StringList(list=v) for k, v in schemes.items()})


CA = authority("Test CA")
OTHER_CA = authority("Other CA")


def build(keys: Keys, requirements: list[SecurityRequirement], **options: Any) -> Authenticator:
    verifiers: dict[str, Any] = {
        "key": APIKeyVerifier(
            {
                "key-alice": "alice",
                "key-bob": Principal(id="bob", scopes=frozenset({"delivery.write"})),
            }
        ),
        "bearer": JWTVerifier(
            JWTValidator(jwks=public_jwks(keys.rsa), issuer=ISSUER, audience=AUDIENCE)
        ),
        "mtls": MTLSVerifier([CA.pem]),
    }
    return Authenticator(SCHEMES, requirements, verifiers, realm="test", **options)


def bearer(keys: Keys, **options: Any) -> dict[str, str]:
    return {"Authorization": "Bearer " + mint(keys.rsa, issuer=ISSUER, **options)}


def request(headers: dict[str, str] | None = None, **options: Any) -> RequestCredentials:
    return RequestCredentials(headers or {}, **options)


def certificate(issuer: Any = CA, name: str = "billing") -> PeerCertificate:
    return PeerCertificate.from_pem(pem(client_certificate(issuer, name)))


async def test_any_alternative_will_do(keys: Keys) -> None:
    auth = build(keys, [requirement(bearer=[]), requirement(key=[])])
    by_key = await auth.authenticate(request({"X-API-Key": "key-alice"}))
    assert (by_key.id, by_key.scheme) == ("alice", "key")
    by_token = await auth.authenticate(request(bearer(keys, subject="carol")))
    assert (by_token.id, by_token.scheme) == ("carol", "bearer")
    assert by_token.claims["iss"] == ISSUER


async def test_the_first_satisfied_alternative_in_card_order_wins(keys: Keys) -> None:
    auth = build(keys, [requirement(bearer=[]), requirement(key=[])])
    both = request({"X-API-Key": "key-alice", **bearer(keys, subject="carol")})
    assert (await auth.authenticate(both)).id == "carol"


async def test_every_scheme_of_an_alternative_is_needed(keys: Keys) -> None:
    auth = build(keys, [requirement(key=[], mtls=[])])
    with pytest.raises(AuthenticationError, match="key and mtls"):
        await auth.authenticate(request({"X-API-Key": "key-alice"}))
    principal = await auth.authenticate(
        request({"X-API-Key": "key-bob"}, peer_certificate=certificate())
    )
    # The first scheme names the caller; the scopes of all of them count.
    assert principal.id == "bob"
    assert principal.scopes == {"delivery.write"}


async def test_scopes_an_alternative_lists_are_required(keys: Keys) -> None:
    auth = build(keys, [requirement(bearer=["delivery.write", "openid"])])
    principal = await auth.authenticate(request(bearer(keys, scope="openid delivery.write x")))
    assert principal.scopes == {"openid", "delivery.write", "x"}
    with pytest.raises(PermissionDeniedError, match="lack the scope") as raised:
        await auth.authenticate(request(bearer(keys, scope="openid")))
    challenge = raised.value.www_authenticate
    assert challenge.startswith('Bearer realm="test"')
    assert 'error="insufficient_scope"' in challenge
    assert 'scope="delivery.write"' in challenge


async def test_nothing_presented_names_every_scheme_that_would_do(keys: Keys) -> None:
    auth = build(keys, [requirement(bearer=["openid"]), requirement(key=[], mtls=[])])
    with pytest.raises(AuthenticationError) as raised:
        await auth.authenticate(request())
    error = raised.value
    assert error.message == ("Authentication required: bearer (scopes openid) or key and mtls")
    assert error.www_authenticate == (
        'Bearer realm="test", APIKey realm="test", in="header", name="X-API-Key", '
        'MutualTLS realm="test"'
    )


async def test_an_invalid_credential_is_reported_as_such(keys: Keys) -> None:
    auth = build(keys, [requirement(bearer=[]), requirement(key=[])])
    with pytest.raises(AuthenticationError, match="has expired") as raised:
        await auth.authenticate(request(bearer(keys, lifetime=-3600)))
    assert 'error="invalid_token"' in raised.value.www_authenticate
    assert 'error_description="The token has expired' in raised.value.www_authenticate
    with pytest.raises(AuthenticationError, match="API key in header 'X-API-Key' is not valid"):
        await auth.authenticate(request({"X-API-Key": "guess"}))


async def test_a_valid_alternative_still_wins_over_an_invalid_one(keys: Keys) -> None:
    auth = build(keys, [requirement(bearer=[]), requirement(key=[])])
    mixed = request({"X-API-Key": "key-alice", "Authorization": "Bearer garbage"})
    assert (await auth.authenticate(mixed)).id == "alice"


async def test_anonymous_callers_are_admitted_where_the_card_allows(keys: Keys) -> None:
    auth = build(keys, [requirement(bearer=[]), SecurityRequirement()])
    assert auth.anonymous_allowed
    anonymous = await auth.authenticate(request())
    assert not anonymous.authenticated
    # Who presents credentials is still identified, and refused when they are bad.
    assert (await auth.authenticate(request({"X-API-Key": "key-alice"}))).id == "alice"
    with pytest.raises(AuthenticationError):
        await auth.authenticate(request({"X-API-Key": "guess"}))


async def test_a_card_without_requirements_admits_everyone(keys: Keys) -> None:
    auth = build(keys, [])
    assert not (await auth.authenticate(request())).authenticated


async def test_api_keys_in_query_and_cookie(keys: Keys) -> None:
    schemes = {
        "q": SecurityScheme(
            api_key_security_scheme=APIKeySecurityScheme(location="query", name="key")
        ),
        "c": SecurityScheme(
            api_key_security_scheme=APIKeySecurityScheme(location="cookie", name="sid")
        ),
    }
    verifier = APIKeyVerifier({"k1": "alice"})
    auth = Authenticator(
        schemes, [requirement(q=[]), requirement(c=[])], {"q": verifier, "c": verifier}
    )
    by_query = RequestCredentials.from_headers([], query_string=b"a=1&key=k1&key=other")
    assert (await auth.authenticate(by_query)).scheme == "q"
    by_cookie = request({"Cookie": 'theme=dark; sid="k1"'})
    assert (await auth.authenticate(by_cookie)).scheme == "c"


async def test_the_bearer_header_must_hold_one_token() -> None:
    assert bearer_token(request({"Authorization": "Basic abc"})) is None
    assert bearer_token(request({"authorization": "bearer abc.def-_~+/="})) == "abc.def-_~+/="
    with pytest.raises(AuthenticationError, match="one bearer token"):
        bearer_token(request({"Authorization": "Bearer a b"}))


async def test_an_unreachable_issuer_is_a_temporary_failure(keys: Keys) -> None:
    schemes = {
        "oidc": SecurityScheme(
            open_id_connect_security_scheme=OpenIdConnectSecurityScheme(
                open_id_connect_url="http://127.0.0.1:9/.well-known/openid-configuration"
            )
        )
    }
    auth = Authenticator(
        schemes, [requirement(oidc=[])], {"oidc": OIDCVerifier(audience=AUDIENCE, timeout=5)}
    )
    with pytest.raises(ServerBusyError, match="retry later"):
        await auth.authenticate(request(bearer(keys)))
    with pytest.raises(AuthenticationError):  # nothing presented: nothing to check
        await auth.authenticate(request())


async def test_refusals_are_logged_without_credentials(
    keys: Keys, caplog: pytest.LogCaptureFixture
) -> None:
    auth = build(keys, [requirement(key=[])])
    caplog.set_level(logging.INFO, logger="peerwire")
    with pytest.raises(AuthenticationError):
        await auth.authenticate(request({"X-API-Key": "super-secret-guess"}))
    assert "not valid" in caplog.text
    assert "super-secret-guess" not in caplog.text


@pytest.mark.parametrize(
    ("verifiers", "requirements", "match"),
    [
        ({}, [requirement(key=[])], "no verifier is configured for the security scheme 'key'"),
        ({"key": APIKeyVerifier({"k": "a"})}, [requirement(nope=[])], "undeclared scheme 'nope'"),
        (
            {"mtls": APIKeyVerifier({"k": "a"})},
            [],
            "APIKeyVerifier cannot verify the scheme 'mtls'",
        ),
        ({"ghost": APIKeyVerifier({"k": "a"})}, [], "undeclared scheme 'ghost'"),
    ],
)
def test_configuration_mistakes_fail_at_construction(
    verifiers: dict[str, Any], requirements: list[SecurityRequirement], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        Authenticator(SCHEMES, requirements, verifiers)


def test_verifiers_refuse_empty_configuration() -> None:
    with pytest.raises(ValueError):
        APIKeyVerifier({})
    with pytest.raises(ValueError):
        APIKeyVerifier({"": "alice"})
    with pytest.raises(ValueError, match="audience"):
        OIDCVerifier(audience="")
    with pytest.raises(ValueError, match="none"):
        OIDCVerifier(audience="a", algorithms=["none"])


def test_credentials_repr_shows_no_values() -> None:
    text = repr(request({"Authorization": "Bearer s3cret", "X-API-Key": "k3y"}))
    assert "s3cret" not in text and "k3y" not in text
    assert "authorization" in text
