"""The receiver's checks (``peerwire.push.receiver``) against notifications the agent's signer
(``peerwire.push.signing``) makes: a genuine one passes, and each kind of forgery, tampering,
staleness or misdirection is refused with its own clear error.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from joserfc import jws
from joserfc.jwk import ECKey, OctKey, RSAKey

from peerwire.errors import AuthenticationError, InvalidRequestError, PermissionDeniedError
from peerwire.push import (
    JWT_HEADER,
    NOTIFICATION_ID_HEADER,
    TOKEN_HEADER,
    NotificationSigner,
    NotificationVerifier,
    body_digest,
    task_id_of,
    verify_notification,
)
from peerwire.types import (
    StreamResponse,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    decode,
    encode,
)

AGENT = "https://agent.example"
HOOK = "https://receiver.example/hook"
NOW = 1_800_000_000.0
KEY = ECKey.generate_key("P-256", private=True)


def notification(task_id: str = "task-1", state: TaskState = TaskState.WORKING) -> bytes:
    update = TaskStatusUpdateEvent(
        task_id=task_id,
        context_id="ctx-1",
        status=TaskStatus(state=state, timestamp="2026-01-01T00:00:00.000Z"),
    )
    return encode(StreamResponse(status_update=update))


def signer(**options: Any) -> NotificationSigner:
    return NotificationSigner(KEY, issuer=AGENT, kid="k1", clock=lambda: NOW, **options)


def signed(body: bytes, task_id: str = "task-1", **options: Any) -> dict[str, str]:
    jwt = signer(**options).sign(
        notification_id=f"{task_id}/c/2", task_id=task_id, audience=HOOK, body=body
    )
    return {NOTIFICATION_ID_HEADER: f"{task_id}/c/2", JWT_HEADER: jwt, TOKEN_HEADER: "tok"}


def verifier(clock: float = NOW, **options: Any) -> NotificationVerifier:
    settings: dict[str, Any] = {
        "jwks": signer().public_jwks(),
        "issuer": AGENT,
        "audience": HOOK,
        "expected_task_ids": {"task-1"},
        "clock": lambda: clock,
        **options,
    }
    return NotificationVerifier(**settings)


async def test_a_genuine_notification_passes_every_check() -> None:
    body = notification()
    headers = signed(body)
    update = await verifier(token="tok").verify(headers, body)
    assert update == decode(body, StreamResponse)
    assert task_id_of(update) == "task-1"
    # Header names are case-insensitive; a list of pairs works as well as a mapping.
    lowered = [(name.lower(), value) for name, value in headers.items()]
    assert await verifier(token="tok").verify(lowered, body) == update


async def test_the_jwt_carries_the_documented_claims() -> None:
    body = notification()
    jwt = signed(body)[JWT_HEADER]
    header, claims = (json.loads(_b64(part)) for part in jwt.split(".")[:2])
    assert header == {"alg": "ES256", "kid": "k1", "typ": "JWT"}
    assert claims == {
        "iss": AGENT,
        "aud": HOOK,
        "iat": int(NOW),
        "exp": int(NOW) + 300,
        "jti": "task-1/c/2",
        "taskId": "task-1",
        "bodySha256": body_digest(body),
    }
    assert signer().public_jwks()["keys"][0]["kid"] == "k1"
    assert "d" not in signer().public_jwks()["keys"][0]


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ("body", "not the one its JWT signs"),
        ("signature", "signature does not verify"),
        ("missing jwt", "no X-A2A-Notification-JWT"),
        ("expired", "expired"),
        ("issuer", "issuer"),
        ("audience", "audience"),
        ("other key", "signature does not verify"),
        ("unsigned", "not signed"),
    ],
)
async def test_forged_tampered_or_stale_notifications_are_refused(change: str, says: str) -> None:
    body = notification()
    headers = signed(body)
    check = verifier()
    if change == "body":
        body = notification(state=TaskState.COMPLETED)
    elif change == "signature":
        head, claims, signature = headers[JWT_HEADER].split(".")
        headers[JWT_HEADER] = f"{head}.{claims}.{signature[:-4]}AAAA"
    elif change == "missing jwt":
        del headers[JWT_HEADER]
    elif change == "expired":
        check = verifier(clock=NOW + 3600)
    elif change == "issuer":
        check = verifier(issuer="https://someone-else.example")
    elif change == "audience":
        check = verifier(audience="https://receiver.example/other")
    elif change == "other key":
        impostor = ECKey.generate_key("P-256", private=True)
        headers[JWT_HEADER] = NotificationSigner(impostor, issuer=AGENT, kid="k1").sign(
            notification_id="x", task_id="task-1", audience=HOOK, body=body
        )
    elif change == "unsigned":
        head = _b64encode(json.dumps({"alg": "none", "typ": "JWT"}).encode())
        claims = headers[JWT_HEADER].split(".")[1]
        headers[JWT_HEADER] = f"{head}.{claims}."
    with pytest.raises(AuthenticationError, match=says):
        await check.verify(headers, body)


async def test_a_jwt_for_another_task_does_not_cover_this_body() -> None:
    body = notification(task_id="task-1")
    headers = signed(notification(task_id="task-1"), task_id="task-2")
    with pytest.raises(AuthenticationError, match="another task"):
        await verifier(expected_task_ids={"task-1", "task-2"}).verify(headers, body)


async def test_a_jwt_without_jti_is_refused() -> None:
    body = notification()
    claims = {
        "iss": AGENT,
        "aud": HOOK,
        "iat": int(NOW),
        "exp": int(NOW) + 60,
        "taskId": "task-1",
        "bodySha256": body_digest(body),
    }
    jwt = jws.serialize_compact(
        {"alg": "ES256", "kid": "k1"}, json.dumps(claims).encode(), KEY, algorithms=["ES256"]
    )
    with pytest.raises(AuthenticationError, match="jti"):
        await verifier().verify({JWT_HEADER: jwt}, body)


@pytest.mark.parametrize(
    ("headers", "says"),
    [
        ({}, f"no {TOKEN_HEADER}"),
        ({TOKEN_HEADER: "tok-guess"}, "does not match"),
        ({TOKEN_HEADER: "to"}, "does not match"),
    ],
)
async def test_the_token_must_match(headers: dict[str, str], says: str) -> None:
    with pytest.raises(AuthenticationError, match=says):
        await verify_notification(
            headers, notification(), token="tok", expected_task_ids={"task-1"}
        )


async def test_the_authorization_header_must_match() -> None:
    body = notification()
    good = {"Authorization": "Bearer secret"}
    ok = await verify_notification(
        good, body, authorization="Bearer secret", expected_task_ids={"task-1"}
    )
    assert task_id_of(ok) == "task-1"
    with pytest.raises(AuthenticationError, match="Authorization"):
        await verify_notification(
            {"Authorization": "Bearer guess"},
            body,
            authorization="Bearer secret",
            expected_task_ids={"task-1"},
        )


async def test_only_expected_tasks_are_accepted() -> None:
    body = notification(task_id="task-9")
    headers = {TOKEN_HEADER: "tok"}
    with pytest.raises(PermissionDeniedError, match="does not expect"):
        await verify_notification(headers, body, token="tok", expected_task_ids={"task-1"})
    accepted = await verify_notification(
        headers, body, token="tok", expected_task_ids=lambda task_id: task_id.startswith("task-")
    )
    assert task_id_of(accepted) == "task-9"


@pytest.mark.parametrize(
    "body",
    [b"not json", b"{}", b'{"statusUpdate": {"taskId": 3}}', b"[]"],
)
async def test_a_body_that_is_no_notification_is_refused(body: bytes) -> None:
    with pytest.raises(InvalidRequestError):
        await verify_notification(
            {TOKEN_HEADER: "tok"}, body, token="tok", expected_task_ids={"task-1"}
        )


async def test_a_0_3_notification_is_the_bare_0_3_task() -> None:
    # As a2a-sdk 0.3 and @a2a-js/sdk 0.3 send it (tests/interop run them).
    body = json.dumps(
        {
            "kind": "task",
            "id": "task-1",
            "contextId": "ctx-1",
            "status": {"state": "completed", "timestamp": "2026-01-01T00:00:00.000Z"},
            "artifacts": [{"artifactId": "a", "parts": [{"kind": "text", "text": "done"}]}],
        }
    ).encode()
    got = await verify_notification(
        {TOKEN_HEADER: "tok"}, body, token="tok", expected_task_ids={"task-1"}
    )
    assert got.task is not None and got.task.status.state is TaskState.COMPLETED
    assert got.task.artifacts[0].text == "done"
    with pytest.raises(PermissionDeniedError):
        await verify_notification(
            {TOKEN_HEADER: "tok"}, body, token="tok", expected_task_ids={"task-2"}
        )
    with pytest.raises(InvalidRequestError, match=r"not an A2A 0\.3 Task"):
        await verify_notification(
            {TOKEN_HEADER: "tok"},
            b'{"kind": "task", "id": "task-1", "status": {"state": "nope"}}',
            token="tok",
            expected_task_ids={"task-1"},
        )


async def test_an_oversized_body_is_refused_before_it_is_parsed() -> None:
    check = NotificationVerifier(token="tok", expected_task_ids={"task-1"}, max_body_bytes=64)
    with pytest.raises(InvalidRequestError, match="larger than 64"):
        await check.verify({TOKEN_HEADER: "tok"}, notification())


def test_a_verifier_must_check_something() -> None:
    with pytest.raises(ValueError, match="authenticated"):
        NotificationVerifier(expected_task_ids={"t"})
    with pytest.raises(ValueError, match="issuer"):
        NotificationVerifier(expected_task_ids={"t"}, jwks=signer().public_jwks())
    with pytest.raises(ValueError, match="not both"):
        NotificationVerifier(
            expected_task_ids={"t"}, jwks={"keys": []}, jwks_url="https://a.example/jwks"
        )


def test_the_signer_wants_a_private_asymmetric_key() -> None:
    with pytest.raises(ValueError, match="asymmetric"):
        NotificationSigner(OctKey.generate_key(256), issuer=AGENT, alg="HS256")
    with pytest.raises(ValueError):
        NotificationSigner(KEY.as_dict(private=False), issuer=AGENT)
    with pytest.raises(ValueError, match="issuer"):
        NotificationSigner(KEY, issuer="")
    rsa = NotificationSigner(RSAKey.generate_key(2048, private=True), issuer=AGENT)
    assert rsa.alg == "RS256"


def _b64(segment: str) -> bytes:
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
