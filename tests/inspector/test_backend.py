"""The inspector's backend without a browser: every API route, as the page calls it, against
real agents on loopback; and bad input answered in words, never with a traceback."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from joserfc.jwk import ECKey

from peerwire.security import CardSigner, MTLSVerifier
from peerwire.testing import live_server

from .agents import (
    OAUTH_CLIENT_ID,
    OAUTH_CLIENT_SECRET,
    OAUTH_ISSUED_TOKEN,
    PARTNER_ALICE,
    VAULT_KEY,
    VAULT_TOKEN,
    TokenEndpoint,
    oauth_agent,
    oauth_auth,
    partner_agent,
    serve_asgi,
    signed_agent,
)
from .pages import api_client

pytestmark = pytest.mark.asyncio(loop_scope="module")

WAIT_STEPS = 200  # x 0.05 s: a liveness bound, not a timing assertion


async def wait_for(
    http: httpx.AsyncClient, found: Callable[[dict[str, Any]], Any], what: str
) -> Any:
    """Poll the inspector's state until ``found(state)`` is truthy; return what it found."""
    state: dict[str, Any] = {}
    for _ in range(WAIT_STEPS):
        state = (await http.get("/api/state")).json()
        if result := found(state):
            return result
        await asyncio.sleep(0.05)
    raise AssertionError(f"never saw {what}; last state: {json.dumps(state)[:3000]}")


def task_in(state: str, *, text: str = "") -> Callable[[dict[str, Any]], Any]:
    def found(snapshot: dict[str, Any]) -> Any:
        for task in snapshot["tasks"]:
            sent = [e["text"] for e in task["entries"] if e["kind"] == "sent"]
            if task["state"] == state and (not text or text in sent):
                return task
        return None

    return found


def no_traceback(response: httpx.Response) -> str:
    body = response.json()
    assert set(body) == {"error"}, body
    assert "Traceback" not in body["error"] and 'File "' not in body["error"]
    return str(body["error"])


async def connect(http: httpx.AsyncClient, url: str) -> dict[str, Any]:
    response = await http.post("/api/connect", json={"url": url})
    assert response.status_code == 200, response.text
    return dict(response.json())


async def test_the_card_view_shows_identity_interfaces_caching_and_signature(
    inspector: httpx.AsyncClient, glossary_url: str
) -> None:
    view = await connect(inspector, glossary_url)
    card = view["document"]
    assert card["name"] == "Glossary Agent"
    bindings = [i["protocolBinding"] for i in card["supportedInterfaces"]]
    assert bindings == ["JSONRPC", "HTTP+JSON", "GRPC"]  # in the card's order
    assert view["signature"] == "unsigned"
    assert view["http"]["status"] == 200
    assert "etag" in view["http"]["headers"] and "cache-control" in view["http"]["headers"]
    assert view["problems"] == []
    skills = {s["id"]: s for s in card["skills"]}
    assert skills["define"]["examples"] == ["record", "sealed class"]
    # The card fetch is on the wire too.
    state = (await inspector.get("/api/state")).json()
    assert state["card"]["document"]["name"] == "Glossary Agent"
    assert any(x["operation"] == "GET agent card" for x in state["exchanges"])


async def test_a_blocking_send_over_json_rpc_completes_with_the_artifact(
    inspector: httpx.AsyncClient, glossary_url: str
) -> None:
    await connect(inspector, glossary_url)
    response = await inspector.post(
        "/api/send", json={"binding": "JSONRPC", "text": "record", "streaming": False}
    )
    assert response.status_code == 202, response.text
    task = await wait_for(inspector, task_in("COMPLETED", text="record"), "COMPLETED")
    assert task["artifacts"][0]["text"] == (
        "A record is a final class that is a transparent carrier for its components."
    )
    state = (await inspector.get("/api/state")).json()
    sends = [x for x in state["exchanges"] if x["operation"] == "SendMessage"]
    assert sends and sends[-1]["response"]["status"] == 200
    assert sends[-1]["curl"].startswith("curl -sS -N -X POST")
    assert "a2a-version: 1.0" in sends[-1]["curl"].lower()


