"""The cluster network: VPC, the nodes' vSwitch in one zone, optional NAT egress, and the security group.

Egress without public IPs on nodes is an enhanced Internet NAT gateway in its own vSwitch, an EIP
bound to it, and an SNAT entry for the nodes' vSwitch. The provider documents that an enhanced
Internet NAT gateway adds the VPC's 0.0.0.0/0 route to itself, so there is no route entry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_alicloud as alicloud

from ..layout.alicloud import AlicloudLayout
from ..resources import Joined, invoke_options


@dataclass(frozen=True)
class Nat:
    gateway: alicloud.vpc.NatGateway
    eip: alicloud.ecs.EipAddress


@dataclass(frozen=True)
class Network:
    vpc: alicloud.vpc.Network | Joined
    vswitch: alicloud.vpc.Switch | Joined
    zone: pulumi.Input[str]
    vswitch_opts: pulumi.ResourceOptions  # the nodes' vSwitch options (ignore_changes on a looked-up zone)
    nat: Nat | None
    security_group: alicloud.ecs.SecurityGroup
    extra_security_groups: tuple[str, ...] = ()  # network.existing.securityGroupIds

    @property
    def node_security_groups(self) -> list[pulumi.Input[str]]:
        """The nodes' groups: the cluster's own, then the given ones."""
        return [self.security_group.id, *self.extra_security_groups]


def build(parent: pulumi.Resource, name: str, layout: AlicloudLayout, tags: Mapping[str, str]) -> Network:
    spec = layout.spec
    child = pulumi.ResourceOptions(parent=parent)
    existing = spec.network.existing
    if existing is not None:  # join it: no VPC, vSwitch, NAT, EIP or SNAT; the zone is the vSwitch's (spec)
        joined = Joined.of(existing.vpc_id)
        group = _security_group(parent, name, layout, joined, tags, layout.node_ssh_cidrs)
        zone_of_vswitch = spec.zone or ""
        vswitch = Joined.of(existing.subnet_ids[0])
        return Network(joined, vswitch, zone_of_vswitch, child, None, group, existing.security_group_ids)
    vpc = alicloud.vpc.Network(
        f"{name}-vpc", vpc_name=f"{spec.name}-vpc", cidr_block=layout.vpc_cidr, tags=tags, opts=child
    )
    zone: pulumi.Input[str]
    vswitch_opts = child
    if layout.zone is not None:
        zone = layout.zone
    else:
        zone = alicloud.get_zones_output(
            available_instance_type=spec.instance.instanceType,
            available_resource_creation="VSwitch",
            available_disk_category="cloud_essd",
            opts=invoke_options(parent),
        ).ids[0]
        # get_zones drops sold-out zones; keep the first deploy's answer so the cluster never moves.
        vswitch_opts = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["zoneId"]))
    vswitch = alicloud.vpc.Switch(
        f"{name}-nodes",
        vpc_id=vpc.id,
        cidr_block=layout.node_vswitch_cidr,
        zone_id=zone,
        vswitch_name=f"{spec.name}-nodes",
        tags=tags,
        opts=vswitch_opts,
    )
    nat = _nat(parent, name, layout, vpc, vswitch, zone, tags, vswitch_opts) if layout.nat_vswitch_cidr else None
    security_group = _security_group(parent, name, layout, vpc, tags, layout.node_ssh_cidrs)
    return Network(vpc, vswitch, zone, vswitch_opts, nat, security_group)


def _nat(
    parent: pulumi.Resource,
    name: str,
    layout: AlicloudLayout,
    vpc: alicloud.vpc.Network,
    nodes: alicloud.vpc.Switch,
    zone: pulumi.Input[str],
    tags: Mapping[str, str],
    vswitch_opts: pulumi.ResourceOptions,
) -> Nat:
    spec = layout.spec
    child = pulumi.ResourceOptions(parent=parent)
    nat_vswitch = alicloud.vpc.Switch(
        f"{name}-nat",
        vpc_id=vpc.id,
        cidr_block=layout.nat_vswitch_cidr,
        zone_id=zone,
        vswitch_name=f"{spec.name}-nat",
        tags=tags,
        opts=vswitch_opts,
    )
    gateway = alicloud.vpc.NatGateway(
        f"{name}-natgw",
        vpc_id=vpc.id,
        vswitch_id=nat_vswitch.id,
        nat_type="Enhanced",
        network_type="internet",
        payment_type="PayAsYouGo",
        internet_charge_type="PayByLcu",
        nat_gateway_name=f"{spec.name}-nat",
        tags=tags,
        opts=child,
    )
    eip = alicloud.ecs.EipAddress(
        f"{name}-nat-eip",
        address_name=f"{spec.name}-nat",
        payment_type="PayAsYouGo",
        internet_charge_type="PayByTraffic",
        bandwidth=str(layout.nat_eip_bandwidth_mbps),
        tags=tags,
        opts=child,
    )
    association = alicloud.ecs.EipAssociation(
        f"{name}-nat-eip-assoc",
        allocation_id=eip.id,
        instance_id=gateway.id,
        instance_type="Nat",
        opts=child,
    )
    alicloud.vpc.SnatEntry(
        f"{name}-snat",
        snat_table_id=gateway.snat_table_ids,
        source_vswitch_id=nodes.id,
        snat_ip=eip.ip_address,
        snat_entry_name=f"{spec.name}-nodes",
        # the EIP must be bound to the gateway before it can translate for the vSwitch
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[association]),
    )
    return Nat(gateway, eip)


def _security_group(
    parent: pulumi.Resource,
    name: str,
    layout: AlicloudLayout,
    vpc: alicloud.vpc.Network | Joined,
    tags: Mapping[str, str],
    ssh_cidrs: Sequence[str],
) -> alicloud.ecs.SecurityGroup:
    child = pulumi.ResourceOptions(parent=parent)
    sg = alicloud.ecs.SecurityGroup(
        f"{name}-sg",
        vpc_id=vpc.id,
        security_group_name=f"{layout.spec.name}-nodes",
        description=f"gpu-cluster {layout.spec.name} nodes",
        inner_access_policy="Accept",
        tags=tags,
        opts=child,
    )
    # All traffic between nodes (NCCL over TCP and eRDMA); explicit so it survives a policy change.
    alicloud.ecs.SecurityGroupRule(
        f"{name}-sg-self-in",
        type="ingress",
        security_group_id=sg.id,
        source_security_group_id=sg.id,
        ip_protocol="all",
        port_range="-1/-1",
        nic_type="intranet",
        policy="accept",
        priority=1,
        description="all traffic between nodes (NCCL, eRDMA)",
        opts=child,
    )
    for cidr in ssh_cidrs:
        ingress_rule(f"{name}-sg-ssh-{cidr.replace('/', '_')}", sg.id, "22/22", "SSH", child, cidr=cidr)
    return sg


def ingress_rule(
    name: str,
    security_group_id: pulumi.Input[str],
    ports: str,
    description: str,
    child: pulumi.ResourceOptions,
    *,
    cidr: str | None = None,
    source_group_id: pulumi.Input[str] | None = None,
) -> alicloud.ecs.SecurityGroupRule:
    """One accepted TCP ingress rule (`ports` as "22/22") from a CIDR or from another security group."""
    return alicloud.ecs.SecurityGroupRule(
        name,
        type="ingress",
        security_group_id=security_group_id,
        cidr_ip=cidr,
        source_security_group_id=source_group_id,
        ip_protocol="tcp",
        port_range=ports,
        nic_type="intranet",
        policy="accept",
        priority=1,
        description=description,
        opts=child,
    )
