"""JWT validation against a JWKS: what is accepted, and every way a bad token is refused."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import pytest
from joserfc.jwk import OctKey, RSAKey

from peerwire.errors import AuthenticationError, ServerBusyError
from peerwire.security import JWTValidator, RemoteJWKS, StaticJWKS
from peerwire.security._fetch import FetchError
from peerwire.security.jwt import token_scopes

from ._support import (
    AUDIENCE,
    Issuer,
    JsonApp,
    Keys,
    b64,
    hmac_token,
    mint,
    public_jwks,
    rs256_token,
    serve_asgi,
    unsigned,
)

ISSUER = "https://idp.example"


def validator(keys: Keys, **options: Any) -> JWTValidator:
    options.setdefault("jwks", public_jwks(keys.rsa, keys.ec))
    options.setdefault("issuer", ISSUER)
    options.setdefault("audience", AUDIENCE)
    return JWTValidator(**options)


def token(keys: Keys, key: Any = None, **options: Any) -> str:
    options.setdefault("issuer", ISSUER)
    return mint(key or keys.rsa, **options)


async def refused(check: JWTValidator, value: str, match: str) -> None:
    with pytest.raises(AuthenticationError, match=match):
        await check.validate(value)


async def test_a_valid_rsa_token_yields_its_claims(keys: Keys) -> None:
    claims = await validator(keys).validate(token(keys, scope="a2a.read a2a.write"))
    assert claims["sub"] == "alice"
    assert token_scopes(claims) == {"a2a.read", "a2a.write"}


async def test_a_valid_ec_token_is_accepted(keys: Keys) -> None:
    claims = await validator(keys).validate(token(keys, keys.ec))
    assert claims["iss"] == ISSUER


async def test_audience_may_be_a_list(keys: Keys) -> None:
    value = token(keys, audience=["https://other", AUDIENCE])
    assert (await validator(keys).validate(value))["sub"] == "alice"


async def test_scp_lists_count_as_scopes() -> None:
    assert token_scopes({"scp": ["a", "b"], "scope": "c"}) == {"a", "b", "c"}


async def test_a_forged_token_is_refused(keys: Keys) -> None:
    # Signed with the attacker's key under the real key id.
    await refused(validator(keys), token(keys, keys.attacker), "signature does not verify")


async def test_a_tampered_payload_is_refused(keys: Keys) -> None:
    header, _, signature = token(keys).split(".")
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "admin", "exp": int(time.time()) + 300}
    forged = f"{header}.{b64(json.dumps(claims).encode())}.{signature}"
    await refused(validator(keys), forged, "signature does not verify")


async def test_an_expired_token_is_refused(keys: Keys) -> None:
    past = time.time() - 3600
    await refused(validator(keys), token(keys, now=past, lifetime=60), "expired")


async def test_clock_skew_is_tolerated_up_to_the_leeway(keys: Keys) -> None:
    just_expired = token(keys, now=time.time() - 70, lifetime=60)  # expired 10 s ago
    assert await validator(keys, leeway=30).validate(just_expired)
    await refused(validator(keys, leeway=5), just_expired, "expired")


async def test_a_token_not_valid_yet_is_refused(keys: Keys) -> None:
    await refused(validator(keys), token(keys, nbf=int(time.time()) + 600), "not valid yet")


async def test_a_token_issued_in_the_future_is_refused(keys: Keys) -> None:
    await refused(validator(keys), token(keys, iat=int(time.time()) + 600), "issued in the future")


async def test_a_token_for_another_audience_is_refused(keys: Keys) -> None:
    await refused(validator(keys), token(keys, audience="https://other"), "another audience")


async def test_a_token_without_audience_is_refused(keys: Keys) -> None:
    await refused(validator(keys), token(keys, aud=None), "another audience")


async def test_a_token_from_another_issuer_is_refused(keys: Keys) -> None:
    await refused(validator(keys), token(keys, issuer="https://evil.example"), "issuer")


async def test_a_token_without_expiry_is_refused_by_default(keys: Keys) -> None:
    value = token(keys, exp=None)
    await refused(validator(keys), value, "no expiry")
    assert await validator(keys, require_exp=False).validate(value)


async def test_a_token_with_a_non_numeric_expiry_is_refused(keys: Keys) -> None:
    await refused(validator(keys), token(keys, exp="tomorrow"), "exp claim is not a number")


async def test_a_token_without_subject_is_refused(keys: Keys) -> None:
    await refused(validator(keys), token(keys, sub=None), "'sub'")


async def test_alg_none_is_refused(keys: Keys) -> None:
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": int(time.time()) + 300}
    await refused(validator(keys), unsigned(claims), "alg none")
    await refused(validator(keys), unsigned(claims, {"alg": "NONE"}), "alg none")


def test_none_can_never_be_allowed(keys: Keys) -> None:
    with pytest.raises(ValueError, match="none"):
        validator(keys, algorithms=["RS256", "none"])


async def test_hs_rs_key_confusion_is_refused(keys: Keys) -> None:
    # The classic attack: HS256 "signed" with the RSA public key (PEM) as the HMAC secret.
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "admin", "exp": int(time.time()) + 300}
    secret = keys.rsa.as_pem(private=False)
    forged = hmac_token(secret, claims, kid="rsa-1")
    await refused(validator(keys), forged, "HS256 is not accepted")
    # Even when HS256 is allowed, the RSA key cannot check an HMAC.
    await refused(validator(keys, algorithms=["RS256", "HS256"]), forged, "does not fit HS256")


async def test_an_ec_alg_naming_an_rsa_key_is_refused(keys: Keys) -> None:
    value = mint(keys.ec, issuer=ISSUER, header={"kid": "rsa-1"})
    await refused(validator(keys), value, "does not fit ES256")


async def test_a_shared_secret_works_only_where_explicitly_configured() -> None:
    secret = OctKey.generate_key(256, parameters={"kid": "hs"})
    value = mint(secret, issuer=ISSUER, alg="HS256")
    check = JWTValidator(jwks=[secret], issuer=ISSUER, audience=AUDIENCE, algorithms=["HS256"])
    assert (await check.validate(value))["sub"] == "alice"
    await refused(
        JWTValidator(jwks=[secret], issuer=ISSUER, audience=AUDIENCE), value, "not accepted"
    )


async def test_unknown_key_ids_are_refused(keys: Keys) -> None:
    other = RSAKey.generate_key(2048, parameters={"kid": "nobody"})
    await refused(validator(keys), token(keys, other), "No trusted key")


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("not-a-token", "not a compact JWS"),
        ("a.b.c.d.e", "encrypted JWT"),
        ("!!!.e30.sig", "not base64url"),
        (b64(b"[1]") + ".e30.sig", "not a JSON object"),
    ],
)
async def test_malformed_tokens_are_refused(keys: Keys, value: str, match: str) -> None:
    await refused(validator(keys), value, match)


async def test_critical_and_unencoded_payload_headers_are_refused(keys: Keys) -> None:
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": int(time.time()) + 300}
    crit = rs256_token(keys.rsa, {"crit": ["x-policy"], "x-policy": 1}, claims)
    await refused(validator(keys), crit, "'crit'")
    b64_false = rs256_token(keys.rsa, {"b64": False}, claims)
    await refused(validator(keys), b64_false, "'b64'")
    # The hand-made signer itself is sound: the same claims without those headers pass.
    assert await validator(keys).validate(rs256_token(keys.rsa, {}, claims))


async def test_oversized_tokens_are_refused(keys: Keys) -> None:
    await refused(validator(keys, max_token_bytes=100), token(keys), "larger than")


async def test_refusals_are_logged_without_the_token(
    keys: Keys, caplog: pytest.LogCaptureFixture
) -> None:
    value = token(keys, audience="https://other")
    caplog.set_level(logging.DEBUG, logger="peerwire")
    with pytest.raises(AuthenticationError) as raised:
        await validator(keys).validate(value)
    assert value not in str(raised.value)
    assert value.split(".")[1] not in caplog.text


# -- remote key sets ---------------------------------------------------------------------------


async def test_keys_are_fetched_from_the_issuer_and_cached(issuer: Issuer) -> None:
    jwks = RemoteJWKS(issuer.url + "/jwks.json")
    check = JWTValidator(jwks=jwks, issuer=issuer.url, audience=AUDIENCE)
    for _ in range(3):
        assert (await check.validate(issuer.token()))["sub"] == "alice"
    assert issuer.jwks_requests == 1


async def test_an_unknown_key_id_refetches_once_for_rotation(issuer: Issuer) -> None:
    clock = [0.0]
    jwks = RemoteJWKS(issuer.url + "/jwks.json", min_refresh_seconds=30, clock=lambda: clock[0])
    check = JWTValidator(jwks=jwks, issuer=issuer.url, audience=AUDIENCE)
    issuer.published = [issuer.keys.rsa]
    await check.validate(issuer.token())
    # The issuer rotates to its EC key; the first token with the new kid triggers a refetch.
    issuer.published = [issuer.keys.ec]
    clock[0] = 31.0
    assert await check.validate(issuer.token(issuer.keys.ec))
    assert issuer.jwks_requests == 2
    # Made-up key ids do not turn into a request each: refetches are rate limited.
    stranger = RSAKey.generate_key(2048, parameters={"kid": "made-up"})
    for _ in range(3):
        await refused(check, issuer.token(stranger), "No trusted key")
    assert issuer.jwks_requests == 2


async def test_symmetric_keys_in_a_published_jwks_are_ignored(keys: Keys) -> None:
    secret = OctKey.generate_key(256, parameters={"kid": "hs"})
    host = JsonApp({"/jwks.json": {"keys": [secret.as_dict(private=True)]}})
    async with serve_asgi(host) as url:
        jwks = RemoteJWKS(url + "/jwks.json")
        check = JWTValidator(jwks=jwks, issuer=ISSUER, audience=AUDIENCE, algorithms=["HS256"])
        await refused(check, mint(secret, issuer=ISSUER, alg="HS256"), "No trusted key")


async def test_an_unreachable_jwks_refuses_tokens_with_a_clear_error(keys: Keys) -> None:
    host = JsonApp()
    async with serve_asgi(host) as url:
        check = JWTValidator(
            jwks=RemoteJWKS(url + "/missing.json"), issuer=ISSUER, audience=AUDIENCE
        )
        with pytest.raises(ServerBusyError, match="keys are unavailable; retry later"):
            await check.validate(token(keys))


def test_jwks_urls_must_be_https_or_loopback() -> None:
    with pytest.raises(ValueError, match="https"):
        RemoteJWKS("http://idp.example/jwks.json")
    RemoteJWKS("https://idp.example/jwks.json")
    RemoteJWKS("http://localhost:8080/jwks.json")


async def test_static_jwks_needs_a_key() -> None:
    with pytest.raises(ValueError, match="no usable keys"):
        StaticJWKS({"keys": [{"kty": "unknown"}]})


async def test_fetch_errors_name_what_failed() -> None:
    from peerwire.security._fetch import fetch_json

    host = JsonApp({"/list": [1, 2]})
    async with serve_asgi(host) as url:
        with pytest.raises(FetchError, match="HTTP 404"):
            await fetch_json(url + "/nothing", "JWKS")
        with pytest.raises(FetchError, match="not a JSON object"):
            await fetch_json(url + "/list", "JWKS")
