"""An agent behind OAuth 2.0 (client credentials), and a client that fetches its own tokens.

Start the local issuer first (``uvicorn local_issuer:app --port 9000``), then
``python auth_oauth2.py serve`` and ``python auth_oauth2.py``.
"""

import sys

import anyio

from peerwire import Agent, Client, TaskContext, serve
from peerwire.client.auth import Credentials, OAuth2ClientCredentials
from peerwire.security import JWTValidator, JWTVerifier, RemoteJWKS
from peerwire.types import (
    ClientCredentialsOAuthFlow,
    OAuth2SecurityScheme,
    OAuthFlows,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

ISSUER = "http://127.0.0.1:9000"  # local_issuer.py; plain http is accepted on loopback only
AUDIENCE = "peerwire-howto"


def oauth2_agent(issuer: str = ISSUER) -> Agent:
    flow = ClientCredentialsOAuthFlow(
        token_url=f"{issuer}/token",
        scopes={"ledger.read": "read the ledger", "ledger.write": "post entries"},
    )
    agent = Agent(
        "Ledger",
        description="Posts ledger entries",
        security_schemes={
            "oauth": SecurityScheme(
                oauth2_security_scheme=OAuth2SecurityScheme(
                    flows=OAuthFlows(client_credentials=flow)
                )
            )
        },
        security_requirements=[SecurityRequirement(schemes={"oauth": StringList()})],
    )

    @agent.skill(scopes=["ledger.write"])  # the card lists it; callers without it get a 403
    async def post_entry(text: str, ctx: TaskContext) -> str:
        return f"{ctx.caller.id} posted {text!r}"

    return agent


def verifiers(issuer: str = ISSUER) -> dict[str, JWTVerifier]:
    """Tokens of this issuer for this audience, checked against its published keys."""
    keys = RemoteJWKS(f"{issuer}/jwks.json")  # cached; refetched for an unknown key id
    return {"oauth": JWTVerifier(JWTValidator(jwks=keys, issuer=issuer, audience=AUDIENCE))}


async def main(url: str = "http://127.0.0.1:8000", issuer: str = ISSUER) -> None:
    # The secret only ever goes to this token URL, never to one read from a card.
    oauth = OAuth2ClientCredentials("partner", "partner-secret", token_url=f"{issuer}/token")
    async with Client.connect(url, credentials=Credentials(oauth)) as client:
        task = await client.send("INV-1042 paid")
        print(task.artifacts[0].text)  # partner posted 'INV-1042 paid'


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        serve(oauth2_agent(), port=8000, auth=verifiers())
    else:
        anyio.run(main)
