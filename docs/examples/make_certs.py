"""Development certificates for mutual TLS: one CA, a server certificate for 127.0.0.1 and
a client certificate ``CN=billing,O=Example``, written as PEM files into ``certs/``.

``python make_certs.py`` (needs ``cryptography``, part of the ``security`` extra). Real
deployments get their certificates from their own CA.
"""

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Example"),
        ]
    )


def _write(path: Path, key: ec.EllipticCurvePrivateKey, certificate: x509.Certificate) -> None:
    path.with_suffix(".pem").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    path.with_suffix(".key").write_bytes(pem)


def make_certs(directory: Path = Path("certs")) -> Path:
    directory.mkdir(exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("Example Dev CA"))
        .issuer_name(_name("Example Dev CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    _write(directory / "ca", ca_key, ca)
    leaves = {
        "server": (_name("127.0.0.1"), ExtendedKeyUsageOID.SERVER_AUTH),
        "client": (_name("billing"), ExtendedKeyUsageOID.CLIENT_AUTH),
    }
    for stem, (subject, usage) in leaves.items():
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if stem == "server":
            address = x509.IPAddress(ipaddress.ip_address("127.0.0.1"))
            builder = builder.add_extension(x509.SubjectAlternativeName([address]), critical=False)
        _write(directory / stem, key, builder.sign(ca_key, hashes.SHA256()))
    return directory


if __name__ == "__main__":
    print(f"written to {make_certs()}/")
