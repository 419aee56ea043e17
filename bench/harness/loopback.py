"""The harness talks to loopback addresses only, never to another machine.

A benchmark fires tens of thousands of requests a second: pointed at a real host by mistake
(a typo, an agent card advertising a public URL) it would be an attack. Every URL the
harness is given or discovers passes through ``loopback_only``.
"""

from __future__ import annotations

import ipaddress
import urllib.parse


class NotLoopback(ValueError):
    """A URL whose host is not 127.0.0.0/8, ::1 or localhost."""


def is_loopback(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def loopback_only(url: str) -> str:
    """``url`` itself, or NotLoopback."""
    if not is_loopback(url):
        raise NotLoopback(f"refusing non-loopback URL {url!r} (the harness stays on loopback)")
    return url
