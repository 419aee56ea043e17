"""Security: who is calling (authentication), what they may do (scopes, task ownership), and
whether an agent card is authentic (JWS signatures over the canonical card).

Server side: an ``Authenticator`` checks each request's ``RequestCredentials`` against the
card's security requirements with one verifier per scheme (``APIKeyVerifier``,
``JWTVerifier``, ``OIDCVerifier``, ``MTLSVerifier``) and yields a ``Principal``; a
``CardSigner`` signs the card. Client side: ``verify_card_async(document, Trust(...))``.

``Principal`` and ``RequestCredentials`` import nothing optional; the rest needs the
``security`` extra (joserfc, rfc8785, cryptography) and is imported on first use, so the
server core can name principals without it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .credentials import PeerCertificate, RequestCredentials
from .principal import ANONYMOUS, Principal

if TYPE_CHECKING:
    from .authenticator import Authenticator
    from .jwt import JWTValidator
    from .keys import RemoteJWKS, StaticJWKS
    from .schemes import APIKeyVerifier, JWTVerifier, MTLSVerifier, OIDCVerifier, Verifier
    from .signing import CardSigner, Trust, sign_card, verify_card, verify_card_async

__all__ = [
    "ANONYMOUS",
    "APIKeyVerifier",
    "Authenticator",
    "CardSigner",
    "JWTValidator",
    "JWTVerifier",
    "MTLSVerifier",
    "OIDCVerifier",
    "PeerCertificate",
    "Principal",
    "RemoteJWKS",
    "RequestCredentials",
    "StaticJWKS",
    "Trust",
    "Verifier",
    "sign_card",
    "verify_card",
    "verify_card_async",
]

_LAZY = {
    "Authenticator": "authenticator",
    "JWTValidator": "jwt",
    "RemoteJWKS": "keys",
    "StaticJWKS": "keys",
    "APIKeyVerifier": "schemes",
    "JWTVerifier": "schemes",
    "MTLSVerifier": "schemes",
    "OIDCVerifier": "schemes",
    "Verifier": "schemes",
    "CardSigner": "signing",
    "Trust": "signing",
    "sign_card": "signing",
    "verify_card": "signing",
    "verify_card_async": "signing",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
