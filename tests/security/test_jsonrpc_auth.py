"""Authentication on the JSON-RPC binding: every scheme accepting and refusing, end to end.

Refusals are HTTP 401 with ``WWW-Authenticate`` and a JSON-RPC error body naming the problem
(A2A spec §9, §3.3.2); the public card stays public; GetExtendedAgentCard needs a principal and
may differ per principal; a refused request changes nothing.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from peerwire import Agent, create_app
from peerwire.bindings.jsonrpc import HTTP_LEVEL_ERROR_CODE
from peerwire.errors import AuthenticationError, from_jsonrpc_error
from peerwire.security import (
    APIKeyVerifier,
    Authenticator,
    CardSigner,
    JWTValidator,
    JWTVerifier,
    MTLSVerifier,
    OIDCVerifier,
    Principal,
    Trust,
    verify_card,
)
from peerwire.server import A2AApp
from peerwire.testing import in_process, live_server
from peerwire.types import (
    AgentCard,
    APIKeySecurityScheme,
    ClientCredentialsOAuthFlow,
    HTTPAuthSecurityScheme,
    MutualTlsSecurityScheme,
    OAuth2SecurityScheme,
    OAuthFlows,
    OpenIdConnectSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

from ._support import (
    AUDIENCE,
    TIMEOUT_S,
    Issuer,
    Keys,
    Rpc,
    authority,
    client_certificate,
    mint,
    pem,
    public_jwks,
    reason,
    user_message,
)

ISSUER = "https://idp.example"
CARD_PATH = "/.well-known/agent-card.json"


def requirement(**schemes: list[str]) -> SecurityRequirement:
    return SecurityRequirement(schemes={k: StringList(list=v) for k, v in schemes.items()})


def agent(schemes: dict[str, SecurityScheme], requirements: list[SecurityRequirement]) -> Agent:
    built = Agent("Secure Agent", security_schemes=schemes, security_requirements=requirements)

    @built.skill()
    async def echo(text: str) -> str:
        return text

    return built


def api_key(location: str, name: str) -> SecurityScheme:
    return SecurityScheme(
        api_key_security_scheme=APIKeySecurityScheme(location=location, name=name)
    )


BEARER = SecurityScheme(
    http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer", bearer_format="JWT")
)


@contextlib.asynccontextmanager
async def rpc_to(source: Agent | A2AApp, **options: Any) -> AsyncIterator[Rpc]:
    options.setdefault("rest_path", None)
    async with in_process(source, **options) as http:
        yield Rpc(http, "http://testserver/", {})


def assert_unauthenticated(response: httpx.Response, challenge: str, mentions: str) -> None:
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"].startswith(challenge)
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["jsonrpc"] == "2.0"
    assert isinstance(body["id"], int)
    error = body["error"]
    assert error["code"] == HTTP_LEVEL_ERROR_CODE
    assert reason(error) == "UNAUTHENTICATED"
    assert mentions in error["message"]
    # Our own client classifies it.
    assert isinstance(from_jsonrpc_error(error), AuthenticationError)


# -- API keys ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("location", "present"),
    [
        ("header", lambda rpc: rpc.using(X_API_Key="k-alice")),
        ("cookie", lambda rpc: rpc.using(Cookie="session=k-alice")),
    ],
)
async def test_api_keys_in_headers_and_cookies(location: str, present: Any) -> None:
    name = "X-API-Key" if location == "header" else "session"
    secured = agent({"key": api_key(location, name)}, [requirement(key=[])])
    async with rpc_to(secured, auth={"key": APIKeyVerifier({"k-alice": "alice"})}) as rpc:
        task = await present(rpc).send("hi")
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert_unauthenticated(
            await rpc.post("GetTask", {"id": task["id"]}), "APIKey", "Authentication required: key"
        )
        wrong = (
            rpc.using(X_API_Key="guess")
            if location == "header"
            else rpc.using(Cookie="session=guess")
        )
        assert_unauthenticated(
            await wrong.post("GetTask", {"id": task["id"]}), "APIKey", "not valid"
        )


async def test_api_keys_in_the_query_string() -> None:
    secured = agent({"key": api_key("query", "api_key")}, [requirement(key=[])])
    async with rpc_to(secured, auth={"key": APIKeyVerifier({"k-alice": "alice"})}) as rpc:
        ok = await rpc.http.post(
            "http://testserver/?api_key=k-alice",
            json={"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}},
            headers={"A2A-Version": "1.0"},
        )
        assert ok.status_code == 200 and "result" in ok.json()
        assert_unauthenticated(await rpc.post("ListTasks"), "APIKey", "key")


async def test_the_public_card_stays_public() -> None:
    secured = agent({"key": api_key("header", "X-API-Key")}, [requirement(key=[])])
    async with rpc_to(secured, auth={"key": APIKeyVerifier({"k": "alice"})}) as rpc:
        response = await rpc.http.get("http://testserver" + CARD_PATH)
        assert response.status_code == 200
        card = response.json()
        assert card["securityRequirements"] == [{"schemes": {"key": {}}}]
        assert card["securitySchemes"]["key"]["apiKeySecurityScheme"]["name"] == "X-API-Key"


async def test_a_refused_request_changes_nothing() -> None:
    secured = agent({"key": api_key("header", "X-API-Key")}, [requirement(key=[])])
    async with rpc_to(secured, auth={"key": APIKeyVerifier({"k": "alice"})}) as rpc:
        response = await rpc.using(X_API_Key="guess").post(
            "SendMessage", {"message": user_message("hi")}
        )
        assert response.status_code == 401
        listed = await rpc.using(X_API_Key="k").result("ListTasks")
        assert listed["tasks"] == []


async def test_unauthenticated_garbage_gets_the_auth_error_first() -> None:
    secured = agent({"key": api_key("header", "X-API-Key")}, [requirement(key=[])])
    async with rpc_to(secured, auth={"key": APIKeyVerifier({"k": "alice"})}) as rpc:
        response = await rpc.http.post("http://testserver/", content=b"{not json")
        assert response.status_code == 401
        assert response.json()["id"] is None


# -- bearer JWTs -------------------------------------------------------------------------------


def bearer_validator(keys: Keys) -> JWTVerifier:
    return JWTVerifier(JWTValidator(jwks=public_jwks(keys.rsa), issuer=ISSUER, audience=AUDIENCE))


@pytest.mark.parametrize(
    ("options", "mentions"),
    [
        ({"lifetime": -3600}, "expired"),
        ({"audience": "https://other"}, "another audience"),
        ({"issuer": "https://evil.example"}, "issuer"),
        ({"nbf": 2_000_000_000}, "not valid yet"),
    ],
)
async def test_bearer_jwts_are_validated(
    keys: Keys, options: dict[str, Any], mentions: str
) -> None:
    secured = agent({"bearer": BEARER}, [requirement(bearer=[])])
    async with rpc_to(secured, auth={"bearer": bearer_validator(keys)}) as rpc:
        good = mint(keys.rsa, issuer=ISSUER, subject="alice")
        task = await rpc.using(Authorization=f"Bearer {good}").send("hi")
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        options.setdefault("issuer", ISSUER)
        bad = mint(keys.rsa, **options)
        response = await rpc.using(Authorization=f"Bearer {bad}").post("ListTasks")
        assert_unauthenticated(
            response, 'Bearer realm="Secure Agent", error="invalid_token"', mentions
        )


async def test_forged_and_unsigned_tokens_are_refused(keys: Keys) -> None:
    from ._support import unsigned

    secured = agent({"bearer": BEARER}, [requirement(bearer=[])])
    async with rpc_to(secured, auth={"bearer": bearer_validator(keys)}) as rpc:
        forged = mint(keys.attacker, issuer=ISSUER, subject="admin")
        claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "admin", "exp": 4_000_000_000}
        for token, mentions in ((forged, "signature"), (unsigned(claims), "alg none")):
            response = await rpc.using(Authorization=f"Bearer {token}").post("ListTasks")
            assert_unauthenticated(response, "Bearer", mentions)


# -- OpenID Connect and OAuth2 discovery, over real servers -----------------------------------


async def test_oidc_discovery_end_to_end(issuer: Issuer) -> None:
    oidc = SecurityScheme(
        open_id_connect_security_scheme=OpenIdConnectSecurityScheme(
            open_id_connect_url=issuer.discovery_url
        )
    )
    secured = agent({"oidc": oidc}, [requirement(oidc=["openid"])])
    verifier = OIDCVerifier(audience=AUDIENCE)
    async with (
        live_server(secured, auth={"oidc": verifier}, rest_path=None) as url,
        httpx.AsyncClient(trust_env=False, timeout=TIMEOUT_S) as http,
    ):
        rpc = Rpc(http, url + "/", {})
        good = issuer.token(subject="alice", scope="openid profile")
        task = await rpc.using(Authorization=f"Bearer {good}").send("hi")
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        # Without the scope the requirement names: 403 insufficient_scope.
        thin = issuer.token(subject="alice", scope="profile")
        response = await rpc.using(Authorization=f"Bearer {thin}").post("ListTasks")
        assert response.status_code == 403
        assert 'error="insufficient_scope"' in response.headers["www-authenticate"]
        assert reason(response.json()["error"]) == "PERMISSION_DENIED"
        # A token from the same keys but naming another issuer is not this provider's.
        alien = issuer.token(issuer="https://elsewhere.example", scope="openid")
        response = await rpc.using(Authorization=f"Bearer {alien}").post("ListTasks")
        assert response.status_code == 401
        assert issuer.jwks_requests == 1


async def test_oauth2_metadata_discovery(issuer: Issuer) -> None:
    oauth = SecurityScheme(
        oauth2_security_scheme=OAuth2SecurityScheme(
            flows=OAuthFlows(
                client_credentials=ClientCredentialsOAuthFlow(
                    token_url=issuer.url + "/token", scopes={"a2a.call": "Call the agent"}
                )
            ),
            oauth2_metadata_url=issuer.oauth_metadata_url,
        )
    )
    secured = agent({"oauth": oauth}, [requirement(oauth=["a2a.call"])])
    async with rpc_to(secured, auth={"oauth": OIDCVerifier(audience=AUDIENCE)}) as rpc:
        token = issuer.token(subject="svc", scope="a2a.call")
        listed = await rpc.using(Authorization=f"Bearer {token}").result("ListTasks")
        assert listed["tasks"] == []


# -- mutual TLS (the TLS layer's certificate handed over in the ASGI scope) -------------------


class TLSTerminator:
    """Stands in for the server's TLS layer: puts the handshake's client chain in the scope."""

    def __init__(self, app: A2AApp, chain: list[str]) -> None:
        self.app = app
        self.chain = chain

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and self.chain:
            scope = {**scope, "extensions": {"tls": {"client_cert_chain": self.chain}}}
        await self.app(scope, receive, send)


async def test_mutual_tls_end_to_end() -> None:
    ca, other = authority("Partner CA"), authority("Other CA")
    mtls = SecurityScheme(mtls_security_scheme=MutualTlsSecurityScheme())
    secured = agent({"mtls": mtls}, [requirement(mtls=[])])
    app = create_app(
        secured,
        public_url="http://testserver",
        rest_path=None,
        auth={"mtls": MTLSVerifier([ca.pem])},
    )
    async with app.lifespan():
        for chain, status in (
            ([pem(client_certificate(ca, "billing"))], 200),
            ([pem(client_certificate(other, "billing"))], 401),
            ([], 401),
        ):
            transport = httpx.ASGITransport(app=TLSTerminator(app, chain))
            async with httpx.AsyncClient(transport=transport) as http:
                response = await Rpc(http, "http://testserver/", {}).post("ListTasks")
                assert response.status_code == status, response.text
                if status == 401:
                    assert response.headers["www-authenticate"].startswith("MutualTLS")


# -- the extended card -------------------------------------------------------------------------


def extended_for(principal: Principal) -> AgentCard | None:
    if principal.id == "nobody":
        return None
    base = agent({}, [])
    card = base.card([])
    return AgentCard(
        name=f"Secure Agent for {principal.id}",
        description=card.description,
        supported_interfaces=card.supported_interfaces,
        version=card.version,
        capabilities=card.capabilities,
        default_input_modes=card.default_input_modes,
        default_output_modes=card.default_output_modes,
        skills=card.skills,
    )


async def test_the_extended_card_needs_a_principal_and_may_differ_per_principal(
    keys: Keys,
) -> None:
    key = api_key("header", "X-API-Key")
    # Anonymous callers may use the agent; the extended card still needs a principal.
    secured = agent({"key": key}, [requirement(key=[]), SecurityRequirement()])
    verifier = APIKeyVerifier({"k-alice": "alice", "k-bob": "bob", "k-nobody": "nobody"})
    signer = CardSigner(keys.ec)
    async with rpc_to(
        secured, auth={"key": verifier}, extended_card=extended_for, signing_key=signer
    ) as rpc:
        public = (await rpc.http.get("http://testserver" + CARD_PATH)).json()
        assert public["capabilities"]["extendedAgentCard"] is True
        trust = Trust(signer.public_jwks())
        verify_card(public, trust)
        # Anonymous: the operation answers 401 with the challenge, the rest works.
        assert (await rpc.result("ListTasks"))["tasks"] == []
        assert_unauthenticated(
            await rpc.post("GetExtendedAgentCard"), "APIKey", "authenticated caller"
        )
        alice = await rpc.using(X_API_Key="k-alice").result("GetExtendedAgentCard")
        bob = await rpc.using(X_API_Key="k-bob").result("GetExtendedAgentCard")
        assert alice["name"] == "Secure Agent for alice"
        assert bob["name"] == "Secure Agent for bob"
        verify_card(alice, trust)  # extended cards are signed too
        nobody = await rpc.using(X_API_Key="k-nobody").error("GetExtendedAgentCard")
        assert nobody["code"] == -32007


async def test_the_signed_card_is_served_as_signed(keys: Keys) -> None:
    signer = CardSigner(keys.rsa, jku="https://agent.example/jwks.json")
    async with rpc_to(agent({}, []), signing_key=signer) as rpc:
        served = await rpc.http.get("http://testserver" + CARD_PATH)
        document = json.loads(served.content)
        verify_card(document, Trust(signer.public_jwks()))
        document["name"] = "Impostor"
        with pytest.raises(Exception, match="does not match"):
            verify_card(document, Trust(signer.public_jwks()))


# -- configuration -----------------------------------------------------------------------------


def test_a_card_that_requires_auth_needs_verifiers() -> None:
    secured = agent({"key": api_key("header", "X")}, [requirement(key=[])])
    with pytest.raises(ValueError, match="requires authentication"):
        create_app(secured, rest_path=None)


def test_an_extended_card_needs_auth() -> None:
    with pytest.raises(ValueError, match="extended_card= needs auth="):
        create_app(agent({}, []), rest_path=None, extended_card=extended_for)


def test_an_authenticator_must_match_the_card() -> None:
    secured = agent({"key": api_key("header", "X")}, [requirement(key=[])])
    other = Authenticator(
        {"key": api_key("header", "Y")}, [requirement(key=[])], {"key": APIKeyVerifier({"k": "a"})}
    )
    with pytest.raises(ValueError, match="differ from the agent's card"):
        create_app(secured, rest_path=None, auth=other)
    card = secured.card([])
    matching = Authenticator.from_card(card, {"key": APIKeyVerifier({"k": "a"})})
    create_app(secured, rest_path=None, auth=matching)
