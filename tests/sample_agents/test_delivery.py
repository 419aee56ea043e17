"""The Delivery Scheduling Agent (peerwire.samples.delivery), driven through its whole flow.

A local OpenID provider on loopback (discovery, JWKS, token endpoint) issues the tokens. On
each binding a partner's client verifies the signed card against the JWKS at its ``jku``,
fetches a token with the client credentials grant, books a slot (the agent asks which dock:
INPUT_REQUIRED), then books an after-hours slot, which waits in AUTH_REQUIRED until a warehouse
manager approves it out of band with their own token. Forged, expired, foreign and
under-scoped tokens are refused and change nothing.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from security._support import AUDIENCE, Issuer, generate_keys, mint, serve_asgi, unsigned

from peerwire.client import CardCache, Client
from peerwire.client.auth import BearerToken, Credentials, OAuth2ClientCredentials
from peerwire.errors import AuthenticationError, CardSignatureError, PermissionDeniedError
from peerwire.samples.delivery import (
    APPROVALS_PATH,
    CARD_JWKS_PATH,
    DockSchedule,
    make_app,
    parse_dock_answer,
    parse_request,
    route,
)
from peerwire.security import Trust
from peerwire.testing import live_server
from peerwire.types import (
    Binding,
    Message,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)

TIMEOUT_S = 30.0
BINDINGS = pytest.mark.parametrize(
    "binding", [Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC], ids=["jsonrpc", "rest", "grpc"]
)
BOOK = "Book the earliest slot for PO-2026-0184 at the Semarang DC."
AFTER_HOURS = "Book an after-hours slot for PO-2026-0190 at the Semarang DC."


@pytest.fixture(scope="module")
def keys() -> Any:
    return generate_keys()


@pytest.fixture
async def issuer(keys: Any) -> AsyncIterator[Issuer]:
    provider = Issuer(keys, clients={"erp-partner": ("partner-secret", "contoh-erp")})
    async with serve_asgi(provider) as url:
        provider.url = url
        yield provider


@contextlib.asynccontextmanager
async def delivery_agent(issuer: Issuer) -> AsyncIterator[str]:
    def build(public_url: str) -> Any:
        return make_app(
            public_url,
            issuer=issuer.url,
            audience=AUDIENCE,
            schedule=DockSchedule(),
            grpc_port=0,
            shutdown_grace=1.0,
        )

    async with live_server(build) as url:
        yield url


def partner(issuer: Issuer) -> Credentials:
    return Credentials(
        OAuth2ClientCredentials(
            "erp-partner", "partner-secret", token_url=issuer.url + "/token", issuer=issuer.url
        )
    )


def connect(url: str, binding: str, credentials: Credentials) -> Any:
    return Client.connect(
        url,
        bindings=[binding],
        trust=Trust(jku_allowlist=[url + CARD_JWKS_PATH]),
        credentials=credentials,
        card_cache=CardCache(),
    )


def question(task: Task) -> str:
    assert task.status.message is not None
    return task.status.message.text


def booking(task: Task) -> dict[str, Any]:
    [artifact] = task.artifacts
    assert artifact.name == "booking"
    data = artifact.parts[0].data
    assert isinstance(data, dict)
    return data


@BINDINGS
async def test_booking_a_slot_asks_which_dock(binding: str, issuer: Issuer) -> None:
    async with delivery_agent(issuer) as url, connect(url, binding, partner(issuer)) as client:
        # The card is signed, verified against its jku, and asks for OIDC with two scopes.
        assert client.card.signatures
        [requirement] = client.card.security_requirements
        assert requirement.schemes["partner-oidc"].list == ["openid", "delivery.write"]
        task = await client.send(BOOK)
        assert isinstance(task, Task)
        assert task.status.state is TaskState.INPUT_REQUIRED
        assert (
            question(task) == "Two docks are free on 11 Sep. Which one, and is a tail lift needed?"
        )
        assert issuer.token_requests[-1]["scope"] == "delivery.write openid"
        # Resume the same task by its id; a new message without it would book a second slot.
        done = await client.send("Dock 2, tail lift required.", task_id=task.id)
        assert isinstance(done, Task) and done.id == task.id
        assert done.status.state is TaskState.COMPLETED
        assert booking(done) == {
            "purchaseOrder": "PO-2026-0184",
            "distributionCentre": "Semarang",
            "dock": 2,
            "day": "11 Sep",
            "window": "08:00-10:00",
            "tailLift": True,
        }
        # Dock 2 is taken now: the next booking is offered dock 1 only.
        again = await client.send(BOOK)
        assert isinstance(again, Task)
        assert question(again).startswith("One dock is free on 11 Sep.")
        answered = await client.send("Dock 2 please", task_id=again.id)
        assert isinstance(answered, Task) and answered.status.state is TaskState.INPUT_REQUIRED
        assert question(answered) == (
            "Please name one of Dock 1, and say whether a tail lift is needed."
        )
        # The task belongs to the partner's principal: the token's subject.
        assert {t.id async for t in client.list_tasks()} == {task.id, again.id}


@BINDINGS
async def test_an_after_hours_slot_waits_for_a_managers_approval(
    binding: str, issuer: Issuer, keys: Any
) -> None:
    manager_token = issuer.token(subject="manager-rina", scope="delivery.approve")
    async with (
        delivery_agent(issuer) as url,
        connect(url, binding, partner(issuer)) as client,
        httpx.AsyncClient(timeout=TIMEOUT_S, trust_env=False) as http,
    ):
        seen: list[Any] = []
        async with contextlib.aclosing(client.stream(AFTER_HOURS)) as events:
            async for event in events:
                seen.append(event)
                if state_of(event) is not TaskState.AUTH_REQUIRED:
                    continue
                task_id = event.task_id
                assert f"approves task {task_id} with their own credentials at " in text_of(event)
                approve = url + APPROVALS_PATH + task_id
                # The state grants nothing: the partner's own message does not move the task...
                nudged = await client.send(
                    "Approved, go ahead.", task_id=task_id, return_immediately=True
                )
                assert isinstance(nudged, Task) and nudged.status.state is TaskState.AUTH_REQUIRED
                # ...and neither the partner's token, nor no token, nor a forged one approves.
                partner_token = await client_token(issuer)
                refusals = [
                    ({"Authorization": f"Bearer {partner_token}"}, 403, "insufficient_scope"),
                    ({}, 401, 'Bearer realm="Delivery approvals"'),
                    (
                        {"Authorization": f"Bearer {forged_manager(keys, issuer)}"},
                        401,
                        'error="invalid_token"',
                    ),
                ]
                for headers, status, challenge in refusals:
                    refused = await http.post(approve, headers=headers)
                    assert refused.status_code == status, refused.text
                    assert challenge in refused.headers["www-authenticate"]
                still = await client.get_task(task_id)
                assert still.status.state is TaskState.AUTH_REQUIRED
                # The manager approves out of band, with credentials of their own.
                approved = await http.post(
                    approve, headers={"Authorization": f"Bearer {manager_token}"}
                )
                assert approved.status_code == 200, approved.text
                assert approved.json() == {"taskId": task_id, "approvedBy": "manager-rina"}
                # Twice is not possible: no task waits any more.
                again = await http.post(
                    approve, headers={"Authorization": f"Bearer {manager_token}"}
                )
                assert again.status_code == 404
        states = [state_of(e) for e in seen if state_of(e) is not None]
        assert states[-3:] == [TaskState.AUTH_REQUIRED, TaskState.WORKING, TaskState.COMPLETED]
        done = await client.get_task(seen[0].id)
        assert booking(done)["approvedBy"] == "manager-rina"
        assert booking(done)["window"] == "22:00-00:00"
        # The partner's nudge is on the record, and was no approval.
        assert [m.text for m in done.history if m.role is Role.USER] == [
            AFTER_HOURS,
            "Approved, go ahead.",
        ]
        assert any(isinstance(e, TaskArtifactUpdateEvent) for e in seen)


def state_of(event: Any) -> TaskState | None:
    if isinstance(event, Task):
        return event.status.state
    if isinstance(event, TaskStatusUpdateEvent):
        return event.status.state
    return None


def text_of(event: TaskStatusUpdateEvent | Task) -> str:
    message = event.status.message
    assert isinstance(message, Message)
    return message.text


async def client_token(issuer: Issuer) -> str:
    """The partner's own token (the one its client fetched), for the approval attempt."""
    fetch = OAuth2ClientCredentials(
        "erp-partner", "partner-secret", token_url=issuer.url + "/token"
    )
    return await fetch.token(frozenset({"openid", "delivery.write"}))


