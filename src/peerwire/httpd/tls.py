"""``ServerTLS``: the certificate an agent serves with, and the CAs of client certificates.

One value configures both servers an agent may run: peerwire's HTTP server for the HTTP
bindings (``ssl_context``) and the gRPC server (``grpc_credentials``), so the two cannot drift
apart. ``client_ca`` asks clients for certificates issued by those CAs (mutual TLS);
``require_client_cert`` makes the handshake fail without one. The TLS layer only checks the
chain; which certificate is which principal is the ``MTLSVerifier``'s business.

gRPC cannot ask for a client certificate without requiring it (grpcio offers "require and
verify" or "do not request"): with ``client_ca`` but not ``require_client_cert``, the gRPC
server does not request client certificates and its callers use the other schemes.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import grpc

__all__ = ["ServerTLS"]


@dataclass(frozen=True, slots=True)
class ServerTLS:
    """TLS settings of an agent's servers (PEM files).

    ``certfile`` holds the server certificate (and its intermediates), ``keyfile`` its private
    key (``keyfile_password`` if encrypted). ``client_ca``: the CA certificates client
    certificates must chain to; ``require_client_cert``: refuse connections without one.
    """

    certfile: str | Path
    keyfile: str | Path
    client_ca: str | Path | None = None
    require_client_cert: bool = False
    keyfile_password: str | None = None

    def __post_init__(self) -> None:
        if self.require_client_cert and self.client_ca is None:
            raise ValueError(
                "require_client_cert needs client_ca: the CA certificates that client "
                "certificates must be issued by"
            )
        for path in (self.certfile, self.keyfile, self.client_ca):
            if path is not None and not Path(path).is_file():
                raise ValueError(f"TLS file {str(path)!r} does not exist")
        # A wrong password or mismatched key fails here, at configuration time.
        self.ssl_context()

    @property
    def asks_for_client_cert(self) -> bool:
        return self.client_ca is not None

    def ssl_context(self) -> ssl.SSLContext:
        """The server-side ``SSLContext`` these settings describe (TLS 1.2 at least)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(
            str(self.certfile), str(self.keyfile), password=self.keyfile_password
        )
        if self.client_ca is not None:
            context.load_verify_locations(cafile=str(self.client_ca))
            context.verify_mode = self._verify_mode()
        return context

    def grpc_credentials(self) -> grpc.ServerCredentials:
        """The gRPC server credentials for these settings (see the module docstring)."""
        import grpc  # the "grpc" extra

        key = _unencrypted_key(Path(self.keyfile).read_bytes(), self.keyfile_password)
        chain = Path(self.certfile).read_bytes()
        roots = Path(self.client_ca).read_bytes() if self.client_ca is not None else None
        return grpc.ssl_server_credentials(
            [(key, chain)],
            root_certificates=roots if self.require_client_cert else None,
            require_client_auth=self.require_client_cert,
        )

    def _verify_mode(self) -> ssl.VerifyMode:
        return ssl.CERT_REQUIRED if self.require_client_cert else ssl.CERT_OPTIONAL


def _unencrypted_key(pem: bytes, password: str | None) -> bytes:
    """grpcio takes only unencrypted PEM keys: decrypt in memory when there is a password."""
    if password is None:
        return pem
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(pem, password.encode())
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
