"""The SSRF guard for webhook URLs: a push config must not turn the agent into a proxy that
reaches the network behind it (A2A spec §13.2).

A webhook URL is accepted when it is ``http`` or ``https``, names a host, carries no
credentials, and *every* address its host resolves to is a public unicast address. Refused:
loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7), link-local (169.254/16, fe80::/10),
multicast, unspecified, reserved and other non-global ranges (100.64/10, documentation
ranges, ...), cloud metadata endpoints (169.254.169.254, fd00:ec2::254, metadata.google.internal
and kin) and ``localhost`` by name; an IPv6 address that embeds an IPv4 one (IPv4-mapped
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
    "Resolver",
    "Target",
    "UnresolvableHost",
    "WebhookGuard",
    "WebhookRefused",
    "address_refusal",
    "system_resolver",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

Resolver = Callable[[str, int], Awaitable[list[str]]]
"""``resolve(host, port)``: the host's addresses as strings (``UnresolvableHost`` if none)."""

MAX_URL_LENGTH = 2048

# Where clouds serve instance credentials: the classic SSRF prize, named so the refusal says so.
_METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, ...
        "169.254.170.2",  # AWS ECS task metadata
        "fd00:ec2::254",  # AWS over IPv6
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
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))


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


def address_refusal(address: IPAddress) -> str | None:
    """Why a webhook may not be reached at ``address`` (``None``: it may)."""
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        reason = address_refusal(embedded)
        return None if reason is None else f"{reason} ({embedded} embedded in {address})"
    if address in _METADATA_ADDRESSES:
        return "a cloud metadata address"
    if address.is_unspecified:
        return "an unspecified address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_private:
        return "a private address"
    if address.is_reserved:
        return "a reserved address"
    if not address.is_global:
        return "a non-public address"
    return None


def _embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if any(address in network for network in _NAT64):
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
