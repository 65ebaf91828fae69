"""The VPC's vSwitches (nodes, NAT) and the NAT gateway's EIP bandwidth."""

from __future__ import annotations

import ipaddress

VSWITCH_PREFIX = (16, 29)  # vSwitch mask lengths (alibabacloud.com/help/en/vpc/vpc-and-vswitch)


NAT_EIP_BANDWIDTH_MBPS = 200  # PayAsYouGo + PayByTraffic EIP range [1, 200] (ecs.EipAddress docstring)


def vswitch_cidrs(cidr: str) -> tuple[str, str]:
    """Two equal vSwitches from the VPC range (nodes, NAT), each at least /16 as vSwitches must be."""
    net = ipaddress.IPv4Network(cidr)
    prefix = max(net.prefixlen + 1, VSWITCH_PREFIX[0])
    first, second, *_ = net.subnets(new_prefix=prefix)
    return str(first), str(second)
