"""The ASGI TLS extension for uvicorn: what a TLS handshake established, in the request scope.

uvicorn terminates TLS (``ssl_certfile``, ``ssl_ca_certs``, ``ssl_cert_reqs``) but does not
tell the application which client certificate the handshake verified, so mutual TLS could not
map a caller to a principal. These HTTP protocol classes (uvicorn's own, one method longer)
add ``scope["extensions"]["tls"]`` to every request of a TLS connection, as the ASGI TLS
extension specifies: ``client_cert_chain`` (PEM, leaf first), ``client_cert_name`` (the
subject, RFC 4514), ``tls_version``, and ``None`` for what Python's ``ssl`` cannot tell.
``RequestCredentials.from_asgi`` reads it.

Pass one as uvicorn's ``http=`` (``http_protocol()`` picks httptools when installed, else
h11); ``serve(tls=...)`` and ``live_server(tls=...)`` do. Only certificates from a completed
handshake appear here: with ``ssl_cert_reqs=CERT_OPTIONAL`` a client without one gets an
empty chain, and one whose certificate does not verify never gets this far.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from ._http import Receive, Scope, Send

__all__ = ["TLSH11Protocol", "http_protocol", "tls_extension", "with_tls"]

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


def with_tls(app: Any, transport: asyncio.BaseTransport) -> Any:
    """``app`` for the requests of one connection: with the TLS extension when it is TLS."""
    tls = tls_extension(transport)
    if tls is None:
        return app

    async def app_with_tls(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            scope.setdefault("extensions", {})["tls"] = tls
        await app(scope, receive, send)

    return app_with_tls


class TLSH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, adding the ASGI TLS extension on TLS connections."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        # One wrapper per connection: its requests share the handshake's outcome.
        self.app = with_tls(self.app, transport)


def http_protocol() -> type[asyncio.Protocol]:
    """The HTTP protocol class with the TLS extension: httptools when installed, else h11."""
    try:
        from ._uvicorn_httptools_tls import TLSHttpToolsProtocol
    except ImportError:
        return TLSH11Protocol
    return TLSHttpToolsProtocol
