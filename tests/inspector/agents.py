"""Agents the inspector's tests look at, built with the public API: a Vault that takes a
bearer token or an API key (in the header ``X-Vault-Key``), a Ledger that takes OAuth 2.0
access tokens from a token endpoint served here (the client credentials grant), a Partner
that takes client certificates, one whose card is signed, and one taking parts of any media
type. The Glossary sample (it
completes, asks, and has a slow skill) is served by conftest.py."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import socket
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qsl

from peerwire import Agent, Message, TaskContext
from peerwire.errors import AuthenticationError
from peerwire.security import APIKeyVerifier, Principal, RequestCredentials
from peerwire.types import (
    APIKeySecurityScheme,
    ClientCredentialsOAuthFlow,
    HTTPAuthSecurityScheme,
    MutualTlsSecurityScheme,
    OAuth2SecurityScheme,
    OAuthFlows,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

VAULT_TOKEN = "tok-inspector-4c1d9e"
VAULT_KEY = "key-inspector-77e0a2"


class FixedToken:
    """A ``peerwire.security.Verifier`` for HTTP Bearer with one valid token."""

    def supports(self, scheme: SecurityScheme) -> bool:
        return scheme.http_auth_security_scheme is not None

    async def verify(
        self, name: str, scheme: SecurityScheme, credentials: RequestCredentials
    ) -> Principal | None:
        kind, _, token = (credentials.header("authorization") or "").partition(" ")
        if kind.lower() != "bearer":
            return None
        if token != VAULT_TOKEN:
            raise AuthenticationError("The bearer token is not valid")
        return Principal(id="inspector-user", scheme=name)


def vault_agent() -> Agent:
    agent = Agent(
        "Vault Agent",
        description="Answers bearer-token holders only",
        security_schemes={
            "bearer": SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer")
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

    @agent.skill("whoami", description="Says who is calling", examples=["who am I?"])
    async def whoami(ctx: TaskContext) -> str:
        return f"you are {ctx.caller.id}"

    return agent


def vault_auth() -> dict[str, object]:
    return {"bearer": FixedToken(), "key": APIKeyVerifier({VAULT_KEY: "key-holder"})}


def signed_agent() -> Agent:
    """An agent to serve with a ``signing_key``: its card carries a signature."""
    agent = Agent("Signed Agent", description="Signs its card")

    @agent.skill()
    async def echo(text: str) -> str:
        return text

    return agent


def parts_agent() -> Agent:
    """An agent that takes parts of any media type (``*/*``) and names what it got."""
    agent = Agent(
        "Parts Agent", description="Names the parts it receives", default_input_modes=["*/*"]
    )

    @agent.skill()
    async def describe(message: Message) -> str:
        return ", ".join(p.filename or p.media_type or p.kind for p in message.parts)

    return agent


# -- mutual TLS -------------------------------------------------------------------------------

PARTNER_ALICE = "CN=alice,O=Peerwire Tests"  # the subject tests/security's PKI gives alice


def partner_agent() -> Agent:
    """An agent that takes a client certificate only (it answers with the caller's name)."""
    agent = Agent(
        "Partner Agent",
        security_schemes={"mtls": SecurityScheme(mtls_security_scheme=MutualTlsSecurityScheme())},
        security_requirements=[SecurityRequirement(schemes={"mtls": StringList()})],
    )

    @agent.skill()
    async def whoami(ctx: TaskContext) -> str:
        return ctx.owner

    return agent


# -- OAuth 2.0 client credentials -------------------------------------------------------------

OAUTH_CLIENT_ID = "inspector-client"
OAUTH_CLIENT_SECRET = "secret-9d2f7a"
OAUTH_ISSUED_TOKEN = "issued-token-51be0c"


class TokenEndpoint:
    """A token endpoint (RFC 6749 §4.4) for one client: HTTP Basic client authentication,
    the client credentials grant, one fixed access token. ``requests`` counts its calls."""

    def __init__(self) -> None:
        self.requests = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        self.requests += 1
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = dict(scope["headers"])
        expected = base64.b64encode(f"{OAUTH_CLIENT_ID}:{OAUTH_CLIENT_SECRET}".encode())
        form = dict(parse_qsl(body.decode()))
        if headers.get(b"authorization") != b"Basic " + expected:
            status, answer = 401, {"error": "invalid_client"}
        elif form.get("grant_type") != "client_credentials":
            status, answer = 400, {"error": "unsupported_grant_type"}
        else:
            status = 200
            answer = {"access_token": OAUTH_ISSUED_TOKEN, "token_type": "Bearer", "expires_in": 300}
        content = json.dumps(answer).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": content})


class IssuedToken:
    """A ``peerwire.security.Verifier`` for the OAuth 2.0 scheme: the one issued token."""

    def supports(self, scheme: SecurityScheme) -> bool:
        return scheme.oauth2_security_scheme is not None

    async def verify(
        self, name: str, scheme: SecurityScheme, credentials: RequestCredentials
    ) -> Principal | None:
        kind, _, token = (credentials.header("authorization") or "").partition(" ")
        if kind.lower() != "bearer":
            return None
        if token != OAUTH_ISSUED_TOKEN:
            raise AuthenticationError("The access token is not valid")
        return Principal(id=OAUTH_CLIENT_ID, scheme=name, scopes=frozenset({"ledger.read"}))


def oauth_agent(token_url: str) -> Agent:
    agent = Agent(
        "Ledger Agent",
        description="Takes OAuth 2.0 access tokens (client credentials)",
        security_schemes={
            "oauth": SecurityScheme(
                oauth2_security_scheme=OAuth2SecurityScheme(
                    flows=OAuthFlows(
                        client_credentials=ClientCredentialsOAuthFlow(
                            token_url=token_url, scopes={"ledger.read": "read the ledger"}
                        )
                    )
                )
            )
        },
        security_requirements=[
            SecurityRequirement(schemes={"oauth": StringList(list=["ledger.read"])})
        ],
    )

    @agent.skill("balance", description="Says whose balance it is")
    async def balance(ctx: TaskContext) -> str:
        return f"balance of {ctx.caller.id}"

    return agent


def oauth_auth() -> dict[str, object]:
    return {"oauth": IssuedToken()}


@contextlib.asynccontextmanager
async def serve_asgi(app: Any, *, lifespan: str = "off") -> AsyncIterator[str]:
    """``app`` on uvicorn at 127.0.0.1 and a free port, in this event loop; yields its URL."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.bind(("127.0.0.1", 0))
        config = uvicorn.Config(app, lifespan=lifespan, log_config=None, log_level="warning")
        server = uvicorn.Server(config)
        task = asyncio.create_task(server.serve(sockets=[sock]))
        try:
            async with asyncio.timeout(30):
                while not server.started and not task.done():  # noqa: ASYNC110
                    await asyncio.sleep(0.01)
            assert server.started, "the test server did not start"
            yield f"http://127.0.0.1:{sock.getsockname()[1]}"
        finally:
            server.should_exit = True
            await asyncio.wait({task}, timeout=30)
    finally:
        sock.close()
