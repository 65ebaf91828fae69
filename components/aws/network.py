"""The cluster network: VPC, node subnet, egress (NAT or internet gateway) and the node security group.

With `network.existing` the VPC and subnet are the given ones (nothing of the network is created):
only the node security group is, in the given VPC, with the given groups attached beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from ..resources import Joined, invoke_options
from .naming import Context


@dataclass(frozen=True)
class Network:
    vpc: aws.ec2.Vpc | Joined
    subnet: aws.ec2.Subnet | Joined  # the nodes' (private unless publicIp)
    route_table: aws.ec2.RouteTable | None  # None: an existing network's
    security_group: aws.ec2.SecurityGroup
    zone: pulumi.Input[str] | None  # None: the existing subnet's
    public_subnet: aws.ec2.Subnet | None  # the NAT gateway's (egress: nat)
    extra_security_groups: tuple[str, ...] = ()  # network.existing.securityGroupIds
    public_route_table: aws.ec2.RouteTable | None = None  # the NAT subnet's (egress: nat)

    @property
    def node_security_groups(self) -> list[pulumi.Input[str]]:
        """The nodes' groups: the cluster's own, then the given ones."""
        return [self.security_group.id, *self.extra_security_groups]


def build_network(ctx: Context) -> Network:
    name, layout, child = ctx.name, ctx.layout, ctx.child
    spec = layout.spec
    existing = spec.network.existing
    if existing is not None:
        vpc_joined = Joined.of(existing.vpc_id)
        subnet_joined = Joined.of(existing.subnet_ids[0])
        group = _security_group(ctx, vpc_joined)
        return Network(vpc_joined, subnet_joined, None, group, None, None, existing.security_group_ids)
    zone: pulumi.Input[str] = (
        spec.zone or (aws.get_availability_zones_output(state="available", opts=invoke_options(ctx.parent)).names[0])
    )
    # A defaulted zone is "the first available" at each run: if that answer changes (a zone is
    # impaired, the account gains one), the subnets would be replaced with every node in them.
    # Pin it: the zone of the first deploy stays; set `zone` to move the cluster on purpose.
    subnet_opts = (
        child
        if spec.zone
        else pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["availabilityZone"]))
    )
    vpc = aws.ec2.Vpc(
        f"{name}-vpc",
        cidr_block=layout.vpc_cidr,
        enable_dns_support=True,
        enable_dns_hostnames=True,
        tags=ctx.tagged("vpc"),
        opts=child,
    )
    subnet = aws.ec2.Subnet(
        f"{name}-nodes",
        vpc_id=vpc.id,
        cidr_block=layout.node_subnet_cidr,
        availability_zone=zone,
        map_public_ip_on_launch=spec.network.public_ip,
        tags=ctx.tagged("nodes"),
        opts=subnet_opts,
    )
    routes, public, public_rt = _egress_routes(ctx, vpc, zone, subnet_opts)
    route_table = aws.ec2.RouteTable(
        f"{name}-nodes-rt",
        vpc_id=vpc.id,
        routes=routes,
        tags=ctx.tagged("nodes-rt"),
        opts=child,
    )
    aws.ec2.RouteTableAssociation(
        f"{name}-nodes-rta",
        subnet_id=subnet.id,
        route_table_id=route_table.id,
        opts=child,
    )
    return Network(vpc, subnet, route_table, _security_group(ctx, vpc), zone, public, public_route_table=public_rt)


def _egress_routes(
    ctx: Context,
    vpc: aws.ec2.Vpc,
    zone: pulumi.Input[str],
    subnet_opts: pulumi.ResourceOptions,
) -> tuple[list[aws.ec2.RouteTableRouteArgs], aws.ec2.Subnet | None, aws.ec2.RouteTable | None]:
    """Internet access for nodes: NAT in a public subnet (egress: nat), IGW directly (publicIp).

    Returns the node routes, the public subnet and its route table (None without a NAT)."""
    name, layout, child = ctx.name, ctx.layout, ctx.child
    if layout.public_subnet_cidr is None and not layout.spec.network.public_ip:
        return [], None, None
    igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags=ctx.tagged("igw"), opts=child)
    if layout.spec.network.public_ip or layout.public_subnet_cidr is None:
        return [aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)], None, None
    public = aws.ec2.Subnet(
        f"{name}-public",
        vpc_id=vpc.id,
        cidr_block=layout.public_subnet_cidr,
        availability_zone=zone,
        map_public_ip_on_launch=False,
        tags=ctx.tagged("public"),
        opts=subnet_opts,
    )
    public_rt = aws.ec2.RouteTable(
        f"{name}-public-rt",
        vpc_id=vpc.id,
        routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
        tags=ctx.tagged("public-rt"),
        opts=child,
    )
    aws.ec2.RouteTableAssociation(f"{name}-public-rta", subnet_id=public.id, route_table_id=public_rt.id, opts=child)
    eip = aws.ec2.Eip(f"{name}-nat-eip", domain="vpc", tags=ctx.tagged("nat-eip"), opts=child)
    nat = aws.ec2.NatGateway(
        f"{name}-nat",
        allocation_id=eip.id,
        subnet_id=public.id,
        tags=ctx.tagged("nat"),
        opts=child,
    )
    return [aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id)], public, public_rt


def _security_group(ctx: Context, vpc: aws.ec2.Vpc | Joined) -> aws.ec2.SecurityGroup:
    name, layout, child = ctx.name, ctx.layout, ctx.child
    # EFA needs all traffic in and out to the group itself (EC2 User Guide, efa-start).
    sg = aws.ec2.SecurityGroup(
        f"{name}-sg",
        vpc_id=vpc.id,
        description=f"gpu-cluster {layout.spec.name} nodes",
        tags=ctx.tagged("sg"),
        opts=child,
    )
    for rule, direction in ((aws.vpc.SecurityGroupIngressRule, "in"), (aws.vpc.SecurityGroupEgressRule, "out")):
        rule(
            f"{name}-sg-self-{direction}",
            security_group_id=sg.id,
            referenced_security_group_id=sg.id,
            ip_protocol="-1",
            description="all traffic between nodes (EFA, NCCL)",
            opts=child,
        )
    # sshCidrs land here only without a login node (then they go to the login node's group).
    for cidr in layout.access.node_ssh_cidrs:
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-sg-ssh-{cidr.replace('/', '_')}",
            security_group_id=sg.id,
            cidr_ipv4=cidr,
            ip_protocol="tcp",
            from_port=22,
            to_port=22,
            description="SSH",
            opts=child,
        )
    if layout.spec.network.egress == "nat" or layout.spec.network.public_ip:
        aws.vpc.SecurityGroupEgressRule(
            f"{name}-sg-egress",
            security_group_id=sg.id,
            cidr_ipv4="0.0.0.0/0",
            ip_protocol="-1",
            description="outbound to the internet",
            opts=child,
        )
    return sg


def other_zone(ctx: Context, net: Network, needs: str) -> pulumi.Output[str]:
    """An available zone of the region other than the cluster's, for what AWS wants in two zones (`needs` says what,
    in the error of a region with one zone)."""
    assert net.zone is not None  # network.existing: refused by the layouts that need a second zone
    names = aws.get_availability_zones_output(state="available", opts=invoke_options(ctx.parent)).names

    def pick(args: list[str | list[str]]) -> str:
        names, zone = args
        others = [z for z in names if z != zone]
        if not others:
            raise ValueError(f"{needs} needs a second zone; the region lists only {zone}")
        return others[0]

    return pulumi.Output.all(names, net.zone).apply(pick)


def second_zone_subnet(
    ctx: Context, net: Network, block: str, route_table: aws.ec2.RouteTable, needs: str
) -> aws.ec2.Subnet:
    """A subnet in another zone of the region for what AWS wants in two zones (an Application Load Balancer): all of
    `block`, a secondary block the VPC is given, so no existing subnet changes; routed like the first zone's subnet of
    the same use (`route_table`)."""
    name = ctx.name
    association = aws.ec2.VpcIpv4CidrBlockAssociation(
        f"{name}-serve-cidr", vpc_id=net.vpc.id, cidr_block=block, opts=ctx.child
    )
    # "another available zone" may answer differently later: the first deploy's stays
    pinned = pulumi.ResourceOptions.merge(
        ctx.child, pulumi.ResourceOptions(depends_on=[association], ignore_changes=["availabilityZone"])
    )
    subnet = aws.ec2.Subnet(
        f"{name}-serve-b",
        vpc_id=net.vpc.id,
        cidr_block=block,
        availability_zone=other_zone(ctx, net, needs),
        map_public_ip_on_launch=False,
        tags=ctx.tagged("serve-b"),
        opts=pinned,
    )
    aws.ec2.RouteTableAssociation(
        f"{name}-serve-b-rta", subnet_id=subnet.id, route_table_id=route_table.id, opts=ctx.child
    )
    return subnet
