"""The network: the CIDR the cloud takes, what is open to the internet, and `network.existing`.

`network.existing` joins a network that already exists (landing zones, Shared VPCs), given as
`{vpcId, subnetIds, securityGroupIds}` in each cloud's own form (VPC/subnet/sg ids on AWS, VNet and
subnet resource ids on Azure, network and subnetwork self links on GCP, VPC/vSwitch ids on Alibaba).
The shapes are data (`existingNetwork:` in `catalog/capabilities/<cloud>.yaml`); this module checks
what can be checked offline and says, as plan warnings, what the network must provide, because the
cluster then creates no VPC, subnet, NAT or route. Pure: no Pulumi.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

from ...catalog import Cloud, releases
from ...catalog import storage as shared_storage
from ...catalog.capabilities import capabilities, capability_data
from ...cidr import wide_public
from ...errors import CLUSTER_KEY, ConfigError
from ...text import one_line
from ..context import Context
from ..model import ExistingNetwork, NetworkConfig

KEY = f"{CLUSTER_KEY}.network.existing"


def _check_cidr_rules(cloud: Cloud, network: NetworkConfig, rules: Mapping[str, Any]) -> None:
    key = f"{CLUSTER_KEY}.network.cidr"
    net = ipaddress.IPv4Network(network.cidr)
    low, high = rules["cidrPrefix"]
    if not low <= net.prefixlen <= high:
        raise ConfigError(key, f"got {network.cidr}; {cloud} needs a prefix between /{low} and /{high}")
    for reserved in rules["reservedCidrs"]:
        if net.overlaps(ipaddress.IPv4Network(reserved["cidr"])):
            raise ConfigError(
                key, f"{network.cidr} overlaps {reserved['cidr']}, reserved by {reserved['why']}; pick another range"
            )


def _network(ctx: Context) -> Iterator[ConfigError]:
    try:
        _check_cidr_rules(ctx.cloud, ctx.cfg.network, ctx.rules)
    except ConfigError as exc:
        yield exc
    net = ctx.cfg.network
    open_ssh = [cidr for cidr in net.ssh_cidrs if wide_public(cidr)]
    if open_ssh:
        ctx.warn("network.sshCidrs", f"{', '.join(open_ssh)} opens SSH to much of the internet")
    if net.egress == "none" and releases.is_catalog_image(ctx.cloud, ctx.cfg.image) and not net.public_ip:
        ctx.warn("network.egress", "none: nodes cannot reach package mirrors or container registries")


@cache
def rules(cloud: str) -> dict[str, Any] | None:
    """The cloud's `existingNetwork:` data (None: the cloud cannot join an existing network yet)."""
    found: dict[str, Any] | None = capability_data(cloud).get("existingNetwork")
    return found


def _existing_network(ctx: Context) -> Iterator[ConfigError]:
    """`network.existing`: the ids' shapes, one zone, what cannot be combined with a network the cluster does not
    own, and the plan warnings on what the network must provide."""
    net = ctx.cfg.network
    existing = net.existing
    if existing is None:
        return
    data = rules(ctx.cloud)
    if data is None:
        yield ConfigError(KEY, f"{ctx.cloud} cannot join an existing network yet; remove network.existing")
        return
    if data.get("built") is False:
        yield ConfigError(KEY, f"{ctx.cloud}: joining an existing network is not built yet; remove network.existing")
        return
    region = re.escape(ctx.region)
    vpc_pattern = data["vpcIdPattern"].replace("{region}", region)
    if not re.fullmatch(vpc_pattern, existing.vpc_id):
        yield ConfigError(f"{KEY}.vpcId", f"got {existing.vpc_id!r}; expected {data['vpcIdHint']}")
    subnet_pattern = data["subnetIdPattern"].replace("{region}", region)
    hint = data["subnetIdHint"].replace("{region}", ctx.region)
    for i, subnet in enumerate(existing.subnet_ids):
        if not re.fullmatch(subnet_pattern, subnet):
            yield ConfigError(f"{KEY}.subnetIds[{i}]", f"got {subnet!r}; expected {hint}")
        elif data.get("subnetsInVpc") and not subnet.lower().startswith(existing.vpc_id.lower() + "/subnets/"):
            yield ConfigError(f"{KEY}.subnetIds[{i}]", f"{subnet!r} is not a subnet of vpcId {existing.vpc_id}")
    most = data.get("maxSubnets")
    if most is not None and len(existing.subnet_ids) > most:
        yield ConfigError(
            f"{KEY}.subnetIds",
            f"{len(existing.subnet_ids)} subnets; {ctx.cloud} nodes go into one subnet (one zone: a cluster "
            "placement and the fabric stay in one zone); give exactly one",
        )
    yield from _security_groups(ctx, existing, data)
    yield from _conflicts(ctx, data)
    ctx.warn(
        "network.existing",
        "no VPC, subnet, NAT or route is created: the cluster joins the given network",
        "info",
    )
    ctx.warn("network.existing", one_line(data["egressNeeds"]))
    if ctx.fabric_wired:
        ctx.warn("network.existing", one_line(data["fabricNeeds"]))
    if data.get("securityNeeds"):
        ctx.warn("network.existing", one_line(data["securityNeeds"]))