async def test_a_stream_over_rest_shows_each_chunk_assembling(
    inspector: httpx.AsyncClient, glossary_url: str
) -> None:
    await connect(inspector, glossary_url)
    await inspector.post(
        "/api/send", json={"binding": "HTTP+JSON", "text": "record", "streaming": True}
    )
    task = await wait_for(inspector, task_in("COMPLETED", text="record"), "COMPLETED")
    chunks = [e for e in task["entries"] if e["kind"] == "artifact"]
    assert [c["append"] for c in chunks] == [False, True]
    assert chunks[0]["assembled"] == "A record is a final class that is a transparent"
    assert chunks[1]["assembled"].endswith("carrier for its components.")
    assert task["entries"][-1]["kind"] == "closed"
    state = (await inspector.get("/api/state")).json()
    stream = next(x for x in state["exchanges"] if x["operation"].endswith(":stream"))
    assert stream["response"]["stream"] is True
    assert len([e for e in stream["events"] if not e["comment"]]) >= 3  # task, chunks, status


async def test_input_required_is_answered_on_the_same_task(
    inspector: httpx.AsyncClient, glossary_url: str
) -> None:
    await connect(inspector, glossary_url)
    await inspector.post("/api/send", json={"text": "", "streaming": True})
    asked = await wait_for(inspector, task_in("INPUT_REQUIRED"), "INPUT_REQUIRED")
    assert asked["question"] == "Which term should I define?"
    await inspector.post(
        "/api/send",
        json={
            "text": "sealed class",
            "taskId": asked["id"],
            "contextId": asked["contextId"],
            "streaming": False,
        },
    )

    def answered(state: dict[str, Any]) -> Any:
        return next(
            (t for t in state["tasks"] if t["id"] == asked["id"] and t["state"] == "COMPLETED"),
            None,
        )

    task = await wait_for(inspector, answered, "the answered task COMPLETED")
    assert "restricts which other classes" in task["artifacts"][0]["text"]


async def test_a_slow_task_is_canceled_over_grpc_with_its_metadata_on_the_wire(
    inspector: httpx.AsyncClient, glossary_url: str
) -> None:
    await connect(inspector, glossary_url)
    await inspector.post("/api/send", json={"binding": "GRPC", "text": "slow", "streaming": True})
    working = await wait_for(inspector, task_in("WORKING", text="slow"), "WORKING")
    response = await inspector.post(f"/api/tasks/{working['id']}/cancel", json={"binding": "GRPC"})
    assert response.status_code == 200, response.text
    assert response.json()["task"]["state"] == "CANCELED"
    state = (await inspector.get("/api/state")).json()
    grpc = [x for x in state["exchanges"] if x["binding"] == "GRPC"]
    assert {x["operation"] for x in grpc} >= {"SendStreamingMessage", "CancelTask"}
    cancel = next(x for x in grpc if x["operation"] == "CancelTask")
    assert cancel["request"]["rpc"] == "/lf.a2a.v1.A2AService/CancelTask"
    assert ["a2a-version", "1.0"] in cancel["request"]["metadata"]
    assert cancel["request"]["message"]["id"] == working["id"]
    assert cancel["curl"] == ""  # gRPC has no curl


async def test_resubscribe_follows_a_running_task(
    inspector: httpx.AsyncClient, glossary_url: str
) -> None:
    await connect(inspector, glossary_url)
    await inspector.post("/api/send", json={"text": "slow", "streaming": True})
    working = await wait_for(inspector, task_in("WORKING", text="slow"), "WORKING")
    response = await inspector.post(f"/api/tasks/{working['id']}/subscribe", json={})
    assert response.status_code == 202 and response.json()["mode"] == "subscribe"
    await inspector.post(f"/api/tasks/{working['id']}/cancel", json={})
    state = await wait_for(
        inspector,
        lambda s: (
            s
            if any(r["mode"] == "subscribe" and r["status"] != "running" for r in s["runs"])
            else None
        ),
        "the resubscription ended",
    )
    subscribe = [x for x in state["exchanges"] if x["operation"] == "SubscribeToTask"]
    assert subscribe and subscribe[0]["events"]


