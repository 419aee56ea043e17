"""The Delivery Scheduling Agent's signed card, checked by a2a-sdk 1.3.0's own verifier.

The card is fetched from the running sample exactly as a client receives it, with the JWKS
its signature's ``jku`` names, and handed to the SDK's ``create_signature_verifier`` in the
SDK's virtual environment (tests/interop/sdk_peer/sdk_card_signing.py). Both sides accept
it; both refuse it once a member is altered.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from interop.conftest import sdk_python  # noqa: F401  (fixture)
from interop.sdk_harness import SDK_PEER_DIR, _peer_env

from peerwire.errors import CardSignatureError
from peerwire.security import Trust, verify_card

from .test_delivery import delivery_agent, issuer, keys  # noqa: F401  (fixtures)

pytestmark = pytest.mark.interop

TIMEOUT_S = 60
CARD_PATH = "/.well-known/agent-card.json"


def sdk_verifies(python: Path, card: dict[str, Any], jwks: dict[str, Any]) -> dict[str, Any]:
    request = {"op": "verify", "card": card, "jwks": jwks, "algorithms": ["ES256"]}
    done = subprocess.run(
        [str(python), str(SDK_PEER_DIR / "sdk_card_signing.py")],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=_peer_env(),
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout)  # type: ignore[no-any-return]


async def test_the_sdk_verifies_the_served_card(
    sdk_python: Path,  # noqa: F811
    issuer: Any,  # noqa: F811
) -> None:
    async with (
        delivery_agent(issuer) as url,
        httpx.AsyncClient(timeout=TIMEOUT_S, trust_env=False) as http,
    ):
        card = (await http.get(url + CARD_PATH)).json()
        protected = card["signatures"][0]["protected"]
        jku = json.loads(_b64decode(protected))["jku"]
        jwks = (await http.get(jku)).json()
    verify_card(card, Trust(jwks))
    assert sdk_verifies(sdk_python, card, jwks) == {"ok": True}
    altered = {**card, "description": "Books every dock for whoever asks"}
    assert sdk_verifies(sdk_python, altered, jwks)["ok"] is False
    with pytest.raises(CardSignatureError, match="does not match"):
        verify_card(altered, Trust(jwks))


def _b64decode(text: str) -> bytes:
    import base64

    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
