"""Azure access decisions: Azure Bastion and the login node, each in a fixed /26 of the VNet's free half."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ...errors import CLUSTER_KEY, ConfigError
from ...spec import ClusterSpec
from ...text import one_line
from .data import access_data
from .network import SecurityRule, inside_rules, ssh_rule

# The cluster VNet's second half (the first is the node subnet, unchanged) is cut into /26 blocks at fixed
# places, so turning Bastion or the login node on or off never moves another subnet: block 0 is
# AzureBastionSubnet (Azure needs exactly that name and at least a /26), block 1 the login subnet.
ACCESS_BLOCK_PREFIX = 26
BASTION_SUBNET_NAME = "AzureBastionSubnet"


@dataclass(frozen=True)
class Bastion:
    """Azure Bastion, Standard SKU with native-client tunnelling (`az network bastion ssh`)."""

    subnet_cidr: str
    sku: str
    hourly_usd: float | None  # None: not priced (capabilities file says why)
    price_note: str


@dataclass(frozen=True)
class LoginNode:
    """One small CPU VM in its own subnet: where sshCidrs and a public IP land when it exists."""

    instance_type: str
    subnet_cidr: str
    public_ip: bool
    security_rules: tuple[SecurityRule, ...]


def _access_blocks(spec: ClusterSpec, node_cidr: str, needed: int) -> tuple[str, ...]:
    """The first `needed` /26 blocks of the VNet's free half (block 0: Bastion, block 1: login)."""
    halves = ipaddress.IPv4Network(spec.network.cidr).subnets(prefixlen_diff=1)
    second = next(net for net in halves if str(net) != node_cidr)
    if second.num_addresses < needed * 2 ** (32 - ACCESS_BLOCK_PREFIX):
        what = {
            ("bastion", 1): "AzureBastionSubnet (Azure needs at least a /26)",
            ("bastion", 2): "AzureBastionSubnet and the login subnet (a /26 each)",
        }.get((spec.access, needed), "the login subnet (the second /26 of that half)")
        raise ConfigError(
            f"{CLUSTER_KEY}.network.cidr",
            f"{spec.network.cidr} leaves {second} beside the node subnet, too small for {what}; "
            f"use a /{ACCESS_BLOCK_PREFIX - needed} or larger range, or access: none without a login node",
        )
    blocks = second.subnets(new_prefix=ACCESS_BLOCK_PREFIX)
    return tuple(str(next(blocks)) for _ in range(needed))


def bastion(spec: ClusterSpec, node_cidr: str) -> Bastion | None:
    if spec.access != "bastion":
        return None
    data = access_data()["bastion"]
    price = data.get("hourlyUsd")
    return Bastion(
        _access_blocks(spec, node_cidr, 1)[0],
        str(data["sku"]),
        None if price is None else float(price),
        one_line(data["price"]),
    )


def login(spec: ClusterSpec, node_cidr: str) -> LoginNode | None:
    if spec.login is None:
        return None
    assert spec.login.instance_type is not None  # the spec resolves the default type
    rules = ((ssh_rule(spec),) if spec.network.ssh_cidrs else ()) + tuple(inside_rules())
    return LoginNode(spec.login.instance_type, _access_blocks(spec, node_cidr, 2)[1], spec.login.public_ip, rules)
