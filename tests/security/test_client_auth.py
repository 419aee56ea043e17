"""Client credentials (peerwire.client.auth): chosen by the card, fetched, cached, renewed."""

from __future__ import annotations

import ssl
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from peerwire import Agent
from peerwire.client import Client
from peerwire.client.auth import (
    APIKey,
    BasicAuth,
    BearerToken,
    ClientCertificate,
    Credentials,
    OAuth2ClientCredentials,
    RequestAuth,
)
from peerwire.errors import A2AConnectionError, AuthenticationError, InvalidResponseError
from peerwire.security import OIDCVerifier
from peerwire.testing import live_server
from peerwire.types import (
    AgentCapabilities,
    AgentCard,
    AgentSkill,
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
    from_builtins,
)

from ._support import AUDIENCE, TIMEOUT_S, Issuer, authority, client_certificate, pem


def requirement(**schemes: list[str]) -> SecurityRequirement:
    return SecurityRequirement(schemes={k: StringList(list=v) for k, v in schemes.items()})


def api_key(location: str, name: str) -> SecurityScheme:
    return SecurityScheme(
        api_key_security_scheme=APIKeySecurityScheme(location=location, name=name)
    )


def oauth(token_url: str) -> SecurityScheme:
    return SecurityScheme(
        oauth2_security_scheme=OAuth2SecurityScheme(
            flows=OAuthFlows(
                client_credentials=ClientCredentialsOAuthFlow(
                    token_url=token_url, scopes={"a2a.call": "", "delivery.write": ""}
                )
            )
        )
    )


def card(
    schemes: dict[str, SecurityScheme],
    requirements: list[SecurityRequirement],
    skills: list[AgentSkill] | None = None,
) -> AgentCard:
    return AgentCard(
        name="Agent",
        description="",
        supported_interfaces=[],
        version="1",
        capabilities=AgentCapabilities(),
        security_schemes=schemes,
        security_requirements=requirements,
        default_input_modes=[],
        default_output_modes=[],
        skills=skills or [],
    )


BASIC = SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Basic"))
BEARER = SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer"))
MTLS = SecurityScheme(mtls_security_scheme=MutualTlsSecurityScheme())


async def test_api_keys_go_where_the_card_says() -> None:
    key = APIKey("k-1")
    for location, expected in (
        ("header", RequestAuth(headers={"X-Key": "k-1"}, schemes=("s",))),
        ("query", RequestAuth(query={"X-Key": "k-1"}, schemes=("s",))),
        ("cookie", RequestAuth(headers={"Cookie": "X-Key=k-1"}, schemes=("s",))),
    ):
        found = await Credentials(key).for_card(
            card({"s": api_key(location, "X-Key")}, [requirement(s=[])])
        )
        assert found == expected


async def test_nothing_is_sent_to_an_agent_that_asks_for_nothing() -> None:
    found = await Credentials(APIKey("k"), BearerToken("t")).for_card(card({}, []))
    assert found == RequestAuth()


async def test_the_first_satisfiable_alternative_is_used(tmp_path: Path) -> None:
    schemes = {"basic": BASIC, "key": api_key("header", "X-Key"), "mtls": MTLS}
    requirements = [requirement(basic=[]), requirement(key=[], mtls=[])]
    only_key = Credentials(APIKey("k"))
    with pytest.raises(AuthenticationError, match="needs basic or key and mtls"):
        await only_key.for_card(card(schemes, requirements))
    certificate = _certificate_files(tmp_path)
    both = Credentials(APIKey("k"), certificate)
    found = await both.for_card(card(schemes, requirements))
    assert found.schemes == ("key", "mtls") and found.headers == {"X-Key": "k"}
    everything = Credentials(APIKey("k"), certificate, BasicAuth("u", "p:w"))
    found = await everything.for_card(card(schemes, requirements))
    assert found.headers == {"Authorization": "Basic dTpwOnc="}
    assert isinstance(everything.ssl_context(), ssl.SSLContext)


async def test_an_empty_alternative_means_credentials_are_optional() -> None:
    schemes = {"key": api_key("header", "X-Key")}
    optional = card(schemes, [requirement(key=[]), SecurityRequirement()])
    assert await Credentials().for_card(optional) == RequestAuth()
    assert (await Credentials(APIKey("k")).for_card(optional)).headers == {"X-Key": "k"}


