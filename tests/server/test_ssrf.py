"""The SSRF guard: every internal address class is refused, the allow-list lifts exactly what it
names, and a checked URL is pinned to the address that was checked.

Names resolve through a resolver of the test's own (a table), so no test depends on DNS; the
system resolver is exercised once, on ``localhost``-free loopback literals it never consults.
"""

from __future__ import annotations

import ipaddress

import pytest

from peerwire.server.ssrf import (
    SPECIAL_RANGES,
    Target,
    UnresolvableHost,
    WebhookGuard,
    WebhookRefused,
    address_refusal,
    special_range,
    system_resolver,
)

PUBLIC_V4 = "93.184.216.34"
PUBLIC_V6 = "2606:4700:4700::1111"


def table(**names: list[str]) -> WebhookGuard:
    """A guard whose resolver answers from ``names`` (dots written as underscores)."""

    async def resolve(host: str, port: int) -> list[str]:
        found = names.get(host.replace(".", "_").replace("-", "_"))
        if found is None:
            raise UnresolvableHost(f"{host} does not resolve")
        return found

    return WebhookGuard(resolver=resolve)


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("127.9.9.9", "loopback"),
        ("::1", "loopback"),
        ("10.0.0.1", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.254", "private"),
        ("192.168.0.1", "private"),
        ("fc00::1", "private"),
        ("fd12:3456::1", "private"),
        ("169.254.1.1", "link-local"),
        ("fe80::1", "link-local"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("169.254.169.254", "cloud metadata"),
        ("fd00:ec2::254", "cloud metadata"),
        ("100.100.100.200", "cloud metadata"),
        ("100.64.0.1", "non-public"),  # carrier-grade NAT
        ("192.0.2.1", "documentation"),  # TEST-NET-1
        ("240.0.0.1", "reserved"),  # reserved for future use
        ("168.63.129.16", "cloud metadata"),  # Azure's wire server, a public address
        ("fd20:ce::254", "cloud metadata"),
        ("192.0.0.8", "IPv4 dummy address"),
        ("192.0.0.100", "IETF Protocol Assignments"),
        ("192.0.0.1", "Service Continuity"),
        ("192.0.0.170", "NAT64/DNS64 Discovery"),
        ("198.18.0.1", "Benchmarking"),
        ("192.88.99.1", "6to4 Relay Anycast"),
        ("255.255.255.255", "broadcast"),
        ("0.1.2.3", "This network"),
        ("2001:db8::1", "documentation"),
        ("3fff::1", "documentation"),
        ("100::1", "Discard-Only"),
        ("2001:2::1", "Benchmarking"),
        ("2001:10::1", "ORCHID"),
        ("5f00::1", "Segment Routing"),
        ("64:ff9b:1::808:808", "IPv4-IPv6 Translat."),  # local-use, not the well-known prefix
        ("fec0::1", "Site-Local"),
        ("::808:808", "Reserved by the IETF"),  # IPv4-compatible, outside 2000::/3
        ("4000::1", "Reserved by the IETF"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.1.1.1", "private"),
        ("::ffff:169.254.169.254", "cloud metadata"),
        ("64:ff9b::a9fe:a9fe", "cloud metadata"),  # NAT64 of 169.254.169.254
        ("64:ff9b::7f00:1", "loopback"),  # NAT64 of 127.0.0.1
        ("2002:7f00:1::1", "loopback"),  # 6to4 of 127.0.0.1
        ("2002:a00:1::1", "private"),  # 6to4 of 10.0.0.1
    ],
)
def test_each_internal_address_class_is_refused(address: str, reason: str) -> None:
    refusal = address_refusal(ipaddress.ip_address(address))
    assert refusal is not None and reason in refusal, refusal


@pytest.mark.parametrize(
    "address",
    [
        PUBLIC_V4,
        "8.8.8.8",
        PUBLIC_V6,
        "64:ff9b::808:808",
        "::ffff:8.8.8.8",
        "192.0.0.9",  # the registry marks it reachable inside the unreachable 192.0.0.0/24
        "2001:1::1",  # likewise inside 2001::/23
        "2001:20::1",  # ORCHIDv2
        "168.63.129.17",  # beside the wire server
    ],
)
def test_public_addresses_are_accepted(address: str) -> None:
    assert address_refusal(ipaddress.ip_address(address)) is None


def test_every_registry_range_is_judged_by_its_reachability_column() -> None:
    """The table alone decides, the same on every Python version: the first and last
    address of each range is refused exactly when the range is not globally reachable
    (unless a more specific range, a metadata address or an embedded IPv4 one says else)."""
    for entry in SPECIAL_RANGES:
        for address in (entry.network[0], entry.network[-1]):
            if special_range(address) is not entry or entry.globally_reachable is None:
                continue
            if address.version == 6 and (
                any((address.ipv4_mapped, address.sixtofour, address.teredo))
                or address in ipaddress.ip_network("64:ff9b::/96")  # NAT64: the IPv4 decides
            ):
                continue
            refused = address_refusal(address) is not None
            assert refused is not entry.globally_reachable, (entry.name, str(address))


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("ftp://hooks.test/x", "scheme must be http or https"),
        ("file:///etc/passwd", "scheme"),
        ("javascript:alert(1)", "scheme"),
        ("http:///no-host", "no host"),
        ("https://user:secret@hooks.test/x", "credentials"),
        ("https://hooks.test/" + "a" * 3000, "longer than"),
        ("http://[::1/x", "not valid"),
        ("https://xn--/x", "not valid"),  # an IDNA name that does not decode
        ("http://localhost:8080/x", "loopback name"),
        ("http://api.localhost/x", "loopback name"),
        ("http://metadata.google.internal/computeMetadata/v1/", "metadata"),
        ("http://127.0.0.1/x", "loopback"),
        ("http://[::ffff:7f00:1]/x", "loopback"),
        ("http://internal.test/x", "10.0.0.3, a private address"),
        ("http://mixed.test/x", "a private address"),  # one bad address is enough
    ],
)
async def test_urls_are_refused_with_the_reason(url: str, says: str) -> None:
    guard = table(internal_test=["10.0.0.3"], mixed_test=[PUBLIC_V4, "192.168.1.1"])
    with pytest.raises(WebhookRefused, match=says.replace(".", r"\.")):
        await guard.resolve(url)


