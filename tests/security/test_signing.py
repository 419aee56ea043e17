"""Signed agent cards (A2A spec §8.4): sign, verify, and refuse what does not verify."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
from typing import Any

import pytest
from joserfc import jws
from joserfc.jwk import ECKey, OKPKey, RSAKey
from joserfc.registry import HeaderParameter

from peerwire.errors import CardSignatureError
from peerwire.protocol.card_canonical import canonical_card_payload
from peerwire.security import CardSigner, Trust, sign_card, verify_card, verify_card_async
from peerwire.security.jwt import decode_protected_header
from peerwire.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    encode,
)

from ._support import JsonApp, Keys, b64, public_jwks, serve_asgi


def card() -> AgentCard:
    return AgentCard(
        name="Delivery Scheduling Agent",
        description="Reserves dock time",
        supported_interfaces=[
            AgentInterface(
                url="https://erp.example/a2a/v1", protocol_binding="JSONRPC", protocol_version="1.0"
            )
        ],
        version="1.4.0",
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["application/json"],
        default_output_modes=["application/json"],
        skills=[AgentSkill(id="book", name="Book", description="Book a slot", tags=["erp"])],
    )


def document(value: AgentCard) -> dict[str, Any]:
    return json.loads(encode(value))  # type: ignore[no-any-return]


def signed(keys: Keys, **options: Any) -> dict[str, Any]:
    return document(CardSigner(keys.ec, **options).sign(card()))


def pinned(keys: Keys, **options: Any) -> Trust:
    return Trust(public_jwks(keys.ec, keys.rsa), **options)


def test_a_signed_card_verifies(keys: Keys) -> None:
    verify_card(signed(keys), pinned(keys))


def test_the_signature_has_the_spec_header_and_a_detached_payload(keys: Keys) -> None:
    doc = signed(keys, jku="https://erp.example/jwks.json")
    [signature] = doc["signatures"]
    assert set(signature) == {"protected", "signature"}
    header = decode_protected_header(signature["protected"], what="signature")
    assert header == {
        "alg": "ES256",
        "typ": "JOSE",
        "kid": "ec-1",
        "jku": "https://erp.example/jwks.json",
    }
    # The signature is over base64url(JCS(card without signatures)), checked with the
    # library directly rather than through our verifier.
    payload = b64(canonical_card_payload(doc))
    compact = f"{signature['protected']}.{payload}.{signature['signature']}"
    verified = jws.deserialize_compact(compact, keys.ec, algorithms=["ES256"])
    assert json.loads(verified.payload)["name"] == "Delivery Scheduling Agent"


@pytest.mark.parametrize(
    ("make", "alg"),
    [
        (lambda: RSAKey.generate_key(2048, parameters={"kid": "r"}), "RS256"),
        (lambda: ECKey.generate_key("P-384", parameters={"kid": "e"}), "ES384"),
        (lambda: OKPKey.generate_key("Ed25519", parameters={"kid": "o"}), "Ed25519"),
    ],
)
def test_every_key_type_signs_with_its_default_algorithm(make: Any, alg: str) -> None:
    key = make()
    signer = CardSigner(key)
    assert signer.alg == alg
    verify_card(document(signer.sign(card())), Trust(signer.public_jwks()))


def test_a_key_with_no_kid_gets_its_thumbprint() -> None:
    key = ECKey.generate_key("P-256", auto_kid=False)
    signer = CardSigner(key)
    assert signer.kid == key.thumbprint()


@pytest.mark.parametrize(
    "tamper",
    [
        lambda d: d.update(description="Reserves dock time and books trucks"),
        lambda d: d["skills"].append({"id": "x", "name": "x", "description": "x", "tags": ["x"]}),
        lambda d: d["supportedInterfaces"][0].update(url="https://evil.example/a2a"),
        lambda d: d["capabilities"].update(pushNotifications=True),
        lambda d: d.update(unknownExtension={"added": "after signing"}),
    ],
    ids=["description", "skill", "url", "capability", "unknown-member"],
)
def test_a_tampered_card_is_refused(keys: Keys, tamper: Any) -> None:
    doc = signed(keys)
    tamper(doc)
    with pytest.raises(CardSignatureError, match="does not match the card"):
        verify_card(doc, pinned(keys))


def test_what_does_not_change_the_canonical_form_is_not_tampering(keys: Keys) -> None:
    doc = signed(keys)
    doc["capabilities"]["extensions"] = []  # a default: dropped by the presence rules
    doc["skills"][0]["examples"] = []
    shuffled = dict(reversed(list(doc.items())))
    verify_card(shuffled, pinned(keys))


def test_unknown_members_signed_by_the_signer_still_verify(keys: Keys) -> None:
    doc = document(card())
    doc["futureField"] = {"x": False}
    doc["signatures"] = [json.loads(encode(CardSigner(keys.ec).signature(doc)))]
    verify_card(doc, pinned(keys))


def test_an_unsigned_card_is_refused_when_signatures_are_required(keys: Keys) -> None:
    with pytest.raises(CardSignatureError, match="not signed"):
        verify_card(document(card()), pinned(keys))
    verify_card(document(card()), pinned(keys, require_signature=False))


def test_a_bad_signature_is_refused_even_when_signatures_are_optional(keys: Keys) -> None:
    doc = signed(keys)
    doc["name"] = "Someone Else"
    with pytest.raises(CardSignatureError):
        verify_card(doc, pinned(keys, require_signature=False))


def test_a_card_signed_by_an_untrusted_key_is_refused(keys: Keys) -> None:
    stranger = ECKey.generate_key("P-256", parameters={"kid": "ec-1"})  # same kid, other key
    doc = document(CardSigner(stranger).sign(card()))
    with pytest.raises(CardSignatureError, match="does not match"):
        verify_card(doc, pinned(keys))
    other_kid = document(CardSigner(ECKey.generate_key("P-256")).sign(card()))
    with pytest.raises(CardSignatureError, match="no trusted key"):
        verify_card(other_kid, pinned(keys))


def test_one_valid_signature_among_several_is_enough(keys: Keys) -> None:
    old = ECKey.generate_key("P-256", parameters={"kid": "retired"})
    doc = document(sign_card(card(), CardSigner(old), CardSigner(keys.rsa)))
    assert len(doc["signatures"]) == 2
    verify_card(doc, pinned(keys))


def _with_header(keys: Keys, header: dict[str, Any], key: Any = None) -> dict[str, Any]:
    """A card whose one signature has exactly ``header`` (signed with ``key`` as given)."""
    doc = document(card())
    payload = canonical_card_payload(doc)
    anything = HeaderParameter("any value, null included", lambda value: None)
    registry = jws.JWSRegistry(
        header_registry={"jku": anything}, algorithms=[header["alg"]], strict_check_header=False
    )
    compact = jws.serialize_compact(header, payload, key or keys.ec, registry=registry)
    protected, _, signature = compact.split(".")
    doc["signatures"] = [{"protected": protected, "signature": signature}]
    return doc


def test_alg_none_is_refused(keys: Keys) -> None:
    doc = document(card())
    header = b64(json.dumps({"alg": "none", "kid": "ec-1"}).encode())
    doc["signatures"] = [{"protected": header, "signature": ""}]
    with pytest.raises(CardSignatureError, match="alg none"):
        verify_card(doc, pinned(keys))


def test_hs_rs_confusion_is_refused(keys: Keys) -> None:
    # HS256 "signed" with the trusted RSA public key (PEM) as the HMAC secret, by hand:
    # JOSE libraries refuse to build this.
    doc = document(card())
    protected = b64(json.dumps({"alg": "HS256", "kid": "rsa-1"}).encode())
    signing_input = f"{protected}.{b64(canonical_card_payload(doc))}".encode()
    secret = keys.rsa.as_pem(private=False)
    mac = hmac.new(secret, signing_input, hashlib.sha256).digest()
    doc["signatures"] = [{"protected": protected, "signature": b64(mac)}]
    with pytest.raises(CardSignatureError, match="HS256 is not trusted"):
        verify_card(doc, pinned(keys))
    with pytest.raises(CardSignatureError, match="does not fit HS256"):
        verify_card(doc, pinned(keys, algorithms=["ES256", "HS256"]))


def test_crit_and_foreign_typ_are_refused(keys: Keys) -> None:
    with pytest.raises(CardSignatureError, match="typ 'at\\+jwt'"):
        verify_card(
            _with_header(keys, {"alg": "ES256", "kid": "ec-1", "typ": "at+jwt"}), pinned(keys)
        )
    crit = _with_header(keys, {"alg": "ES256", "kid": "ec-1", "crit": ["kid"]})
    with pytest.raises(CardSignatureError, match="'crit'"):
        verify_card(crit, pinned(keys))


def test_a_pyjwt_style_typ_jwt_header_is_accepted(keys: Keys) -> None:
    verify_card(_with_header(keys, {"alg": "ES256", "kid": "ec-1", "typ": "JWT"}), pinned(keys))


def test_null_header_members_count_as_absent(keys: Keys) -> None:
    # What a2a-sdk's signer writes when its ProtectedHeader is filled in as declared.
    header = {"alg": "ES256", "jku": None, "kid": "ec-1", "typ": "JOSE"}
    verify_card(_with_header(keys, header), pinned(keys))


@pytest.mark.parametrize(
    "signatures",
    [
        "not a list",
        [{"protected": 5, "signature": "x"}],
        [{"protected": "!!", "signature": "x"}],
        [{"protected": b64(b'{"alg":"ES256","kid":"ec-1"}')}],
    ],
)
def test_malformed_signatures_are_refused(keys: Keys, signatures: Any) -> None:
    doc = document(card())
    doc["signatures"] = signatures
    with pytest.raises(CardSignatureError):
        verify_card(doc, pinned(keys))


def test_the_refusal_says_why_for_each_signature(keys: Keys) -> None:
    doc = document(
        sign_card(card(), CardSigner(ECKey.generate_key("P-256", parameters={"kid": "x"})))
    )
    doc["signatures"].append(copy.deepcopy(doc["signatures"][0]))
    doc["signatures"][1]["signature"] = "AAAA"
    with pytest.raises(CardSignatureError) as raised:
        verify_card(doc, pinned(keys))
    assert "signature 1: no trusted key" in raised.value.message
    assert "signature 2:" in raised.value.message


def test_a_trust_needs_something_to_trust() -> None:
    with pytest.raises(ValueError, match="pinned keys or a jku"):
        Trust()


def test_signers_refuse_keys_that_cannot_sign(keys: Keys) -> None:
    with pytest.raises(ValueError, match="private key"):
        CardSigner(ECKey.import_key(keys.ec.as_dict(private=False)))
    with pytest.raises(ValueError, match="needs the P-384 curve"):
        CardSigner(keys.ec, alg="ES384")
    with pytest.raises(ValueError, match="none"):
        CardSigner(keys.ec, alg="none")


# -- keys from jku -----------------------------------------------------------------------------


async def test_keys_are_fetched_from_an_allowed_jku(keys: Keys) -> None:
    host = JsonApp()
    async with serve_asgi(host) as url:
        jku = url + "/jwks.json"
        signer = CardSigner(keys.ec, jku=jku)
        host.documents["/jwks.json"] = signer.public_jwks()
        doc = document(signer.sign(card()))
        trust = Trust(jku_allowlist=[url + "/"])
        await verify_card_async(doc, trust)
        await verify_card_async(doc, trust)
        assert host.requests == ["/jwks.json"]  # cached


async def test_a_jku_off_the_allow_list_is_never_fetched(keys: Keys) -> None:
    host = JsonApp()
    async with serve_asgi(host) as url:
        signer = CardSigner(keys.ec, jku=url + "/jwks.json")
        host.documents["/jwks.json"] = signer.public_jwks()
        doc = document(signer.sign(card()))
        trust = Trust(jku_allowlist=["https://keys.erp.example/"])
        with pytest.raises(CardSignatureError, match="not on the allow-list"):
            await verify_card_async(doc, trust)
        assert host.requests == []


async def test_an_allowed_jku_serving_other_keys_does_not_verify(keys: Keys) -> None:
    host = JsonApp()
    async with serve_asgi(host) as url:
        jku = url + "/jwks.json"
        host.documents["/jwks.json"] = public_jwks(
            ECKey.generate_key("P-256", parameters={"kid": "ec-1"})
        )
        doc = document(CardSigner(keys.ec, jku=jku).sign(card()))
        with pytest.raises(CardSignatureError, match="does not match"):
            await verify_card_async(doc, Trust(jku_allowlist=[jku]))


def test_jku_allow_list_entries_must_be_https_or_loopback() -> None:
    with pytest.raises(ValueError, match="https"):
        Trust(jku_allowlist=["http://keys.example/"])


@pytest.mark.parametrize(
    ("key", "alg"),
    [
        (ECKey.generate_key("P-256"), "ES256"),
        (RSAKey.generate_key(2048), "RS256"),
        (OKPKey.generate_key("Ed25519"), "Ed25519"),
    ],
)
def test_a_pem_private_key_signs_as_text_or_bytes(key: Any, alg: str) -> None:
    pem = key.as_pem(private=True)
    for given in (pem, pem.decode()):
        signer = CardSigner(given)
        assert signer.alg == alg
        assert signer.key.thumbprint() == key.thumbprint()