async def test_tasks_are_listed_with_filters_and_opened(
    inspector: httpx.AsyncClient, glossary_url: str
) -> None:
    await connect(inspector, glossary_url)
    await inspector.post("/api/send", json={"text": "lambda", "streaming": False})
    done = await wait_for(inspector, task_in("COMPLETED", text="lambda"), "COMPLETED")
    listed = await inspector.get(
        "/api/tasks", params={"contextId": done["contextId"], "state": "COMPLETED"}
    )
    assert listed.status_code == 200, listed.text
    rows = listed.json()["tasks"]
    assert [r["id"] for r in rows] == [done["id"]]
    paged = (await inspector.get("/api/tasks", params={"pageSize": "1", "page": "1"})).json()
    assert len(paged["tasks"]) == 1 and paged["pageSize"] == 1
    opened = await inspector.get(f"/api/tasks/{done['id']}", params={"binding": "HTTP+JSON"})
    assert opened.status_code == 200
    assert opened.json()["raw"]["status"]["state"] == "TASK_STATE_COMPLETED"
    bad_state = await inspector.get("/api/tasks", params={"state": "SLEEPING"})
    assert bad_state.status_code == 400 and "SLEEPING" in no_traceback(bad_state)


async def test_push_configs_are_created_listed_read_and_deleted(
    inspector: httpx.AsyncClient, glossary_url: str
) -> None:
    await connect(inspector, glossary_url)
    await inspector.post("/api/send", json={"text": "", "streaming": False})
    task = await wait_for(inspector, task_in("INPUT_REQUIRED"), "INPUT_REQUIRED")
    base = f"/api/tasks/{task['id']}/push-configs"
    created = await inspector.post(
        base, json={"url": "http://127.0.0.1:9/hook", "token": "t-1", "id": "hook-1"}
    )
    assert created.status_code == 201, created.text
    assert created.json()["id"] == "hook-1"
    listed = (await inspector.get(base)).json()["configs"]
    assert [c["id"] for c in listed] == ["hook-1"]
    got = await inspector.get(f"{base}/hook-1", params={"binding": "GRPC"})
    assert got.status_code == 200 and got.json()["url"] == "http://127.0.0.1:9/hook"
    deleted = await inspector.delete(f"{base}/hook-1")
    assert deleted.status_code == 200
    assert (await inspector.get(base)).json()["configs"] == []
    empty = await inspector.post(base, json={"url": ""})
    assert empty.status_code == 400 and "webhook URL" in no_traceback(empty)


async def test_a_file_and_data_are_sent_as_parts(
    inspector: httpx.AsyncClient, glossary_url: str
) -> None:
    await connect(inspector, glossary_url)
    response = await inspector.post(
        "/api/send",
        json={
            "text": "record",
            "data": '{"level": 2}',
            "file": {
                "name": "notes.txt",
                "type": "text/plain",
                "content": base64.b64encode(b"hi").decode(),
            },
        },
    )
    assert response.status_code == 202, response.text
    assert response.json()["sent"] == 'record + data {"level": 2} + file notes.txt (2 bytes)'
    state = await wait_for(
        inspector,
        lambda s: (
            s
            if any(x["operation"] == "SendMessage" and x["done"] for x in s["exchanges"])
            else None
        ),
        "the SendMessage exchange",
    )
    sent = next(x for x in state["exchanges"] if x["operation"] == "SendMessage")
    parts = json.loads(sent["request"]["body"])["params"]["message"]["parts"]
    assert parts[1]["data"] == {"level": 2}
    assert parts[2]["filename"] == "notes.txt" and parts[2]["raw"] == "aGk="
    bad = await inspector.post("/api/send", json={"text": "x", "data": "{not json"})
    assert bad.status_code == 400 and "not JSON" in no_traceback(bad)


