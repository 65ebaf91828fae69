"""The cluster network: resource group, VNet, NSG, NAT gateway and the private node subnet.

With `network.existing` nothing of the network is created: the nodes join the given subnet, whose own
NSG applies (the cluster does not change a subnet it does not own).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_azure_native as azure

from ..layout.azure import AzureLayout, SecurityRule
from ..resources import Joined
from .context import Context


def security_rule_args(rules: tuple[SecurityRule, ...]) -> list[azure.network.SecurityRuleArgs]:
    """The layout's NSG rules as the SDK takes them (one source range as a prefix, several as a list)."""
    return [
        azure.network.SecurityRuleArgs(
            name=rule.name,
            priority=rule.priority,
            direction=rule.direction,
            access=rule.access,
            protocol=rule.protocol,
            source_address_prefixes=list(rule.sources) if len(rule.sources) > 1 else None,
            source_address_prefix=rule.sources[0] if len(rule.sources) == 1 else None,
            source_port_range="*",
            destination_address_prefix=rule.destination,
            destination_port_range=rule.port,
            description=rule.description,
        )
        for rule in rules
    ]


def resource_group(name: str, layout: AzureLayout, opts: pulumi.ResourceOptions) -> pulumi.Input[str]:
    """The group's name: an existing group by name (nothing is created or deleted there except our own
    resources), or a new one."""
    if layout.resource_group is not None:
        return layout.resource_group
    tags = {**layout.tags, "Name": f"{layout.spec.name}-rg"}
    group = azure.resources.ResourceGroup(f"{name}-rg", location=layout.location, tags=tags, opts=opts)
    group_name: pulumi.Output[str] = group.name
    return group_name


@dataclass(frozen=True)
class Network:
    vnet: azure.network.VirtualNetwork | Joined
    nsg: azure.network.NetworkSecurityGroup | None  # None: an existing subnet's own applies
    nat: azure.network.NatGateway | None
    subnet: azure.network.Subnet | Joined  # the nodes' subnet


def build(ctx: Context) -> Network:
    layout, name, rg, child, zones = ctx.layout, ctx.name, ctx.resource_group_name, ctx.opts, ctx.zones
    existing = layout.spec.network.existing
    if existing is not None:
        return Network(Joined.of(existing.vpc_id), None, None, Joined.of(existing.subnet_ids[0]))
    vnet = azure.network.VirtualNetwork(
        f"{name}-vnet",
        resource_group_name=rg,
        location=ctx.location,
        address_space=azure.network.AddressSpaceArgs(address_prefixes=[layout.vnet_cidr]),
        # No inline `subnets`: the provider then leaves the separate Subnet below alone on VNet updates
        # (pulumi/pulumi-azure-native#611).
        tags=ctx.tagged("vnet"),
        opts=child,
    )
    nsg = azure.network.NetworkSecurityGroup(
        f"{name}-nsg",
        resource_group_name=rg,
        location=ctx.location,
        security_rules=security_rule_args(layout.security_rules),
        tags=ctx.tagged("nsg"),
        opts=child,
    )
    nat = None
    if layout.nat_gateway:
        nat_ip = azure.network.PublicIPAddress(
            f"{name}-nat-ip",
            resource_group_name=rg,
            location=ctx.location,
            sku=azure.network.PublicIPAddressSkuArgs(name="Standard", tier="Regional"),
            public_ip_allocation_method="Static",
            public_ip_address_version="IPv4",
            zones=zones,
            tags=ctx.tagged("nat-ip"),
            opts=child,
        )
        nat = azure.network.NatGateway(
            f"{name}-nat",
            resource_group_name=rg,
            location=ctx.location,
            sku=azure.network.NatGatewaySkuArgs(name="Standard"),
            public_ip_addresses=[azure.network.SubResourceArgs(id=nat_ip.id)],
            zones=zones,
            tags=ctx.tagged("nat"),
            opts=child,
        )
    subnet = azure.network.Subnet(
        f"{name}-nodes",
        resource_group_name=rg,
        virtual_network_name=vnet.name,
        address_prefix=layout.node_subnet_cidr,
        network_security_group=azure.network.NetworkSecurityGroupArgs(id=nsg.id),
        nat_gateway=azure.network.SubResourceArgs(id=nat.id) if nat else None,
        # Private subnet: outbound only through the NAT gateway (or a node's own public IP).
        default_outbound_access=False,
        opts=child,
    )
    return Network(vnet, nsg, nat, subnet)


@dataclass(frozen=True)
class PrivateLink:
    endpoint: azure.network.PrivateEndpoint
    zone: azure.privatedns.PrivateZone
    link: azure.privatedns.VirtualNetworkLink
    records: azure.network.PrivateDnsZoneGroup


def private_zone(
    ctx: Context, net: Network, prefix: str, zone_name: str
) -> tuple[azure.privatedns.PrivateZone, azure.privatedns.VirtualNetworkLink]:
    """A private DNS zone `zone_name` linked to the VNet (no auto-registration), so names in it resolve inside the VNet.
    Named f"{name}-{prefix}-dns" and -dns-link."""
    name, rg = ctx.name, ctx.resource_group_name
    zone = azure.privatedns.PrivateZone(
        f"{name}-{prefix}-dns",
        resource_group_name=rg,
        private_zone_name=zone_name,
        location="Global",
        tags=ctx.tagged(f"{prefix}-dns"),
        opts=ctx.opts,
    )
    link = azure.privatedns.VirtualNetworkLink(
        f"{name}-{prefix}-dns-link",
        resource_group_name=rg,
        private_zone_name=zone_name,
        virtual_network=azure.privatedns.SubResourceArgs(id=net.vnet.id),
        registration_enabled=False,
        location="Global",
        tags=ctx.tagged(f"{prefix}-dns-link"),
        opts=pulumi.ResourceOptions.merge(ctx.opts, pulumi.ResourceOptions(depends_on=[zone])),
    )
    return zone, link


def private_link(
    ctx: Context,
    net: Network,
    prefix: str,
    *,
    target_id: pulumi.Input[str],
    group_id: str,
    zone_name: str,
    connection: str,
) -> PrivateLink:
    """A private endpoint of `target_id` (its `group_id` sub-resource) in the node subnet, and its privatelink DNS
    zone linked to the VNet with the endpoint's record in it: inside the VNet the target's name resolves to the
    endpoint. Named f"{name}-{prefix}-endpoint", -dns, -dns-link, -dns-records; `connection` names the connection."""
    name, rg = ctx.name, ctx.resource_group_name
    endpoint = azure.network.PrivateEndpoint(
        f"{name}-{prefix}-endpoint",
        resource_group_name=rg,
        location=ctx.location,
        subnet=azure.network.SubnetArgs(id=net.subnet.id),
        private_link_service_connections=[
            azure.network.PrivateLinkServiceConnectionArgs(
                name=f"{name}-{connection}", private_link_service_id=target_id, group_ids=[group_id]
            )
        ],
        tags=ctx.tagged(f"{prefix}-endpoint"),
        opts=ctx.opts,
    )
    zone, link = private_zone(ctx, net, prefix, zone_name)
    records = azure.network.PrivateDnsZoneGroup(
        f"{name}-{prefix}-dns-records",
        resource_group_name=rg,
        private_endpoint_name=endpoint.name,
        private_dns_zone_configs=[azure.network.PrivateDnsZoneConfigArgs(name=group_id, private_dns_zone_id=zone.id)],
        opts=ctx.opts,
    )
    return PrivateLink(endpoint, zone, link, records)
