"""`serve:` on Alibaba Cloud: the intranet Classic Load Balancer in the node vSwitch (billed by usage), or with `public`
an internet one whose listener admits `allowedCidrs` only (a whitelist access control list), its vServer group on the
serving port, the listener with its health check (TCP, or HTTPS on 443 with a certificate), the ESS scaling group's
attachment to the vServer group (every node the group launches joins, every node it removes leaves), and the node
security group's rules that admit CLB's health checks and the clients to the serving port only.
Decided in `layout.alicloud.serve` (catalog/serving/alicloud.yaml); the scaling group's own inputs do not change."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_alicloud as alicloud

from ..layout.alicloud import AliServe
from ..resources import serve_output
from .context import Context
from .network import ingress_rule


@dataclass(frozen=True)
class Serving:
    load_balancer: alicloud.slb.ApplicationLoadBalancer
    server_group: alicloud.slb.ServerGroup
    listener: alicloud.slb.Listener

    def output(self, serve: AliServe) -> dict[str, Any]:
        return serve_output(
            self.load_balancer.address,
            serve.listener_port,
            serve.scheme,
            not serve.public,
            (serve.health_type.upper(), serve.port, serve.health_path),
            serve.check_command,
            serve.reach,
            loadBalancer=self.load_balancer.id,
            serverGroup=self.server_group.id,
        )


def build_serving(ctx: Context, group: alicloud.ess.ScalingGroup | None) -> Serving | None:
    serve = ctx.layout.serve
    if serve is None or group is None:
        return None
    name, child, sg = ctx.name, ctx.child, ctx.network.security_group
    lb = alicloud.slb.ApplicationLoadBalancer(
        f"{name}-serve-lb",
        load_balancer_name=serve.name,
        address_type="internet" if serve.public else "intranet",
        # an internet CLB takes no vSwitch (the provider ignores it); its nodes stay in the cluster's
        vswitch_id=None if serve.public else ctx.network.vswitch.id,
        payment_type="PayAsYouGo",
        instance_charge_type="PayByCLCU",
        tags=dict(ctx.tags),
        opts=child,
    )
    server_group = alicloud.slb.ServerGroup(f"{name}-serve-group", load_balancer_id=lb.id, name=serve.name, opts=child)
    https = serve.listener_protocol == "https"
    acl = (
        alicloud.slb.Acl(
            f"{name}-serve-acl",
            name=serve.name,  # ip_version left to its default, ipv4 (the allowed ranges are IPv4: spec)
            entry_lists=[
                alicloud.slb.AclEntryListArgs(entry=cidr, comment="serve.allowedCidrs") for cidr in serve.allowed_cidrs
            ],
            tags=dict(ctx.tags),
            opts=child,
        )
        if serve.public
        else None
    )
    listener = alicloud.slb.Listener(
        f"{name}-serve-listener",
        load_balancer_id=lb.id,
        protocol=serve.listener_protocol,
        frontend_port=serve.listener_port,
        backend_port=serve.port,
        server_group_id=server_group.id,
        # required by the API; -1 is "unlimited" (the CLB is billed by usage, not by a bandwidth it reserves)
        bandwidth=-1,
        # TCP: the check's kind (http or tcp); HTTPS: its check is HTTP to the backend port, switched on here
        health_check_type=None if https else serve.health_type,
        health_check="on" if https else None,
        health_check_uri=serve.health_path,
        health_check_http_code=serve.health_http_code,
        health_check_interval=serve.interval_seconds,
        health_check_timeout=serve.timeout_seconds,
        healthy_threshold=serve.healthy_threshold,
        unhealthy_threshold=serve.unhealthy_threshold,
        server_certificate_id=serve.certificate,
        tls_cipher_policy=serve.tls_cipher_policy,
        established_timeout=serve.idle_timeout_seconds,
        # public: a whitelist, so only allowedCidrs reach the listener (catalog/serving/alicloud.yaml publicSource);
        # acl_id, which the stored provider source and SLB's API (AclId) take
        acl_status="on" if acl is not None else None,
        acl_type="white" if acl is not None else None,
        acl_id=acl.id if acl is not None else None,
        description=f"gpu-cluster {ctx.layout.spec.name}: the serving endpoint",
        opts=child,
    )
    # ESS adds the group's instances only to a CLB whose listener checks health: after the listener
    alicloud.ess.ScalingGroupVServerGroups(
        f"{name}-serve-attachment",
        scaling_group_id=group.id,
        vserver_groups=[
            alicloud.ess.ScalingGroupVServerGroupsVserverGroupArgs(
                loadbalancer_id=lb.id,
                vserver_attributes=[
                    alicloud.ess.ScalingGroupVServerGroupsVserverGroupVserverAttributeArgs(
                        vserver_group_id=server_group.id, port=serve.port, weight=serve.weight
                    )
                ],
            )
        ],
        opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[listener])),
    )
    ports = f"{serve.port}/{serve.port}"
    for cidr in serve.probe_ranges:
        ingress_rule(
            f"{name}-sg-serve-probe-{cidr.replace('/', '_')}",
            sg.id,
            ports,
            "CLB health checks (and its HTTPS listener's traffic) to the serving port only",
            child,
            cidr=cidr,
        )
    ingress_rule(
        f"{name}-sg-serve-clients",
        sg.id,
        ports,
        "the serving endpoint's clients inside the VPC (CLB's TCP listener passes their addresses)",
        child,
        cidr=serve.clients,
    )
    for cidr in serve.public_clients:
        ingress_rule(
            f"{name}-sg-serve-public-{cidr.replace('/', '_')}",
            sg.id,
            ports,
            "the public endpoint's clients (serve.allowedCidrs; CLB's TCP listener passes their addresses)",
            child,
            cidr=cidr,
        )
    return Serving(lb, server_group, listener)