async def test_two_schemes_wanting_the_same_header_cannot_combine() -> None:
    schemes = {"basic": BASIC, "bearer": BEARER}
    both = card(schemes, [requirement(basic=[], bearer=[])])
    with pytest.raises(AuthenticationError):
        await Credentials(BasicAuth("u", "p"), BearerToken("t")).for_card(both)


async def test_a_credential_named_for_a_scheme_serves_that_scheme() -> None:
    schemes = {"a": api_key("header", "X-A"), "b": api_key("header", "X-B")}
    found = await Credentials(by_scheme={"b": APIKey("for-b")}).for_card(
        card(schemes, [requirement(a=[]), requirement(b=[])])
    )
    assert found.headers == {"X-B": "for-b"}


async def test_bearer_tokens_may_come_from_a_function() -> None:
    calls = []

    async def current() -> str:
        calls.append(1)
        return f"t{len(calls)}"

    credentials = Credentials(BearerToken(current))
    bearer_card = card({"b": BEARER}, [requirement(b=[])])
    assert (await credentials.for_card(bearer_card)).headers == {"Authorization": "Bearer t1"}
    assert (await credentials.for_card(bearer_card)).headers == {"Authorization": "Bearer t2"}


async def test_credentials_never_show_their_secrets() -> None:
    text = repr(
        Credentials(APIKey("k-secret"), BearerToken("t-secret"), BasicAuth("u", "p-secret"))
    )
    assert "secret" not in text
    assert "k-secret" not in repr(RequestAuth(headers={"X": "k-secret"}))


# -- OAuth2 client credentials ---------------------------------------------------------------


async def test_client_credentials_are_fetched_cached_and_renewed(issuer: Issuer) -> None:
    clock = [1000.0]
    grant = OAuth2ClientCredentials(
        "client-a",
        "secret-a",
        token_url=issuer.url + "/token",
        clock=lambda: clock[0],
        refresh_margin=30,
    )
    agent_card = card({"o": oauth(issuer.url + "/token")}, [requirement(o=["a2a.call"])])
    credentials = Credentials(grant)
    first = await credentials.for_card(agent_card)
    again = await credentials.for_card(agent_card)
    assert first == again
    assert [r["scope"] for r in issuer.token_requests] == ["a2a.call"]
    assert issuer.token_requests[0]["grant_type"] == "client_credentials"
    # Within the margin before expiry a new token is fetched.
    clock[0] += issuer.token_lifetime - 10
    await credentials.for_card(agent_card)
    assert len(issuer.token_requests) == 2
    # Another scope set is another token.
    skill_card = card(
        {"o": oauth(issuer.url + "/token")},
        [requirement(o=["a2a.call"])],
        [
            AgentSkill(
                id="book",
                name="b",
                description="d",
                tags=["t"],
                security_requirements=[requirement(o=["a2a.call", "delivery.write"])],
            )
        ],
    )
    await credentials.for_card(skill_card, skill="book")
    assert issuer.token_requests[-1]["scope"] == "a2a.call delivery.write"


async def test_refresh_tokens_are_used_when_issued(issuer: Issuer) -> None:
    issuer.issue_refresh_tokens = True
    clock = [0.0]
    grant = OAuth2ClientCredentials(
        "client-a", "secret-a", token_url=issuer.url + "/token", clock=lambda: clock[0]
    )
    await grant.token(frozenset({"a2a.call"}))
    clock[0] += issuer.token_lifetime
    await grant.token(frozenset({"a2a.call"}))
    assert [r["grant_type"] for r in issuer.token_requests] == [
        "client_credentials",
        "refresh_token",
    ]
    # A refresh token the server no longer honours falls back to the client credentials grant.
    issuer._refresh_tokens.clear()
    clock[0] += issuer.token_lifetime
    await grant.token(frozenset({"a2a.call"}))
    assert [r["grant_type"] for r in issuer.token_requests][-2:] == [
        "refresh_token",
        "client_credentials",
    ]


