"""What the security tests share: a local token issuer, certificates, loopback serving, JSON-RPC.

``Issuer`` is a small OpenID provider of our own: signing keys (RSA and EC, plus an attacker's
RSA key that reuses the real key id), a JWKS, OIDC discovery and RFC 8414 metadata, and a
client-credentials token endpoint. ``serve_asgi`` runs any ASGI app with uvicorn on
127.0.0.1 and a free port, in the test's event loop. ``Certificates`` mints a CA, an
intermediate, and client certificates with ``cryptography``. ``Rpc`` posts raw JSON-RPC so
tests see status codes and headers exactly as sent.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import itertools
import json
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import anyio
import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from joserfc import jwt
from joserfc.jwk import ECKey, Key, RSAKey

TIMEOUT_S = 30.0
AUDIENCE = "https://agent.example/a2a"

Scope = MutableMapping[str, Any]
ASGI = Callable[[Scope, Any, Any], Awaitable[None]]

_ids = itertools.count(1)


# -- keys and tokens ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Keys:
    rsa: RSAKey
    ec: ECKey
    attacker: RSAKey  # same kid as ``rsa``: a forgery attempt


def generate_keys() -> Keys:
    return Keys(
        rsa=RSAKey.generate_key(2048, parameters={"kid": "rsa-1", "use": "sig"}),
        ec=ECKey.generate_key("P-256", parameters={"kid": "ec-1"}),
        attacker=RSAKey.generate_key(2048, parameters={"kid": "rsa-1"}),
    )


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def public_jwks(*keys: Key) -> dict[str, Any]:
    return {"keys": [key.as_dict(private=False) for key in keys]}


def mint(
    key: Key,
    *,
    issuer: str,
    audience: str | list[str] = AUDIENCE,
    subject: str = "alice",
    scope: str = "",
    lifetime: float = 300,
    alg: str | None = None,
    now: float | None = None,
    header: dict[str, Any] | None = None,
    **claims: Any,
) -> str:
    """A signed JWT; ``claims`` add or (``None``) remove claims."""
    issued = time.time() if now is None else now
    body: dict[str, Any] = {
        "iss": issuer,
        "aud": audience,
        "sub": subject,
        "iat": int(issued),
        "exp": int(issued + lifetime),
    }
    if scope:
        body["scope"] = scope
    body.update(claims)
    body = {k: v for k, v in body.items() if v is not None}
    algorithm = alg or ("ES256" if isinstance(key, ECKey) else "RS256")
    protected = {"alg": algorithm, "kid": key.kid, **(header or {})}
    return jwt.encode(protected, body, key, algorithms=[algorithm])


def unsigned(claims: dict[str, Any], header: dict[str, Any] | None = None) -> str:
    """An ``alg: none`` token (no signature)."""
    protected = {"alg": "none", "typ": "JWT", **(header or {})}
    return f"{b64(json.dumps(protected).encode())}.{b64(json.dumps(claims).encode())}."


def rs256_token(key: RSAKey, header: dict[str, Any], claims: dict[str, Any]) -> str:
    """An RS256 token signed by hand, for headers a JOSE library refuses to produce."""
    from cryptography.hazmat.primitives.asymmetric import padding

    protected = {"alg": "RS256", "kid": key.kid, **header}
    signing_input = f"{b64(json.dumps(protected).encode())}.{b64(json.dumps(claims).encode())}"
    private = key.private_key
    assert private is not None
    signature = private.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())  # type: ignore[call-arg, union-attr]
    return f"{signing_input}.{b64(signature)}"


def hmac_token(secret: bytes, claims: dict[str, Any], kid: str) -> str:
    """An HS256 token keyed with ``secret`` (the HS/RS confusion attack uses a public key)."""
    import hashlib
    import hmac

    protected = {"alg": "HS256", "typ": "JWT", "kid": kid}
    signing_input = f"{b64(json.dumps(protected).encode())}.{b64(json.dumps(claims).encode())}"
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{b64(signature)}"


# -- the local issuer --------------------------------------------------------------------------


@dataclass
class Issuer:
    """A local OpenID provider as an ASGI app (serve it with ``serve_asgi``)."""

    keys: Keys
    url: str = ""
    clients: dict[str, tuple[str, str]] = field(default_factory=dict)
    """client_id -> (secret, subject)."""
    token_lifetime: int = 300
    issue_refresh_tokens: bool = False
    jwks_requests: int = 0
    token_requests: list[dict[str, str]] = field(default_factory=list)
    published: list[Key] = field(default_factory=list)
    """The keys the JWKS shows (default: the RSA and EC keys)."""
    _refresh_tokens: dict[str, tuple[str, str]] = field(default_factory=dict)

    def token(self, key: Key | None = None, **options: Any) -> str:
        options.setdefault("issuer", self.url)
        return mint(key or self.keys.rsa, **options)

    @property
    def discovery_url(self) -> str:
        return self.url + "/.well-known/openid-configuration"

    @property
    def oauth_metadata_url(self) -> str:
        return self.url + "/.well-known/oauth-authorization-server"

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.url,
            "jwks_uri": self.url + "/jwks.json",
            "token_endpoint": self.url + "/token",
            "grant_types_supported": ["client_credentials", "refresh_token"],
        }

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        path = scope["path"]
        if path in ("/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"):
            await _json(send, 200, self.metadata())
        elif path == "/jwks.json":
            self.jwks_requests += 1
            await _json(send, 200, public_jwks(*(self.published or [self.keys.rsa, self.keys.ec])))
        elif path == "/token" and scope["method"] == "POST":
            await self._token_endpoint(scope, receive, send)
        else:
            await _json(send, 404, {"error": "not_found"})

    async def _token_endpoint(self, scope: Scope, receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        form = dict(parse_qsl(body.decode()))
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        client_id, secret = form.get("client_id"), form.get("client_secret")
        authorization = headers.get("authorization", "")
        if authorization.startswith("Basic "):
            from urllib.parse import unquote

            pair = base64.b64decode(authorization[6:]).decode()
            raw_id, _, raw_secret = pair.partition(":")
            client_id, secret = unquote(raw_id), unquote(raw_secret)
        self.token_requests.append({**form, "client_id": client_id or ""})
        known = self.clients.get(client_id or "")
        if known is None or known[0] != secret:
            await _json(send, 401, {"error": "invalid_client"})
            return
        scope_text = form.get("scope", "")
        if form.get("grant_type") == "refresh_token":
            held = self._refresh_tokens.pop(form.get("refresh_token", ""), None)
            if held is None or held[0] != client_id:
                await _json(send, 400, {"error": "invalid_grant"})
                return
            scope_text = held[1]
        elif form.get("grant_type") != "client_credentials":
            await _json(send, 400, {"error": "unsupported_grant_type"})
            return
        access = self.token(subject=known[1], scope=scope_text, lifetime=self.token_lifetime)
        answer: dict[str, Any] = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.token_lifetime,
        }
        if scope_text:
            answer["scope"] = scope_text
        if self.issue_refresh_tokens:
            refresh = f"refresh-{next(_ids)}"
            self._refresh_tokens[refresh] = (client_id or "", scope_text)
            answer["refresh_token"] = refresh
        await _json(send, 200, answer)


async def _lifespan(receive: Any, send: Any) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _json(send: Any, status: int, document: Any) -> None:
    body = json.dumps(document).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class JsonApp:
    """An ASGI app serving fixed JSON documents by path (a JWKS host, a card host)."""

    def __init__(self, documents: dict[str, Any] | None = None) -> None:
        self.documents = dict(documents or {})
        self.requests: list[str] = []

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        self.requests.append(scope["path"])
        document = self.documents.get(scope["path"])
        if document is None:
            await _json(send, 404, {"error": "not_found"})
        else:
            await _json(send, 200, document)


@contextlib.asynccontextmanager
async def serve_asgi(app: Any) -> AsyncIterator[str]:
    """``app`` on uvicorn at 127.0.0.1 and a free port, in this event loop; yields the URL."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        config = uvicorn.Config(
            app, lifespan="on", log_config=None, log_level="warning", access_log=False
        )
        server = uvicorn.Server(config)
        task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
        try:
            with anyio.fail_after(TIMEOUT_S):
                while not server.started and not task.done():  # noqa: ASYNC110
                    await anyio.sleep(0.005)
            assert server.started, "the test server did not start"
            yield url
        finally:
            server.should_exit = True
            with anyio.CancelScope(shield=True):
                await asyncio.wait({task}, timeout=TIMEOUT_S)
                if not task.done():
                    task.cancel()
                    await asyncio.wait({task})
    finally:
        sock.close()


