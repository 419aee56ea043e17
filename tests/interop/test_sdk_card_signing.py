"""Card signatures across implementations: peerwire and a2a-sdk 1.3.0 (its a2a.utils.signing).

Where the two canonical forms agree, each verifies the other's signature. Where they do not
(docs/SECURITY.md, "Interoperability"), the disagreement is pinned here, so a change on either
side shows up: a2a-sdk drops empty REQUIRED members and empty ``params`` objects, and cannot
see members its proto does not know, where the spec's procedure keeps all three.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from joserfc.jwk import ECKey, RSAKey

from peerwire.errors import CardSignatureError
from peerwire.protocol.card_canonical import canonical_card_payload
from peerwire.security import CardSigner, Trust, verify_card

from .sdk_harness import SDK_PEER_DIR, _peer_env

pytestmark = pytest.mark.interop

SCRIPT = SDK_PEER_DIR / "sdk_card_signing.py"
TIMEOUT_S = 60

EC_KEY = ECKey.generate_key("P-256", parameters={"kid": "ec-1"})
RSA_KEY = RSAKey.generate_key(2048, parameters={"kid": "rsa-1"})


def sdk(python: Path, request: dict[str, Any]) -> dict[str, Any]:
    done = subprocess.run(
        [str(python), str(SCRIPT)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=_peer_env(),
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def card(**changes: Any) -> dict[str, Any]:
    """A card both canonical forms agree on: nothing REQUIRED is empty, nothing unknown."""
    document: dict[str, Any] = {
        "name": "Delivery Scheduling Agent",
        "description": "Reserves dock time against warehouse capacity",
        "supportedInterfaces": [
            {
                "url": "https://erp.example/a2a/v1",
                "protocolBinding": "JSONRPC",
                "protocolVersion": "1.0",
            }
        ],
        "provider": {"organization": "Contoh Logistik", "url": "https://erp.example"},
        "version": "1.4.0",
        "capabilities": {"streaming": True, "pushNotifications": False},
        "securitySchemes": {
            "partner-oidc": {
                "openIdConnectSecurityScheme": {
                    "openIdConnectUrl": "https://sso.example/.well-known/openid-configuration"
                }
            }
        },
        "securityRequirements": [
            {"schemes": {"partner-oidc": {"list": ["openid", "delivery.write"]}}}
        ],
        "defaultInputModes": ["application/json", "text/plain"],
        "defaultOutputModes": ["application/json"],
        "skills": [
            {
                "id": "book-delivery-slot",
                "name": "Book a delivery slot",
                "description": "Reserves a dock and a time window",
                "tags": ["logistics", "scheduling"],
                "examples": ["Book the earliest slot for PO-2026-0184."],
            }
        ],
    }
    document.update(changes)
    return document


def peerwire_signed(document: dict[str, Any], key: Any = EC_KEY) -> dict[str, Any]:
    signature = CardSigner(key).signature(document)
    signed = dict(document)
    signed["signatures"] = [{"protected": signature.protected, "signature": signature.signature}]
    return signed


def sdk_signed(python: Path, document: dict[str, Any], key: Any = EC_KEY) -> dict[str, Any]:
    alg = "ES256" if isinstance(key, ECKey) else "RS256"
    answer = sdk(
        python,
        {
            "op": "sign",
            "card": document,
            "jwk": key.as_dict(private=True),
            "kid": key.kid,
            "alg": alg,
        },
    )
    return answer["card"]  # type: ignore[no-any-return]


def sdk_verifies(python: Path, document: dict[str, Any]) -> dict[str, Any]:
    jwks = {"keys": [EC_KEY.as_dict(private=False), RSA_KEY.as_dict(private=False)]}
    return sdk(
        python, {"op": "verify", "card": document, "jwks": jwks, "algorithms": ["ES256", "RS256"]}
    )


TRUST = Trust({"keys": [EC_KEY.as_dict(private=False), RSA_KEY.as_dict(private=False)]})


def test_the_canonical_forms_agree_on_an_ordinary_card(sdk_python: Path) -> None:
    ours = canonical_card_payload(card()).decode()
    assert sdk(sdk_python, {"op": "canonical", "card": card()})["canonical"] == ours


@pytest.mark.parametrize("key", [EC_KEY, RSA_KEY], ids=["ES256", "RS256"])
def test_the_sdk_verifies_a_card_peerwire_signed(sdk_python: Path, key: Any) -> None:
    assert sdk_verifies(sdk_python, peerwire_signed(card(), key)) == {"ok": True}


@pytest.mark.parametrize("key", [EC_KEY, RSA_KEY], ids=["ES256", "RS256"])
def test_peerwire_verifies_a_card_the_sdk_signed(sdk_python: Path, key: Any) -> None:
    signed = sdk_signed(sdk_python, card(), key)
    verify_card(signed, TRUST)


def test_both_refuse_a_tampered_card(sdk_python: Path) -> None:
    signed = sdk_signed(sdk_python, card())
    signed["skills"][0]["description"] = "Cancels every booking"
    assert sdk_verifies(sdk_python, signed)["ok"] is False
    with pytest.raises(CardSignatureError, match="does not match"):
        verify_card(signed, TRUST)


@pytest.mark.parametrize(
    "changes",
    [{"description": ""}, {"skills": []}],
    ids=["empty-required-string", "empty-required-list"],
)
def test_documented_disagreement_empty_required_members(
    sdk_python: Path, changes: dict[str, Any]
) -> None:
    document = card(**changes)
    ours = canonical_card_payload(document).decode()
    theirs = sdk(sdk_python, {"op": "canonical", "card": document})["canonical"]
    assert ours != theirs
    # The SDK cannot verify a peerwire signature over such a card...
    assert sdk_verifies(sdk_python, peerwire_signed(document))["ok"] is False
    # ...peerwire verifies the SDK's as the SDK serialises the card (ProtoJSON omits the
    # empty member, so both canonical forms lack it)...
    signed_by_sdk = sdk_signed(sdk_python, document)
    assert not set(changes) & set(signed_by_sdk)
    verify_card(signed_by_sdk, TRUST)
    # ...but not once the document states the empty member, as a spec-following server may.
    with pytest.raises(CardSignatureError):
        verify_card({**signed_by_sdk, **changes}, TRUST)


@pytest.mark.parametrize(
    "changes",
    [
        {"capabilities": {"streaming": True, "extensions": [{"uri": "urn:x", "params": {}}]}},
        {
            "securitySchemes": {"mtls": {"mtlsSecurityScheme": {}}},
            "securityRequirements": [{"schemes": {"mtls": {}}}],
        },
    ],
    ids=["empty-params", "empty-mtls-scheme"],
)
def test_documented_disagreement_empty_message_members(
    sdk_python: Path, changes: dict[str, Any]
) -> None:
    document = card(**changes)
    ours = canonical_card_payload(document).decode()
    assert sdk(sdk_python, {"op": "canonical", "card": document})["canonical"] != ours
    assert sdk_verifies(sdk_python, peerwire_signed(document))["ok"] is False
    with pytest.raises(CardSignatureError):
        verify_card(sdk_signed(sdk_python, document), TRUST)


def test_documented_disagreement_unknown_members(sdk_python: Path) -> None:
    # A member from a newer protocol version: kept by the spec's procedure (we canonicalise
    # the received document), invisible to the SDK (it canonicalises its parsed proto).
    document = card(futureFeature={"enabled": True})
    assert sdk_verifies(sdk_python, peerwire_signed(document))["ok"] is False
    signed_by_sdk = sdk_signed(sdk_python, card())
    signed_by_sdk["futureFeature"] = {"enabled": True}
    with pytest.raises(CardSignatureError):
        verify_card(signed_by_sdk, TRUST)


@pytest.mark.parametrize(
    ("security", "stripped"),
    [
        (
            {
                "securitySchemes": {"mtls": {"mtlsSecurityScheme": {}}},
                "securityRequirements": [{"schemes": {"mtls": {}}}],
            },
            ("securitySchemes", "securityRequirements"),
        ),
        (
            {
                "securitySchemes": {
                    "key": {"apiKeySecurityScheme": {"location": "header", "name": "X-Key"}}
                },
                "securityRequirements": [{"schemes": {"key": {"list": []}}}],
            },
            ("securityRequirements",),
        ),
    ],
    ids=["mtls", "api-key"],
)
def test_an_sdk_signature_does_not_cover_requirements_without_scopes(
    sdk_python: Path, security: dict[str, Any], stripped: tuple[str, ...]
) -> None:
    # Finding: the SDK's canonical form drops every empty object, so a requirement without
    # scopes ({"schemes": {"key": {}}}) and an empty mtlsSecurityScheme vanish from what it
    # signs: removing them keeps the SDK's signature valid. The spec's Step A keeps them, so
    # removing them breaks a peerwire signature.
    signed_by_sdk = sdk_signed(sdk_python, card(**security))
    without = {k: v for k, v in signed_by_sdk.items() if k not in stripped}
    assert sdk_verifies(sdk_python, without) == {"ok": True}
    signed_by_us = peerwire_signed(card(**security))
    verify_card(signed_by_us, TRUST)
    with pytest.raises(CardSignatureError, match="does not match"):
        verify_card({k: v for k, v in signed_by_us.items() if k not in stripped}, TRUST)