def _security_groups(ctx: Context, existing: ExistingNetwork, data: dict[str, Any]) -> Iterator[ConfigError]:
    pattern: str | None = data.get("securityGroupIdPattern")
    if pattern is None:
        if not existing.security_group_ids:
            return
        yield ConfigError(f"{KEY}.securityGroupIds", f"not on {ctx.cloud}: {data['securityGroupIdHint']}")
        return
    for i, group in enumerate(existing.security_group_ids):
        if not re.fullmatch(pattern, group):
            yield ConfigError(f"{KEY}.securityGroupIds[{i}]", f"got {group!r}; expected {data['securityGroupIdHint']}")
    most = data.get("maxSecurityGroups")
    if most is not None and len(existing.security_group_ids) > most:
        yield ConfigError(
            f"{KEY}.securityGroupIds",
            f"{len(existing.security_group_ids)} groups; at most {most} beside the cluster's own on {ctx.cloud}",
        )


def _conflicts(ctx: Context, data: dict[str, Any]) -> Iterator[ConfigError]:
    """What the cluster would have to build in a network it does not own."""
    net, k = ctx.cfg.network, f"{CLUSTER_KEY}.network"
    given = net.model_fields_set
    if "egress" in given:
        yield ConfigError(
            f"{k}.egress", "with network.existing, egress is the network's (its NAT or endpoints); remove it"
        )
    if net.public_ip:
        yield ConfigError(f"{k}.publicIp", "with network.existing, the nodes take no public IP; remove it")
    if ctx.cfg.login is not None and ctx.cfg.login.public_ip:
        yield ConfigError(
            f"{CLUSTER_KEY}.login.publicIp", "with network.existing there is no public subnet for it; remove it"
        )
    if data.get("cidrRequired") and "cidr" not in given:
        yield ConfigError(
            f"{k}.cidr",
            f"required with network.existing on {ctx.cloud}: the host subnetwork's range "
            "(the source of the cluster's internal firewall rule)",
        )
    elif not data.get("cidrRequired") and "cidr" in given:
        yield ConfigError(f"{k}.cidr", "with network.existing the ranges are the network's; remove it")
    own = data.get("needsOwnSubnet") or {}
    access = capabilities(ctx.cloud).resolve_access(ctx.cfg.access)
    if access in own.get("access", ()):
        why = " (the cloud's default)" if ctx.cfg.access == "auto" else ""
        yield ConfigError(
            f"{CLUSTER_KEY}.access",
            f"{access}{why} needs a subnet of its own in the VNet, which network.existing does not add; "
            "use access: ssh or none",
        )
    if own.get("login") and ctx.cfg.login is not None:
        yield ConfigError(
            f"{CLUSTER_KEY}.login", "needs a subnet of its own in the VNet, which network.existing does not add"
        )
    shared = getattr(ctx.cfg.storage, "shared", None)
    kinds = own.get("sharedStorage") or ()  # the storage.shared kinds that need a subnet of their own
    if shared is not None and kinds:
        catalog = shared_storage.load(ctx.cloud)
        kind = catalog.auto if shared.kind == "auto" and catalog is not None else shared.kind
        if kinds is True or kind in kinds:
            others = [k for k in (catalog.services if catalog else ()) if kinds is not True and k not in kinds]
            yield ConfigError(
                f"{CLUSTER_KEY}.storage.shared",
                f"{kind}: needs a subnet of its own in the VNet, which network.existing does not add; "
                f"use kind: {' or '.join([*others, 'existing'])}",
            )
    if data.get("zoneRequired") and ctx.cfg.zone is None:
        yield ConfigError(
            f"{CLUSTER_KEY}.zone", f"required with network.existing on {ctx.cloud}: the zone of the given subnet"
        )
