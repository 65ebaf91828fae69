"""Address ranges: what counts as open to the internet (a leaf: standard library only)."""

from __future__ import annotations

import ipaddress

PRIVATE_RANGES = tuple(ipaddress.ip_network(c) for c in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))
OPEN_RANGES = {"0.0.0.0/0", "::/0", "*", "internet", "any"}


def wide_public(source: str) -> bool:
    """0.0.0.0/0 and its spellings, or any public range of /8 or wider (0.0.0.0/1 + 128.0.0.0/1 is open too)."""
    if source.lower() in OPEN_RANGES:
        return True
    try:
        net = ipaddress.ip_network(source, strict=False)
    except ValueError:
        return False
    return net.prefixlen <= (8 if net.version == 4 else 16) and not net.is_private


def parse_cidr(value: str) -> ipaddress.IPv4Network:
    """An IPv4 CIDR, strictly (host bits zero); ValueError says what was wrong."""
    try:
        return ipaddress.IPv4Network(value, strict=True)
    except ValueError as exc:
        raise ValueError(f"{value!r} is not an IPv4 CIDR such as 10.42.0.0/16 ({exc})") from None
