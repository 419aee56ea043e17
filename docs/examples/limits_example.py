"""Setting limits: what the server accepts, what the agent takes on, what a client accepts.

``python limits_example.py serve`` serves the agent with all of them; ``python
limits_example.py`` calls it with a client of its own limits.
"""

import sys
from typing import Any

import anyio

from peerwire import Agent, Client, serve
from peerwire.client import ClientLimits
from peerwire.httpd import HTTPLimits

agent = Agent("Echo", description="Repeats what it is told")


@agent.skill()
async def echo(text: str) -> str:
    return text


# peerwire's HTTP server: request heads, bodies and slow clients (serve() and peerwire serve).
HTTP_LIMITS = HTTPLimits(max_head_bytes=16 * 1024, head_timeout=5.0, idle_timeout=30.0)

# The A2A app, under any ASGI server: create_app() / serve() keyword arguments.
APP_LIMITS: dict[str, Any] = {
    "max_body_bytes": 1024 * 1024,  # a JSON-RPC or HTTP+JSON body; the gRPC message size
    "max_working": 200,  # handlers at once; more are refused as busy (HTTP 503)
    "shutdown_grace": 30.0,  # seconds working handlers get on shutdown
}

# A client: what it reads from a server, how long it waits.
CLIENT_LIMITS = ClientLimits(max_body_size=4 * 1024 * 1024, connect_timeout=3.0)


async def main(url: str = "http://127.0.0.1:8000") -> None:
    async with Client.connect(url, limits=CLIENT_LIMITS, timeout=10.0) as client:
        task = await client.send("within every limit")
        print(task.artifacts[0].text)  # within every limit


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        serve(agent, port=8000, http_limits=HTTP_LIMITS, **APP_LIMITS)
    else:
        anyio.run(main)