# -- certificates ------------------------------------------------------------------------------


@dataclass
class Authority:
    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate

    @property
    def pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Peerwire Tests"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def authority(name: str, issuer: Authority | None = None) -> Authority:
    """A CA (self-signed, or an intermediate under ``issuer``)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(issuer.certificate.subject if issuer else _name(name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    )
    signer = issuer.key if issuer else key
    return Authority(key, builder.sign(signer, hashes.SHA256()))


def client_certificate(
    issuer: Authority,
    common_name: str,
    *,
    valid_days: tuple[int, int] = (-1, 30),
    usage: x509.ObjectIdentifier | None = ExtendedKeyUsageOID.CLIENT_AUTH,
    key: ec.EllipticCurvePrivateKey | None = None,
) -> x509.Certificate:
    key = key or ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(issuer.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now + datetime.timedelta(days=valid_days[0]))
        .not_valid_after(now + datetime.timedelta(days=valid_days[1]))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
    )
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    return builder.sign(issuer.key, hashes.SHA256())


def pem(certificate: x509.Certificate) -> str:
    return certificate.public_bytes(serialization.Encoding.PEM).decode()


# -- JSON-RPC ----------------------------------------------------------------------------------


def user_message(text: str = "hello", **fields: Any) -> dict[str, Any]:
    message: dict[str, Any] = {
        "messageId": f"m-{next(_ids)}",
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }
    message.update(fields)
    return message


class Rpc:
    """Raw JSON-RPC calls to ``endpoint`` with per-call headers (the credentials)."""

    def __init__(self, http: httpx.AsyncClient, endpoint: str, headers: dict[str, str]) -> None:
        self.http = http
        self.endpoint = endpoint
        self.headers = headers

    def using(self, **headers: str) -> Rpc:
        """The same endpoint with other credentials (header names use ``_`` for ``-``)."""
        return Rpc(self.http, self.endpoint, {k.replace("_", "-"): v for k, v in headers.items()})

    async def post(self, method: str, params: Any = None, **options: Any) -> httpx.Response:
        body = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params or {}}
        headers = {"A2A-Version": "1.0", "Content-Type": "application/json", **self.headers}
        return await self.http.post(
            self.endpoint, content=json.dumps(body), headers=headers, **options
        )

    async def result(self, method: str, params: Any = None) -> Any:
        response = await self.post(method, params)
        assert response.status_code == 200, (response.status_code, response.text)
        answer = response.json()
        assert "result" in answer, answer
        return answer["result"]

    async def error(self, method: str, params: Any = None, status: int = 200) -> dict[str, Any]:
        response = await self.post(method, params)
        assert response.status_code == status, (response.status_code, response.text)
        answer = response.json()
        assert "error" in answer, answer
        return answer["error"]  # type: ignore[no-any-return]

    async def send(self, text: str = "hello", **message: Any) -> dict[str, Any]:
        result = await self.result("SendMessage", {"message": user_message(text, **message)})
        return result["task"]  # type: ignore[no-any-return]


def reason(error: dict[str, Any]) -> str:
    """The ErrorInfo reason of a JSON-RPC error object."""
    infos = [d for d in error.get("data", []) if d.get("@type", "").endswith("ErrorInfo")]
    return str(infos[0]["reason"]) if infos else ""
