"""The SSRF guard for webhook URLs: a push config must not turn the agent into a proxy that
reaches the network behind it (A2A spec §13.2).

A webhook URL is accepted when it is ``http`` or ``https``, names a host, carries no
credentials, and *every* address its host resolves to is a public unicast address. Refused:
every range the IANA IPv4 and IPv6 Special-Purpose Address Registries do not mark globally
reachable (loopback, private-use, link-local, shared 100.64/10, documentation, benchmarking,
...), with multicast, broadcast and IPv6 space outside 2000::/3 (``SPECIAL_RANGES``, one
table, so the answer does not depend on the Python version's ``ipaddress`` flags), cloud
metadata endpoints (169.254.169.254, fd00:ec2::254, Azure's 168.63.129.16,
metadata.google.internal and kin) and ``localhost`` by name; an IPv6 address that embeds an
IPv4 one (IPv4-mapped
``::ffff:a.b.c.d``, NAT64 ``64:ff9b::/96``, 6to4, Teredo) is judged by the IPv4 address it
carries. An allow-list of host names and networks (CIDRs, or single addresses) lifts the
refusal for what it names: that is how tests and private deployments reach loopback or an
internal receiver on purpose.

DNS rebinding: a name may resolve to a public address when it is checked and to an internal
one a moment later. So the check runs at registration *and* before every delivery attempt, and
the attempt connects to the very address that was checked (``Target.connect_url``), keeping the
original ``Host`` header and TLS server name (SNI, which the certificate is verified against).
The HTTP client never resolves the name itself, so there is no second lookup to rebind.

Apart from DNS resolution (``Resolver``, replaceable), everything here is pure.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

import httpx

from ..errors import PeerwireError

__all__ = [
    "SPECIAL_RANGES",
    "Resolver",
    "SpecialRange",
    "Target",
    "UnresolvableHost",
    "WebhookGuard",
    "WebhookRefused",
    "address_refusal",
    "special_range",
    "system_resolver",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

Resolver = Callable[[str, int], Awaitable[list[str]]]
"""``resolve(host, port)``: the host's addresses as strings (``UnresolvableHost`` if none)."""

MAX_URL_LENGTH = 2048

# Where clouds serve instance credentials or platform control: the classic SSRF prize, named
# so the refusal says so. 168.63.129.16 is a public address, so only this entry refuses it.
_METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, ...
        "169.254.170.2",  # AWS ECS task metadata
        "fd00:ec2::254",  # AWS over IPv6
        "fd20:ce::254",  # GCP over IPv6
        "168.63.129.16",  # Azure's wire server (platform agent, DNS, health probes)
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud
    )
)
_METADATA_HOSTS = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
    }
)


@dataclass(frozen=True, slots=True)
class SpecialRange:
    """One entry of the IANA IPv4 or IPv6 Special-Purpose Address Registry (RFC 6890), with
    the columns the guard decides on. ``globally_reachable`` ``None`` is the registry's
    "N/A": the range carries another address (6to4, Teredo), which is judged instead."""

    network: IPNetwork
    name: str
    rfc: str
    kind: str
    """What a refusal calls it: loopback, private, link-local, documentation, ..."""
    forwardable: bool
    globally_reachable: bool | None


def _range(
    network: str, name: str, rfc: str, kind: str, forwardable: bool, reachable: bool | None
) -> SpecialRange:
    return SpecialRange(ipaddress.ip_network(network), name, rfc, kind, forwardable, reachable)


