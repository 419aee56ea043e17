"""What ``peerwire serve`` loads as MODULE:ATTR in the CLI's serve tests (from the repository
root): the Vault Agent of _secured.py, its verifiers, and a card signer."""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from peerwire.security import Authenticator
from peerwire.security.signing import CardSigner

from ._secured import vault_agent, vault_auth

vault = vault_agent()
verifiers = vault_auth()
authenticator = Authenticator.from_card(vault.card([]), verifiers)  # type: ignore[arg-type]
signer = CardSigner(
    ec.generate_private_key(ec.SECP256R1())
    .private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    .decode()
)
not_a_verifier = {"bearer": "tok"}


def verifiers_of(realm: str) -> dict[str, object]:
    """A factory --auth cannot call: it needs an argument."""
    return vault_auth()