async def test_client_secret_post_is_supported(issuer: Issuer) -> None:
    grant = OAuth2ClientCredentials(
        "client-a", "secret-a", token_url=issuer.url + "/token", auth_method="client_secret_post"
    )
    assert await grant.token()
    assert issuer.token_requests[0]["client_secret"] == "secret-a"


async def test_a_refused_client_is_an_authentication_error(issuer: Issuer) -> None:
    grant = OAuth2ClientCredentials("client-a", "wrong", token_url=issuer.url + "/token")
    with pytest.raises(AuthenticationError, match="invalid_client"):
        await grant.token()


async def test_an_unreachable_token_endpoint_is_a_connection_error() -> None:
    grant = OAuth2ClientCredentials("c", "s", token_url="http://127.0.0.1:9/token", timeout=5)
    with pytest.raises(A2AConnectionError, match="token request"):
        await grant.token()


async def test_a_token_response_without_a_bearer_token_is_invalid() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"access_token": "x", "token_type": "mac"})

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        grant = OAuth2ClientCredentials("c", "s", token_url="https://idp.example/token", http=http)
        with pytest.raises(InvalidResponseError, match="not a Bearer token"):
            await grant.token()


async def test_the_secret_only_goes_to_the_configured_token_url() -> None:
    grant = OAuth2ClientCredentials("c", "s", token_url="https://idp.example/token")
    elsewhere = card({"o": oauth("https://evil.example/token")}, [requirement(o=[])])
    with pytest.raises(AuthenticationError):
        await Credentials(grant).for_card(elsewhere)
    oidc = SecurityScheme(
        open_id_connect_security_scheme=OpenIdConnectSecurityScheme(
            open_id_connect_url="https://idp.example/.well-known/openid-configuration"
        )
    )
    with_issuer = OAuth2ClientCredentials(
        "c", "s", token_url="https://idp.example/token", issuer="https://idp.example"
    )
    assert with_issuer.supports(oidc) and not grant.supports(oidc)
    with pytest.raises(ValueError, match="https"):
        OAuth2ClientCredentials("c", "s", token_url="http://idp.example/token")


# -- end to end ------------------------------------------------------------------------------


async def test_a_client_with_fetched_tokens_calls_an_oidc_protected_agent(issuer: Issuer) -> None:
    oidc = SecurityScheme(
        open_id_connect_security_scheme=OpenIdConnectSecurityScheme(
            open_id_connect_url=issuer.discovery_url
        )
    )
    agent = Agent(
        "Protected",
        security_schemes={"oidc": oidc},
        security_requirements=[requirement(oidc=["a2a.call"])],
    )

    @agent.skill()
    async def echo(text: str) -> str:
        return text

    credentials = Credentials(
        OAuth2ClientCredentials(
            "client-a", "secret-a", token_url=issuer.url + "/token", issuer=issuer.url
        )
    )
    verifier = OIDCVerifier(audience=AUDIENCE)
    async with live_server(agent, auth={"oidc": verifier}, rest_path=None) as url:
        async with httpx.AsyncClient(trust_env=False, timeout=TIMEOUT_S) as http:
            # The card is public: it is what tells the client which credentials to bring.
            document = (await http.get(url + "/.well-known/agent-card.json")).json()
        needed = await credentials.for_card(from_builtins(document, AgentCard))
        async with Client.connect(url, headers=dict(needed.headers)) as client:
            task = await client.send("hello")
            assert task.status.state.value == "TASK_STATE_COMPLETED"  # type: ignore[union-attr]
        async with Client.connect(url) as anonymous:
            with pytest.raises(AuthenticationError):
                await anonymous.send("hello")


def _certificate_files(directory: Path) -> ClientCertificate:
    key = ec.generate_private_key(ec.SECP256R1())
    certificate = client_certificate(authority("Client CA"), "client", key=key)
    cert_path, key_path = directory / "client.pem", directory / "client.key"
    cert_path.write_text(pem(certificate))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return ClientCertificate(cert_path, key_path)


def test_client_certificates_must_be_readable(tmp_path: Path) -> None:
    with pytest.raises((OSError, ssl.SSLError)):
        ClientCertificate(tmp_path / "missing.pem")
    certificate = _certificate_files(tmp_path)
    assert certificate.supports(MTLS)
    assert not certificate.supports(BEARER)
