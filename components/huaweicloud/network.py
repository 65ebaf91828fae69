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


def _security_group(parent: pulumi.Resource, name: str, layout: HuaweiLayout) -> huaweicloud.vpc.Secgroup:
    spec = layout.spec
    child = pulumi.ResourceOptions(parent=parent)
    sg = huaweicloud.vpc.Secgroup(
        f"{name}-sg",
        name=f"{spec.name}-nodes",
        description=f"gpu-cluster {spec.name} nodes",
        delete_default_rules=True,
        opts=child,
    )
    huaweicloud.vpc.SecgroupRule(
        f"{name}-sg-self",
        security_group_id=sg.id,
        direction="ingress",
        ethertype="IPv4",
        remote_group_id=sg.id,
        action="allow",
        description="all traffic between nodes",
        opts=child,
    )
    for i, cidr in enumerate(layout.node_ssh_cidrs):
        huaweicloud.vpc.SecgroupRule(
            f"{name}-sg-ssh-{i}",
            security_group_id=sg.id,
            direction="ingress",
            ethertype="IPv4",
            protocol="tcp",
            ports="22",
            remote_ip_prefix=cidr,
            action="allow",
            description="SSH",
            opts=child,
        )
    huaweicloud.vpc.SecgroupRule(
        f"{name}-sg-egress",
        security_group_id=sg.id,
        direction="egress",
        ethertype="IPv4",
        remote_ip_prefix="0.0.0.0/0",
        action="allow",
        description="egress",
        opts=child,
    )
    return sg
