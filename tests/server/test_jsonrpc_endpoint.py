"""The JSON-RPC endpoint over a real server: HTTP rules, envelopes, ids, headers, limits, card.

Every refused request is checked for its JSON-RPC code, for a message that says what was wrong,
and for leaving no trace (the task count is unchanged).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from email.utils import formatdate, parsedate_to_datetime
from typing import Any

import httpx
import pytest
import pytest_asyncio

from peerwire import Agent
from peerwire.client import IDEMPOTENT_SEND_EXTENSION
from peerwire.testing import live_server

from ._rpc import HEADERS, Rpc, envelope, serving, user_message

pytestmark = pytest.mark.asyncio(loop_scope="module")

BODY_LIMIT = 64 * 1024
CARD_MAX_AGE = 120


def echo_agent() -> Agent:
    agent = Agent("Echo", description="Repeats what it is told")

    @agent.skill()
    async def echo(text: str) -> str:
        return text

    return agent


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def rpc() -> AsyncIterator[Rpc]:
    async with serving(echo_agent(), max_body_bytes=BODY_LIMIT, card_max_age=CARD_MAX_AGE) as rpc:
        yield rpc


async def task_count(rpc: Rpc) -> int:
    listed = await rpc.result("ListTasks", {"pageSize": 100})
    return int(listed["totalSize"])


async def refused(rpc: Rpc, response: httpx.Response, code: int, *words: str) -> dict[str, Any]:
    """Assert ``response`` is a JSON-RPC error ``code`` whose message names ``words``."""
    assert response.headers["content-type"] == "application/json"
    answer = response.json()
    assert answer["jsonrpc"] == "2.0"
    assert "result" not in answer
    error = answer["error"]
    assert error["code"] == code, error
    for word in words:
        assert word.lower() in error["message"].lower(), error
    return answer  # type: ignore[no-any-return]


# -- HTTP level ------------------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["GET", "PUT", "DELETE", "PATCH"])
async def test_the_endpoint_takes_only_post(rpc: Rpc, verb: str) -> None:
    response = await rpc.http.request(verb, rpc.endpoint, headers=HEADERS)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


async def test_an_unknown_path_is_404(rpc: Rpc) -> None:
    for path in ("/rpc", "/message:send", "/.well-known/agent.json"):
        response = await rpc.http.post(rpc.url + path, json={}, headers=HEADERS)
        assert response.status_code == 404, path


async def test_a_body_over_the_limit_is_413_with_an_invalid_request_body(rpc: Rpc) -> None:
    before = await task_count(rpc)
    params = {"message": user_message("x" * (BODY_LIMIT + 1))}
    response = await rpc.post(envelope("SendMessage", params))
    assert response.status_code == 413
    answer = await refused(rpc, response, -32600, str(BODY_LIMIT))
    assert answer["id"] is None
    assert await task_count(rpc) == before


async def test_a_chunked_body_over_the_limit_is_413(rpc: Rpc) -> None:
    # No Content-Length: the limit must hold while the body is read, not only up front.
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":'
        for _ in range(BODY_LIMIT // 1024 + 1):
            yield b" " * 1024

    response = await rpc.http.post(
        rpc.endpoint,
        content=chunks(),
        headers={**HEADERS, "Content-Type": "application/json"},
    )
    assert response.status_code == 413
    await refused(rpc, response, -32600)


async def test_a_body_at_the_limit_is_accepted(rpc: Rpc) -> None:
    body = json.dumps(envelope("GetTask", {"id": "missing"})).encode()
    padded = body[:-1] + b" " * (BODY_LIMIT - len(body)) + b"}"
    assert len(padded) == BODY_LIMIT
    response = await rpc.post(
        None, raw=padded, headers={**HEADERS, "Content-Type": "application/json"}
    )
    assert response.status_code == 200
    await refused(rpc, response, -32001, "missing")


@pytest.mark.parametrize(
    "content_type", [None, "text/plain", "application/x-www-form-urlencoded", "application/jsonx"]
)
async def test_a_wrong_content_type_is_refused(rpc: Rpc, content_type: str | None) -> None:
    before = await task_count(rpc)
    headers = dict(HEADERS)
    if content_type is not None:
        headers["Content-Type"] = content_type
    body = json.dumps(envelope("SendMessage", {"message": user_message()}, "ct")).encode()
    response = await rpc.post(None, raw=body, headers=headers)
    assert response.status_code == 200
    answer = await refused(rpc, response, -32005, "application/json")
    assert answer["id"] == "ct"
    assert await task_count(rpc) == before


@pytest.mark.parametrize(
    "content_type", ["application/json; charset=utf-8", "application/a2a+json", "Application/JSON"]
)
async def test_json_content_types_are_accepted(rpc: Rpc, content_type: str) -> None:
    body = json.dumps(envelope("SendMessage", {"message": user_message("hi")})).encode()
    response = await rpc.post(None, raw=body, headers={**HEADERS, "Content-Type": content_type})
    assert response.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


# -- A2A-Version ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [None, "", "0.3", "2.0", "1", "1.1", "one"])
async def test_a_missing_or_unsupported_version_is_refused(rpc: Rpc, version: str | None) -> None:
    before = await task_count(rpc)
    headers = {"Content-Type": "application/json"}
    if version is not None:
        headers["A2A-Version"] = version
    body = envelope("SendMessage", {"message": user_message()}, 5)
    response = await rpc.post(body, headers=headers)
    assert response.status_code == 200
    answer = await refused(rpc, response, -32009, "A2A-Version")
    assert answer["id"] == 5
    assert await task_count(rpc) == before


@pytest.mark.parametrize("version", ["1.0", "1.0.0", "1.0.7"])
async def test_version_1_0_with_or_without_a_patch_is_accepted(rpc: Rpc, version: str) -> None:
    headers = {"Content-Type": "application/json", "A2A-Version": version}
    response = await rpc.post(envelope("SendMessage", {"message": user_message()}), headers=headers)
    assert "result" in response.json(), response.text


async def test_the_version_may_come_as_a_query_parameter(rpc: Rpc) -> None:
    response = await rpc.http.post(
        rpc.endpoint + "?A2A-Version=1.0",
        json=envelope("SendMessage", {"message": user_message()}),
    )
    assert "result" in response.json(), response.text


async def test_a_lenient_server_takes_a_missing_version_as_1_0() -> None:
    async with serving(echo_agent(), lenient_version=True) as rpc:
        body = envelope("SendMessage", {"message": user_message("hi")})
        response = await rpc.post(body, headers={"Content-Type": "application/json"})
        assert response.json()["result"]["task"]["artifacts"][0]["parts"] == [{"text": "hi"}]
        # Leniency covers the missing header only: an explicit 0.3 is still not spoken here.
        response = await rpc.post(body, headers={"A2A-Version": "0.3"})
        await refused(rpc, response, -32009, "0.3")


# -- envelopes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "code", "words"),
    [
        (b"{not json", -32700, ["Invalid JSON"]),
        (b"", -32700, ["Invalid JSON"]),
        (b'{"jsonrpc":"2.0","id":1,"method":"GetTask"', -32700, ["Invalid JSON"]),
        (b"[]", -32600, ["batch"]),
        (b'[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}]', -32600, ["batch"]),
        (b'"GetTask"', -32600, ["object"]),
        (b"42", -32600, ["object"]),
        (b'{"jsonrpc":"2.0","id":1}', -32600, ['"method" is missing']),
        (b'{"jsonrpc":"2.0","id":1,"method":7}', -32600, ['"method" must be a string']),
        (b'{"id":1,"method":"GetTask"}', -32600, ['"jsonrpc"']),
        (b'{"jsonrpc":"1.0","id":1,"method":"GetTask"}', -32600, ['"2.0"']),
        (b'{"jsonrpc":"2.0","method":"GetTask","params":{"id":"t"}}', -32600, ["id"]),
        (b'{"jsonrpc":"2.0","id":null,"method":"GetTask"}', -32600, ["id"]),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"GetTask"}', -32600, ["id"]),
        (b'{"jsonrpc":"2.0","id":true,"method":"GetTask"}', -32600, ["id"]),
        (b'{"jsonrpc":"2.0","id":{},"method":"GetTask"}', -32600, ["id"]),
    ],
)
async def test_malformed_requests_are_refused(
    rpc: Rpc, raw: bytes, code: int, words: list[str]
) -> None:
    response = await rpc.post(
        None, raw=raw, headers={**HEADERS, "Content-Type": "application/json"}
    )
    assert response.status_code == 200
    answer = await refused(rpc, response, code, *words)
    # The id is echoed whenever it can be read (JSON-RPC 2.0 §5), else it is null.
    assert answer["id"] == _readable_id(raw)


def _readable_id(raw: bytes) -> Any:
    try:
        document = json.loads(raw)
    except ValueError:
        return None
    request_id = document.get("id") if isinstance(document, dict) else None
    return request_id if type(request_id) in (int, str) else None


# 0.3's method names (message/send, ...) are served as 0.3: tests/compat.
@pytest.mark.parametrize("method", ["message/sendx", "tasks/list", "sendMessage", "Nope", ""])
async def test_an_unknown_method_is_refused_with_its_name(rpc: Rpc, method: str) -> None:
    response = await rpc.post(envelope(method, {}, "u-1"))
    answer = await refused(rpc, response, -32601, f"{method!r}")
    assert answer["id"] == "u-1"


@pytest.mark.parametrize(
    ("method", "params", "where"),
    [
        ("GetTask", {"id": 5}, "params.id"),
        ("GetTask", {}, "id"),
        ("GetTask", [], "params"),
        ("GetTask", {"id": "t", "historyLength": "many"}, "historyLength"),
        ("ListTasks", {"pageSize": "ten"}, "pageSize"),
        ("ListTasks", {"status": "DONE"}, "status"),
        ("CancelTask", {"id": ["t"]}, "params.id"),
        ("SendMessage", {}, "message"),
        ("SendMessage", {"message": "hello"}, "params.message"),
        ("SendMessage", {"message": user_message(role="ROLE_BOSS")}, "role"),
        ("SendMessage", {"message": user_message(parts=[{"text": 1}])}, "text"),
        ("SendMessage", {"message": user_message(), "configuration": []}, "configuration"),
    ],
)
async def test_wrong_param_types_are_invalid_params(
    rpc: Rpc, method: str, params: Any, where: str
) -> None:
    before = await task_count(rpc)
    answer = await refused(rpc, await rpc.post(envelope(method, params, 9)), -32602, where)
    assert answer["id"] == 9
    assert await task_count(rpc) == before


@pytest.mark.parametrize(
    ("message", "words"),
    [
        (user_message(parts=[]), ["part"]),
        ({"role": "ROLE_USER", "parts": [{"text": "x"}]}, ["messageId"]),
        (user_message(messageId=""), ["messageId"]),
        (user_message(parts=[{"text": "a", "url": "http://x"}]), ["exactly one"]),
        (user_message(parts=[{"mediaType": "text/plain"}]), ["exactly one"]),
        (user_message(role="ROLE_AGENT"), ["ROLE_USER"]),
        (user_message(role="ROLE_UNSPECIFIED"), ["role"]),
    ],
)
async def test_invalid_messages_are_refused_and_create_nothing(
    rpc: Rpc, message: dict[str, Any], words: list[str]
) -> None:
    before = await task_count(rpc)
    response = await rpc.post(envelope("SendMessage", {"message": message}))
    await refused(rpc, response, -32602, *words)
    assert await task_count(rpc) == before


async def test_a_negative_history_length_is_invalid(rpc: Rpc) -> None:
    task = await rpc.send("hi")
    error = await rpc.error("GetTask", {"id": task["id"], "historyLength": -1})
    assert error["code"] == -32602 and "historyLength" in error["message"]
    params = {"message": user_message(), "configuration": {"historyLength": -2}}
    before = await task_count(rpc)
    error = await rpc.error("SendMessage", params)
    assert error["code"] == -32602 and "historyLength" in error["message"]
    assert await task_count(rpc) == before


# -- ids ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("request_id", ["r-1", "", 'ü ✓ "quoted" \\ /', "12", 0, 7, -3, 2**53 + 1])
async def test_ids_are_echoed_exactly(rpc: Rpc, request_id: Any) -> None:
    answer = await rpc.call("SendMessage", {"message": user_message()}, request_id=request_id)
    assert "result" in answer
    assert answer["id"] == request_id and type(answer["id"]) is type(request_id)
    error = await rpc.call("GetTask", {"id": "missing"}, request_id=request_id)
    assert error["id"] == request_id and type(error["id"]) is type(request_id)
    assert error["error"]["code"] == -32001


async def test_ids_are_echoed_on_streams(rpc: Rpc) -> None:
    for request_id in ("s-1", 11):
        params = {"message": user_message("hi")}
        async with rpc.stream("SendStreamingMessage", params, request_id=request_id) as stream:
            ids = []
            for _ in range(10):
                item = await stream.next_envelope()
                if item is None:
                    break
                ids.append(item["id"])
        assert ids and all(i == request_id and type(i) is type(request_id) for i in ids)


# -- the agent card ----------------------------------------------------------------------------


async def test_the_card_is_served_with_caching_headers(rpc: Rpc) -> None:
    response = await rpc.http.get(rpc.url + "/.well-known/agent-card.json")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == f"public, max-age={CARD_MAX_AGE}"
    etag = response.headers["etag"]
    assert etag.startswith('"') and etag.endswith('"') and len(etag) > 2
    card = response.json()
    assert card["name"] == "Echo"
    assert card["supportedInterfaces"][0] == {
        "url": rpc.endpoint,
        "protocolBinding": "JSONRPC",
        "protocolVersion": "1.0",
    }
    assert card["skills"][0]["id"] == "echo"
    # peerwire's own behaviours (idempotent sends) are advertised as extensions.
    extensions = card["capabilities"].pop("extensions")
    assert [e["uri"] for e in extensions] == [IDEMPOTENT_SEND_EXTENSION]
    assert card["capabilities"] == {
        "streaming": True,
        "pushNotifications": False,
        "extendedAgentCard": False,
    }
    again = await rpc.http.get(rpc.url + "/.well-known/agent-card.json")
    assert again.headers["etag"] == etag and again.content == response.content


@pytest.mark.parametrize("form", ["{etag}", "W/{etag}", '"other", {etag}', "*"])
async def test_a_matching_if_none_match_is_304(rpc: Rpc, form: str) -> None:
    path = rpc.url + "/.well-known/agent-card.json"
    etag = (await rpc.http.get(path)).headers["etag"]
    response = await rpc.http.get(path, headers={"If-None-Match": form.format(etag=etag)})
    assert response.status_code == 304
    assert response.content == b""
    assert response.headers["etag"] == etag
    assert response.headers["cache-control"] == f"public, max-age={CARD_MAX_AGE}"


async def test_a_stale_if_none_match_gets_the_card(rpc: Rpc) -> None:
    path = rpc.url + "/.well-known/agent-card.json"
    response = await rpc.http.get(path, headers={"If-None-Match": '"stale"'})
    assert response.status_code == 200 and response.json()["name"] == "Echo"


async def test_the_card_says_when_it_was_built(rpc: Rpc) -> None:
    path = rpc.url + "/.well-known/agent-card.json"
    before = int(time.time())  # the module's server was started before this test
    first = await rpc.http.get(path)
    built = parsedate_to_datetime(first.headers["last-modified"])
    assert built.tzinfo is not None and built.timestamp() <= before
    assert first.headers["last-modified"].endswith(" GMT")
    again = await rpc.http.get(path)
    assert again.headers["last-modified"] == first.headers["last-modified"]  # stable


@pytest.mark.parametrize(
    ("shift", "status"), [(0, 304), (3600, 304), (-1, 200), (-86400 * 365, 200)]
)
async def test_if_modified_since_is_304_unless_the_card_is_newer(
    rpc: Rpc, shift: int, status: int
) -> None:
    path = rpc.url + "/.well-known/agent-card.json"
    built = parsedate_to_datetime((await rpc.http.get(path)).headers["last-modified"])
    since = formatdate(built.timestamp() + shift, usegmt=True)
    response = await rpc.http.get(path, headers={"If-Modified-Since": since})
    assert response.status_code == status
    if status == 304:
        assert response.content == b""
        assert response.headers["last-modified"] == formatdate(built.timestamp(), usegmt=True)
    else:
        assert response.json()["name"] == "Echo"


async def test_if_modified_since_in_the_obsolete_date_forms_is_understood(rpc: Rpc) -> None:
    path = rpc.url + "/.well-known/agent-card.json"
    later = datetime.now(UTC) + timedelta(hours=1)
    for form in (
        later.strftime("%A, %d-%b-%y %H:%M:%S GMT"),
        later.strftime("%a %b %d %H:%M:%S %Y"),
    ):
        response = await rpc.http.get(path, headers={"If-Modified-Since": form})
        assert response.status_code == 304, form


@pytest.mark.parametrize(
    "since", ["garbage", "", "Sun, 06 Nov 99999 08:49:37 GMT", "Sun, 06 Nov 2099 08:49:37 GMT, x"]
)
async def test_an_if_modified_since_that_is_no_http_date_is_ignored(rpc: Rpc, since: str) -> None:
    path = rpc.url + "/.well-known/agent-card.json"
    response = await rpc.http.get(path, headers={"If-Modified-Since": since})
    assert response.status_code == 200 and response.json()["name"] == "Echo"


async def test_if_none_match_decides_over_if_modified_since(rpc: Rpc) -> None:
    path = rpc.url + "/.well-known/agent-card.json"
    first = await rpc.http.get(path)
    future = formatdate(time.time() + 3600, usegmt=True)
    stale = {"If-None-Match": '"stale"', "If-Modified-Since": future}
    assert (await rpc.http.get(path, headers=stale)).status_code == 200
    past = formatdate(0, usegmt=True)
    fresh = {"If-None-Match": first.headers["etag"], "If-Modified-Since": past}
    assert (await rpc.http.get(path, headers=fresh)).status_code == 304


async def test_head_of_the_card_has_headers_and_no_body(rpc: Rpc) -> None:
    path = rpc.url + "/.well-known/agent-card.json"
    full = await rpc.http.get(path)
    head = await rpc.http.head(path)
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["content-length"] == str(len(full.content))
    assert head.headers["etag"] == full.headers["etag"]


@pytest.mark.parametrize("verb", ["POST", "PUT", "DELETE"])
async def test_the_card_takes_only_get_and_head(rpc: Rpc, verb: str) -> None:
    response = await rpc.http.request(verb, rpc.url + "/.well-known/agent-card.json")
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, HEAD"


async def test_the_card_advertises_the_real_address_of_each_server() -> None:
    async with live_server(echo_agent()) as first, live_server(echo_agent()) as second:
        assert first != second
        async with httpx.AsyncClient(trust_env=False) as http:
            for url in (first, second):
                card = (await http.get(url + "/.well-known/agent-card.json")).json()
                assert card["supportedInterfaces"][0]["url"] == url + "/"
