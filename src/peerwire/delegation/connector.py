"""One ``Client`` per remote agent URL, reused by every delegation of a process.

A call that fails on the connection drops that agent's client (``forget``): the next call
connects again and so fetches the card again, which is how an agent whose card changed
mid-flight (a new URL for its interface, another binding) is picked up.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from ..client import Client

__all__ = ["Connect", "Connector"]

Connect = Callable[[str], Awaitable[Client]]
"""Makes the client for an agent URL (add credentials, headers, a card cache here)."""


async def _default_connect(url: str) -> Client:
    return await Client.connect(url, timeout=30.0)


class Connector:
    def __init__(self, connect: Connect | None = None) -> None:
        self._connect = connect or _default_connect
        self._clients: dict[str, Client] = {}
        self._connecting: dict[str, asyncio.Lock] = {}

    async def client(self, url: str) -> Client:
        found = self._clients.get(url)
        if found is not None:
            return found
        lock = self._connecting.setdefault(url, asyncio.Lock())
        async with lock:
            found = self._clients.get(url)
            if found is None:
                found = self._clients[url] = await self._connect(url)
            return found

    async def forget(self, url: str) -> None:
        client = self._clients.pop(url, None)
        if client is not None:
            with contextlib.suppress(Exception):
                await client.aclose()

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            with contextlib.suppress(Exception):
                await client.aclose()
