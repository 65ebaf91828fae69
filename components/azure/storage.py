"""The shared filesystem (`storage.shared`): Azure Managed Lustre in its own subnet of the cluster VNet.

The subnet is the last /24 of the VNet's second half (`layout.shared_subnet_cidr`): no existing subnet
moves. Its NSG admits the Lustre ports (988, 1019-1023) from the node subnet, everything between the
filesystem's own hosts (amlfs-prerequisites), nothing from the internet. Encrypted at rest with
Microsoft-managed keys (the service default). `retain: true` sets `protect` and `retainOnDelete`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_azure_native as azure

from .. import resources
from ..layout.shared import Shared
from .context import Context
from .network import Network


@dataclass(frozen=True)
class SharedFilesystem(resources.SharedFilesystem):
    subnet: azure.network.Subnet | None


def _nsg(ctx: Context, shared: Shared, subnet_cidr: str) -> azure.network.NetworkSecurityGroup:
    node_cidr = ctx.layout.node_subnet_cidr
    rules = [
        azure.network.SecurityRuleArgs(
            name=f"allow-lustre-{low}" if low == high else f"allow-lustre-{low}-{high}",
            priority=100 + 10 * i,
            direction="Inbound",
            access="Allow",
            protocol="Tcp",
            source_address_prefix=node_cidr,
            source_port_range="*",
            destination_address_prefix=subnet_cidr,
            destination_port_range=str(low) if low == high else f"{low}-{high}",
            description="Lustre from the cluster's node subnet",
        )
        for i, (_protocol, low, high) in enumerate(shared.ports)
    ]
    rules += [
        azure.network.SecurityRuleArgs(
            name="allow-within-filesystem",
            priority=200,
            direction="Inbound",
            access="Allow",
            protocol="*",
            source_address_prefix=subnet_cidr,
            source_port_range="*",
            destination_address_prefix=subnet_cidr,
            destination_port_range="*",
            description="between the filesystem's own hosts (amlfs-prerequisites)",
        ),
        azure.network.SecurityRuleArgs(
            name="deny-internet-inbound",
            priority=4096,
            direction="Inbound",
            access="Deny",
            protocol="*",
            source_address_prefix="Internet",
            source_port_range="*",
            destination_address_prefix="*",
            destination_port_range="*",
            description="nothing from the internet",
        ),
    ]
    return azure.network.NetworkSecurityGroup(
        f"{ctx.name}-shared-nsg",
        resource_group_name=ctx.resource_group_name,
        location=ctx.location,
        security_rules=rules,
        tags=ctx.tagged("shared-nsg"),
        opts=ctx.opts,
    )


def build_shared(ctx: Context, net: Network, after: Sequence[pulumi.Resource] = ()) -> SharedFilesystem | None:
    """`after`: what holds the VNet's other subnets (Bastion, the login NIC): the subnet is written last."""
    layout = ctx.layout
    shared = layout.shared
    if shared is None:
        return None
    if shared.existing:
        return SharedFilesystem(None, shared.source_form, None)
    assert layout.shared_subnet_cidr is not None and shared.size_gb is not None
    nsg = _nsg(ctx, shared, layout.shared_subnet_cidr)
    own = [net.subnet] if isinstance(net.subnet, pulumi.Resource) else []  # the node subnet (not a joined one)
    subnet = azure.network.Subnet(
        f"{ctx.name}-shared-subnet",
        resource_group_name=ctx.resource_group_name,
        virtual_network_name=net.vnet.name,
        address_prefix=layout.shared_subnet_cidr,
        network_security_group=azure.network.NetworkSecurityGroupArgs(id=nsg.id),
        # the filesystem reaches Azure services (its own management, blob) through the cluster's NAT
        nat_gateway=azure.network.SubResourceArgs(id=net.nat.id) if net.nat else None,
        opts=pulumi.ResourceOptions.merge(ctx.opts, pulumi.ResourceOptions(depends_on=[*own, *after])),
    )
    window = (shared.data or {}).get("maintenance") or {}
    fs = azure.storagecache.AmlFilesystem(
        f"{ctx.name}-shared",
        resource_group_name=ctx.resource_group_name,
        location=ctx.location,
        sku=azure.storagecache.SkuNameArgs(name=f"AMLFS-Durable-Premium-{shared.throughput}"),
        storage_capacity_ti_b=shared.size_gb / 1024,
        filesystem_subnet=subnet.id,
        maintenance_window=azure.storagecache.AmlFilesystemMaintenanceWindowArgs(
            day_of_week=window.get("dayOfWeek", "Sunday"), time_of_day_utc=window.get("timeOfDayUTC", "02:00")
        ),
        zones=ctx.zones[:1] if ctx.zones else None,  # "should only contain a single element"
        tags=ctx.tagged("shared"),
        opts=pulumi.ResourceOptions.merge(
            ctx.opts, pulumi.ResourceOptions(protect=shared.retain, retain_on_delete=shared.retain)
        ),
    )
    source = fs.client_info.apply(lambda info: shared.source_form.format(mgsAddress=info.mgs_address))
    return SharedFilesystem(fs, source, subnet)