def forged_manager(keys: Any, issuer: Issuer) -> str:
    return mint(keys.attacker, issuer=issuer.url, subject="manager-rina", scope="delivery.approve")


@BINDINGS
async def test_bad_tokens_are_refused_and_change_nothing(
    binding: str, issuer: Issuer, keys: Any
) -> None:
    now = int(time.time())
    claims = {"iss": issuer.url, "aud": AUDIENCE, "sub": "contoh-erp", "exp": now + 300}
    scopes = "openid delivery.write"
    bad: list[tuple[str, type[Exception], str]] = [
        (issuer.token(scope=scopes, lifetime=-600), AuthenticationError, "expired"),
        (issuer.token(scope=scopes, nbf=now + 3600), AuthenticationError, "not valid yet"),
        (issuer.token(scope=scopes, audience="https://erp.other"), AuthenticationError, "audience"),
        (issuer.token(scope=scopes, issuer="https://sso.evil"), AuthenticationError, "iss"),
        (mint(keys.attacker, issuer=issuer.url, scope=scopes), AuthenticationError, "signature"),
        (unsigned({**claims, "scope": scopes}), AuthenticationError, "alg none"),
        (issuer.token(scope="openid"), PermissionDeniedError, "delivery.write"),
    ]
    async with delivery_agent(issuer) as url:
        for token, error, mentions in bad:
            async with connect(url, binding, Credentials(BearerToken(token))) as client:
                with pytest.raises(error, match=mentions):
                    await client.send(BOOK)
        async with connect(url, binding, partner(issuer)) as client:
            assert [t async for t in client.list_tasks()] == []


