"""The nodes' subnet (the VPC range itself), its gateway address, and the NAT gateway's size."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ...spec import ClusterSpec
from .data import huawei_data


@dataclass(frozen=True)
class Nat:
    spec: str  # nat.Gateway spec ("1": small, 10,000 SNAT connections)
    eip_bandwidth_mbps: int


def subnet_cidr(cidr: str) -> str:
    """The nodes' subnet: the VPC range itself (one subnet in one zone)."""
    return cidr


def gateway_ip(cidr: str) -> str:
    """vpc.Subnet gateway_ip: "a valid IP address in the subnet segment"; the first host address, as Huawei's console
    proposes."""
    return str(next(ipaddress.ip_network(cidr, strict=False).hosts()))


def nat(spec: ClusterSpec) -> Nat | None:
    if spec.network.egress != "nat":
        return None
    data = huawei_data()["nat"]
    return Nat(str(data["spec"]), int(data["eipBandwidthMbps"]))
