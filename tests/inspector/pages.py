"""Calling the inspector's backend as its page does: with the launch token the URL it
printed carries (``?token=``), sent as ``X-Peerwire-Token``."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import httpx


def token_of(page: str) -> str:
    return dict(parse_qsl(urlsplit(page).query)).get("token", "")


def api_client(page: str, *, timeout: float = 15.0) -> httpx.AsyncClient:
    parts = urlsplit(page)
    return httpx.AsyncClient(
        base_url=f"{parts.scheme}://{parts.netloc}/",
        headers={"X-Peerwire-Token": token_of(page)},
        timeout=timeout,
    )
