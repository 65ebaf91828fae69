"""Address ranges: what counts as open to the internet (a leaf: standard library only)."""

from __future__ import annotations

import ipaddress

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
