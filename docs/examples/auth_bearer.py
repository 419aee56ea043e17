"""An agent that takes bearer JWTs, and the smallest local token issuer: a key and joserfc.

``python auth_bearer.py serve`` serves the agent; ``python auth_bearer.py token`` prints a
token to call it with (``peerwire send ... --bearer TOKEN``); ``python auth_bearer.py`` calls
it from Python. The signing key is kept in ``dev-signing-key.json`` so that all three agree.
"""

import json
import sys
import time
from pathlib import Path

import anyio
from joserfc import jwt
from joserfc.jwk import ECKey

from peerwire import Agent, Client, TaskContext, serve
from peerwire.client.auth import BearerToken, Credentials
from peerwire.security import JWTValidator, JWTVerifier
from peerwire.types import HTTPAuthSecurityScheme, SecurityRequirement, SecurityScheme, StringList

ISSUER = "https://issuer.example"  # any name both sides agree on
AUDIENCE = "peerwire-howto"
KEY_FILE = Path("dev-signing-key.json")


def signing_key() -> ECKey:
    """The issuer's private key (made once, then read back)."""
    if not KEY_FILE.exists():
        key = ECKey.generate_key("P-256", parameters={"kid": "dev-1"})
        KEY_FILE.write_text(json.dumps(key.as_dict(private=True)))
    return ECKey.import_key(json.loads(KEY_FILE.read_text()))


def mint_token(subject: str, scope: str = "", lifetime: int = 300) -> str:
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": subject, "iat": now, "exp": now + lifetime}
    return jwt.encode({"alg": "ES256", "kid": "dev-1"}, {**claims, "scope": scope}, signing_key())


agent = Agent(
    "Ledger",
    description="Answers who you are",
    security_schemes={
        "bearer": SecurityScheme(
            http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer", bearer_format="JWT")
        )
    },
    security_requirements=[SecurityRequirement(schemes={"bearer": StringList()})],
)


@agent.skill()
async def whoami(ctx: TaskContext) -> str:
    return f"You are {ctx.caller.id}, with scopes {sorted(ctx.caller.scopes)}"


def verifiers() -> dict[str, JWTVerifier]:
    """The bearer scheme's verifier: the issuer's public key, pinned."""
    public = signing_key().as_dict(private=False)
    validator = JWTValidator(jwks=[public], issuer=ISSUER, audience=AUDIENCE)
    return {"bearer": JWTVerifier(validator)}


async def main(url: str = "http://127.0.0.1:8000") -> None:
    token = mint_token("alice", scope="ledger.read")
    async with Client.connect(url, credentials=Credentials(BearerToken(token))) as client:
        task = await client.send("who am I?")
        print(task.artifacts[0].text)  # You are alice, with scopes ['ledger.read']


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        serve(agent, port=8000, auth=verifiers())
    elif sys.argv[1:] == ["token"]:
        print(mint_token("alice", scope="ledger.read"))
    else:
        anyio.run(main)
