"""Agents that require credentials, built with the public API, for the CLI's auth options.

The Vault Agent takes a bearer token (``Authorization: Bearer``, checked by a small verifier
of a fixed token table) or an API key in the header ``X-Vault-Key`` (``APIKeyVerifier``).
Its ``whoami`` skill answers who called, through which scheme, and the ``X-Trace`` header
the request carried: that is how a test sees what reached the agent. ``reports`` requires
the scope ``reports.read`` (the card says so), which only Alice's token grants.

The Ledger Agent takes an API key in the query parameter ``api_key``: the card, not the
caller, says where a key goes.
"""

from __future__ import annotations

import asyncio
from types import MappingProxyType

import msgspec

from peerwire import Agent, TaskContext
from peerwire.errors import AuthenticationError
from peerwire.security import APIKeyVerifier, Principal, RequestCredentials
from peerwire.types import (
    AgentCard,
    APIKeySecurityScheme,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

ALICE_TOKEN = "tok-alice-5f1e"  # scopes: reports.read
CAROL_TOKEN = "tok-carol-77aa"  # no scopes
BOB_KEY = "key-bob-92c4"
# A token the agent quotes in its refusal, as a careless server might: the CLI must hide it.
ECHOED_TOKEN = "tok-echoed-31d0"
LEDGER_KEY = "ledger-key-0b7e"
HOLD_S = 30.0  # how long ``hold`` works before it gives up (tests cancel it long before)

_TOKENS = {
    ALICE_TOKEN: Principal(id="alice", scopes=frozenset({"reports.read"})),
    CAROL_TOKEN: Principal(id="carol"),
}


class TokenTable:
    """A ``peerwire.security.Verifier`` for HTTP Bearer: tokens from a fixed table. The
    request's ``X-Trace`` header goes into the principal's claims, for ``whoami`` to tell."""

    def supports(self, scheme: SecurityScheme) -> bool:
        return scheme.http_auth_security_scheme is not None

    async def verify(
        self, name: str, scheme: SecurityScheme, credentials: RequestCredentials
    ) -> Principal | None:
        kind, _, token = (credentials.header("authorization") or "").partition(" ")
        if kind.lower() != "bearer":
            return None
        if token == ECHOED_TOKEN:
            raise AuthenticationError(f"The token {token} was revoked")
        known = _TOKENS.get(token)
        if known is None:
            raise AuthenticationError("The bearer token is not valid")
        trace = credentials.header("x-trace") or "-"
        return Principal(
            id=known.id,
            scheme=name,
            scopes=known.scopes,
            claims=MappingProxyType({"trace": trace}),
        )


def _trace(ctx: TaskContext) -> str:
    principal = ctx.caller.principal
    return f"{principal.id} via {principal.scheme}; trace={principal.claims.get('trace', '-')}"


def vault_agent() -> Agent:
    agent = Agent(
        "Vault Agent",
        description="Keeps reports for known callers",
        security_schemes={
            "bearer": SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer", bearer_format="opaque"
                )
            ),
            "key": SecurityScheme(
                api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-Vault-Key")
            ),
        },
        security_requirements=[
            SecurityRequirement(schemes={"bearer": StringList()}),
            SecurityRequirement(schemes={"key": StringList()}),
        ],
    )

    @agent.skill("whoami", description="Says who is calling")
    async def whoami(ctx: TaskContext) -> str:
        return _trace(ctx)

    @agent.skill("reports", description="Lists the reports", scopes=["reports.read"])
    async def reports(ctx: TaskContext) -> str:
        return "2 reports for " + ctx.caller.id

    @agent.skill("ask", description="Asks which report")
    async def ask(ctx: TaskContext) -> str:
        answer = await ctx.ask("Which report?")
        return f"report {answer.text}"

    @agent.skill("hold", description="Works until canceled")
    async def hold(ctx: TaskContext) -> None:
        await ctx.start_work("holding")
        await asyncio.sleep(HOLD_S)
        await ctx.complete("held")

    return agent


def vault_auth() -> dict[str, object]:
    return {"bearer": TokenTable(), "key": APIKeyVerifier({BOB_KEY: "bob"})}


def vault_extended_card(principal: Principal) -> AgentCard:
    public = vault_agent().card([])
    return msgspec.structs.replace(
        public, name="Vault Agent (members)", description=f"for {principal.id}"
    )


def ledger_agent() -> Agent:
    agent = Agent(
        "Ledger Agent",
        description="Takes its API key in the query string",
        streaming=False,
        security_schemes={
            "key": SecurityScheme(
                api_key_security_scheme=APIKeySecurityScheme(location="query", name="api_key")
            )
        },
        security_requirements=[SecurityRequirement(schemes={"key": StringList()})],
    )

    @agent.skill("balance", description="Says whose balance it is")
    async def balance(ctx: TaskContext) -> str:
        return f"balance of {ctx.caller.id}"

    return agent


def ledger_auth() -> dict[str, object]:
    return {"key": APIKeyVerifier({LEDGER_KEY: "dora"})}
