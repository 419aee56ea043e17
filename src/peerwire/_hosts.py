"""Whether a host is this machine: the one test behind "plain http (or an insecure gRPC
channel) is fine here", shared by the client, the security fetches and the inspector."""

from __future__ import annotations

import ipaddress

__all__ = ["is_loopback_host"]


def is_loopback_host(host: str) -> bool:
    """``localhost``, or a loopback IP address (IPv6 in brackets or not); a name other than
    ``localhost`` is not resolved, so it is never taken for loopback."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
