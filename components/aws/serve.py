"""`serve:`: the Network Load Balancer, its listener and target group, attached to the Auto Scaling group, its security
group (the clients in on the listener port), and the node group's rule that lets the load balancer, and only it,
reach the nodes on the serving port. With `requestsPerNode` the same resources as an Application Load Balancer (the
same logical names: adding it to a running endpoint replaces the load balancer and target group, as the diff says),
in the first subnet and a second one in another zone (`network.second_zone_subnet`).

What is built was decided in `layout.aws.serve` (why a Network Load Balancer: catalog/serving/aws.yaml). The group
itself is not touched: the target group is attached with `autoscaling.Attachment`, a resource of its own, so the
group keeps its inputs and URN (its `target_group_arns` stays unset: one owner per attachment, pulumi-aws
autoscaling/attachment.py "Do not use the same traffic source in more than one of these resources").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from ..layout.aws import AwsServe
from ..resources import invoke_options, serve_output
from .naming import Context
from .network import Network, second_zone_subnet


@dataclass(frozen=True)
class Serving:
    load_balancer: aws.lb.LoadBalancer
    target_group: aws.lb.TargetGroup
    listener: aws.lb.Listener
    attachment: aws.autoscaling.Attachment
    security_group: aws.ec2.SecurityGroup

    def output(self, serve: AwsServe) -> dict[str, Any]:
        """`serve`: the endpoint, how to check it, and what is behind it (and, with requestsPerNode, what it scales)."""
        app = serve.application
        scaling = {} if app is None else {"scaling": {"metric": app.metric, "targetPerMinute": app.target_value}}
        return serve_output(
            self.load_balancer.dns_name,
            serve.listener_port,
            serve.scheme,
            serve.internal,
            (serve.health.protocol, serve.target_port, serve.health.path),
            serve.check_command,
            serve.reach,
            targetGroup=self.target_group.arn,
            **scaling,
        )


def _client_cidrs(ctx: Context, net: Network, serve: AwsServe) -> list[pulumi.Input[str]]:
    if serve.client_cidrs is not None:
        return list(serve.client_cidrs)
    # network.existing: the VPC's own range, as EC2 reports it
    vpc = aws.ec2.get_vpc_output(id=net.vpc.id, opts=invoke_options(ctx.parent))
    return [vpc.cidr_block]


def _node_rule(ctx: Context, net: Network, serve: AwsServe, lb_group: aws.ec2.SecurityGroup) -> None:
    """The node group's ingress on the serving port, from the load balancer's group only: client IP preservation is
    off (catalog/serving/aws.yaml clientIpPreserved), so clients and health checks both arrive from the load
    balancer's address, and the clients are filtered by its own group."""
    aws.vpc.SecurityGroupIngressRule(
        f"{ctx.name}-sg-serve",
        security_group_id=net.security_group.id,
        referenced_security_group_id=lb_group.id,
        ip_protocol="tcp",
        from_port=serve.target_port,
        to_port=serve.target_port,
        description="serve: clients and health checks through the load balancer",
        opts=ctx.child,
    )


def _lb_security_group(
    ctx: Context, net: Network, serve: AwsServe, clients: list[pulumi.Input[str]]
) -> aws.ec2.SecurityGroup:
    """The load balancer's own group: the clients in on the listener port, out to the nodes on the serving port only.
    A Network Load Balancer takes security groups only when it is created with one (botocore elbv2
    SetSecurityGroups), so it gets one from the start."""
    name = ctx.name
    sg = aws.ec2.SecurityGroup(
        f"{name}-serve-sg",
        vpc_id=net.vpc.id,
        description=f"gpu-cluster {ctx.layout.spec.name} serving load balancer",
        tags=ctx.tagged("serve-sg"),
        opts=ctx.child,
    )
    keyed: list[tuple[str, pulumi.Input[str]]] = (
        [("vpc", clients[0])]
        if serve.client_cidrs is None
        else [(cidr.replace("/", "_"), cidr) for cidr in serve.client_cidrs]
    )
    for suffix, cidr in keyed:
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-serve-sg-in-{suffix}",
            security_group_id=sg.id,
            cidr_ipv4=cidr,
            ip_protocol="tcp",
            from_port=serve.listener_port,
            to_port=serve.listener_port,
            description="serve: clients to the listener",
            opts=ctx.child,
        )
    aws.vpc.SecurityGroupEgressRule(
        f"{name}-serve-sg-out-nodes",
        security_group_id=sg.id,
        referenced_security_group_id=net.security_group.id,
        ip_protocol="tcp",
        from_port=serve.target_port,
        to_port=serve.target_port,
        description="serve: to the nodes serving port (traffic and health checks)",
        opts=ctx.child,
    )
    return sg


