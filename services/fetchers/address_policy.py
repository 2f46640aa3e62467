"""Which network addresses URL ingestion may connect to.

Only globally routable unicast addresses are allowed: loopback, private (RFC 1918, ULA), link-local
(which holds the 169.254.169.254 cloud metadata service), shared/CGNAT, multicast, unspecified and
reserved ranges are refused, as are IPv4-mapped/compatible IPv6 spellings of those. An operator can
allow specific hosts or networks deliberately (``FETCH_ALLOWED_HOSTS``).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]

# Metadata endpoints that are not covered by the ranges above on every platform.
METADATA_ADDRESSES = {
    ipaddress.ip_address("169.254.169.254"),
    ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
    ipaddress.ip_address("fd00:ec2::254"),  # AWS IPv6
}


async def system_resolver(host: str, port: int) -> list[str]:
    """All addresses ``host`` resolves to (getaddrinfo, off the event loop)."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


def _unwrap(address: IPAddress) -> IPAddress:
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.sixtofour is not None:
            return address.sixtofour
        packed = address.packed
        if packed[:12] == bytes(12) and address not in (ipaddress.ip_address("::"), ipaddress.ip_address("::1")):
            return ipaddress.IPv4Address(packed[12:])  # IPv4-compatible ::a.b.c.d
    return address


def refusal_reason(address: IPAddress) -> str | None:
    """Why connecting to ``address`` is refused, or None if it is a public unicast address."""
    address = _unwrap(address)
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
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
    def __init__(self, allowed: Sequence[str] = ()) -> None:
        self.allowed_hosts: set[str] = set()
        self.allowed_networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for entry in allowed:
            entry = entry.strip().lower()
            if not entry:
                continue
            try:
                self.allowed_networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                self.allowed_hosts.add(entry.rstrip("."))

    def host_allowed(self, host: str) -> bool:
        return host.lower().rstrip(".") in self.allowed_hosts

    def check(self, host: str, address: str) -> str | None:
        """None if connecting to ``address`` (resolved from ``host``) is allowed, else the reason."""
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        if self.host_allowed(host) or any(_unwrap(ip) in net or ip in net for net in self.allowed_networks):
            return None
        return refusal_reason(ip)