async def test_a_bearer_token_reaches_the_agent_and_is_never_shown(
    inspector: httpx.AsyncClient, vault_url: str
) -> None:
    view = await connect(inspector, vault_url)
    assert view["schemes"] == [
        {"name": "bearer", "kind": "bearer", "where": "Authorization: Bearer", "description": ""},
        {"name": "key", "kind": "apiKey", "where": "header X-Vault-Key", "description": ""},
    ]
    await inspector.post("/api/send", json={"text": "who", "streaming": False})
    refused = await wait_for(
        inspector,
        lambda s: next((r for r in s["runs"] if r["status"] == "error"), None),
        "the refused run",
    )
    assert "AuthenticationError" in refused["error"]
    held = await inspector.post(
        "/api/credentials",
        json={"scheme": "bearer", "credential": {"kind": "bearer", "token": VAULT_TOKEN}},
    )
    assert held.json() == {"bearer": "bearer"}
    for binding in ("JSONRPC", "GRPC"):
        await inspector.post("/api/send", json={"binding": binding, "text": "who"})
    state = await wait_for(
        inspector,
        lambda s: s if len([t for t in s["tasks"] if t["state"] == "COMPLETED"]) == 2 else None,
        "two COMPLETED tasks",
    )
    for task in state["tasks"]:
        assert task["artifacts"][0]["text"] == "you are inspector-user"
    everything = json.dumps(state)
    assert VAULT_TOKEN not in everything
    assert "Bearer ***" in everything  # redacted where it was sent: headers and metadata
    bad = await inspector.post(
        "/api/credentials", json={"scheme": "bearer", "credential": {"kind": "bearer", "token": ""}}
    )
    assert bad.status_code == 400 and "token is empty" in no_traceback(bad)
    unknown = await inspector.post(
        "/api/credentials", json={"scheme": "x", "credential": {"kind": "magic"}}
    )
    assert unknown.status_code == 400 and "unknown credential kind" in no_traceback(unknown)


