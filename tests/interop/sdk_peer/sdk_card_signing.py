"""Sign and verify agent cards with a2a-sdk 1.3.0's own helpers (a2a.utils.signing).

Run with the a2a-sdk venv's python (tests/interop/sdk_env.py), never inside the peerwire test
process. Reads one JSON request on stdin, writes one JSON answer on stdout:

    {"op": "canonical", "card": <card JSON>}
        -> {"canonical": <the SDK's canonical payload string>}
    {"op": "sign", "card": <card JSON>, "jwk": <private JWK>, "kid": K, "alg": A}
        -> {"card": <the card with the SDK's signature appended>}
    {"op": "verify", "card": <signed card JSON>, "jwks": {"keys": [...]}, "algorithms": [...]}
        -> {"ok": true} | {"ok": false, "error": <exception class>, "message": ...}

Cards are parsed the way the SDK's client parses a fetched card
(``a2a.client.card_resolver.parse_agent_card``: unknown members ignored), so "verify" is what
an SDK client would conclude about the card it fetched.

a2a-sdk 1.3.0's signing, as read from a2a/utils/signing.py (2026-11-30):
  * Canonical form: ``MessageToDict`` of the parsed proto card, ``signatures`` removed, then
    every empty string, list and object removed recursively (``_clean_empty``), then RFC 8785.
    Unlike the spec's Step A it drops REQUIRED members when empty (``"description": ""``,
    ``"skills": []``, a REQUIRED but empty ``scopes`` map, ``mtlsSecurityScheme: {}``), drops
    empty ``params`` objects, and, since it works on the parsed proto, never sees members its
    proto does not know.
  * Signing goes through PyJWT (``api_jws.encode``): the protected header is the given one
    plus ``typ: "JWT"`` unless the caller sets ``typ``; ``alg`` defaults to HS256.
  * Verification takes ``key_provider(kid, jku)`` and an algorithm allow-list and accepts the
    card when one signature verifies (PyJWT ``jwt.decode``).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from a2a.client.card_resolver import parse_agent_card
from a2a.utils.signing import (
    _canonicalize_agent_card,
    create_agent_card_signer,
    create_signature_verifier,
)
from google.protobuf.json_format import MessageToDict
from jwt import PyJWK


def canonical(request: dict[str, Any]) -> dict[str, Any]:
    return {"canonical": _canonicalize_agent_card(parse_agent_card(request["card"]))}


def sign(request: dict[str, Any]) -> dict[str, Any]:
    key = PyJWK(request["jwk"])
    signer = create_agent_card_signer(
        key, {"kid": request["kid"], "alg": request["alg"], "typ": "JOSE", "jku": None}
    )
    signed = signer(parse_agent_card(request["card"]))
    return {"card": MessageToDict(signed)}


def verify(request: dict[str, Any]) -> dict[str, Any]:
    keys = {k["kid"]: PyJWK(k) for k in request["jwks"]["keys"]}

    def key_provider(kid: str | None, jku: str | None) -> PyJWK:
        if kid not in keys:
            raise KeyError(f"no key {kid!r}")
        return keys[kid]

    verifier = create_signature_verifier(key_provider, request["algorithms"])
    try:
        verifier(parse_agent_card(request["card"]))
    except Exception as exc:  # what the SDK raised is the answer
        return {"ok": False, "error": type(exc).__name__, "message": str(exc)}
    return {"ok": True}


def main() -> None:
    request = json.load(sys.stdin)
    handlers = {"canonical": canonical, "sign": sign, "verify": verify}
    json.dump(handlers[request["op"]](request), sys.stdout)


if __name__ == "__main__":
    main()
