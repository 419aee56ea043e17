"""Mutual TLS: a verified peer certificate mapped to a principal, and every bad one refused.

The TLS handshake itself is the server's job; what reaches the authenticator is the
certificate the binding hands over (``PeerCertificate``), here built from certificates minted
with ``cryptography``, and from an ASGI scope carrying the ASGI TLS extension.
"""

from __future__ import annotations

import datetime

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.x509.oid import ExtendedKeyUsageOID

from peerwire.errors import AuthenticationError
from peerwire.security import MTLSVerifier, PeerCertificate, Principal, RequestCredentials
from peerwire.types import MutualTlsSecurityScheme, SecurityScheme

from ._support import authority, client_certificate, pem

SCHEME = SecurityScheme(mtls_security_scheme=MutualTlsSecurityScheme())
ROOT = authority("Partner Root CA")
INTERMEDIATE = authority("Partner Issuing CA", issuer=ROOT)
OTHER_ROOT = authority("Somebody Else's CA")


async def verify(verifier: MTLSVerifier, peer: PeerCertificate | None) -> Principal | None:
    return await verifier.verify("mtls", SCHEME, RequestCredentials({}, peer_certificate=peer))


def peer(certificate: object, *chain: object) -> PeerCertificate:
    return PeerCertificate.from_pem(pem(certificate), chain=[pem(c) for c in chain])  # type: ignore[arg-type]


async def test_a_certificate_from_the_trusted_ca_maps_to_its_subject() -> None:
    principal = await verify(MTLSVerifier([ROOT.pem]), peer(client_certificate(ROOT, "billing")))
    assert principal is not None
    assert principal.id == "CN=billing,O=Peerwire Tests"
    assert principal.scheme == "mtls"
    assert principal.claims["issuer"] == "CN=Partner Root CA,O=Peerwire Tests"


async def test_no_certificate_is_no_credential() -> None:
    assert await verify(MTLSVerifier([ROOT.pem]), None) is None


async def test_a_chain_through_the_clients_intermediate_is_accepted() -> None:
    leaf = client_certificate(INTERMEDIATE, "shipping")
    principal = await verify(MTLSVerifier([ROOT.pem]), peer(leaf, INTERMEDIATE.certificate))
    assert principal is not None and principal.id.startswith("CN=shipping")
    # Without the intermediate the chain is incomplete.
    with pytest.raises(AuthenticationError, match="not issued by a trusted CA"):
        await verify(MTLSVerifier([ROOT.pem]), peer(leaf))


async def test_a_certificate_from_another_ca_is_refused() -> None:
    with pytest.raises(AuthenticationError, match="not issued by a trusted CA"):
        await verify(MTLSVerifier([ROOT.pem]), peer(client_certificate(OTHER_ROOT, "billing")))


async def test_a_forged_issuer_name_is_refused() -> None:
    # Same issuer name as the trusted CA, signed by another key.
    impostor = authority("Partner Root CA")
    with pytest.raises(AuthenticationError, match="not issued by a trusted CA"):
        await verify(MTLSVerifier([ROOT.pem]), peer(client_certificate(impostor, "billing")))


async def test_a_non_ca_certificate_cannot_act_as_an_intermediate() -> None:
    leaf_as_issuer = authority("Sneaky")  # a CA...
    fake_intermediate = client_certificate(ROOT, "Sneaky")  # ...whose name a leaf reuses
    leaf = client_certificate(leaf_as_issuer, "billing")
    with pytest.raises(AuthenticationError, match="not issued by a trusted CA"):
        await verify(MTLSVerifier([ROOT.pem]), peer(leaf, fake_intermediate))


@pytest.mark.parametrize(
    ("days", "match"), [((-30, -1), "has expired"), ((1, 30), "not valid yet")]
)
async def test_certificates_outside_their_validity_are_refused(
    days: tuple[int, int], match: str
) -> None:
    certificate = client_certificate(ROOT, "billing", valid_days=days)
    with pytest.raises(AuthenticationError, match=match):
        await verify(MTLSVerifier([ROOT.pem]), peer(certificate))