async def test_bad_input_is_answered_in_words(
    inspector: httpx.AsyncClient, glossary_url: str
) -> None:
    before = await inspector.post("/api/send", json={"text": "record"})
    assert before.status_code == 400 and "connect to an agent first" in no_traceback(before)
    bad_url = await inspector.post("/api/connect", json={"url": "not a url"})
    assert bad_url.status_code == 400 and "not an http" in no_traceback(bad_url)
    # An agent that is down: a port nobody listens on.
    down = await inspector.post("/api/connect", json={"url": "http://127.0.0.1:9"})
    assert down.status_code == 502 and "cannot fetch the agent card" in no_traceback(down)
    await connect(inspector, glossary_url)
    unknown = await inspector.get("/api/tasks/no-such-task")
    assert unknown.status_code == 404 and "TaskNotFoundError" in no_traceback(unknown)
    binding = await inspector.get("/api/tasks/x", params={"binding": "SOAP"})
    assert binding.status_code == 400 and "unknown binding" in no_traceback(binding)
    route = await inspector.get("/api/nothing")
    assert route.status_code == 404 and "no route" in no_traceback(route)
    form = await inspector.post(
        "/api/connect",
        content=b"url=x",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert form.status_code == 415
    not_json = await inspector.post(
        "/api/connect", content=b"{", headers={"content-type": "application/json"}
    )
    assert not_json.status_code == 400 and "not JSON" in no_traceback(not_json)
    page = await inspector.get("/static/../app.py")
    assert page.status_code == 404


async def test_only_requests_addressed_to_loopback_are_answered(
    inspector: httpx.AsyncClient,
) -> None:
    rebound = await inspector.get("/api/state", headers={"host": "evil.example"})
    assert rebound.status_code == 403
    cross_site = await inspector.post(
        "/api/connect", json={"url": "http://x"}, headers={"origin": "http://evil.example"}
    )
    assert cross_site.status_code == 403


async def test_the_page_and_its_modules_are_served_without_outside_references(
    inspector: httpx.AsyncClient,
) -> None:
    page = await inspector.get("/")
    assert page.status_code == 200 and "peerwire inspect" in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    for name in (
        "main.js",
        "api.js",
        "dom.js",
        "card.js",
        "conversation.js",
        "tasks.js",
        "wire.js",
        "selfcheck.js",
        "inspector.css",
    ):
        asset = await inspector.get(f"/static/{name}")
        assert asset.status_code == 200, name
        assert "http://" not in asset.text and "https://" not in asset.text, name


async def test_the_event_stream_carries_each_change(
    inspector: httpx.AsyncClient, glossary_url: str
) -> None:
    await connect(inspector, glossary_url)
    seen: list[dict[str, Any]] = []
    async with inspector.stream("GET", "/api/events") as events:
        assert events.headers["content-type"] == "text/event-stream"
        await inspector.post("/api/send", json={"text": "record", "streaming": True})
        async with asyncio.timeout(20):
            async for line in events.aiter_lines():
                if line.startswith("data: "):
                    seen.append(json.loads(line[6:]))
                    event = seen[-1]
                    if event["type"] == "task" and event["task"]["state"] == "COMPLETED":
                        break
    kinds = {event["type"] for event in seen}
    assert kinds == {"run", "task", "exchange"}


async def test_the_self_check_route_returns_the_report(
    inspector: httpx.AsyncClient, glossary_url: str
) -> None:
    await connect(inspector, glossary_url)
    response = await inspector.post("/api/selfcheck")
    assert response.status_code == 200, response.text
    report = response.json()
    assert report["findings"] and {"check", "ok", "severity", "title"} <= set(report["findings"][0])


async def test_oauth2_client_credentials_fetch_a_token_that_is_never_shown(
    inspector: httpx.AsyncClient,
) -> None:
    endpoint = TokenEndpoint()
    async with serve_asgi(endpoint) as issuer:
        token_url = issuer + "/token"
        async with live_server(
            oauth_agent(token_url), auth=oauth_auth(), shutdown_grace=1.0
        ) as url:
            view = await connect(inspector, url)
            (scheme,) = view["schemes"]
            assert scheme["kind"] == "oauth2" and scheme["tokenUrl"] == token_url
            assert scheme["scopes"] == ["ledger.read"]
            wrong = await inspector.post(
                "/api/credentials",
                json={
                    "scheme": "oauth",
                    "credential": {"kind": "oauth2", "clientId": "", "tokenUrl": token_url},
                },
            )
            assert wrong.status_code == 400 and "clientId is empty" in no_traceback(wrong)
            held = await inspector.post(
                "/api/credentials",
                json={
                    "scheme": "oauth",
                    "credential": {
                        "kind": "oauth2",
                        "clientId": OAUTH_CLIENT_ID,
                        "clientSecret": OAUTH_CLIENT_SECRET,
                        "tokenUrl": token_url,
                        "scopes": ["ledger.read"],
                    },
                },
            )
            assert held.json() == {"oauth": "oauth2"}
            await inspector.post("/api/send", json={"text": "balance", "streaming": False})
            task = await wait_for(inspector, task_in("COMPLETED"), "COMPLETED")
            assert task["artifacts"][0]["text"] == f"balance of {OAUTH_CLIENT_ID}"
            assert endpoint.requests == 1
            state = (await inspector.get("/api/state")).json()
    # The token request is on the wire, as "auth", with nothing secret in it.
    (token_request,) = [x for x in state["exchanges"] if x["binding"] == "auth"]
    assert ["authorization", "Basic ***"] in token_request["request"]["headers"]
    assert json.loads(token_request["response"]["body"])["access_token"] == "***"
    everything = json.dumps(state)
    for secret in (OAUTH_CLIENT_SECRET, OAUTH_ISSUED_TOKEN):
        assert secret not in everything


async def test_the_signature_status_is_valid_invalid_or_unverified(
    inspector: httpx.AsyncClient,
) -> None:
    key = ECKey.generate_key("P-256", parameters={"kid": "card-1"})
    impostor = ECKey.generate_key("P-256", parameters={"kid": "card-1"})
    signer = CardSigner(key)
    agent = signed_agent()

    async with live_server(agent, signing_key=signer, shutdown_grace=1.0) as url:
        plain = await connect(inspector, url)
        assert plain["signature"] == "unverified"
        assert {s["kid"] for s in plain["signatures"]} == {"card-1"}
        pinned = await inspector.post(
            "/api/connect", json={"url": url, "keys": json.dumps(signer.public_jwks())}
        )
        assert pinned.json()["signature"] == "valid", pinned.json()
        other = {"keys": [impostor.as_dict(private=False)]}
        refused = await inspector.post("/api/connect", json={"url": url, "keys": json.dumps(other)})
        assert refused.json()["signature"] == "invalid"
        assert refused.json()["signatureReason"]


async def test_a_client_certificate_opens_an_agent_that_requires_one(
    inspector: httpx.AsyncClient, tmp_path: Path
) -> None:
    from security._pki import make_pki  # tests/security's small PKI

    pki = make_pki(tmp_path)
    agent = partner_agent()
    verifier = MTLSVerifier([pki.client_ca.pem], principals={PARTNER_ALICE: "alice"})
    async with live_server(
        agent, tls=pki.server_tls(), grpc_port=0, auth={"mtls": verifier}, shutdown_grace=1.0
    ) as url:
        # Without a certificate the card itself is refused, in words.
        refused = await inspector.post("/api/connect", json={"url": url})
        assert refused.status_code == 502 and "cannot fetch the agent card" in no_traceback(refused)
        missing = await inspector.post(
            "/api/credentials",
            json={
                "scheme": "client-certificate",
                "credential": {"kind": "mtls", "certFile": str(tmp_path / "none.pem")},
            },
        )
        assert missing.status_code == 400 and "none.pem" in no_traceback(missing)
        alice = pki.client("alice")
        held = await inspector.post(
            "/api/credentials",
            json={
                "scheme": "client-certificate",
                "credential": {
                    "kind": "mtls",
                    "certFile": str(alice.certfile),
                    "keyFile": str(alice.keyfile),
                    "caFile": str(pki.server_ca_file),
                },
            },
        )
        assert held.json() == {"client-certificate": "mtls"}
        view = await connect(inspector, url)
        assert view["schemes"][0]["kind"] == "mtls"
        for binding in ("JSONRPC", "GRPC"):
            await inspector.post("/api/send", json={"binding": binding, "text": "hi"})
        state = await wait_for(
            inspector,
            lambda s: s if len([t for t in s["tasks"] if t["state"] == "COMPLETED"]) == 2 else None,
            "two COMPLETED tasks",
        )
        assert {t["artifacts"][0]["text"] for t in state["tasks"]} == {"alice"}
        assert {t["binding"] for t in state["tasks"]} == {"JSONRPC", "GRPC"}


async def test_an_api_key_goes_where_the_card_says_and_is_hidden(
    inspector: httpx.AsyncClient, vault_url: str
) -> None:
    await connect(inspector, vault_url)
    held = await inspector.post(
        "/api/credentials",
        json={"scheme": "key", "credential": {"kind": "apiKey", "key": VAULT_KEY}},
    )
    assert held.json() == {"key": "apiKey"}
    await inspector.post("/api/send", json={"binding": "HTTP+JSON", "text": "who"})
    task = await wait_for(inspector, task_in("COMPLETED"), "COMPLETED")
    assert task["artifacts"][0]["text"] == "you are key-holder"
    state = (await inspector.get("/api/state")).json()
    send = next(x for x in state["exchanges"] if x["operation"] == "POST /rest/message:send")
    assert ["x-vault-key", "***"] in send["request"]["headers"]
    assert "x-vault-key: ***" in send["curl"]
    assert VAULT_KEY not in json.dumps(state)
    forgotten = await inspector.delete("/api/credentials/key")
    assert forgotten.json() == {}


async def test_the_backend_runs_on_uvicorn_too() -> None:
    from peerwire.inspect import InspectorApp

    async with (
        serve_asgi(InspectorApp(token="uvicorn-token"), lifespan="on") as page,
        api_client(f"{page}/?token=uvicorn-token") as http,
    ):
        state = await http.get("/api/state")
        assert state.status_code == 200 and state.json()["url"] == ""
        assert "peerwire inspect" in (await http.get("/")).text
