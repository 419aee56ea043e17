"""Mutual TLS on the wire: real handshakes on 127.0.0.1, with certificates made for the test.

peerwire's HTTP server (adding the ASGI TLS extension) and the gRPC server terminate TLS with the
same ``ServerTLS``; the handshake checks the client certificate's chain, and the
``MTLSVerifier`` maps the verified certificate to a principal. A certificate from another CA
never gets past the handshake: the client sees a connection error that says so. With client
certificates optional, a caller without one is authenticated by the card's other schemes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from peerwire import Agent, TaskContext
from peerwire.client.auth import APIKey, Credentials
from peerwire.client.transports.base import ClientTLS
from peerwire.client.transports.grpc import GrpcTransport
from peerwire.errors import A2AConnectionError, AuthenticationError
from peerwire.httpd import HTTPServer
from peerwire.httpd._tls_scope import tls_extension
from peerwire.security import APIKeyVerifier, MTLSVerifier, RequestCredentials
from peerwire.server import create_app
from peerwire.types import (
    APIKeySecurityScheme,
    Binding,
    MutualTlsSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

from ._bindings import BINDINGS, completed_text, connect, serving
from ._pki import Pki, make_pki
from ._support import TIMEOUT_S

ALICE = "CN=alice,O=Peerwire Tests"
REPO = Path(__file__).resolve().parents[2]
PEERWIRE = (sys.executable, "-c", "from peerwire.cli import main; main()")
MTLS = SecurityScheme(mtls_security_scheme=MutualTlsSecurityScheme())
KEY = SecurityScheme(
    api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-API-Key")
)


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return make_pki(tmp_path)


def agent(*, with_api_key: bool = False) -> Agent:
    schemes = {"mtls": MTLS, **({"key": KEY} if with_api_key else {})}
    requirements = [SecurityRequirement(schemes={name: StringList()}) for name in schemes]
    built = Agent("Partner Agent", security_schemes=schemes, security_requirements=requirements)

    @built.skill()
    async def whoami(ctx: TaskContext) -> str:
        return ctx.owner

    return built


def mtls_verifier(pki: Pki) -> MTLSVerifier:
    return MTLSVerifier([pki.client_ca.pem], principals={ALICE: "alice"})


@BINDINGS
async def test_a_certificate_from_the_trusted_ca_is_the_callers_principal(
    binding: str, pki: Pki
) -> None:
    auth = {"mtls": mtls_verifier(pki)}
    async with serving(agent(), tls=pki.server_tls(), auth=auth) as url:
        assert url.startswith("https://127.0.0.1:")
        alice = Credentials(pki.client("alice"))
        async with connect(url, binding, credentials=alice) as client:
            assert completed_text(await client.send("hi")) == "alice"
            if binding == Binding.GRPC:
                # The card says TLS explicitly, even on loopback.
                assert client.interface.url.startswith("https://127.0.0.1:")
        # Trusted CA, but a certificate the agent maps to nobody: refused by the verifier.
        carol = Credentials(pki.client("carol"))
        async with connect(url, binding, credentials=carol) as client:
            with pytest.raises(AuthenticationError, match="not allowed to call this agent"):
                await client.send("hi")


@pytest.mark.parametrize("binding", [Binding.JSONRPC, Binding.HTTP_JSON], ids=["jsonrpc", "rest"])
async def test_a_certificate_from_another_ca_fails_the_https_handshake(
    binding: str, pki: Pki
) -> None:
    async with serving(agent(), tls=pki.server_tls(), auth={"mtls": mtls_verifier(pki)}) as url:
        mallory = Credentials(pki.client("mallory", issuer=pki.other_ca))
        with pytest.raises(A2AConnectionError, match="TLS handshake failed") as refused:
            await connect(url, binding, credentials=mallory)
        assert "client certificate" in refused.value.message
        # Nor does a client without any certificate get through.
        http = httpx.AsyncClient(verify=ssl.create_default_context(cafile=pki.server_ca_file))
        async with http:
            with pytest.raises(A2AConnectionError, match="TLS handshake failed"):
                await connect(url, binding, http_client=http)
        # The server is unharmed.
        alice = Credentials(pki.client("alice"))
        async with connect(url, binding, credentials=alice) as client:
            assert completed_text(await client.send("hi")) == "alice"


async def test_a_certificate_from_another_ca_fails_the_grpc_handshake(pki: Pki) -> None:
    async with serving(agent(), tls=pki.server_tls(), auth={"mtls": mtls_verifier(pki)}) as url:
        alice = Credentials(pki.client("alice"))
        async with connect(url, Binding.GRPC, credentials=alice) as client:
            grpc_url = client.interface.url
        mallory = pki.client("mallory", issuer=pki.other_ca)
        transport = GrpcTransport(grpc_url, client_tls=mallory.tls_material(), timeout=TIMEOUT_S)
        # The card comes over HTTPS with Alice's certificate; the calls carry Mallory's.
        async with connect(url, Binding.GRPC, credentials=alice, transport=transport) as client:
            with pytest.raises(A2AConnectionError, match="TLS handshake failed"):
                await client.send("hi")
        anonymous = GrpcTransport(
            grpc_url,
            client_tls=ClientTLS(root_certificates=pki.server_ca_file.read_bytes()),
            timeout=TIMEOUT_S,
        )
        async with connect(url, Binding.GRPC, credentials=alice, transport=anonymous) as client:
            with pytest.raises(A2AConnectionError, match="TLS handshake failed"):
                await client.send("hi")


async def test_with_optional_client_certificates_other_schemes_still_work(pki: Pki) -> None:
    tls = pki.server_tls(require_client_cert=False)
    auth = {"mtls": mtls_verifier(pki), "key": APIKeyVerifier({"k-bob": "bob"})}
    trusting = ssl.create_default_context(cafile=pki.server_ca_file)
    async with (
        serving(agent(with_api_key=True), tls=tls, auth=auth) as url,
        httpx.AsyncClient(verify=trusting, timeout=TIMEOUT_S) as http,
    ):
        for binding in (Binding.JSONRPC, Binding.HTTP_JSON):
            alice = Credentials(pki.client("alice"))
            async with connect(url, binding, credentials=alice) as client:
                assert completed_text(await client.send("hi")) == "alice"
            bob = Credentials(APIKey("k-bob"))
            async with connect(url, binding, credentials=bob, http_client=http) as client:
                assert completed_text(await client.send("hi")) == "bob"
        # Neither: 401, and the challenge names both ways in.
        response = await http.post(url + "/", json={}, headers={"A2A-Version": "1.0"})
        assert response.status_code == 401
        challenge = response.headers["www-authenticate"]
        assert 'MutualTLS realm="Partner Agent"' in challenge and "APIKey" in challenge
        # gRPC does not ask for certificates unless it requires them: the API key works.
        async with connect(url, Binding.GRPC, http_client=http) as located:
            grpc_url = located.interface.url
        roots = ClientTLS(root_certificates=pki.server_ca_file.read_bytes())
        transport = GrpcTransport(grpc_url, client_tls=roots, timeout=TIMEOUT_S)
        bob = Credentials(APIKey("k-bob"))
        async with connect(
            url, Binding.GRPC, credentials=bob, transport=transport, http_client=http
        ) as client:
            assert completed_text(await client.send("hi")) == "bob"


async def test_the_tls_extension_reads_a_verified_client_certificate(pki: Pki) -> None:
    """The extension as an application sees it, behind peerwire's HTTP server."""
    seen: list[dict[str, object]] = []

    class Probe:
        """An ASGI app recording the extension, served with an agent app's lifespan."""

        def __init__(self) -> None:
            self.base = create_app(Agent("probe"))
            self.dispatcher = self.base.dispatcher

        def lifespan(self) -> contextlib.AbstractAsyncContextManager[None]:
            return self.base.lifespan()

        async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
            seen.append(scope["extensions"]["tls"])
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})

    tls = pki.server_tls()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    server = HTTPServer(Probe(), ssl_context=tls.ssl_context())
    serving_task = asyncio.get_running_loop().create_task(server.serve(sock=sock))
    try:
        await asyncio.wait_for(server.started.wait(), TIMEOUT_S)
        alice = pki.client("alice")
        url = f"https://127.0.0.1:{sock.getsockname()[1]}/"
        async with httpx.AsyncClient(verify=alice.ssl_context(), timeout=TIMEOUT_S) as http:
            assert (await http.get(url)).status_code == 204
        (extension,) = seen
        assert extension["client_cert_name"] == ALICE
        chain = extension["client_cert_chain"]
        assert isinstance(chain, list) and len(chain) >= 1
        assert alice.certfile.read_text().strip() == chain[0].strip()
        assert extension["tls_version"] in (0x0303, 0x0304)
        credentials = RequestCredentials.from_asgi(
            {"headers": [], "extensions": {"tls": extension}}
        )
        principal = await mtls_verifier(pki).verify("mtls", MTLS, credentials)
        assert principal is not None and principal.id == "alice"
    finally:
        server.request_exit()
        await asyncio.wait({serving_task}, timeout=TIMEOUT_S)
        sock.close()


