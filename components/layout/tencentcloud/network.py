"""The nodes' subnet and the NAT gateway's bandwidth."""

from __future__ import annotations

NAT_BANDWIDTH_MBPS = 100  # nat.Gateway bandwidth default (valid 20 ... 5000)


def subnet_cidr(cidr: str) -> str:
    """The nodes' subnet: the VPC range itself (one subnet in one zone)."""
    return cidr
