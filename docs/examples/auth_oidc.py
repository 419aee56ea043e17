"""An agent whose card points at an OpenID Connect issuer; tokens are checked by discovery.

Start the local issuer first (``uvicorn local_issuer:app --port 9000``), then
``python auth_oidc.py serve`` and ``python auth_oidc.py``.
"""

import sys

import anyio

from peerwire import Agent, Client, TaskContext, serve
from peerwire.client.auth import Credentials, OAuth2ClientCredentials
from peerwire.security import OIDCVerifier
from peerwire.types import (
    OpenIdConnectSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

ISSUER = "http://127.0.0.1:9000"
AUDIENCE = "peerwire-howto"


def oidc_agent(issuer: str = ISSUER) -> Agent:
    discovery = f"{issuer}/.well-known/openid-configuration"
    agent = Agent(
        "Ledger",
        description="Reads the ledger",
        security_schemes={
            "oidc": SecurityScheme(
                open_id_connect_security_scheme=OpenIdConnectSecurityScheme(
                    open_id_connect_url=discovery
                )
            )
        },
        security_requirements=[
            SecurityRequirement(schemes={"oidc": StringList(list=["ledger.read"])})
        ],
    )

    @agent.skill()
    async def balance(ctx: TaskContext) -> str:
        return f"Balance for {ctx.caller.id}: 1,204.00 EUR"

    return agent


# The issuer and its keys come from the card's openIdConnectUrl (its metadata's "issuer"
# must match it); only the audience is configured here.
AUTH = {"oidc": OIDCVerifier(audience=AUDIENCE)}


async def main(url: str = "http://127.0.0.1:8000", issuer: str = ISSUER) -> None:
    # issuer= lets these client credentials serve an OpenID Connect scheme of that issuer.
    oauth = OAuth2ClientCredentials(
        "partner", "partner-secret", token_url=f"{issuer}/token", issuer=issuer
    )
    async with Client.connect(url, credentials=Credentials(oauth)) as client:
        task = await client.send("balance?")
        print(task.artifacts[0].text)  # Balance for partner: 1,204.00 EUR


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        serve(oidc_agent(), port=8000, auth=AUTH)
    else:
        anyio.run(main)