async def test_a_public_name_is_pinned_to_its_checked_address() -> None:
    guard = table(hooks_test=[PUBLIC_V4, PUBLIC_V6])
    target = await guard.resolve("https://Hooks.Test:8443/hook?x=1")
    assert target == Target(
        url="https://Hooks.Test:8443/hook?x=1",
        address=PUBLIC_V4,
        connect_url=f"https://{PUBLIC_V4}:8443/hook?x=1",
        headers={"Host": "hooks.test:8443"},
        extensions={"sni_hostname": "hooks.test"},
    )
    plain = await table(hooks_test=[PUBLIC_V6]).resolve("http://hooks.test/hook")
    assert plain.connect_url == f"http://[{PUBLIC_V6}]/hook"
    assert (plain.headers, plain.extensions) == ({"Host": "hooks.test"}, {})


async def test_an_address_literal_needs_no_resolver() -> None:
    async def never(host: str, port: int) -> list[str]:
        raise AssertionError("a literal must not be resolved")

    target = await WebhookGuard(resolver=never).resolve(f"https://{PUBLIC_V4}/hook")
    assert (target.address, target.connect_url) == (PUBLIC_V4, f"https://{PUBLIC_V4}/hook")


async def test_the_allow_list_lifts_exactly_what_it_names() -> None:
    async def resolve(host: str, port: int) -> list[str]:
        return {"receiver.internal": ["10.1.2.3"], "other.internal": ["10.9.9.9"]}[host]

    guard = WebhookGuard(["127.0.0.1", "10.1.0.0/16", "Trusted.Example."], resolver=resolve)
    assert (await guard.resolve("http://127.0.0.1:9000/h")).address == "127.0.0.1"
    assert (await guard.resolve("http://receiver.internal/h")).address == "10.1.2.3"
    for refused in ("http://127.0.0.2/h", "http://other.internal/h", "http://[::1]/h"):
        with pytest.raises(WebhookRefused):
            await guard.resolve(refused)
    # A named host is trusted whatever it resolves to (the operator said so).
    trusted = WebhookGuard(["trusted.example"], resolver=_always("192.168.7.7"))
    assert (await trusted.resolve("https://trusted.example/h")).address == "192.168.7.7"


async def test_a_name_that_does_not_resolve_is_not_a_refusal() -> None:
    with pytest.raises(UnresolvableHost):
        await table().resolve("https://nowhere.test/h")
    with pytest.raises(UnresolvableHost):
        await WebhookGuard(resolver=_always()).resolve("https://empty.test/h")


async def test_the_system_resolver_answers_addresses() -> None:
    assert await system_resolver("127.0.0.1", 80) == ["127.0.0.1"]
    with pytest.raises(UnresolvableHost):
        await system_resolver("name.invalid", 80)  # RFC 6761: never resolves


async def test_odd_spellings_of_an_address_are_judged_by_what_they_resolve_to() -> None:
    # 127.0.0.1 as one integer: not an address literal to the URL parser, but the resolver
    # reads it as one. The check is on the resolved address, so the spelling does not matter.
    with pytest.raises(WebhookRefused, match="loopback"):
        await WebhookGuard().resolve("http://2130706433/x")


def _always(*addresses: str):  # type: ignore[no-untyped-def]
    async def resolve(host: str, port: int) -> list[str]:
        return list(addresses)

    return resolve