def test_tls_extension_is_absent_without_tls() -> None:
    class Plain:
        def get_extra_info(self, name: str) -> None:
            return None

    assert tls_extension(Plain()) is None  # type: ignore[arg-type]


# -- peerwire serve ----------------------------------------------------------------------------


@contextlib.contextmanager
def peerwire_serve_tls(pki: Pki, *args: str) -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    tls = pki.server_tls()
    command = [
        *PEERWIRE,
        "serve",
        "peerwire.samples.glossary:agent",
        "--port",
        str(port),
        "--store",
        "memory",
        "--no-grpc",
        "--ssl-certfile",
        str(tls.certfile),
        "--ssl-keyfile",
        str(tls.keyfile),
        *args,
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    url = f"https://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + TIMEOUT_S
        probe = pki.client("probe").ssl_context()  # the server may require a certificate
        with httpx.Client(verify=probe, timeout=2) as http:
            while process.poll() is None and time.monotonic() < deadline:
                with contextlib.suppress(httpx.TransportError):
                    http.get(url + "/.well-known/agent-card.json")
                    break
                time.sleep(0.1)  # another process: polling is the only way to see it up
        if process.poll() is not None:
            stderr = process.stderr.read().decode() if process.stderr else ""
            raise AssertionError(f"peerwire serve exited {process.returncode}: {stderr}")
        yield url
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stderr is not None:
            process.stderr.close()


async def test_peerwire_serve_requires_client_certificates(pki: Pki) -> None:
    args = ("--ssl-ca-certs", str(pki.client_ca_file), "--require-client-cert")
    with peerwire_serve_tls(pki, *args) as url:
        alice = Credentials(pki.client("alice"))
        async with connect(url, Binding.JSONRPC, credentials=alice) as client:
            assert client.interface.url.startswith("https://127.0.0.1:")
        mallory = Credentials(pki.client("mallory", issuer=pki.other_ca))
        with pytest.raises(A2AConnectionError, match="TLS handshake failed"):
            await connect(url, Binding.JSONRPC, credentials=mallory)


def test_peerwire_serve_refuses_incomplete_tls_options(pki: Pki) -> None:
    done = subprocess.run(
        [
            *PEERWIRE,
            "serve",
            "peerwire.samples.glossary:agent",
            "--require-client-cert",
            "--ssl-certfile",
            str(pki.directory / "server.pem"),
            "--ssl-keyfile",
            str(pki.directory / "server.key"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 2
    assert "require_client_cert needs client_ca" in done.stderr


# -- the TLS settings themselves ---------------------------------------------------------------


def test_a_client_certificate_with_an_encrypted_key_in_one_file_works_for_grpc(
    pki: Pki, tmp_path: Path
) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from peerwire.client.auth import ClientCertificate

    from ._support import client_certificate

    key = ec.generate_private_key(ec.SECP256R1())
    certificate = client_certificate(pki.client_ca, "alice", key=key)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"pw"),
    )
    bundle = tmp_path / "alice-bundle.pem"
    bundle.write_bytes(certificate.public_bytes(serialization.Encoding.PEM) + encrypted)
    alice = ClientCertificate(bundle, password="pw", cafile=pki.server_ca_file)
    material = alice.tls_material()
    assert material.private_key is not None and b"ENCRYPTED" not in material.private_key
    loaded = serialization.load_pem_private_key(material.private_key, None)
    assert loaded.public_key() == key.public_key()
    assert (
        material.certificate_chain == certificate.public_bytes(serialization.Encoding.PEM).strip()
    )
    assert material.root_certificates == pki.server_ca_file.read_bytes()
    assert "private" not in repr(material).lower()


def test_server_tls_settings_are_checked_when_made(pki: Pki, tmp_path: Path) -> None:
    from peerwire.httpd import ServerTLS

    certfile, keyfile = pki.directory / "server.pem", pki.directory / "server.key"
    with pytest.raises(ValueError, match="require_client_cert needs client_ca"):
        ServerTLS(certfile, keyfile, require_client_cert=True)
    with pytest.raises(ValueError, match="does not exist"):
        ServerTLS(tmp_path / "missing.pem", keyfile)
    other_key = pki.client("someone").keyfile
    assert other_key is not None
    with pytest.raises(ssl.SSLError):
        ServerTLS(certfile, other_key)  # a key that is not the certificate's
    tls = ServerTLS(certfile, keyfile, client_ca=pki.client_ca_file)
    assert tls.ssl_context().verify_mode == ssl.CERT_OPTIONAL
    assert pki.server_tls().ssl_context().verify_mode == ssl.CERT_REQUIRED