# The registries as the guard reads them, most specific entry deciding (192.0.0.9/32 is
# reachable inside the unreachable 192.0.0.0/24). Written out rather than read from
# ``ipaddress``'s ``is_private``/``is_global``, whose tables differ between Python versions
# (3.11 takes 192.0.0.8 for global). Beside the registry proper: multicast (RFC 5771, RFC
# 4291), IPv6 space outside global unicast 2000::/3 (reserved by the IETF, RFC 4291) and the
# deprecated site-local fec0::/10 (RFC 3879).
SPECIAL_RANGES: tuple[SpecialRange, ...] = (
    # IPv4
    _range("0.0.0.0/8", '"This network"', "RFC 791", "non-public", False, False),
    _range("0.0.0.0/32", '"This host on this network"', "RFC 1122", "unspecified", False, False),
    _range("10.0.0.0/8", "Private-Use", "RFC 1918", "private", True, False),
    _range("100.64.0.0/10", "Shared Address Space", "RFC 6598", "non-public", True, False),
    _range("127.0.0.0/8", "Loopback", "RFC 1122", "loopback", False, False),
    _range("169.254.0.0/16", "Link Local", "RFC 3927", "link-local", False, False),
    _range("172.16.0.0/12", "Private-Use", "RFC 1918", "private", True, False),
    _range("192.0.0.0/24", "IETF Protocol Assignments", "RFC 6890", "non-public", False, False),
    _range("192.0.0.0/29", "IPv4 Service Continuity Prefix", "RFC 7335", "non-public", True, False),
    _range("192.0.0.8/32", "IPv4 dummy address", "RFC 7600", "non-public", False, False),
    _range("192.0.0.9/32", "Port Control Protocol Anycast", "RFC 7723", "anycast", True, True),
    _range("192.0.0.10/32", "TURN Anycast", "RFC 8155", "anycast", True, True),
    _range("192.0.0.170/32", "NAT64/DNS64 Discovery", "RFC 8880", "non-public", False, False),
    _range("192.0.0.171/32", "NAT64/DNS64 Discovery", "RFC 8880", "non-public", False, False),
    _range("192.0.2.0/24", "Documentation (TEST-NET-1)", "RFC 5737", "documentation", False, False),
    _range("192.31.196.0/24", "AS112-v4", "RFC 7535", "anycast", True, True),
    _range("192.52.193.0/24", "AMT", "RFC 7450", "anycast", True, True),
    _range(
        "192.88.99.0/24", "Deprecated (6to4 Relay Anycast)", "RFC 7526", "reserved", False, False
    ),
    _range("192.168.0.0/16", "Private-Use", "RFC 1918", "private", True, False),
    _range("192.175.48.0/24", "Direct Delegation AS112 Service", "RFC 7534", "anycast", True, True),
    _range("198.18.0.0/15", "Benchmarking", "RFC 2544", "non-public", True, False),
    _range(
        "198.51.100.0/24", "Documentation (TEST-NET-2)", "RFC 5737", "documentation", False, False
    ),
    _range(
        "203.0.113.0/24", "Documentation (TEST-NET-3)", "RFC 5737", "documentation", False, False
    ),
    _range("224.0.0.0/4", "Multicast", "RFC 5771", "multicast", True, False),
    _range("240.0.0.0/4", "Reserved", "RFC 1112", "reserved", False, False),
    _range("255.255.255.255/32", "Limited Broadcast", "RFC 919", "broadcast", False, False),
    # IPv6
    _range("::/0", "Reserved by the IETF", "RFC 4291", "reserved", False, False),
    _range("2000::/3", "Global Unicast", "RFC 4291", "public", True, True),
    _range("::/128", "Unspecified Address", "RFC 4291", "unspecified", False, False),
    _range("::1/128", "Loopback Address", "RFC 4291", "loopback", False, False),
    _range("::ffff:0:0/96", "IPv4-mapped Address", "RFC 4291", "non-public", False, False),
    _range("64:ff9b::/96", "IPv4-IPv6 Translat.", "RFC 6052", "translated", True, True),
    _range("64:ff9b:1::/48", "IPv4-IPv6 Translat.", "RFC 8215", "non-public", True, False),
    _range("100::/64", "Discard-Only Address Block", "RFC 6666", "non-public", True, False),
    _range("100:0:0:1::/64", "Dummy IPv6 Prefix", "RFC 9780", "non-public", False, False),
    _range("2001::/23", "IETF Protocol Assignments", "RFC 2928", "non-public", False, False),
    _range("2001::/32", "TEREDO", "RFC 4380", "tunnelled", True, None),
    _range("2001:1::1/128", "Port Control Protocol Anycast", "RFC 7723", "anycast", True, True),
    _range("2001:1::2/128", "TURN Anycast", "RFC 8155", "anycast", True, True),
    _range("2001:1::3/128", "DNS-SD SRP Anycast", "RFC 9665", "anycast", True, True),
    _range("2001:2::/48", "Benchmarking", "RFC 5180", "non-public", True, False),
    _range("2001:3::/32", "AMT", "RFC 7450", "anycast", True, True),
    _range("2001:4:112::/48", "AS112-v6", "RFC 7535", "anycast", True, True),
    _range("2001:10::/28", "Deprecated (ORCHID)", "RFC 4843", "reserved", False, False),
    _range("2001:20::/28", "ORCHIDv2", "RFC 7343", "public", True, True),
    _range(
        "2001:30::/28", "Drone Remote ID Protocol Entity Tags", "RFC 9374", "public", True, True
    ),
    _range("2001:db8::/32", "Documentation", "RFC 3849", "documentation", False, False),
    _range("2002::/16", "6to4", "RFC 3056", "tunnelled", True, None),
    _range(
        "2620:4f:8000::/48", "Direct Delegation AS112 Service", "RFC 7534", "anycast", True, True
    ),
    _range("3fff::/20", "Documentation", "RFC 9637", "documentation", False, False),
    _range("5f00::/16", "Segment Routing (SRv6) SIDs", "RFC 9602", "non-public", True, False),
    _range("fc00::/7", "Unique-Local", "RFC 4193", "private", True, False),
    _range("fe80::/10", "Link-Local Unicast", "RFC 4291", "link-local", False, False),
    _range("fec0::/10", "Site-Local (deprecated)", "RFC 3879", "private", False, False),
    _range("ff00::/8", "Multicast", "RFC 4291", "multicast", True, False),
)
"""Every range the guard treats specially; an IPv4 address in none of them is public."""