async def test_a_card_signed_by_another_key_is_refused(issuer: Issuer) -> None:
    async with delivery_agent(issuer) as url:
        # A trust pinning some other key refuses the card before any call is made.
        other = Trust({"keys": [generate_keys().ec.as_dict(private=False)]})
        with pytest.raises(CardSignatureError, match="no trusted key"):
            await Client.connect(url, trust=other, card_cache=CardCache())
        async with httpx.AsyncClient(timeout=TIMEOUT_S, trust_env=False) as http:
            jwks = (await http.get(url + CARD_JWKS_PATH)).json()
        assert [key["kty"] for key in jwks["keys"]] == ["EC"]
        assert "d" not in jwks["keys"][0]  # the public half only


# -- understanding requests --------------------------------------------------------------------


def test_requests_are_read_from_words_or_data() -> None:
    assert parse_request(BOOK) == parse_request(
        "", {"purchaseOrder": "PO-2026-0184", "distributionCentre": "Semarang"}
    )
    found = parse_request(BOOK)
    assert (found.purchase_order, found.distribution_centre) == ("PO-2026-0184", "Semarang")
    assert parse_request("book something").purchase_order is None


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Dock 2, tail lift required.", (2, True)),
        ("dock 1, no tail lift", (1, False)),
        ("Dock #1 please", (1, False)),
        ("Dock 7", None),
        ("the left one", None),
    ],
)
def test_dock_answers(answer: str, expected: tuple[int, bool] | None) -> None:
    assert parse_dock_answer(answer, [1, 2]) == expected


def test_routing_by_metadata_or_words() -> None:
    def message(text: str, **metadata: Any) -> Message:
        from peerwire.types import Part

        return Message(
            message_id="m", role=Role.USER, parts=[Part(text=text)], metadata=metadata or None
        )

    assert route(message(BOOK)) == "book-delivery-slot"
    assert route(message(AFTER_HOURS)) == "book-after-hours-slot"
    assert route(message(BOOK, skill="book-after-hours-slot")) == "book-after-hours-slot"


def test_the_sample_needs_an_issuer(monkeypatch: pytest.MonkeyPatch) -> None:
    from peerwire.samples.delivery import main

    monkeypatch.delenv("DELIVERY_ISSUER", raising=False)
    with pytest.raises(SystemExit) as stopped:
        main(["--port", "1"])
    assert stopped.value.code == 2
