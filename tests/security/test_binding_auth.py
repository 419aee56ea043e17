"""Every security scheme accepting and refusing, on each binding, through peerwire's client.

The same agent is served over JSON-RPC, HTTP+JSON and gRPC at once; a client held to one
binding presents its credentials (``Client.connect(credentials=...)``, chosen by the card)
and gets the same outcome whichever binding it uses: the caller's principal owns what it
creates, and a refusal is an ``AuthenticationError`` (401 / UNAUTHENTICATED) or a
``PermissionDeniedError`` (403 / PERMISSION_DENIED) saying why, which changes nothing. The
last tests read the refusals as they are on the wire.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import grpc
import grpc.aio
import httpx
import msgspec
import pytest

from peerwire import Agent, TaskContext
from peerwire.bindings.grpc.convert import to_bytes
from peerwire.bindings.grpc.service import RPCS
from peerwire.bindings.grpc.status import DETAILS_KEY, decode_status
from peerwire.client.auth import APIKey, BearerToken, Credentials, OAuth2ClientCredentials
from peerwire.errors import AuthenticationError, PermissionDeniedError
from peerwire.security import APIKeyVerifier, JWTValidator, JWTVerifier, OIDCVerifier, Principal
from peerwire.types import (
    AgentCard,
    APIKeySecurityScheme,
    Binding,
    ClientCredentialsOAuthFlow,
    HTTPAuthSecurityScheme,
    ListTasksRequest,
    OAuth2SecurityScheme,
    OAuthFlows,
    OpenIdConnectSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

from ._bindings import BINDINGS, completed_text, connect, serving
from ._support import (
    AUDIENCE,
    TIMEOUT_S,
    Issuer,
    Keys,
    hmac_token,
    mint,
    public_jwks,
    unsigned,
)

ISSUER = "https://idp.example"


def requirement(**schemes: list[str]) -> SecurityRequirement:
    return SecurityRequirement(schemes={k: StringList(list=v) for k, v in schemes.items()})


def secured(schemes: dict[str, SecurityScheme], requirements: list[SecurityRequirement]) -> Agent:
    """An agent whose one skill completes with the id of the principal that called it."""
    agent = Agent("Secure Agent", security_schemes=schemes, security_requirements=requirements)

    @agent.skill()
    async def whoami(ctx: TaskContext) -> str:
        return ctx.owner

    return agent


def api_key(location: str, name: str) -> SecurityScheme:
    return SecurityScheme(
        api_key_security_scheme=APIKeySecurityScheme(location=location, name=name)
    )


def oidc(issuer: Issuer) -> SecurityScheme:
    return SecurityScheme(
        open_id_connect_security_scheme=OpenIdConnectSecurityScheme(
            open_id_connect_url=issuer.discovery_url
        )
    )


BEARER = SecurityScheme(
    http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer", bearer_format="JWT")
)


async def own_tasks(url: str, binding: str, credentials: Credentials) -> int:
    async with connect(url, binding, credentials=credentials) as client:
        return len([task async for task in client.list_tasks()])


# -- API keys ----------------------------------------------------------------------------------


@BINDINGS
@pytest.mark.parametrize(("location", "name"), [("header", "X-API-Key"), ("cookie", "session")])
async def test_api_keys_in_a_header_or_a_cookie(binding: str, location: str, name: str) -> None:
    agent = secured({"key": api_key(location, name)}, [requirement(key=[])])
    alice = Credentials(APIKey("k-alice"))
    async with serving(agent, auth={"key": APIKeyVerifier({"k-alice": "alice"})}) as url:
        async with connect(url, binding, credentials=alice) as client:
            assert completed_text(await client.send("hi")) == "alice"
        # The public card needs no credentials; every operation does.
        async with connect(url, binding) as nobody:
            with pytest.raises(AuthenticationError, match="Authentication required: key"):
                await nobody.send("hi")
        async with connect(url, binding, credentials=Credentials(APIKey("guess"))) as guesser:
            with pytest.raises(AuthenticationError, match=f"API key in {location}.*not valid"):
                await guesser.send("hi")
        assert await own_tasks(url, binding, alice) == 1  # the refusals created nothing


@BINDINGS
async def test_api_keys_in_the_query_string(binding: str) -> None:
    agent = secured({"key": api_key("query", "api_key")}, [requirement(key=[])])
    alice = Credentials(APIKey("k-alice"))
    async with serving(agent, auth={"key": APIKeyVerifier({"k-alice": "alice"})}) as url:
        async with connect(url, binding, credentials=alice) as client:
            if binding == Binding.GRPC:
                # No query string on gRPC: refused here, not sent without the key.
                with pytest.raises(AuthenticationError, match=r"query string.*gRPC"):
                    await client.send("hi")
            else:
                assert completed_text(await client.send("hi")) == "alice"
        async with connect(url, binding) as nobody:
            with pytest.raises(AuthenticationError, match="Authentication required"):
                await nobody.send("hi")


# -- bearer JWTs (a fixed issuer and key set) --------------------------------------------------


def bad_tokens(keys: Keys) -> list[tuple[str, str]]:
    """Tokens that must be refused, each with what the refusal says."""
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "admin", "exp": int(time.time()) + 300}
    public_pem = keys.rsa.as_pem(private=False)
    return [
        (mint(keys.rsa, issuer=ISSUER, lifetime=-3600), "expired"),
        (mint(keys.rsa, issuer=ISSUER, nbf=int(time.time()) + 3600), "not valid yet"),
        (mint(keys.rsa, issuer=ISSUER, audience="https://other.example"), "another audience"),
        (mint(keys.rsa, issuer="https://evil.example"), "issuer"),
        (mint(keys.attacker, issuer=ISSUER, subject="admin"), "signature"),
        (unsigned(claims), "alg none"),
        (hmac_token(public_pem, claims, kid="rsa-1"), "HS256 is not accepted"),
        ("not-a-jwt", "not a compact JWS"),
    ]


@BINDINGS
async def test_bearer_jwts(binding: str, keys: Keys, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="peerwire.security")
    tokens = bad_tokens(keys)
    agent = secured({"bearer": BEARER}, [requirement(bearer=[])])
    verifier = JWTVerifier(
        JWTValidator(jwks=public_jwks(keys.rsa), issuer=ISSUER, audience=AUDIENCE)
    )
    good = Credentials(BearerToken(mint(keys.rsa, issuer=ISSUER, subject="alice")))
    async with serving(agent, auth={"bearer": verifier}) as url:
        async with connect(url, binding, credentials=good) as client:
            assert completed_text(await client.send("hi")) == "alice"
        for token, mentions in tokens:
            bad = Credentials(BearerToken(token))
            async with connect(url, binding, credentials=bad) as client:
                with pytest.raises(AuthenticationError) as refused:
                    await client.send("hi")
                assert mentions in refused.value.message, (mentions, refused.value.message)
        assert await own_tasks(url, binding, good) == 1
    # Every refusal was logged, saying why and never what the token was.
    refusals = [r.getMessage() for r in caplog.records if "refused a request" in r.getMessage()]
    assert len(refusals) == len(tokens)
    for token, _ in tokens:
        signature = token.rsplit(".", 1)[-1] or token
        assert all(signature not in line for line in refusals)


# -- OpenID Connect and OAuth2, with a local issuer --------------------------------------------


@BINDINGS
async def test_openid_connect_discovery(binding: str, issuer: Issuer) -> None:
    agent = secured({"oidc": oidc(issuer)}, [requirement(oidc=["openid"])])
    fetched = OAuth2ClientCredentials(
        "client-a", "secret-a", token_url=issuer.url + "/token", issuer=issuer.url
    )
    async with serving(agent, auth={"oidc": OIDCVerifier(audience=AUDIENCE)}) as url:
        async with connect(url, binding, credentials=Credentials(fetched)) as client:
            assert completed_text(await client.send("hi")) == "alice"
        assert issuer.token_requests[-1]["scope"] == "openid"
        refusals: list[tuple[str, type[Exception], str]] = [
            (
                issuer.token(issuer="https://evil.example", scope="openid"),
                AuthenticationError,
                "iss",
            ),
            (
                issuer.token(audience="https://other", scope="openid"),
                AuthenticationError,
                "another audience",
            ),
            (issuer.token(scope="profile"), PermissionDeniedError, r"lack the scope\(s\) openid"),
        ]
        for token, error, mentions in refusals:
            async with connect(url, binding, credentials=Credentials(BearerToken(token))) as c:
                with pytest.raises(error, match=mentions):
                    await c.send("hi")


def scoped_agent(issuer: Issuer) -> Agent:
    """OAuth2 client credentials; ``write`` needs a scope beyond what the card asks for."""
    oauth = SecurityScheme(
        oauth2_security_scheme=OAuth2SecurityScheme(
            flows=OAuthFlows(
                client_credentials=ClientCredentialsOAuthFlow(
                    token_url=issuer.url + "/token",
                    scopes={"tasks.read": "See tasks", "tasks.write": "Change things"},
                )
            ),
            oauth2_metadata_url=issuer.oauth_metadata_url,
        )
    )
    agent = Agent(
        "Scoped Agent",
        security_schemes={"oauth": oauth},
        security_requirements=[requirement(oauth=["tasks.read"])],
    )

    @agent.skill()
    async def read(ctx: TaskContext) -> str:
        return f"read by {ctx.owner}"

    @agent.skill(scopes=["tasks.write"])
    async def write(ctx: TaskContext) -> str:
        return f"written by {ctx.owner}"

    return agent


@BINDINGS
async def test_oauth2_client_credentials_and_per_skill_scopes(binding: str, issuer: Issuer) -> None:
    fetched = OAuth2ClientCredentials("client-a", "secret-a", token_url=issuer.url + "/token")
    async with serving(
        scoped_agent(issuer), auth={"oauth": OIDCVerifier(audience=AUDIENCE)}
    ) as url:
        async with connect(url, binding, credentials=Credentials(fetched)) as client:
            # The client asks its issuer for what each skill's requirements name.
            assert completed_text(await client.send("x", skill="read")) == "read by alice"
            assert issuer.token_requests[-1]["scope"] == "tasks.read"
            assert completed_text(await client.send("x", skill="write")) == "written by alice"
            assert issuer.token_requests[-1]["scope"] == "tasks.read tasks.write"
        reader = Credentials(BearerToken(issuer.token(scope="tasks.read")))
        async with connect(url, binding, credentials=reader) as client:
            assert completed_text(await client.send("x", skill="read")) == "read by alice"
            with pytest.raises(
                PermissionDeniedError, match=r"'write' requires .*tasks\.write"
            ) as no:
                await client.send("x", skill="write")
            assert no.value.metadata == {"skill": "write", "missingScopes": "tasks.write"}
        nothing = Credentials(BearerToken(issuer.token(scope="")))
        async with connect(url, binding, credentials=nothing) as client:
            with pytest.raises(PermissionDeniedError, match="lack the scope"):
                await client.send("x", skill="read")
        # A wrong client secret never reaches the agent: the issuer refuses it.
        wrong = OAuth2ClientCredentials("client-a", "guess", token_url=issuer.url + "/token")
        async with connect(url, binding, credentials=Credentials(wrong)) as client:
            with pytest.raises(AuthenticationError, match="invalid_client"):
                await client.send("x", skill="read")


# -- the extended card -------------------------------------------------------------------------


def extended_for(principal: Principal) -> AgentCard:
    agent = secured({}, [])
    return msgspec.structs.replace(agent.card([]), description=f"for {principal.id}")


@BINDINGS
async def test_the_extended_card_needs_a_principal_and_differs_per_principal(
    binding: str,
) -> None:
    # The card admits anonymous callers ({}), yet the extended card needs a principal.
    agent = secured({"key": api_key("header", "X-API-Key")}, [requirement(), requirement(key=[])])
    verifier = APIKeyVerifier({"k-alice": "alice", "k-bob": "bob"})
    async with serving(agent, auth={"key": verifier}, extended_card=extended_for) as url:
        for key, who in (("k-alice", "alice"), ("k-bob", "bob")):
            async with connect(url, binding, credentials=Credentials(APIKey(key))) as client:
                assert client.card.capabilities.extended_agent_card
                assert (await client.get_extended_card()).description == f"for {who}"
        async with connect(url, binding) as anonymous:
            assert completed_text(await anonymous.send("hi")) == ""  # anonymous owner
            with pytest.raises(AuthenticationError, match="requires an authenticated caller"):
                await anonymous.get_extended_card()


# -- refusals as they are on the wire ----------------------------------------------------------


async def test_rest_refusals_carry_a_challenge_and_a_status_document(issuer: Issuer) -> None:
    agent = secured({"oidc": oidc(issuer)}, [requirement(oidc=["tasks.read"])])
    async with (
        serving(agent, auth={"oidc": OIDCVerifier(audience=AUDIENCE)}) as url,
        httpx.AsyncClient(base_url=url + "/rest", timeout=TIMEOUT_S, trust_env=False) as http,
    ):
        cases = [
            ({}, 401, "UNAUTHENTICATED", 'Bearer realm="Secure Agent"'),
            ({"Authorization": "Bearer x.y.z"}, 401, "UNAUTHENTICATED", 'error="invalid_token"'),
            (
                {"Authorization": f"Bearer {issuer.token(scope='profile')}"},
                403,
                "PERMISSION_DENIED",
                'error="insufficient_scope", error_description="The credentials are valid but '
                'lack the scope(s) tasks.read required by \'oidc\'", scope="tasks.read"',
            ),
        ]
        for headers, status, code, challenge in cases:
            response = await http.get("/tasks", headers={"A2A-Version": "1.0", **headers})
            assert response.status_code == status, response.text
            assert challenge in response.headers["www-authenticate"]
            assert response.headers["content-type"] == "application/a2a+json"
            error = json.loads(response.content)["error"]
            assert (error["code"], error["status"]) == (status, code)
            assert error["details"][0]["reason"] == code
        # A refused caller learns nothing about routes either: the 401 comes first.
        response = await http.post("/no/such/route", content=b"{garbage")
        assert response.status_code == 401
        good = issuer.token(scope="tasks.read")
        response = await http.get(
            "/tasks", headers={"A2A-Version": "1.0", "Authorization": f"Bearer {good}"}
        )
        assert response.status_code == 200 and json.loads(response.content)["tasks"] == []


async def grpc_list_tasks(target: str, metadata: list[tuple[str, str]]) -> grpc.aio.AioRpcError:
    rpc = RPCS["ListTasks"]
    async with grpc.aio.insecure_channel(target) as channel:
        method = channel.unary_unary(rpc.path)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await method(
                to_bytes(ListTasksRequest()),
                metadata=[("a2a-version", "1.0"), *metadata],
                timeout=TIMEOUT_S,
            )
    return refused.value


async def test_grpc_refusals_are_unauthenticated_or_permission_denied(issuer: Issuer) -> None:
    agent = secured({"oidc": oidc(issuer)}, [requirement(oidc=["tasks.read"])])
    async with serving(agent, auth={"oidc": OIDCVerifier(audience=AUDIENCE)}) as url:
        async with connect(url, Binding.GRPC) as client:
            target = client.interface.url
        thin = issuer.token(scope="profile")
        cases: list[tuple[list[tuple[str, str]], grpc.StatusCode, str, Any]] = [
            ([], grpc.StatusCode.UNAUTHENTICATED, "Bearer realm", AuthenticationError),
            (
                [("authorization", "Bearer x.y.z")],
                grpc.StatusCode.UNAUTHENTICATED,
                'error="invalid_token"',
                AuthenticationError,
            ),
            (
                [("authorization", f"Bearer {thin}")],
                grpc.StatusCode.PERMISSION_DENIED,
                'error="insufficient_scope"',
                PermissionDeniedError,
            ),
        ]
        for metadata, code, challenge, error_class in cases:
            refused = await grpc_list_tasks(target, metadata)
            assert refused.code() is code
            trailers = dict(refused.trailing_metadata() or ())
            assert challenge in trailers["www-authenticate"]
            error = decode_status(code.value[0], refused.details() or "", trailers[DETAILS_KEY])
            assert type(error) is error_class
