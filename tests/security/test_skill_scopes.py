"""Per-skill scopes, and in-task authorization (AUTH_REQUIRED), over JSON-RPC.

A skill declared with ``scopes=`` publishes them as its ``securityRequirements`` and refuses a
message routed to it without them (403, PERMISSION_DENIED, naming the missing scope), on the
first message and on every follow-up. ``ctx.require_auth`` moves the task to AUTH_REQUIRED
with a message; the stream stays open there, the state grants nothing, and the task resumes
when the credential arrives out of band.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest

from peerwire import Agent, TaskContext
from peerwire.bindings.sse import SSEParser
from peerwire.security import APIKeyVerifier, JWTValidator, JWTVerifier, Principal
from peerwire.testing import in_process, live_server
from peerwire.types import (
    APIKeySecurityScheme,
    ClientCredentialsOAuthFlow,
    OAuth2SecurityScheme,
    OAuthFlows,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

from ._support import AUDIENCE, TIMEOUT_S, Keys, Rpc, mint, public_jwks, reason, user_message

ISSUER = "https://idp.example"
OAUTH = SecurityScheme(
    oauth2_security_scheme=OAuth2SecurityScheme(
        flows=OAuthFlows(
            client_credentials=ClientCredentialsOAuthFlow(
                token_url="https://idp.example/token",
                scopes={"delivery.read": "Read", "delivery.write": "Book"},
            )
        )
    )
)
KEY = SecurityScheme(
    api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-API-Key")
)


class Desk:
    """What the handlers wait on: the test plays the out-of-band credential service."""

    def __init__(self) -> None:
        self.credential_arrived = asyncio.Event()
        self.asked = asyncio.Event()


def delivery_agent(desk: Desk) -> Agent:
    agent = Agent(
        "Delivery Scheduling Agent",
        security_schemes={"oauth": OAUTH, "key": KEY},
        security_requirements=[
            SecurityRequirement(schemes={"oauth": StringList(list=["delivery.read"])}),
            SecurityRequirement(schemes={"key": StringList()}),
        ],
    )

    @agent.skill("slots")
    async def slots(text: str) -> str:
        return "dock 1 at 08:00, dock 2 at 09:30"

    @agent.skill("book", scopes=["delivery.write"])
    async def book(ctx: TaskContext) -> str:
        await ctx.start_work()
        answer = await ctx.ask("Which dock?")
        return f"booked {answer.text}"

    @agent.skill("release", scopes=["delivery.write"])
    async def release(ctx: TaskContext) -> None:
        await ctx.require_auth("A warehouse manager must approve releasing a booked slot")
        desk.asked.set()
        await desk.credential_arrived.wait()
        await ctx.complete("released")

    return agent


def auth(keys: Keys) -> dict[str, Any]:
    return {
        "oauth": JWTVerifier(
            JWTValidator(jwks=public_jwks(keys.rsa), issuer=ISSUER, audience=AUDIENCE)
        ),
        "key": APIKeyVerifier(
            {
                "k-writer": Principal(id="ops", scopes=frozenset({"delivery.write"})),
                "k-reader": "viewer",
            }
        ),
    }


@contextlib.asynccontextmanager
async def rpc_to(keys: Keys, desk: Desk) -> AsyncIterator[Rpc]:
    async with in_process(delivery_agent(desk), rest_path=None, auth=auth(keys)) as http:
        yield Rpc(http, "http://testserver/", {})


def token(keys: Keys, scope: str) -> str:
    return "Bearer " + mint(keys.rsa, issuer=ISSUER, subject="partner", scope=scope)


def to(skill: str, text: str = "x", **fields: Any) -> dict[str, Any]:
    return {"message": user_message(text, metadata={"skill": skill}, **fields)}


async def test_skill_scopes_are_published_on_the_card(keys: Keys) -> None:
    async with rpc_to(keys, Desk()) as rpc:
        card = (await rpc.http.get("http://testserver/.well-known/agent-card.json")).json()
    skills = {s["id"]: s for s in card["skills"]}
    assert "securityRequirements" not in skills["slots"]
    # Each card alternative, asking for the skill's scopes where scopes are granted.
    assert skills["book"]["securityRequirements"] == [
        {"schemes": {"oauth": {"list": ["delivery.read", "delivery.write"]}}},
        {"schemes": {"key": {"list": ["delivery.write"]}}},
    ]


async def test_a_skill_refuses_callers_without_its_scopes(keys: Keys) -> None:
    async with rpc_to(keys, Desk()) as rpc:
        reader = rpc.using(Authorization=token(keys, "delivery.read"))
        assert (await reader.result("SendMessage", to("slots")))["task"]["status"]["state"] == (
            "TASK_STATE_COMPLETED"
        )
        response = await reader.post("SendMessage", to("book"))
        assert response.status_code == 403
        error = response.json()["error"]
        assert reason(error) == "PERMISSION_DENIED"
        assert "delivery.write" in error["message"] and "'book'" in error["message"]
        info = next(d for d in error["data"] if d["@type"].endswith("ErrorInfo"))
        assert info["metadata"] == {"skill": "book", "missingScopes": "delivery.write"}
        # Nothing was created for the refused message.
        assert len((await reader.result("ListTasks"))["tasks"]) == 1
        # An API key mapped to a principal with that role may.
        writer = rpc.using(X_API_Key="k-writer")
        task = (await writer.result("SendMessage", to("book")))["task"]
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        plain_key = rpc.using(X_API_Key="k-reader")
        assert (await plain_key.post("SendMessage", to("book"))).status_code == 403


async def test_every_follow_up_is_checked_again(keys: Keys) -> None:
    async with rpc_to(keys, Desk()) as rpc:
        full = rpc.using(Authorization=token(keys, "delivery.read delivery.write"))
        task = (await full.result("SendMessage", to("book")))["task"]
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        # Same principal, a newer token without the write scope: the answer is refused.
        thin = rpc.using(Authorization=token(keys, "delivery.read"))
        follow_up = to("book", "dock 2", taskId=task["id"], contextId=task["contextId"])
        assert (await thin.post("SendMessage", follow_up)).status_code == 403
        still = await full.result("GetTask", {"id": task["id"]})
        assert still["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        done = (await full.result("SendMessage", follow_up))["task"]
        assert done["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_auth_required_keeps_the_stream_open_until_the_credential_arrives(
    keys: Keys,
) -> None:
    desk = Desk()
    async with (
        live_server(delivery_agent(desk), rest_path=None, auth=auth(keys)) as url,
        httpx.AsyncClient(trust_env=False, timeout=TIMEOUT_S) as http,
    ):
        headers = {
            "A2A-Version": "1.0",
            "Accept": "text/event-stream",
            "Authorization": token(keys, "delivery.read delivery.write"),
        }
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendStreamingMessage",
            "params": to("release"),
        }
        events: list[dict[str, Any]] = []
        async with http.stream("POST", url + "/", json=body, headers=headers) as response:
            assert response.headers["content-type"] == "text/event-stream"
            parser = SSEParser()
            with anyio.fail_after(TIMEOUT_S):
                async for chunk in response.aiter_raw():
                    for data in parser.feed(chunk):
                        events.append(json.loads(data)["result"])
                        state = _state(events[-1])
                        if state == "TASK_STATE_AUTH_REQUIRED":
                            # The stream is still open: the credential arrives out of band.
                            message = events[-1]["statusUpdate"]["status"]["message"]
                            assert "approve" in message["parts"][0]["text"]
                            desk.credential_arrived.set()
        assert [_state(e) for e in events] == [
            "TASK_STATE_SUBMITTED",
            "TASK_STATE_WORKING",
            "TASK_STATE_AUTH_REQUIRED",
            "TASK_STATE_COMPLETED",
        ]


async def test_reaching_auth_required_grants_nothing(keys: Keys) -> None:
    desk = Desk()
    async with rpc_to(keys, desk) as rpc:
        full = rpc.using(Authorization=token(keys, "delivery.read delivery.write"))
        result = await full.result(
            "SendMessage", {**to("release"), "configuration": {"returnImmediately": True}}
        )
        task = result["task"]
        with anyio.fail_after(TIMEOUT_S):
            await desk.asked.wait()
        state = await full.result("GetTask", {"id": task["id"]})
        assert state["status"]["state"] == "TASK_STATE_AUTH_REQUIRED"
        # A message on the waiting task still needs the skill's scopes...
        thin = rpc.using(Authorization=token(keys, "delivery.read"))
        reply = to("release", "approved, trust me", taskId=task["id"])
        assert (await thin.post("SendMessage", reply)).status_code == 403
        # ...and another principal cannot see the task at all.
        other = rpc.using(X_API_Key="k-writer")
        assert (await other.error("GetTask", {"id": task["id"]}))["code"] == -32001
        desk.credential_arrived.set()


def _state(event: dict[str, Any]) -> str:
    if "task" in event:
        return str(event["task"]["status"]["state"])
    return str(event["statusUpdate"]["status"]["state"])


def test_scopes_need_a_scheme_that_can_grant_them() -> None:
    agent = Agent("No Security")

    @agent.skill(scopes=["x"])
    async def guarded(text: str) -> str:
        return text

    with pytest.raises(ValueError, match="declares no security schemes"):
        agent.card([])
