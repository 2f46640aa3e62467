"""The address policy alone: which resolved addresses URL ingestion may connect to."""

from __future__ import annotations

import ipaddress

import pytest

from carrag.services.fetchers.address_policy import AddressPolicy, embedded_ipv4, refusal_reason

REFUSED = [
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("::1", "loopback"),
    ("10.1.2.3", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.254", "private"),
    ("192.168.1.1", "private"),
    ("fc00::1", "private"),
    ("fd12:3456::1", "private"),
    ("169.254.169.254", "metadata"),
    ("169.254.170.2", "metadata"),
    ("100.100.100.200", "metadata"),
    ("fd00:ec2::254", "metadata"),
    ("169.254.1.1", "link-local"),
    ("fe80::1", "link-local"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("ff02::1", "multicast"),
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "unspecified"),
    ("::", "unspecified"),
    ("100.64.0.1", "carrier-grade NAT"),
    ("198.18.0.1", "benchmarking"),
    ("192.0.2.10", "documentation"),
    ("2001:db8::1", "documentation"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "reserved"),
    ("192.0.0.170", "IETF"),
    ("2001::1", "IETF"),  # Teredo
    # IPv6 spellings that embed a refused IPv4 address
    ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:10.0.0.1", "private"),
    ("::ffff:169.254.169.254", "metadata"),
    ("::127.0.0.1", "loopback"),  # IPv4-compatible
    ("2002:7f00:1::", "loopback"),  # 6to4 of 127.0.0.1
    ("2002:a9fe:a9fe::1", "metadata"),  # 6to4 of 169.254.169.254
    ("64:ff9b::a9fe:a9fe", "metadata"),  # NAT64 of 169.254.169.254
    ("64:ff9b::7f00:1", "loopback"),  # NAT64 of 127.0.0.1
    ("::ffff:0:7f00:1", "loopback"),  # SIIT of 127.0.0.1
    ("64:ff9b:1::1", "NAT64"),
]

PUBLIC = ["93.184.215.14", "1.1.1.1", "8.8.8.8", "2606:4700:4700::1111", "::ffff:93.184.215.14", "64:ff9b::808:808"]


@pytest.mark.parametrize(("address", "reason"), REFUSED)
def test_refused_ranges_name_their_reason(address: str, reason: str) -> None:
    found = AddressPolicy().check("example.org", address)
    assert found is not None and reason in found, (address, found)


@pytest.mark.parametrize("address", PUBLIC)
def test_public_unicast_addresses_are_allowed(address: str) -> None:
    assert AddressPolicy().check("example.org", address) is None


def test_zone_ids_are_ignored_and_garbage_is_refused() -> None:
    assert "link-local" in AddressPolicy().check("h", "fe80::1%eth0")
    assert "not an IP address" in AddressPolicy().check("h", "not-an-ip")


def test_embedded_ipv4_is_unwrapped() -> None:
    assert embedded_ipv4(ipaddress.ip_address("::ffff:10.0.0.1")) == ipaddress.ip_address("10.0.0.1")
    assert embedded_ipv4(ipaddress.ip_address("64:ff9b::a00:1")) == ipaddress.ip_address("10.0.0.1")
    assert embedded_ipv4(ipaddress.ip_address("2606:4700::1")) == ipaddress.ip_address("2606:4700::1")


def test_allow_list_by_network_covers_only_that_network() -> None:
    policy = AddressPolicy(["10.0.0.0/8", " 192.168.5.7 ", "[fd00::1]"])
    assert policy.check("wiki.internal", "10.20.30.40") is None
    assert policy.check("wiki.internal", "::ffff:10.20.30.40") is None, "mapped spelling of an allowed network"
    assert policy.check("wiki.internal", "192.168.5.7") is None
    assert policy.check("wiki.internal", "fd00::1") is None
    assert "private" in policy.check("wiki.internal", "192.168.5.8")
    assert "metadata" in policy.check("wiki.internal", "169.254.169.254")


def test_allow_list_by_host_name_is_exact() -> None:
    policy = AddressPolicy(["Wiki.Internal."])
    assert policy.check("wiki.internal", "10.0.0.5") is None
    assert policy.check("WIKI.internal.", "127.0.0.1") is None, "the operator trusts every address of that name"
    assert "private" in policy.check("evil.wiki.internal", "10.0.0.5")
    assert "private" in policy.check("other.internal", "10.0.0.5")


def test_refusal_reason_none_only_for_global_unicast() -> None:
    for address, _ in REFUSED:
        assert refusal_reason(ipaddress.ip_address(address)) is not None, address
