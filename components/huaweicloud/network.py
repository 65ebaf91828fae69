"""The cluster network: VPC, the nodes' subnet in one zone, NAT egress (an SNAT rule on an EIP), and the security
group.

Egress without public IPs on the nodes: a NAT gateway in the nodes' subnet with one SNAT rule for the subnet on an EIP
(pulumi-huaweicloud 0.0.12 nat.Gateway, nat.SnatRule floating_ip_id, vpc.Eip). The security group is created without
Huawei's default rules (delete_default_rules) and given its own: all traffic from itself (NCCL between nodes), SSH
only from `sshCidrs` (none with a login node), all egress. Nothing else is open inbound.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_huaweicloud as huaweicloud

from ..layout.huaweicloud import HuaweiLayout


@dataclass(frozen=True)
class Network:
    vpc: huaweicloud.vpc.Vpc
    subnet: huaweicloud.vpc.Subnet
    zone: pulumi.Input[str]
    nat: huaweicloud.nat.Gateway | None
    security_group: huaweicloud.vpc.Secgroup


def build(parent: pulumi.Resource, name: str, layout: HuaweiLayout, tags: Mapping[str, str]) -> Network:
    spec = layout.spec
    child = pulumi.ResourceOptions(parent=parent)
    vpc = huaweicloud.vpc.Vpc(f"{name}-vpc", name=f"{spec.name}-vpc", cidr=layout.vpc_cidr, tags=dict(tags), opts=child)
    zone: pulumi.Input[str]
    subnet_opts = child
    if layout.zone is not None:
        zone = layout.zone
    else:
        zone = huaweicloud.get_availability_zones_output(opts=pulumi.InvokeOptions(parent=parent)).names[0]
        # a later answer may list zones differently: keep the first deploy's zone so the cluster never moves
        subnet_opts = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["availabilityZone"]))
    subnet = huaweicloud.vpc.Subnet(
        f"{name}-nodes",
        vpc_id=vpc.id,
        availability_zone=zone,
        cidr=layout.subnet_cidr,
        gateway_ip=layout.gateway_ip,
        name=f"{spec.name}-nodes",
        tags=dict(tags),
        opts=subnet_opts,
    )
    nat = _nat(parent, name, layout, vpc, subnet, tags) if layout.nat else None
    sg = _security_group(parent, name, layout)
    return Network(vpc, subnet, zone, nat, sg)


def _nat(
    parent: pulumi.Resource,
    name: str,
    layout: HuaweiLayout,
    vpc: huaweicloud.vpc.Vpc,
    subnet: huaweicloud.vpc.Subnet,
    tags: Mapping[str, str],
) -> huaweicloud.nat.Gateway:
    spec, nat = layout.spec, layout.nat
    assert nat is not None
    child = pulumi.ResourceOptions(parent=parent)
    eip = huaweicloud.vpc.Eip(
        f"{name}-nat-eip",
        name=f"{spec.name}-nat",
        publicip=huaweicloud.vpc.EipPublicipArgs(type="5_bgp"),
        bandwidth=huaweicloud.vpc.EipBandwidthArgs(
            share_type="PER", name=f"{spec.name}-nat", size=nat.eip_bandwidth_mbps, charge_mode="traffic"
        ),
        tags=dict(tags),
        opts=child,
    )
    gateway = huaweicloud.nat.Gateway(
        f"{name}-natgw",
        name=f"{spec.name}-nat",
        spec=nat.spec,
        vpc_id=vpc.id,
        subnet_id=subnet.id,
        description=f"gpu-cluster {spec.name}: egress of the nodes",
        tags=dict(tags),
        opts=child,
    )
    huaweicloud.nat.SnatRule(
        f"{name}-snat",
        nat_gateway_id=gateway.id,
        floating_ip_id=eip.id,
        subnet_id=subnet.id,
        description="egress of the nodes' subnet through the NAT gateway",
        opts=child,
    )
    return gateway


def secgroup_rule(
    parent: pulumi.Resource,
    name: str,
    group: huaweicloud.vpc.Secgroup,
    description: str,
    *,
    direction: str = "ingress",
    ports: str | None = None,
    remote_ip: str | None = None,
    remote_group: pulumi.Input[str] | None = None,
) -> huaweicloud.vpc.SecgroupRule:
    """One allow rule of `group`: TCP on `ports` or every protocol, from (to) a CIDR or a group."""
    return huaweicloud.vpc.SecgroupRule(
        name,
        security_group_id=group.id,
        direction=direction,
        ethertype="IPv4",
        protocol="tcp" if ports else None,
        ports=ports,
        remote_ip_prefix=remote_ip,
        remote_group_id=remote_group,
        action="allow",
        description=description,
        opts=pulumi.ResourceOptions(parent=parent),
    )


def security_group(
    parent: pulumi.Resource, name: str, egress_name: str, sg_name: str, description: str
) -> huaweicloud.vpc.Secgroup:
    """A security group without Huawei's default rules, allowing all egress; its inbound rules are added by name."""
    sg = huaweicloud.vpc.Secgroup(
        name,
        name=sg_name,
        description=description,
        delete_default_rules=True,
        opts=pulumi.ResourceOptions(parent=parent),
    )
    secgroup_rule(parent, egress_name, sg, "egress", direction="egress", remote_ip="0.0.0.0/0")
    return sg


def _security_group(parent: pulumi.Resource, name: str, layout: HuaweiLayout) -> huaweicloud.vpc.Secgroup:
    spec = layout.spec
    sg = security_group(
        parent, f"{name}-sg", f"{name}-sg-egress", f"{spec.name}-nodes", f"gpu-cluster {spec.name} nodes"
    )
    secgroup_rule(parent, f"{name}-sg-self", sg, "all traffic between nodes", remote_group=sg.id)
    for i, cidr in enumerate(layout.node_ssh_cidrs):
        secgroup_rule(parent, f"{name}-sg-ssh-{i}", sg, "SSH", ports="22", remote_ip=cidr)
    return sg
