"""Whether httpx would send a request through a proxy named by the environment.

httpx reads ``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY`` and ``NO_PROXY`` (through
``urllib.request.getproxies``, which also sees the system settings on macOS and Windows) when
a client is made. The native pool does not speak to proxies, so URLs httpx would proxy are sent
through httpx instead; this module answers that question with httpx's own rules for
``NO_PROXY`` (curl's: ``*`` for everything, ``example.com`` for it and its subdomains,
``.example.com`` for its subdomains only, IP addresses and ``localhost`` exactly, and
``scheme://host[:port]`` entries).
"""

from __future__ import annotations

import ipaddress
import urllib.request
from urllib.parse import urlsplit

__all__ = ["EnvironmentProxies"]


class EnvironmentProxies:
    """The proxy settings of the environment as they are now (read once, as httpx does)."""

    def __init__(self, settings: dict[str, str] | None = None) -> None:
        found = urllib.request.getproxies() if settings is None else settings
        self._schemes = {s for s in ("http", "https", "all") if found.get(s)}
        entries = [entry.strip() for entry in found.get("no", "").split(",")]
        if "*" in entries:
            self._schemes = set()
        self._exceptions = [entry.lower() for entry in entries if entry]

    @property
    def any(self) -> bool:
        """Whether some URL would be proxied at all."""
        return bool(self._schemes)

    def applies_to(self, url: str) -> bool:
        """Whether httpx would send a request for ``url`` through a proxy."""
        if not self._schemes:
            return False
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in self._schemes and "all" not in self._schemes:
            return False
        host = (parts.hostname or "").lower()
        try:
            port = parts.port
        except ValueError:
            return True  # let httpx say what is wrong with it
        return not any(_excepts(entry, scheme, host, port) for entry in self._exceptions)


def _excepts(entry: str, scheme: str, host: str, port: int | None) -> bool:
    """Whether one ``NO_PROXY`` entry exempts the URL (httpx's reading of it)."""
    if "://" in entry:
        exempt = urlsplit(entry)
        try:
            exempt_port = exempt.port
        except ValueError:
            return False
        return (
            exempt.scheme in (scheme, "all")
            and (exempt.hostname or "") == host
            and (exempt_port is None or exempt_port == port)
        )
    if _is_ip(entry.split("/", 1)[0]) or entry == "localhost":
        return host == entry.split("/", 1)[0].strip("[]")
    if entry.startswith("."):
        return host.endswith(entry)
    return host == entry or host.endswith("." + entry)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return False
    return True
