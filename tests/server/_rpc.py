"""Raw JSON-RPC over HTTP for the server tests, on purpose without peerwire's client.

``serving(agent, **options)`` runs the agent with ``live_server`` and yields an ``Rpc`` bound
to it. ``Rpc`` posts envelopes and reads responses as plain JSON, so what a test asserts is
exactly what went over the wire.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx

from peerwire import Agent
from peerwire.bindings.sse import SSEParser
from peerwire.testing import live_server

HEADERS = {"A2A-Version": "1.0"}
TIMEOUT_S = 30.0
_message_ids = itertools.count(1)


def user_message(text: str = "hello", **fields: Any) -> dict[str, Any]:
    """A ROLE_USER message with one text part; ``fields`` add or replace members."""
    message: dict[str, Any] = {
        "messageId": f"m-{next(_message_ids)}",
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }
    message.update(fields)
    return message


def envelope(method: str, params: Any = None, request_id: Any = 1) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        body["params"] = params
    return body


def state_of(task_or_event: dict[str, Any]) -> str:
    return str(task_or_event["status"]["state"])


def status_text(task_or_event: dict[str, Any]) -> str:
    message = task_or_event["status"].get("message", {"parts": []})
    return "".join(p.get("text", "") for p in message["parts"])


class RpcError(AssertionError):
    """A JSON-RPC error answer where a result was expected."""


class Stream:
    """An open SSE response: JSON-RPC envelopes one at a time, and the raw bytes seen."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.raw = b""
        self._parser = SSEParser()
        self._pending: list[bytes] = []
        self._chunks = response.aiter_raw()
        self.closed = False

    async def next_envelope(self, timeout: float = TIMEOUT_S) -> dict[str, Any] | None:
        """The next event's envelope, or ``None`` once the server has closed the stream."""
        with anyio.fail_after(timeout):
            while not self._pending:
                try:
                    chunk = await self._chunks.__anext__()
                except StopAsyncIteration:
                    self.closed = True
                    return None
                self.raw += chunk
                self._pending.extend(self._parser.feed(chunk))
        return json.loads(self._pending.pop(0))  # type: ignore[no-any-return]

    async def read_until(self, wanted: bytes, timeout: float = TIMEOUT_S) -> None:
        """Read until the raw bytes contain ``wanted`` (events read meanwhile stay queued)."""
        with anyio.fail_after(timeout):
            while wanted not in self.raw:
                chunk = await self._chunks.__anext__()
                self.raw += chunk
                self._pending.extend(self._parser.feed(chunk))

    async def next(self, timeout: float = TIMEOUT_S) -> dict[str, Any]:
        """The next event's ``result`` (a StreamResponse); fails on an error or the end."""
        item = await self.next_envelope(timeout)
        assert item is not None, "the stream ended"
        assert "result" in item, item
        return item["result"]  # type: ignore[no-any-return]

    async def rest(self, timeout: float = TIMEOUT_S) -> list[dict[str, Any]]:
        """Every remaining event's ``result`` until the server closes the stream."""
        events: list[dict[str, Any]] = []
        with anyio.fail_after(timeout):
            for _ in range(10_000):
                item = await self.next_envelope()
                if item is None:
                    return events
                assert "result" in item, item
                events.append(item["result"])
        raise AssertionError("the stream did not end")


class Rpc:
    """JSON-RPC calls to one server."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url
        self.endpoint = url + "/"

    async def post(
        self, body: Any, *, headers: dict[str, str] | None = None, raw: bytes | None = None
    ) -> httpx.Response:
        sent = dict(HEADERS if headers is None else headers)
        if raw is None:
            raw = json.dumps(body).encode()
            sent.setdefault("Content-Type", "application/json")
        return await self.http.post(self.endpoint, content=raw, headers=sent)

    async def call(self, method: str, params: Any = None, *, request_id: Any = 1) -> Any:
        """The whole response envelope of one call."""
        response = await self.post(envelope(method, params, request_id))
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == "application/json"
        return response.json()

    async def result(self, method: str, params: Any = None) -> Any:
        answer = await self.call(method, params)
        if "error" in answer:
            raise RpcError(f"{method} failed: {answer['error']}")
        return answer["result"]

    async def error(self, method: str, params: Any = None) -> dict[str, Any]:
        answer = await self.call(method, params)
        assert "error" in answer, f"{method} succeeded: {answer}"
        return answer["error"]  # type: ignore[no-any-return]

    async def send(self, message: dict[str, Any] | str, **configuration: Any) -> dict[str, Any]:
        """SendMessage; the Task it answers with."""
        params: dict[str, Any] = {
            "message": user_message(message) if isinstance(message, str) else message
        }
        if configuration:
            params["configuration"] = configuration
        result = await self.result("SendMessage", params)
        assert set(result) == {"task"}, result
        return result["task"]  # type: ignore[no-any-return]

    async def get(self, task_id: str, **fields: Any) -> dict[str, Any]:
        return await self.result("GetTask", {"id": task_id, **fields})  # type: ignore[no-any-return]

    @contextlib.asynccontextmanager
    async def stream(
        self, method: str, params: Any, *, request_id: Any = 1
    ) -> AsyncIterator[Stream]:
        headers = {**HEADERS, "Accept": "text/event-stream"}
        async with self.http.stream(
            "POST", self.endpoint, json=envelope(method, params, request_id), headers=headers
        ) as response:
            assert response.status_code == 200
            content_type = response.headers["content-type"]
            if content_type != "text/event-stream":
                await response.aread()
                raise RpcError(f"{method} answered {content_type}: {response.text}")
            yield Stream(response)

    def send_stream(
        self, message: dict[str, Any] | str
    ) -> contextlib.AbstractAsyncContextManager[Stream]:
        params = {"message": user_message(message) if isinstance(message, str) else message}
        return self.stream("SendStreamingMessage", params)

    def subscribe(self, task_id: str) -> contextlib.AbstractAsyncContextManager[Stream]:
        return self.stream("SubscribeToTask", {"id": task_id})


@contextlib.asynccontextmanager
async def serving(agent: Agent, **options: Any) -> AsyncIterator[Rpc]:
    """``agent`` on a live server, and an ``Rpc`` to call it."""
    async with (
        live_server(agent, **options) as url,
        httpx.AsyncClient(trust_env=False, timeout=TIMEOUT_S) as http,
    ):
        yield Rpc(http, url)
