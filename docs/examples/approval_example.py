"""Human approval by another principal: an employee's expense claim, approved by a manager.

The skill names who may answer its question (``answerable_by``): a principal granted the
``expenses.approve`` scope, of the same tenant, sees only the question of a claim waiting
for approval and answers it; ``ctx.caller`` says who did. ``python approval_example.py
serve`` serves the agent; ``python approval_example.py`` plays the employee and the managers.
Tokens are bearer JWTs signed with a local key, as in auth_bearer.py.
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
from peerwire.errors import TaskNotFoundError
from peerwire.security import JWTValidator, JWTVerifier
from peerwire.types import HTTPAuthSecurityScheme, SecurityRequirement, SecurityScheme, StringList

ISSUER, AUDIENCE = "https://issuer.example", "expenses"
KEY_FILE = Path("dev-signing-key.json")
ANSWERED_BY = "https://peerwire.dev/extensions/answerable-by/v1"

agent = Agent(
    "Expenses",
    description="Files expense claims and asks a manager to approve them",
    security_schemes={
        "bearer": SecurityScheme(
            http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer", bearer_format="JWT")
        )
    },
    security_requirements=[SecurityRequirement(schemes={"bearer": StringList()})],
)


@agent.skill(scopes=["expenses.submit"], answerable_by="expenses.approve")
async def expense(ctx: TaskContext) -> None:
    """File a claim; a manager approves it (or not)."""
    employee = ctx.caller.principal.claims.get("name", ctx.caller.id)
    answer = await ctx.ask(f"Approve {ctx.message.text!r} for {employee}?")
    approver = ctx.caller  # who answered: the owner, or a principal answerable_by lets in
    name = approver.principal.claims.get("name", approver.id)
    if approver.id == ctx.owner:
        await ctx.reject("Nobody approves their own claim")
    elif answer.text.strip().lower() == "approve":
        await ctx.complete(f"Approved by {name}")
    else:
        await ctx.reject(f"Declined by {name}: {answer.text}")


def signing_key() -> ECKey:
    """The local issuer's private key (made once, then read back)."""
    if not KEY_FILE.exists():
        key = ECKey.generate_key("P-256", parameters={"kid": "dev-1"})
        KEY_FILE.write_text(json.dumps(key.as_dict(private=True)))
    return ECKey.import_key(json.loads(KEY_FILE.read_text()))


def token(subject: str, name: str, scope: str) -> str:
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": subject, "iat": now, "exp": now + 300}
    claims |= {"name": name, "scope": scope}
    return jwt.encode({"alg": "ES256", "kid": "dev-1"}, claims, signing_key())


def verifiers() -> dict[str, JWTVerifier]:
    public = signing_key().as_dict(private=False)
    return {"bearer": JWTVerifier(JWTValidator(jwks=[public], issuer=ISSUER, audience=AUDIENCE))}


def as_user(url: str, subject: str, name: str, scope: str) -> Client:
    credentials = Credentials(BearerToken(token(subject, name, scope)))
    return Client.connect(url, credentials=credentials)


async def main(url: str = "http://127.0.0.1:8000") -> None:
    async with (
        as_user(url, "erin", "Erin Diaz", "expenses.submit") as erin,
        as_user(url, "otto", "Otto Berg", "expenses.submit") as otto,
        as_user(url, "mona", "Mona Lee", "expenses.approve") as mona,
    ):
        claim = await erin.send("team lunch, 120 EUR")
        print(claim.status.state.name, "-", claim.status.message.text)
        # The task id reaches the manager out of band (a chat message, a webhook, a queue).
        try:
            await otto.get_task(claim.id)
        except TaskNotFoundError:
            print("Otto: no such task")
        seen = await mona.get_task(claim.id)  # the question, nothing else of the task
        print("Mona sees:", seen.status.message.text, f"({len(seen.history)} messages)")
        await mona.send("approve", task_id=claim.id)
        done = await erin.get_task(claim.id)
        print(done.status.state.name, "-", done.status.message.text)
        answer = next(m for m in done.history if m.text == "approve")
        print("answered by:", answer.metadata[ANSWERED_BY])


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        serve(agent, port=8000, auth=verifiers())
    else:
        anyio.run(main)