async def test_a_server_only_certificate_is_refused() -> None:
    certificate = client_certificate(ROOT, "web", usage=ExtendedKeyUsageOID.SERVER_AUTH)
    with pytest.raises(AuthenticationError, match="not meant for client authentication"):
        await verify(MTLSVerifier([ROOT.pem]), peer(certificate))


async def test_principals_can_be_mapped_by_subject_or_fingerprint() -> None:
    billing = client_certificate(ROOT, "billing")
    shipping = client_certificate(ROOT, "shipping")
    unknown = client_certificate(ROOT, "unknown")
    verifier = MTLSVerifier(
        [ROOT.pem],
        principals={
            "CN=billing,O=Peerwire Tests": Principal(id="billing-app", scopes=frozenset({"pay"})),
            shipping.fingerprint(hashes.SHA256()).hex(): "shipping-app",
        },
    )
    by_subject = await verify(verifier, peer(billing))
    assert by_subject is not None and (by_subject.id, by_subject.scopes) == ("billing-app", {"pay"})
    by_fingerprint = await verify(verifier, peer(shipping))
    assert by_fingerprint is not None and by_fingerprint.id == "shipping-app"
    with pytest.raises(AuthenticationError, match="not allowed"):
        await verify(verifier, peer(unknown))


async def test_a_mapping_function_decides() -> None:
    def by_common_name(certificate: object) -> str | None:
        name = certificate.subject.rfc4514_string()  # type: ignore[attr-defined]
        return "team-" + name.split(",")[0][3:] if "billing" in name else None

    verifier = MTLSVerifier([ROOT.pem], principals=by_common_name)
    principal = await verify(verifier, peer(client_certificate(ROOT, "billing")))
    assert principal is not None and principal.id == "team-billing"


async def test_the_clock_decides_validity() -> None:
    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=365)
    verifier = MTLSVerifier([ROOT.pem], clock=lambda: later)
    with pytest.raises(AuthenticationError, match="expired"):
        await verify(verifier, peer(client_certificate(ROOT, "billing")))


async def test_garbage_is_refused() -> None:
    with pytest.raises(AuthenticationError, match="cannot be parsed"):
        await verify(MTLSVerifier([ROOT.pem]), PeerCertificate(der=b"\x30\x03\x02\x01\x00"))
    with pytest.raises(ValueError, match="not a PEM certificate"):
        PeerCertificate.from_pem("-----BEGIN CERTIFICATE-----\nnope")


def test_the_asgi_tls_extension_carries_the_chain() -> None:
    leaf = client_certificate(INTERMEDIATE, "shipping")
    scope = {
        "type": "http",
        "headers": [(b"x-api-key", b"k"), (b"cookie", b"a=1"), (b"cookie", b"b=2")],
        "query_string": b"x=1",
        "extensions": {"tls": {"client_cert_chain": [pem(leaf), pem(INTERMEDIATE.certificate)]}},
    }
    credentials = RequestCredentials.from_asgi(scope)
    assert credentials.peer_certificate is not None
    assert len(credentials.peer_certificate.chain) == 1
    assert credentials.cookies == {"a": "1", "b": "2"}
    assert credentials.query == {"x": "1"}
    assert credentials.header("X-API-Key") == "k"
    assert RequestCredentials.from_asgi({"headers": []}).peer_certificate is None


async def test_an_unreadable_chain_in_the_scope_is_refused_not_a_crash() -> None:
    scope = {"headers": [], "extensions": {"tls": {"client_cert_chain": ["garbage"]}}}
    credentials = RequestCredentials.from_asgi(scope)
    with pytest.raises(AuthenticationError, match="cannot be parsed"):
        await MTLSVerifier([ROOT.pem]).verify("mtls", SCHEME, credentials)


def test_grpc_metadata_skips_binary_values() -> None:
    credentials = RequestCredentials.from_headers(
        [("authorization", "Bearer t"), ("trace-bin", b"\x00\x01")]
    )
    assert dict(credentials.headers) == {"authorization": "Bearer t"}


def test_a_verifier_needs_a_trusted_ca() -> None:
    with pytest.raises(ValueError, match="trusted CA"):
        MTLSVerifier([])
