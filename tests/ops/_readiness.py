"""Polling a health probe until it gives the answer a test waits for."""

from __future__ import annotations

import asyncio

import httpx

POLL_S = 0.1


async def wait_for_status(
    web: httpx.AsyncClient, status: int, *, path: str = "/readyz", within: float = 10.0
) -> dict[str, object]:
    """Poll ``path`` until it answers ``status`` (readiness is cached for about a second) and
    return its JSON body; fail after ``within`` seconds, naming the last answer seen."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    seen: tuple[int, str] | None = None
    while loop.time() < deadline:
        response = await web.get(path)
        seen = (response.status_code, response.text)
        if response.status_code == status:
            assert response.headers["content-type"] == "application/json"
            assert response.headers["cache-control"] == "no-store"
            body: dict[str, object] = response.json()
            return body
        await asyncio.sleep(POLL_S)
    raise AssertionError(f"{path} did not answer {status} within {within} s; last seen: {seen}")
