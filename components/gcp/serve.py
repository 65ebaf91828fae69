"""`serve:` on GCP: the regional health check on the serving port, the firewall rule that admits Google's
health-check probers to that port only, a regional backend service (INTERNAL, TCP) with the managed instance group
(and the spot mix's on-demand floor group) as backends, and the internal forwarding rule in the host network's node
subnet: the endpoint's address. Decided in `layout.gcp.serve` (catalog/serving/gcp.yaml)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp

from ..layout.gcp import GcpLayout, GcpServe
from ..resources import serve_output
from .network import Network


@dataclass(frozen=True)
class Serving:
    health_check: gcp.compute.RegionHealthCheck
    backend_service: gcp.compute.RegionBackendService
    forwarding_rule: gcp.compute.ForwardingRule

    def output(self, serve: GcpServe) -> dict[str, Any]:
        return serve_output(
            self.forwarding_rule.ip_address,
            serve.port,
            serve.protocol,
            True,
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
