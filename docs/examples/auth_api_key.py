"""An agent that wants an API key in a header, and a client that sends one.

Serve it with ``python auth_api_key.py serve``; call it with ``python auth_api_key.py``.
"""

import sys

import anyio

from peerwire import Agent, Client, TaskContext, serve
from peerwire.client.auth import APIKey, Credentials
from peerwire.security import APIKeyVerifier, Principal
from peerwire.types import APIKeySecurityScheme, SecurityRequirement, SecurityScheme, StringList

agent = Agent(
    "Ledger",
    description="Answers who you are",
    security_schemes={
        "key": SecurityScheme(
            api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-API-Key")
        )
    },
    security_requirements=[SecurityRequirement(schemes={"key": StringList()})],
)


@agent.skill()
async def whoami(ctx: TaskContext) -> str:
    return f"You are {ctx.caller.id}, with scopes {sorted(ctx.caller.scopes)}"


# Each key maps to a principal: an id, or a Principal with scopes (roles) of its own.
AUTH = {
    "key": APIKeyVerifier(
        {
            "k-billing-2f7c": "billing",
            "k-ops-91d4": Principal(id="ops", scopes=frozenset({"ledger.write"})),
        }
    )
}


async def main(url: str = "http://127.0.0.1:8000", key: str = "k-ops-91d4") -> None:
    async with Client.connect(url, credentials=Credentials(APIKey(key))) as client:
        task = await client.send("who am I?")
        print(task.artifacts[0].text)  # You are ops, with scopes ['ledger.write']


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        serve(agent, port=8000, auth=AUTH)
    else:
        anyio.run(main)
