"""Which network addresses URL ingestion may connect to: globally routable unicast only. IPv6 spellings
that embed an IPv4 address are judged by that address. The ranges are listed explicitly (IANA
special-purpose registries) because the ``ipaddress`` flags have shifted between Python versions; the
flags stay as a second check. FETCH_ALLOWED_HOSTS allows chosen hosts or networks.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], Awaitable[list[str]]]

# Metadata endpoints, refused with their own reason (most also fall in a refused range).
METADATA_ADDRESSES = {
    ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack, DigitalOcean...
    ipaddress.ip_address("169.254.170.2"),  # AWS ECS task metadata
    ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
    ipaddress.ip_address("fd00:ec2::254"),  # AWS IPv6
}

REFUSED_NETWORKS: list[tuple[IPNetwork, str]] = [
    (ipaddress.ip_network(net), label)
    for net, label in (
        ("0.0.0.0/8", "an unspecified address"),
        ("127.0.0.0/8", "a loopback address"),
        ("10.0.0.0/8", "a private address"),
        ("172.16.0.0/12", "a private address"),
        ("192.168.0.0/16", "a private address"),
        ("100.64.0.0/10", "a shared (carrier-grade NAT) address"),
        ("169.254.0.0/16", "a link-local address"),
        ("192.0.0.0/24", "an IETF protocol address"),
        ("192.0.2.0/24", "a documentation address"),
        ("198.51.100.0/24", "a documentation address"),
        ("203.0.113.0/24", "a documentation address"),
        ("198.18.0.0/15", "a benchmarking address"),
        ("224.0.0.0/4", "a multicast address"),
        ("240.0.0.0/4", "a reserved address"),  # includes the 255.255.255.255 broadcast
        ("::/128", "an unspecified address"),
        ("::1/128", "a loopback address"),
        ("fc00::/7", "a private address"),
        ("fe80::/10", "a link-local address"),
        ("fec0::/10", "a site-local address"),
        ("ff00::/8", "a multicast address"),
        ("100::/64", "a discard-only address"),
        ("2001::/23", "an IETF protocol address"),  # Teredo, ORCHID, benchmarking...
        ("2001:db8::/32", "a documentation address"),
        ("64:ff9b:1::/48", "a local-use NAT64 address"),
    )
]

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SIIT = ipaddress.ip_network("::ffff:0:0:0/96")


async def system_resolver(host: str, port: int) -> list[str]:
    """All addresses ``host`` resolves to (getaddrinfo, off the event loop)."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def parse_address(address: str) -> IPAddress:
    """An address as a resolver returns it (an IPv6 zone id such as ``%eth0`` is dropped)."""
    return ipaddress.ip_address(address.split("%", 1)[0])


def embedded_ipv4(address: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 address stands for, if it embeds one; else the address itself."""
    if not isinstance(address, ipaddress.IPv6Address):
        return address
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    packed = address.packed
    if address in _NAT64 or address in _SIIT:
        return ipaddress.IPv4Address(packed[12:])
    if packed[:12] == bytes(12) and int(address) > 1:
        return ipaddress.IPv4Address(packed[12:])  # IPv4-compatible ::a.b.c.d (deprecated)
    return address


def refusal_reason(address: IPAddress) -> str | None:
    """Why connecting to ``address`` is refused, or None if it is a public unicast address."""
    address = embedded_ipv4(address)
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    for network, label in REFUSED_NETWORKS:
        if address.version == network.version and address in network:
            return label
    for check, label in (
        ("is_loopback", "a loopback address"),
        ("is_unspecified", "an unspecified address"),
        ("is_multicast", "a multicast address"),
        ("is_link_local", "a link-local address"),
        ("is_private", "a private address"),
        ("is_reserved", "a reserved address"),
    ):
        if getattr(address, check):
            return label
    if not address.is_global:
        return "not a globally routable address"
    return None


class AddressPolicy:
    """``FETCH_ALLOWED_HOSTS`` entries are host names (exact, case-insensitive: every address the
    name resolves to is allowed) or IP networks in CIDR notation (a bare IP is a /32 or /128)."""

    def __init__(self, allowed: Sequence[str] = ()) -> None:
        self.allowed_hosts: set[str] = set()
        self.allowed_networks: list[IPNetwork] = []
        for entry in allowed:
            entry = entry.strip().lower()
            if not entry:
                continue
            try:
                self.allowed_networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                self.allowed_hosts.add(entry.rstrip("."))

    def host_allowed(self, host: str) -> bool:
        return host.lower().rstrip(".") in self.allowed_hosts

    def address_allowed(self, address: IPAddress) -> bool:
        candidates = {address, embedded_ipv4(address)}
        return any(ip.version == net.version and ip in net for ip in candidates for net in self.allowed_networks)

    def check(self, host: str, address: str) -> str | None:
        """None if connecting to ``address`` (resolved from ``host``) is allowed, else the reason."""
        try:
            ip = parse_address(address)
        except ValueError:
            return f"not an IP address ({address!r})"
        if self.host_allowed(host) or self.address_allowed(ip):
            return None
        return refusal_reason(ip)
