"""A request whose body the client never finishes is not dispatched, on either HTTP server.

The client declares one byte more than it sends, then closes its side: the server may
answer it (peerwire's says 400), but no task may be created from the truncated body.
"""

from __future__ import annotations

import asyncio
import json
from urllib.parse import urlsplit

import pytest

from peerwire import Agent, Client
from peerwire.testing import live_server

agent = Agent("Echo")


@agent.skill("echo")
async def echo(text: str) -> str:
    return text


def _send_message(path: str, version_in: str) -> bytes:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendMessage",
            "params": {
                "message": {"messageId": "cut", "role": "ROLE_USER", "parts": [{"text": "x"}]}
            },
        }
    ).encode()
    return (
        b"POST %b HTTP/1.1\r\nhost: %b\r\ncontent-type: application/json\r\n"
        b"a2a-version: 1.0\r\ncontent-length: %d\r\n\r\n%b"
        % (path.encode(), version_in.encode(), len(body) + 1, body)
    )


async def _send_cut(url: str, path: str) -> bytes:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    writer.write(_send_message(path, parts.netloc))
    await writer.drain()
    writer.write_eof()
    try:
        async with asyncio.timeout(10):
            return await reader.read()
    finally:
        writer.close()


@pytest.mark.parametrize("http", ["peerwire", "uvicorn"])
async def test_a_body_cut_short_creates_no_task(http: str) -> None:
    async with live_server(agent, http=http) as url:  # type: ignore[arg-type]
        answer = await _send_cut(url, "/")
        assert b"TASK_STATE" not in answer  # nothing was dispatched, so nothing answered it
        async with Client.connect(url) as client:
            listed = [task async for task in client.list_tasks()]
        assert listed == []
