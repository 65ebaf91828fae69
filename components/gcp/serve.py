"""`serve:` on GCP: the regional health check on the serving port, the firewall rule that admits Google's
health-check probers to that port only, a regional backend service with the managed instance group (and the spot
mix's on-demand floor group) as backends, and the endpoint: the internal passthrough forwarding rule in the host
network's node subnet, or (a certificate, public, requestsPerNode) the regional Application Load Balancer: proxy-only
subnet, the proxies' firewall rule, URL map, target HTTP(S) proxy with its SSL policy, the Cloud Armor policy of a
public one and its forwarding rule. Decided in `layout.gcp.serve` (catalog/serving/gcp.yaml)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp

from ..layout.gcp import GcpLayout, GcpServe
from ..layout.gcp.serve import ApplicationLb
from ..resources import serve_output
from .network import Network

PORT_NAME = "serve"  # the groups' named port the Application Load Balancer's backend service sends to
DEFAULT_RULE_PRIORITY = 2147483647  # Cloud Armor's default rule (region_security_policy.py: "There must always be")


@dataclass(frozen=True)
class Serving:
    health_check: gcp.compute.RegionHealthCheck
    backend_service: gcp.compute.RegionBackendService
    forwarding_rule: gcp.compute.ForwardingRule

    def output(self, serve: GcpServe) -> dict[str, Any]:
        return serve_output(
            self.forwarding_rule.ip_address,
            serve.listener_port,
            serve.scheme,
            serve.internal,
            ("HTTP" if serve.protocol == "http" else "TCP", serve.port, serve.health_path),
            serve.check_command,
            serve.reach,
            backendService=self.backend_service.self_link,
        )


def build_serving(
    name: str,
    layout: GcpLayout,
    net: Network,
    groups: list[gcp.compute.InstanceGroupManager],
    child: pulumi.ResourceOptions,
) -> Serving | None:
    serve = layout.serve
    if serve is None or not groups:
        return None
    gcp.compute.Firewall(
        f"{name}-serve-health-check",
        network=net.host.id,
        direction="INGRESS",
        allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=[str(serve.port)])],
        source_ranges=list(serve.probe_ranges),
        description="Google's health-check probers to the serving port only (serve: the load balancer's check)",
        opts=child,
    )
    http = serve.protocol == "http"
    health = gcp.compute.RegionHealthCheck(
        f"{name}-serve-health",
        region=serve.region,
        check_interval_sec=serve.check_interval_sec,
        timeout_sec=serve.timeout_sec,
        healthy_threshold=serve.healthy_threshold,
        unhealthy_threshold=serve.unhealthy_threshold,
        http_health_check=gcp.compute.RegionHealthCheckHttpHealthCheckArgs(
            port=serve.port, request_path=serve.health_path
        )
        if http
        else None,
        tcp_health_check=None if http else gcp.compute.RegionHealthCheckTcpHealthCheckArgs(port=serve.port),
        description=f"gpu-cluster {layout.spec.name}: the serving port, for the load balancer",
        opts=child,
    )
    if serve.application is not None:
        return _application(name, layout, serve, serve.application, net, groups, health, child)
    backend = gcp.compute.RegionBackendService(
        f"{name}-serve-backend",
        region=serve.region,
        load_balancing_scheme="INTERNAL",
        protocol="TCP",
        network=net.host.id,
        health_checks=health.id,
        backends=[
            gcp.compute.RegionBackendServiceBackendArgs(group=group.instance_group, balancing_mode="CONNECTION")
            for group in groups
        ],
        description=f"gpu-cluster {layout.spec.name}: the managed instance group behind the serving endpoint",
        opts=child,
    )
    rule = gcp.compute.ForwardingRule(
        f"{name}-serve",
        region=serve.region,
        load_balancing_scheme="INTERNAL",
        ip_protocol="TCP",
        ports=[str(serve.port)],
        network=net.host.id,
        subnetwork=net.subnets["nodes"].id,
        backend_service=backend.id,
        labels=dict(layout.labels),
        description=f"gpu-cluster {layout.spec.name}: the serving endpoint (internal)",
        opts=child,
    )
    return Serving(health, backend, rule)


def _armor(
    name: str, layout: GcpLayout, serve: GcpServe, alb: ApplicationLb, child: pulumi.ResourceOptions
) -> gcp.compute.RegionSecurityPolicy:
    """Public: the clients in allowedCidrs and no one else (the external forwarding rule takes any address)."""
    rule = gcp.compute.RegionSecurityPolicyRuleArgs
    match = gcp.compute.RegionSecurityPolicyRuleMatchArgs
    config = gcp.compute.RegionSecurityPolicyRuleMatchConfigArgs
    allow = [
        rule(
            action="allow",
            priority=1000 + i,
            match=match(versioned_expr="SRC_IPS_V1", config=config(src_ip_ranges=list(ranges))),
            description="serve.allowedCidrs",
        )
        for i, ranges in enumerate(alb.client_rules)
    ]
    deny = rule(
        action="deny(403)",
        priority=DEFAULT_RULE_PRIORITY,
        match=match(versioned_expr="SRC_IPS_V1", config=config(src_ip_ranges=["*"])),
        description="everyone else",
    )
    return gcp.compute.RegionSecurityPolicy(
        f"{name}-serve-clients",
        region=serve.region,
        type="CLOUD_ARMOR",
        rules=[*allow, deny],
        description=f"gpu-cluster {layout.spec.name}: the serving endpoint's clients (serve.allowedCidrs)",
        opts=child,
    )


def _application(
    name: str,
    layout: GcpLayout,
    serve: GcpServe,
    alb: ApplicationLb,
    net: Network,
    groups: list[gcp.compute.InstanceGroupManager],
    health: gcp.compute.RegionHealthCheck,
    child: pulumi.ResourceOptions,
) -> Serving:
    spec = layout.spec
    proxies = gcp.compute.Subnetwork(
        f"{name}-serve-proxies",
        network=net.host.id,
        region=serve.region,
        ip_cidr_range=alb.proxy_subnet,
        purpose="REGIONAL_MANAGED_PROXY",
        role="ACTIVE",
        description=f"gpu-cluster {spec.name}: the serving load balancer's proxies (proxy-only)",
        opts=child,
    )
    # the proxies open the connections to the nodes from the proxy-only range: that range, the serving port only
    gcp.compute.Firewall(
        f"{name}-serve-proxy-traffic",
        network=net.host.id,
        direction="INGRESS",
        allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=[str(serve.port)])],
        source_ranges=[alb.proxy_subnet],
        description="the load balancer's proxies (proxy-only subnet) to the serving port only",
        opts=child,
    )
    # the backend service sends to the groups' port by name: set on each group's instance group beside the MIG, so
    # the MIG keeps its inputs (InstanceGroups.setNamedPorts; the MIG's own namedPorts is output only in compute.v1)
    ports = [
        gcp.compute.InstanceGroupNamedPort(
            f"{name}-serve-port" if i == 0 else f"{name}-serve-port-{i}",
            group=group.instance_group,
            zone=group.zone,
            name=PORT_NAME,
            port=serve.port,
            opts=child,
        )
        for i, group in enumerate(groups)
    ]
    armor = _armor(name, layout, serve, alb, child) if alb.client_rules else None
    rate = alb.max_rate_per_instance
    backend = gcp.compute.RegionBackendService(
        f"{name}-serve-backend",
        region=serve.region,
        load_balancing_scheme=alb.scheme,
        protocol="HTTP",
        port_name=PORT_NAME,
        health_checks=health.id,
        security_policy=armor.id if armor is not None else None,
        backends=[
            gcp.compute.RegionBackendServiceBackendArgs(
                group=group.instance_group,
                # requestsPerNode: RATE, the autoscaler's serving capacity; else UTILIZATION (the provider's example)
                balancing_mode="RATE" if rate else "UTILIZATION",
                max_rate_per_instance=rate,
                capacity_scaler=1.0,
            )
            for group in groups
        ],
        description=f"gpu-cluster {spec.name}: the managed instance group behind the serving endpoint",
        opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=ports)),
    )
    url_map = gcp.compute.RegionUrlMap(
        f"{name}-serve-routes",
        region=serve.region,
        default_service=backend.id,
        description=f"gpu-cluster {spec.name}: every request to the serving backend",
        opts=child,
    )
    target: gcp.compute.RegionTargetHttpsProxy | gcp.compute.RegionTargetHttpProxy
    if alb.tls:
        policy = gcp.compute.RegionSslPolicy(
            f"{name}-serve-tls",
            region=serve.region,
            profile=alb.ssl_profile,
            min_tls_version=alb.min_tls_version,
            description=f"gpu-cluster {spec.name}: TLS 1.2 and later at the serving endpoint",
            opts=child,
        )
        target = gcp.compute.RegionTargetHttpsProxy(
            f"{name}-serve-proxy",
            region=serve.region,
            url_map=url_map.id,
            ssl_certificates=list(alb.ssl_certificates) or None,
            certificate_manager_certificates=list(alb.manager_certificates) or None,
            ssl_policy=policy.id,
            description=f"gpu-cluster {spec.name}: TLS ends here with serve.certificate",
            opts=child,
        )
    else:
        target = gcp.compute.RegionTargetHttpProxy(
            f"{name}-serve-proxy",
            region=serve.region,
            url_map=url_map.id,
            description=f"gpu-cluster {spec.name}: the serving endpoint's proxy",
            opts=child,
        )
    internal = alb.scheme == "INTERNAL_MANAGED"
    rule = gcp.compute.ForwardingRule(
        f"{name}-serve",
        region=serve.region,
        load_balancing_scheme=alb.scheme,
        ip_protocol="TCP",
        port_range=str(alb.listener_port),
        network=net.host.id,
        subnetwork=net.subnets["nodes"].id if internal else None,
        network_tier=alb.network_tier,
        target=target.id,
        labels=dict(layout.labels),
        description=f"gpu-cluster {spec.name}: the serving endpoint ({'internal' if internal else 'public'})",
        # the proxies need the region's active proxy-only subnet before the rule (the provider's regional XLB example)
        opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[proxies])),
    )
    return Serving(health, backend, rule)
