"""What an authenticator may look at in a request, whatever the binding.

Each binding builds one ``RequestCredentials`` per request and hands it to the
``Authenticator``:

* JSON-RPC and REST over ASGI: ``RequestCredentials.from_asgi(scope)``: headers, the query
  string, cookies, and the client certificate chain when the server exposes the ASGI TLS
  extension (``scope["extensions"]["tls"]["client_cert_chain"]``, PEM, leaf first).
* gRPC: ``RequestCredentials.from_headers(context.invocation_metadata(),
  peer_certificate=PeerCertificate.from_pem_bundle(...))`` with the PEM the gRPC auth
  context reports under ``x509_pem_cert_chain`` or ``x509_pem_cert`` (binary ``-bin``
  metadata is ignored).

A peer certificate may only be passed when the TLS layer received it in a completed
handshake (the client proved it holds the private key). Chain validation happens again in
``MTLSVerifier`` against its own trusted CAs, so a server that terminates TLS with a broader
trust store still refuses certificates from another CA.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

__all__ = ["PeerCertificate", "RequestCredentials"]


@dataclass(frozen=True, slots=True)
class PeerCertificate:
    """A client certificate from a mutual-TLS handshake: the leaf and the intermediates the
    client sent (all DER)."""

    der: bytes
    chain: tuple[bytes, ...] = ()

    @classmethod
    def from_pem(cls, pem: str | bytes, *, chain: Sequence[str | bytes] = ()) -> PeerCertificate:
        return cls(der=_der(pem), chain=tuple(_der(c) for c in chain))

    @classmethod
    def from_pem_chain(cls, pems: Sequence[str | bytes]) -> PeerCertificate | None:
        """From a PEM chain, leaf first (the ASGI TLS extension's form); None when empty."""
        if not pems:
            return None
        return cls.from_pem(pems[0], chain=pems[1:])

    @classmethod
    def from_pem_bundle(cls, bundle: str | bytes) -> PeerCertificate | None:
        """From concatenated PEM certificates, leaf first (the gRPC auth context's form);
        None when there are none."""
        text = bundle.decode("ascii") if isinstance(bundle, bytes) else bundle
        return cls.from_pem_chain(_PEM_CERTIFICATE.findall(text))


_PEM_CERTIFICATE = re.compile(
    r"-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]*?-----END CERTIFICATE-----"
)


def _der(pem: str | bytes) -> bytes:
    text = pem.decode("ascii") if isinstance(pem, bytes) else pem
    try:
        return ssl.PEM_cert_to_DER_cert(text.strip())
    except ValueError as exc:
        raise ValueError(f"not a PEM certificate: {exc}") from None


class RequestCredentials:
    """A binding-independent view of a request's credentials.

    ``headers`` are keyed by lowercased name (repeated headers joined with ``", "`` as HTTP
    allows); ``query`` and ``cookies`` keep the first value of a repeated name. Query and
    cookies are parsed on first use: most schemes read one header only.
    """

    __slots__ = ("_cookies", "_query", "_query_string", "headers", "peer_certificate")

    def __init__(
        self,
        headers: Mapping[str, str] | None = None,
        *,
        query: Mapping[str, str] | None = None,
        cookies: Mapping[str, str] | None = None,
        peer_certificate: PeerCertificate | None = None,
        query_string: bytes = b"",
    ) -> None:
        self.headers: Mapping[str, str] = {k.lower(): v for k, v in (headers or {}).items()}
        self._query: Mapping[str, str] | None = None if query is None else dict(query)
        self._query_string = query_string
        self._cookies: Mapping[str, str] | None = None if cookies is None else dict(cookies)
        self.peer_certificate = peer_certificate

    @classmethod
    def from_headers(
        cls,
        pairs: Iterable[tuple[str | bytes, str | bytes]],
        *,
        query_string: bytes | str = b"",
        peer_certificate: PeerCertificate | None = None,
    ) -> RequestCredentials:
        """From raw header (or gRPC metadata) pairs; binary gRPC values are skipped."""
        headers: dict[str, str] = {}
        for raw_name, raw_value in pairs:
            name = _text(raw_name).lower()
            if name.endswith("-bin"):
                continue
            value = _text(raw_value)
            joiner = "; " if name == "cookie" else ", "
            headers[name] = headers[name] + joiner + value if name in headers else value
        if isinstance(query_string, str):
            query_string = query_string.encode("latin-1")
        return cls(headers, peer_certificate=peer_certificate, query_string=query_string)

    @classmethod
    def from_asgi(cls, scope: MutableMapping[str, Any]) -> RequestCredentials:
        """From an ASGI HTTP scope (headers, query string, TLS extension)."""
        tls = (scope.get("extensions") or {}).get("tls") or {}
        chain = tls.get("client_cert_chain") or ()
        try:
            certificate = PeerCertificate.from_pem_chain(list(chain)) if chain else None
        except ValueError:
            # Unreadable: kept as an empty certificate, which an mTLS verifier refuses.
            certificate = PeerCertificate(der=b"")
        return cls.from_headers(
            scope.get("headers", ()),
            query_string=scope.get("query_string", b""),
            peer_certificate=certificate,
        )

    @property
    def query(self) -> Mapping[str, str]:
        if self._query is None:
            parsed: dict[str, str] = {}
            for key, value in parse_qsl(self._query_string.decode("latin-1")):
                parsed.setdefault(key, value)
            self._query = parsed
        return self._query

    @property
    def cookies(self) -> Mapping[str, str]:
        if self._cookies is None:
            parsed: dict[str, str] = {}
            for pair in self.headers.get("cookie", "").split(";"):
                name, sep, value = pair.strip().partition("=")
                if sep and name:
                    parsed.setdefault(name.strip(), value.strip().strip('"'))
            self._cookies = parsed
        return self._cookies

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def __repr__(self) -> str:
        # Names only: the values are credentials.
        return (
            f"RequestCredentials(headers={sorted(self.headers)!r}, "
            f"peer_certificate={self.peer_certificate is not None})"
        )


def _text(value: str | bytes) -> str:
    return value.decode("latin-1") if isinstance(value, bytes | bytearray) else value
