"""The cluster network: VPC, the nodes' subnet in one zone, NAT egress with an EIP, and the security group.

Egress without public IPs on the nodes: a NAT gateway needs at least one EIP (`assigned_eip_sets`,
tencentcloud-iac-pulumi 0.2.3 nat.Gateway), and the VPC's default route table gets 0.0.0.0/0 to it.
The security group takes all traffic from itself (NCCL, RDMA control) and SSH only from `sshCidrs`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import tencentcloud_iac_pulumi as tencentcloud

from ..layout.tencentcloud import TencentLayout
from ..resources import invoke_options


@dataclass(frozen=True)
class Network:
    vpc: tencentcloud.vpc.Instance
    subnet: tencentcloud.subnet.Instance
    zone: pulumi.Input[str]
    nat: tencentcloud.nat.Gateway | None
    security_group: tencentcloud.security.Group


def build(parent: pulumi.Resource, name: str, layout: TencentLayout, tags: Mapping[str, str]) -> Network:
    spec = layout.spec
    child = pulumi.ResourceOptions(parent=parent)
    vpc = tencentcloud.vpc.Instance(
        f"{name}-vpc", name=f"{spec.name}-vpc", cidr_block=layout.vpc_cidr, tags=dict(tags), opts=child
    )
    zone: pulumi.Input[str]
    subnet_opts = child
    if layout.zone is not None:
        zone = layout.zone
    else:
        zone = (
            tencentcloud.instance.get_types_output(
                filters=[{"name": "instance-type", "values": [spec.instance.instanceType]}],
                exclude_sold_out=True,
                opts=invoke_options(parent),
            )
            .instance_types[0]
            .availability_zone
        )
        # sold-out zones drop out of the answer: keep the first deploy's zone so the cluster never moves
        subnet_opts = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["availabilityZone"]))
    subnet = tencentcloud.subnet.Instance(
        f"{name}-nodes",
        vpc_id=vpc.id,
        availability_zone=zone,
        cidr_block=layout.subnet_cidr,
        name=f"{spec.name}-nodes",
        tags=dict(tags),
        opts=subnet_opts,
    )
    nat = _nat(parent, name, layout, vpc, tags) if layout.nat else None
    sg = _security_group(parent, name, layout, tags)
    return Network(vpc, subnet, zone, nat, sg)


def _nat(
    parent: pulumi.Resource, name: str, layout: TencentLayout, vpc: tencentcloud.vpc.Instance, tags: Mapping[str, str]
) -> tencentcloud.nat.Gateway:
    spec = layout.spec
    child = pulumi.ResourceOptions(parent=parent)
    eip = tencentcloud.eip.Instance(
        f"{name}-nat-eip",
        name=f"{spec.name}-nat",
        internet_charge_type="TRAFFIC_POSTPAID_BY_HOUR",
        internet_max_bandwidth_out=layout.nat_bandwidth_mbps,
        tags=dict(tags),
        opts=child,
    )
    gateway = tencentcloud.nat.Gateway(
        f"{name}-natgw",
        vpc_id=vpc.id,
        name=f"{spec.name}-nat",
        bandwidth=layout.nat_bandwidth_mbps,
        assigned_eip_sets=[eip.public_ip],
        tags=dict(tags),
        opts=child,
    )
    tencentcloud.route.TableEntry(
        f"{name}-default-route",
        route_table_id=vpc.default_route_table_id,
        destination_cidr_block="0.0.0.0/0",
        next_type="NAT",
        next_hub=gateway.id,
        description="egress through the NAT gateway",
        opts=child,
    )
    return gateway


def _security_group(
    parent: pulumi.Resource, name: str, layout: TencentLayout, tags: Mapping[str, str]
) -> tencentcloud.security.Group:
    spec = layout.spec
    child = pulumi.ResourceOptions(parent=parent)
    sg = tencentcloud.security.Group(
        f"{name}-sg",
        name=f"{spec.name}-nodes",
        description=f"gpu-cluster {spec.name} nodes",
        tags=dict(tags),
        opts=child,
    )
    return sg


def node_rules(
    parent: pulumi.Resource,
    name: str,
    layout: TencentLayout,
    sg: tencentcloud.security.Group,
    scrapes: Sequence[tencentcloud.security.GroupRuleSetIngressArgs],
) -> tencentcloud.security.GroupRuleSet:
    """The nodes' group's rules, one set (a GroupRuleSet owns every rule of its group): registered after the login
    node, whose group the exporters' ports (`scrapes`, monitoring.py) admit."""
    child = pulumi.ResourceOptions(parent=parent)
    # ordered: the first rule has the highest priority (GroupRuleSet docstring)
    ingress = [
        tencentcloud.security.GroupRuleSetIngressArgs(
            action="ACCEPT",
            source_security_id=sg.id,
            protocol="ALL",
            port="all",
            description="all traffic between nodes",
        ),
        *[
            tencentcloud.security.GroupRuleSetIngressArgs(
                action="ACCEPT", cidr_block=cidr, protocol="TCP", port="22", description="SSH"
            )
            for cidr in layout.node_ssh_cidrs
        ],
        *scrapes,
        # TKE's GR networking: pods reach pods on other nodes from the cluster CIDR, not from a node address
        *(
            [
                tencentcloud.security.GroupRuleSetIngressArgs(
                    action="ACCEPT",
                    cidr_block=layout.kubernetes.pod_cidr,
                    protocol="ALL",
                    port="all",
                    description="TKE pods",
                )
            ]
            if layout.kubernetes
            else []
        ),
    ]
    egress = [
        tencentcloud.security.GroupRuleSetEgressArgs(
            action="ACCEPT", cidr_block="0.0.0.0/0", protocol="ALL", port="all", description="egress"
        )
    ]
    return tencentcloud.security.GroupRuleSet(
        f"{name}-sg-rules", security_group_id=sg.id, ingresses=ingress, egresses=egress, opts=child
    )
