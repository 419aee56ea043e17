"""The ASGI TLS extension: what a TLS handshake established, in every request's scope.

``scope["extensions"]["tls"]`` as the ASGI TLS extension specifies: ``client_cert_chain``
(PEM, leaf first), ``client_cert_name`` (the subject, RFC 4514), ``tls_version``, and
``None`` for what Python's ``ssl`` cannot tell. peerwire's HTTP server adds it to every
request of a TLS connection; ``RequestCredentials.from_asgi`` reads it. Only certificates
from a completed handshake appear: with ``CERT_OPTIONAL`` a client without one gets an empty
chain, and one whose certificate does not verify never gets this far.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

__all__ = ["tls_extension"]

# The ASGI extension gives the version as the TLS wire number.
_TLS_VERSIONS = {"TLSv1": 0x0301, "TLSv1.1": 0x0302, "TLSv1.2": 0x0303, "TLSv1.3": 0x0304}
# RFC 4514 §3 short names; others are written as their OID name.
_SHORT_NAMES = {
    "commonName": "CN",
    "countryName": "C",
    "domainComponent": "DC",
    "localityName": "L",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "stateOrProvinceName": "ST",
    "streetAddress": "STREET",
    "userId": "UID",
}


def tls_extension(transport: asyncio.BaseTransport) -> dict[str, Any] | None:
    """The ``tls`` scope extension of a connection; ``None`` when it is not TLS."""
    ssl_object = transport.get_extra_info("ssl_object")
    if not isinstance(ssl_object, ssl.SSLObject | ssl.SSLSocket):
        return None
    der = ssl_object.getpeercert(binary_form=True)
    chain = [ssl.DER_cert_to_PEM_cert(der)] if der else []
    # Python 3.13+ can say which intermediates the handshake verified the leaf through.
    verified_chain = getattr(ssl_object, "get_verified_chain", None)
    if der and verified_chain is not None:
        chain = [ssl.DER_cert_to_PEM_cert(c) for c in verified_chain()] or chain
    version = ssl_object.version()
    return {
        "server_cert": None,
        "client_cert_chain": chain,
        "client_cert_name": _subject(ssl_object.getpeercert()) if der else None,
        "client_cert_error": None,
        "tls_version": _TLS_VERSIONS.get(version) if version else None,
        "cipher_suite": None,
    }


def _subject(decoded: Any) -> str | None:
    """RFC 4514 text of the subject of ``SSLObject.getpeercert()``'s dict form."""
    if not isinstance(decoded, dict) or not decoded.get("subject"):
        return None
    rdns = []
    for rdn in reversed(decoded["subject"]):  # RFC 4514 writes the last RDN first
        rdns.append("+".join(f"{_SHORT_NAMES.get(k, k)}={_escape(v)}" for k, v in rdn))
    return ",".join(rdns)


def _escape(value: str) -> str:
    escaped = "".join(f"\\{c}" if c in ',+"\\<>;' else c for c in value)
    if escaped[:1] in ("#", " "):
        escaped = "\\" + escaped
    if escaped.endswith(" "):
        escaped = escaped[:-1] + "\\ "
    return escaped
