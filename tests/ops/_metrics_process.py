"""One process of the multiprocess-mode test (test_metrics_multiprocess.py).

``serve N``: serve an agent, send it N messages, exit. ``scrape``: print the page as a
process that serves nothing renders it: every process's values, added up. Run with
``PROMETHEUS_MULTIPROC_DIR`` set, as each process of such a deployment is.
"""

from __future__ import annotations

import asyncio
import sys

from peerwire import Agent, Client
from peerwire.ops import Metrics
from peerwire.testing import live_server
from peerwire.types import Binding


async def serve(count: int) -> None:
    agent = Agent("Multiprocess Agent")

    @agent.skill()
    async def echo(text: str) -> str:
        return text

    async with (
        live_server(agent) as url,
        Client.connect(url, bindings=[Binding.JSONRPC]) as client,
    ):
        for n in range(count):
            await client.send(f"message {n}")


def main() -> None:
    if sys.argv[1] == "serve":
        asyncio.run(serve(int(sys.argv[2])))
    else:
        sys.stdout.write(Metrics().render()[0].decode())


if __name__ == "__main__":
    main()
