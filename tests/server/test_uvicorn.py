"""The app on uvicorn (``live_server(http="uvicorn")``, as ``peerwire serve --http uvicorn``):
what differs from peerwire's own server is checked here; the behaviour suite itself runs on
both servers in tests/server/matrix.

uvicorn waits for open connections before it runs the app's lifespan shutdown; peerwire's
``UvicornServer`` drains the runner first, so callers waiting on a task still get its outcome.
TLS uses the very ``SSLContext`` of ``ServerTLS``; an mTLS security scheme is refused, since
uvicorn does not put the client certificate in the ASGI TLS extension.
"""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import Any

import httpx
import pytest

from peerwire import Agent, serve
from peerwire.security import APIKeyVerifier, MTLSVerifier
from peerwire.testing import live_server
from peerwire.types import (
    APIKeySecurityScheme,
    MutualTlsSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

from ._agents import WAIT_S, ask_for, workbench
from ._rpc import Rpc, state_of, status_text, user_message

MTLS = SecurityScheme(mtls_security_scheme=MutualTlsSecurityScheme())
KEY = SecurityScheme(
    api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-API-Key")
)


def secured(schemes: dict[str, SecurityScheme]) -> Agent:
    requirements = [SecurityRequirement(schemes={name: StringList()}) for name in schemes]
    agent = Agent("Partner Agent", security_schemes=schemes, security_requirements=requirements)

    @agent.skill()
    async def echo(text: str) -> str:
        return text

    return agent


async def test_callers_waiting_on_a_task_at_shutdown_get_its_outcome_on_uvicorn() -> None:
    # uvicorn alone would wait for these connections until its graceful-shutdown timeout and
    # then cut them off; the runner drains first, so both callers get the documented outcome.
    agent, controls = workbench()
    async with httpx.AsyncClient(trust_env=False, timeout=WAIT_S) as http:
        async with live_server(agent, shutdown_grace=0.3, http="uvicorn") as url:
            rpc = Rpc(http, url)
            blocked = asyncio.ensure_future(rpc.send(ask_for("wait", "blocked")))
            await controls.started("blocked")
            followed = await rpc.send(ask_for("wait", "followed"), returnImmediately=True)
            await controls.started("followed")
            subscribed = asyncio.Event()

            async def follow() -> dict[str, Any] | None:
                async with rpc.subscribe(followed["id"]) as stream:
                    await stream.next()
                    subscribed.set()
                    last = await stream.next_envelope()
                    assert await stream.next_envelope() is None, "the error is the last event"
                    return last

            following = asyncio.ensure_future(follow())
            await asyncio.wait_for(subscribed.wait(), WAIT_S)
        last = await asyncio.wait_for(following, WAIT_S)
        assert last is not None
        info = last["error"]["data"][0]
        assert (info["reason"], info["metadata"]) == (
            "STREAM_ENDED",
            {"taskId": followed["id"], "cause": "shutdown"},
        )
        reason = "the server shut down before the task finished"
        task = await asyncio.wait_for(blocked, WAIT_S)
        assert (state_of(task), status_text(task)) == ("TASK_STATE_FAILED", reason)


async def test_https_with_required_client_certificates_on_uvicorn(tmp_path: Path) -> None:
    from security._pki import make_pki

    pki = make_pki(tmp_path)
    agent = secured({"key": KEY})
    auth = {"key": APIKeyVerifier({"k-bob": "bob"})}
    trusting = ssl.create_default_context(cafile=pki.server_ca_file)
    alice = pki.client("alice")
    with_certificate = ssl.create_default_context(cafile=pki.server_ca_file)
    with_certificate.load_cert_chain(alice.certfile, alice.keyfile)
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage"}
    body["params"] = {"message": user_message("over TLS")}
    headers = {"A2A-Version": "1.0", "X-API-Key": "k-bob"}
    async with live_server(agent, tls=pki.server_tls(), auth=auth, http="uvicorn") as url:
        assert url.startswith("https://127.0.0.1:")
        async with httpx.AsyncClient(verify=with_certificate, timeout=WAIT_S) as http:
            answer = (await http.post(url + "/", json=body, headers=headers)).json()
            assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        # The handshake itself refuses a client without a certificate, as on peerwire's server.
        async with httpx.AsyncClient(verify=trusting, timeout=WAIT_S) as http:
            with pytest.raises(httpx.TransportError):
                await http.post(url + "/", json=body, headers=headers)


async def test_an_mtls_security_scheme_is_refused_at_start_up_on_uvicorn(tmp_path: Path) -> None:
    from security._pki import make_pki

    pki = make_pki(tmp_path)
    agent = secured({"mtls": MTLS, "key": KEY})
    auth = {"mtls": MTLSVerifier([pki.client_ca.pem]), "key": APIKeyVerifier({"k": "bob"})}
    with pytest.raises(ValueError, match=r"mTLS security scheme \(mtls\).*ASGI TLS extension"):
        async with live_server(agent, tls=pki.server_tls(), auth=auth, http="uvicorn"):
            pytest.fail("the server must not start")


async def test_an_unknown_http_server_is_refused() -> None:
    agent, _ = workbench()
    with pytest.raises(ValueError, match="unknown HTTP server 'hypercorn'"):
        async with live_server(agent, http="hypercorn"):  # type: ignore[arg-type]
            pytest.fail("the server must not start")


def test_serve_refuses_an_unknown_http_server_before_any_work() -> None:
    agent, _ = workbench()
    with pytest.raises(ValueError, match="unknown HTTP server 'hypercorn'"):
        serve(agent, http="hypercorn")  # type: ignore[arg-type]
