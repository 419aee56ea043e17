"""A small PKI for TLS tests, written to files as servers and clients load them.

A server CA issues the server certificate (for 127.0.0.1); a client CA issues the client
certificates the agent trusts; another CA issues certificates it must not trust.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from peerwire.client.auth import ClientCertificate
from peerwire.httpd import ServerTLS

from ._support import Authority, _name, authority, client_certificate


@dataclass(frozen=True)
class Pki:
    directory: Path
    server_ca: Authority
    client_ca: Authority
    other_ca: Authority

    @property
    def server_ca_file(self) -> Path:
        return self.directory / "server-ca.pem"

    @property
    def client_ca_file(self) -> Path:
        return self.directory / "client-ca.pem"

    def server_tls(self, *, require_client_cert: bool = True, ask: bool = True) -> ServerTLS:
        """The server's settings: asking for client certificates from the client CA."""
        return ServerTLS(
            self.directory / "server.pem",
            self.directory / "server.key",
            client_ca=self.client_ca_file if ask else None,
            require_client_cert=require_client_cert,
        )

    def client(self, name: str, *, issuer: Authority | None = None) -> ClientCertificate:
        """A client certificate ``CN=name`` (from the client CA unless ``issuer``), trusting
        the server CA."""
        key = ec.generate_private_key(ec.SECP256R1())
        certificate = client_certificate(issuer or self.client_ca, name, key=key)
        stem = self.directory / f"client-{name}"
        _write(stem.with_suffix(".pem"), certificate.public_bytes(serialization.Encoding.PEM))
        _write(stem.with_suffix(".key"), _key_pem(key))
        return ClientCertificate(
            stem.with_suffix(".pem"), stem.with_suffix(".key"), cafile=self.server_ca_file
        )


def make_pki(directory: Path) -> Pki:
    pki = Pki(
        directory,
        server_ca=authority("Agent Server CA"),
        client_ca=authority("Partner Client CA"),
        other_ca=authority("Somebody Else's CA"),
    )
    _write(pki.server_ca_file, pki.server_ca.pem)
    _write(pki.client_ca_file, pki.client_ca.pem)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    server = (
        x509.CertificateBuilder()
        .subject_name(_name("127.0.0.1"))
        .issuer_name(pki.server_ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(pki.server_ca.key, hashes.SHA256())
    )
    _write(directory / "server.pem", server.public_bytes(serialization.Encoding.PEM))
    _write(directory / "server.key", _key_pem(key))
    return pki


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    path.chmod(0o600)
