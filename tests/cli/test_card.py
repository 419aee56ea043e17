"""``peerwire card``: the card for people and as JSON, and its errors."""

from __future__ import annotations

import pytest

from peerwire.cli._render import requirements_text, scheme_text
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
    decode,
)

from .conftest import CLI_TIMEOUT, assert_one_error_line, invoke

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_the_card_shows_skills_and_every_interface(glossary_url: str) -> None:
    ran = await invoke("card", glossary_url, "--timeout", CLI_TIMEOUT)
    assert ran.code == 0, ran.err
    assert "Glossary Agent" in ran.out and "Defines Java terms" in ran.out
    assert "streaming yes" in ran.out
    for skill in ("define", "slow", '"sealed class"'):
        assert skill in ran.out
    lines = ran.out.splitlines()
    bindings = [line.split()[0] for line in lines if line.startswith("  ") and "1.0" in line]
    assert bindings == ["JSONRPC", "HTTP+JSON", "GRPC"], "in the card's order of preference"
    assert f"{glossary_url}/rest" in ran.out


async def test_json_is_the_agent_card_itself(glossary_url: str) -> None:
    ran = await invoke("card", glossary_url, "--json")
    assert ran.code == 0, ran.err
    assert ran.out.count("\n") == 1
    card = decode(ran.out, AgentCard)
    assert card.name == "Glossary Agent"
    assert [s.id for s in card.skills] == ["define", "slow"]


async def test_the_card_url_itself_is_accepted(glossary_url: str) -> None:
    ran = await invoke("card", glossary_url + "/.well-known/agent-card.json", "--json")
    assert ran.code == 0, ran.err
    assert decode(ran.out, AgentCard).name == "Glossary Agent"


async def test_an_unreachable_agent_is_one_error_line() -> None:
    ran = await invoke("card", "http://127.0.0.1:9", "--timeout", "5")
    assert_one_error_line(ran, "127.0.0.1:9")


async def test_a_url_without_a_card_is_one_error_line(glossary_url: str) -> None:
    ran = await invoke("card", glossary_url + "/no/agent/here")
    assert_one_error_line(ran, "404")


async def test_the_card_shows_its_security_and_the_scopes_each_skill_requires(
    vault_url: str,
) -> None:
    ran = await invoke("card", vault_url)
    assert ran.code == 0, ran.err
    lines = [line.rstrip() for line in ran.out.splitlines()]
    schemes = lines.index("security schemes:")
    assert lines[schemes + 1 : schemes + 4] == [
        "  bearer  HTTP Bearer (opaque)",
        "  key     API key in header X-Vault-Key",
        "requires: bearer or key",
    ]
    reports = next(i for i, line in enumerate(lines) if line.startswith("  reports  "))
    assert (
        "    requires: bearer (scopes reports.read) or key (scopes reports.read)"
        in lines[reports + 1 : reports + 3]
    )
    whoami = next(i for i, line in enumerate(lines) if line.startswith("  whoami  "))
    assert not lines[whoami + 2].startswith("    requires"), "a skill without scopes says none"


async def test_json_stays_the_card_with_its_security(vault_url: str) -> None:
    ran = await invoke("card", vault_url, "--json")
    assert ran.code == 0, ran.err
    card = decode(ran.out, AgentCard)
    assert sorted(card.security_schemes) == ["bearer", "key"]
    reports = next(s for s in card.skills if s.id == "reports")
    assert [dict(r.schemes) for r in reports.security_requirements] == [
        {"bearer": StringList(list=["reports.read"])},
        {"key": StringList(list=["reports.read"])},
    ]


@pytest.mark.parametrize(
    ("scheme", "shown"),
    [
        (
            SecurityScheme(
                api_key_security_scheme=APIKeySecurityScheme(
                    location="cookie", name="session", description="the portal's"
                )
            ),
            "API key in cookie session: the portal's",
        ),
        (
            SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="basic")),
            "HTTP Basic",
        ),
        (
            SecurityScheme(
                oauth2_security_scheme=OAuth2SecurityScheme(
                    flows=OAuthFlows(
                        client_credentials=ClientCredentialsOAuthFlow(
                            token_url="https://idp.example/token", scopes={"a": "", "b": ""}
                        )
                    )
                )
            ),
            "OAuth 2.0 client credentials (token URL https://idp.example/token), scopes a b",
        ),
        (
            SecurityScheme(
                open_id_connect_security_scheme=OpenIdConnectSecurityScheme(
                    open_id_connect_url="https://idp.example/.well-known/openid-configuration"
                )
            ),
            "OpenID Connect (https://idp.example/.well-known/openid-configuration)",
        ),
        (
            SecurityScheme(mtls_security_scheme=MutualTlsSecurityScheme()),
            "mutual TLS (a client certificate)",
        ),
    ],
)
async def test_each_kind_of_scheme_says_what_it_takes(scheme: SecurityScheme, shown: str) -> None:
    assert scheme_text(scheme) == shown


async def test_requirements_read_as_alternatives_of_schemes_taken_together() -> None:
    both = SecurityRequirement(schemes={"oauth": StringList(list=["x", "y"]), "mtls": StringList()})
    anyone = SecurityRequirement(schemes={})
    assert requirements_text([both, anyone]) == "oauth (scopes x y) and mtls or no credentials"