def _subnets(ctx: Context, net: Network, serve: AwsServe) -> list[pulumi.Input[str]]:
    """The load balancer's subnets: the first zone's, and for an Application Load Balancer one in another zone."""
    public = serve.subnet == "public" and net.public_subnet is not None
    first = net.public_subnet if public and net.public_subnet is not None else net.subnet
    app = serve.application
    if app is None:
        return [first.id]
    table = net.public_route_table if public else net.route_table
    assert table is not None  # a network this stack creates has both
    second = second_zone_subnet(ctx, net, app.subnet_block, table, "an Application Load Balancer")
    return [first.id, second.id]


def build_serving(ctx: Context, net: Network, group: aws.autoscaling.Group) -> Serving | None:
    serve = ctx.layout.serve
    if serve is None:
        return None
    name = ctx.name
    sg = _lb_security_group(ctx, net, serve, _client_cidrs(ctx, net, serve))
    _node_rule(ctx, net, serve, sg)
    application = serve.application is not None
    lb = aws.lb.LoadBalancer(
        f"{name}-lb",
        **serve.name_args(f"{name}-lb"),
        load_balancer_type=serve.load_balancer_type,
        internal=serve.internal,
        subnets=_subnets(ctx, net, serve),
        security_groups=[sg.id],
        idle_timeout=serve.application.idle_timeout_seconds if serve.application is not None else None,
        tags=ctx.tagged("lb"),
        opts=ctx.child,
    )
    health = serve.health
    target_group = aws.lb.TargetGroup(
        f"{name}-tg",
        **serve.name_args(f"{name}-tg"),
        port=serve.target_port,
        # TLS ends at the listener; the nodes serve plain HTTP or TCP
        protocol="HTTP" if application else "TCP",
        vpc_id=net.vpc.id,
        target_type="instance",
        # a Network Load Balancer's attribute; an Application Load Balancer's targets always see its address
        preserve_client_ip=None if application else str(serve.preserve_client_ip).lower(),
        health_check=aws.lb.TargetGroupHealthCheckArgs(
            enabled=True,
            protocol=health.protocol,
            port="traffic-port",
            path=health.path,
            matcher=health.matcher,
            interval=health.interval_seconds,
            healthy_threshold=health.healthy_threshold,
            unhealthy_threshold=health.unhealthy_threshold,
        ),
        tags=ctx.tagged("tg"),
        opts=ctx.child,
    )
    listener = aws.lb.Listener(
        f"{name}-listener",
        load_balancer_arn=lb.arn,
        port=serve.listener_port,
        protocol=serve.listener_protocol,
        certificate_arn=serve.certificate,
        ssl_policy=serve.ssl_policy,
        tcp_idle_timeout_seconds=serve.idle_timeout_seconds,
        default_actions=[aws.lb.ListenerDefaultActionArgs(type="forward", target_group_arn=target_group.arn)],
        tags=ctx.tagged("listener"),
        opts=ctx.child,
    )
    attachment = aws.autoscaling.Attachment(
        f"{name}-serve-attachment",
        autoscaling_group_name=group.name,
        lb_target_group_arn=target_group.arn,
        opts=ctx.child,
    )
    return Serving(lb, target_group, listener, attachment, sg)
