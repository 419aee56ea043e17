"""Where a caller reached the app: the scheme, host and port its card's URLs name.

Without ``public_url`` the card says what each request says: its ``Host`` (or, without one,
the address the server accepted it on) and its scheme. A reverse proxy in front rewrites
both, and says what the client used in ``Forwarded`` (RFC 7239) or ``X-Forwarded-Host``,
``-Proto`` and ``-Port``; those are believed only from the addresses of ``trusted_proxies``,
or anyone could make the card name their host. A ``Host`` that is not a valid host (and
port) is not used at all: the card then names the address the server accepted the request
on (``server`` in the ASGI scope) or, without one, the app's default URL.

Trusting a chain of proxies: each appends what it saw; walking from the right, the last
element a trusted proxy appended for a client that is not itself trusted describes the
request the client made (``Forwarded``'s ``for=``, or ``X-Forwarded-For``, tells who each
proxy's client was).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

from ._http import Scope

__all__ = ["FORWARDED_HEADERS", "RequestOrigin", "TrustedProxies", "parse_host"]

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# What a card built from forwarded headers varies by (its ``Vary``).
FORWARDED_HEADERS = (b"forwarded", b"x-forwarded-host", b"x-forwarded-proto", b"x-forwarded-port")

# A DNS name or IPv4 address (labels of letters, digits, '-' and '_', as container names
# have), or a bracketed IPv6 literal; then an optional port.
_HOST = re.compile(
    r"(?P<name>(?:[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\.)*"
    r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\.?"
    r"|\[[0-9A-Fa-f:.]{2,45}\])"
    r"(?::(?P<port>[0-9]{1,5}))?"
)
_MAX_HOST = 255
_DEFAULT_PORTS = {"http": 80, "https": 443}
# One RFC 7239 pair: a token name, a token or quoted-string value (ports and brackets are
# accepted unquoted too, as some proxies send them).
_PAIR = re.compile(r"\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)\s*=\s*(\"(?:[^\"\\]|\\.)*\"|[^;,\"\s]*)\s*")


def parse_host(value: str, scheme: str) -> str | None:
    """``host[:port]`` as a URL names it (lowercase, the scheme's default port left out), or
    ``None`` when ``value`` is not a valid host with an optional port."""
    if not value or len(value) > _MAX_HOST:
        return None
    found = _HOST.fullmatch(value)
    if found is None:
        return None
    name, port = found["name"].lower(), found["port"]
    if name.startswith("["):
        try:
            ipaddress.IPv6Address(name[1:-1])
        except ValueError:
            return None
    if port is None:
        return name
    number = int(port)
    if not 0 < number < 65536:
        return None
    return name if _DEFAULT_PORTS.get(scheme) == number else f"{name}:{number}"


class TrustedProxies:
    """The addresses (or CIDR networks) whose forwarded headers are believed."""

    def __init__(self, entries: Iterable[str] = ()) -> None:
        if isinstance(entries, str):  # one address given as is would iterate its characters
            entries = [entries]
        networks: list[IPNetwork] = []
        for entry in entries:
            try:
                networks.append(ipaddress.ip_network(str(entry).strip(), strict=False))
            except ValueError:
                raise ValueError(
                    f"trusted_proxies: {entry!r} is not an IP address or CIDR network "
                    "(e.g. 10.0.0.5, 10.0.0.0/8, ::1)"
                ) from None
        self.networks = tuple(networks)

    def __bool__(self) -> bool:
        return bool(self.networks)

    def __contains__(self, address: object) -> bool:
        if not self.networks or not isinstance(address, str):
            return False
        try:
            ip = ipaddress.ip_address(address.strip().removeprefix("[").removesuffix("]"))
        except ValueError:  # "unknown", an obfuscated name, a unix socket's path
            return False
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return any(ip in network for network in self.networks)


class RequestOrigin:
    """``scheme://host[:port]`` for a request, as its client reached the app."""

    def __init__(self, trusted_proxies: TrustedProxies) -> None:
        self.trusted = trusted_proxies
        self.vary = FORWARDED_HEADERS if trusted_proxies else ()

    def of(self, scope: Scope) -> str | None:
        """The request's origin, or ``None`` when it names no valid host."""
        scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
        host = self._host(scope, scheme)
        client = scope.get("client")
        if self.trusted and client and client[0] in self.trusted:
            forwarded = _forwarded(scope, self.trusted) or _x_forwarded(scope, self.trusted)
            if forwarded is not None:
                believed = _apply(forwarded, scheme, host)
                if believed is not None:  # else: believed in no part
                    scheme, host = believed
        if host is None:
            return None
        return f"{scheme}://{host}"

    @staticmethod
    def _host(scope: Scope, scheme: str) -> str | None:
        value = _header(scope, b"host")
        host = None if value is None else parse_host(value, scheme)
        if host is not None:
            return host
        server = scope.get("server")
        if server and server[0]:  # no Host (HTTP/1.0), or not a host: where the server is
            host = str(server[0])
            literal = f"[{host}]" if ":" in host else host
            return parse_host(literal if server[1] is None else f"{literal}:{server[1]}", scheme)
        return None


def _apply(
    forwarded: tuple[str, str | None, str | None], scheme: str, host: str | None
) -> tuple[str, str] | None:
    """(scheme, host) once what a proxy forwarded replaces what the request says; ``None``
    when the result is not a valid host."""
    proto, forwarded_host, port = forwarded
    if proto in _DEFAULT_PORTS:
        scheme = proto
    elif proto:
        return None
    if forwarded_host is not None:
        host = forwarded_host
    if host is None:
        return None
    if port is not None:
        host = f"{_without_port(host)}:{port}"
    checked = parse_host(host, scheme)
    return None if checked is None else (scheme, checked)


def _forwarded(scope: Scope, trusted: TrustedProxies) -> tuple[str, str | None, None] | None:
    """(proto, host, None) from ``Forwarded``'s element describing the client's request."""
    value = _header(scope, b"forwarded", joined=True)
    if value is None:
        return None
    elements = _parse_forwarded(value)
    if not elements:
        return None  # malformed: believed in no part
    i = len(elements) - 1
    while i > 0 and elements[i].get("for") in trusted:
        i -= 1
    element = elements[i]
    return element.get("proto", "").lower(), element.get("host"), None


def _parse_forwarded(value: str) -> list[dict[str, str]]:
    """RFC 7239 elements (pairs by lowercase name, values unquoted; ``for=``'s address
    without its port), or ``[]`` when the header does not parse."""
    elements: list[dict[str, str]] = []
    position, end = 0, len(value)
    current: dict[str, str] = {}
    while position < end:
        pair = _PAIR.match(value, position)
        if pair is None:
            return []
        name, raw = pair[1].lower(), pair[2]
        if raw.startswith('"'):
            raw = re.sub(r"\\(.)", r"\1", raw[1:-1])
        current[name] = _node_address(raw) if name == "for" else raw
        position = pair.end()
        if position < end:
            separator = value[position]
            position += 1
            if separator == ",":
                elements.append(current)
                current = {}
            elif separator != ";":
                return []
    elements.append(current)
    return elements


def _node_address(node: str) -> str:
    """A ``for=`` node's address without its port: ``[2001:db8::1]:4711`` is ``2001:db8::1``."""
    if node.startswith("["):
        return node[1 : node.find("]")] if "]" in node else node
    return node.split(":", 1)[0] if node.count(":") == 1 else node


def _x_forwarded(
    scope: Scope, trusted: TrustedProxies
) -> tuple[str, str | None, str | None] | None:
    """(proto, host, port) from the ``X-Forwarded-*`` headers: the entries as many hops from
    the right as ``X-Forwarded-For`` shows trusted proxies."""
    host = _header(scope, b"x-forwarded-host", joined=True)
    proto = _header(scope, b"x-forwarded-proto", joined=True)
    port = _header(scope, b"x-forwarded-port", joined=True)
    if host is None and proto is None and port is None:
        return None
    hops = 0
    for address in reversed(_list(_header(scope, b"x-forwarded-for", joined=True))):
        if address not in trusted:
            break
        hops += 1

    def entry(value: str | None) -> str | None:
        items = _list(value)
        return items[max(0, len(items) - 1 - hops)] if items else None

    found_port = entry(port)
    if found_port is not None and not (found_port.isdigit() and 0 < int(found_port) < 65536):
        found_port = None
    return (entry(proto) or "").lower(), entry(host), found_port


def _list(value: str | None) -> list[str]:
    return [] if value is None else [item.strip() for item in value.split(",") if item.strip()]


def _without_port(host: str) -> str:
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.split(":", 1)[0]


def _header(scope: Scope, name: bytes, *, joined: bool = False) -> str | None:
    """A header's value (latin-1); several lines of a list header joined with commas."""
    values = [value for key, value in scope["headers"] if key == name]
    if not values:
        return None
    if len(values) > 1 and not joined:
        return None  # two Host headers: which one the client meant is not ours to guess
    return b", ".join(values).decode("latin-1")