# Per IP version, most specific first: the first range holding an address decides.
_BY_VERSION: dict[int, tuple[SpecialRange, ...]] = {
    version: tuple(
        sorted(
            (r for r in SPECIAL_RANGES if r.network.version == version),
            key=lambda r: r.network.prefixlen,
            reverse=True,
        )
    )
    for version in (4, 6)
}
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class WebhookRefused(PeerwireError, ValueError):
    """The webhook URL may not be called; the message says why (safe to show the caller)."""


class UnresolvableHost(PeerwireError, OSError):
    """The webhook's host name does not resolve (now): at delivery, worth retrying."""


@dataclass(frozen=True, slots=True)
class Target:
    """Where one delivery attempt goes: the checked address, with the original name kept."""

    url: str
    """The webhook URL as configured."""
    address: str
    """The address that was checked and is connected to."""
    connect_url: str
    """``url`` with its host replaced by ``address``."""
    headers: dict[str, str] = field(default_factory=dict)
    """``Host``: the configured host (and port), as the receiver expects it."""
    extensions: dict[str, str] = field(default_factory=dict)
    """For https: ``sni_hostname``, the TLS server name the certificate is checked against."""


async def system_resolver(host: str, port: int) -> list[str]:
    """The host's addresses from the system resolver (``getaddrinfo``), in its order."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise UnresolvableHost(f"the host {host!r} does not resolve: {exc}") from None
    addresses: list[str] = []
    for _, _, _, _, sockaddr in infos:
        text = str(sockaddr[0]).split("%", 1)[0]  # an IPv6 zone index names no other host
        if text not in addresses:
            addresses.append(text)
    return addresses


def special_range(address: IPAddress) -> SpecialRange | None:
    """The most specific ``SPECIAL_RANGES`` entry holding ``address`` (``None``: none does)."""
    for entry in _BY_VERSION[address.version]:
        if address in entry.network:
            return entry
    return None


def address_refusal(address: IPAddress) -> str | None:
    """Why a webhook may not be reached at ``address`` (``None``: it may).

    Decided by ``SPECIAL_RANGES`` and the metadata addresses alone, the same on every Python
    version: an address is refused unless its most specific range is globally reachable.
    """
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        reason = address_refusal(embedded)
        return None if reason is None else f"{reason} ({embedded} embedded in {address})"
    if address in _METADATA_ADDRESSES:
        return "a cloud metadata address"
    entry = special_range(address)
    if entry is None or entry.globally_reachable:
        return None
    return f"a {entry.kind} address ({entry.name}, {entry.rfc})"


def _embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFF_FFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        server, client = address.teredo
        return client if address_refusal(client) is not None else server
    return None


class WebhookGuard:
    """Checks webhook URLs and pins each delivery to a checked address.

    ``allow`` names what may be reached even though it is internal: host names (exact,
    case-insensitive, e.g. ``receiver.internal``) and networks or addresses (``127.0.0.1``,
    ``10.1.0.0/16``, ``::1``). ``resolver`` replaces the system resolver.
    """

    def __init__(
        self,
        allow: Iterable[str] = (),
        *,
        resolver: Resolver | None = None,
        max_url_length: int = MAX_URL_LENGTH,
    ) -> None:
        self.allowed_hosts: frozenset[str] = frozenset()
        self.allowed_networks: tuple[IPNetwork, ...] = ()
        hosts, networks = set(), []
        for entry in allow:
            entry = entry.strip()
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                hosts.add(_host_key(entry))
        self.allowed_hosts = frozenset(hosts)
        self.allowed_networks = tuple(networks)
        self.resolver: Resolver = resolver or system_resolver
        self.max_url_length = max_url_length

    def check_url(self, url: str) -> httpx.URL:
        """The parsed URL if its form is acceptable (no DNS): ``WebhookRefused`` otherwise."""
        if len(url) > self.max_url_length:
            raise WebhookRefused(f"the URL is longer than {self.max_url_length} characters")
        try:
            parsed = httpx.URL(url)
            host = parsed.host  # an IDNA name ("xn--...") is decoded, and can fail, only here
        except (httpx.InvalidURL, TypeError, ValueError) as exc:
            raise WebhookRefused(f"the URL is not valid: {exc}") from None
        if parsed.scheme not in ("http", "https"):
            shown = parsed.scheme or "(none)"
            raise WebhookRefused(f"the URL scheme must be http or https, not {shown}")
        if not host:
            raise WebhookRefused("the URL names no host")
        if parsed.userinfo:
            raise WebhookRefused(
                "the URL carries credentials; put them in the config's authentication instead"
            )
        return parsed

    async def resolve(self, url: str) -> Target:
        """Check ``url`` and resolve its host; the target to connect to.

        Raises ``WebhookRefused`` (the URL or an address it resolves to may not be reached)
        or ``UnresolvableHost`` (no address now).
        """
        parsed = self.check_url(url)
        host = parsed.host
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        literal = _address(host)
        trusted_name = literal is None and _host_key(host) in self.allowed_hosts
        if literal is None and not trusted_name:
            if _host_key(host) in _METADATA_HOSTS:
                raise WebhookRefused(f"the host {host} is a cloud metadata endpoint")
            name = _host_key(host)
            if name == "localhost" or name.endswith(".localhost"):
                raise WebhookRefused(f"the host {host} is a loopback name")
        if literal is not None:
            addresses = [literal]
        else:
            found = await self.resolver(parsed.raw_host.decode("ascii"), port)
            addresses = [a for a in (_address(text) for text in found) if a is not None]
            if not addresses:
                raise UnresolvableHost(f"the host {host} resolves to no address")
        if not trusted_name:
            for address in addresses:
                reason = address_refusal(address)
                if reason is not None and not self._allows(address):
                    where = f"{host} resolves to" if literal is None else "the URL names"
                    raise WebhookRefused(
                        f"{where} {address}, {reason}; webhooks must be public addresses "
                        "unless the server's push allow-list names them"
                    )
        return _target(url, parsed, addresses[0], literal is not None)

    def _allows(self, address: IPAddress) -> bool:
        return any(
            address.version == network.version and address in network
            for network in self.allowed_networks
        )


def _target(url: str, parsed: httpx.URL, address: IPAddress, literal: bool) -> Target:
    if literal:
        return Target(url=url, address=str(address), connect_url=url)
    connect = parsed.copy_with(host=str(address))
    host = parsed.raw_host.decode("ascii")
    host_header = host if parsed.port is None else f"{host}:{parsed.port}"
    extensions = {"sni_hostname": host} if parsed.scheme == "https" else {}
    return Target(
        url=url,
        address=str(address),
        connect_url=str(connect),
        headers={"Host": host_header},
        extensions=extensions,
    )


def _address(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def _host_key(host: str) -> str:
    return host.strip().lower().rstrip(".")
