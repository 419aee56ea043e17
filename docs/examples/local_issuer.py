"""A tiny local token issuer, for trying authentication on one machine (never in production).

It signs JWTs with an EC key of its own (joserfc) and serves what agents and clients fetch:

* ``/.well-known/openid-configuration`` and ``/.well-known/oauth-authorization-server``: the
  issuer's metadata (OpenID Connect Discovery, RFC 8414);
* ``/jwks.json``: its public key;
* ``POST /token``: the OAuth 2.0 client credentials grant (RFC 6749 §4.4), client
  authentication by HTTP Basic or in the form.

Run it with ``uvicorn local_issuer:app --port 9000`` (``pip install uvicorn``).
"""

import base64
import json
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl, unquote

from joserfc import jwt
from joserfc.jwk import ECKey

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

AUDIENCE = "peerwire-howto"  # the agents of the how-to accept tokens for this audience
CLIENTS = {"partner": ("partner-secret", "ledger.read ledger.write")}  # id: (secret, scopes)


class LocalIssuer:
    """An OAuth 2.0 / OpenID Connect issuer at ``url`` as an ASGI app."""

    def __init__(self, url: str, clients: dict[str, tuple[str, str]] = CLIENTS) -> None:
        self.url = url.rstrip("/")
        self.clients = clients
        self.key = ECKey.generate_key("P-256", parameters={"kid": "local-1", "use": "sig"})

    def mint(self, subject: str, *, scope: str = "", lifetime: int = 300) -> str:
        """A signed access token for ``subject`` (what ``POST /token`` hands out)."""
        now = int(time.time())
        claims = {"iss": self.url, "aud": AUDIENCE, "sub": subject, "iat": now}
        claims.update({"exp": now + lifetime, "scope": scope})
        return jwt.encode({"alg": "ES256", "kid": "local-1"}, claims, self.key)

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.url,
            "jwks_uri": f"{self.url}/jwks.json",
            "token_endpoint": f"{self.url}/token",
            "grant_types_supported": ["client_credentials"],
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        path = scope["path"]
        if path.startswith("/.well-known/"):
            await _answer(send, 200, self.metadata())
        elif path == "/jwks.json":
            await _answer(send, 200, {"keys": [self.key.as_dict(private=False)]})
        elif path == "/token" and scope["method"] == "POST":
            await self._token(scope, await _body(receive), send)
        else:
            await _answer(send, 404, {"error": "not_found"})

    async def _token(self, scope: Scope, body: bytes, send: Send) -> None:
        form = dict(parse_qsl(body.decode()))
        client_id, secret = form.get("client_id", ""), form.get("client_secret", "")
        authorization = dict(scope["headers"]).get(b"authorization", b"").decode()
        if authorization.startswith("Basic "):
            pair = base64.b64decode(authorization[6:]).decode()
            client_id, _, secret = (unquote(part) for part in pair.partition(":"))
        known = self.clients.get(client_id)
        if form.get("grant_type") != "client_credentials" or known is None or known[0] != secret:
            await _answer(send, 401, {"error": "invalid_client"})
            return
        scopes = form.get("scope") or known[1]
        token = self.mint(client_id, scope=scopes)
        answer = {"access_token": token, "token_type": "Bearer", "expires_in": 300}
        await _answer(send, 200, {**answer, "scope": scopes})


async def _body(receive: Receive) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += bytes(message.get("body", b""))
        if not message.get("more_body"):
            return body


async def _answer(send: Send, status: int, document: dict[str, Any]) -> None:
    headers = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps(document).encode()})


app = LocalIssuer("http://127.0.0.1:9000")
