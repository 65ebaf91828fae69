"""MIG autohealing on the node's own health check: an HTTP health check on the endpoint the bootstrap
serves (`gpu-cluster-health-http`, 200 only while /var/lib/gpu-cluster/health.json is healthy) and the
firewall rule that admits Google's health-check probers to that port only (layout: `GcpLayout.health_probe`).

No permission is involved: the MIG recreates a VM whose probe fails, so nothing on the node calls an API.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from ..layout.gcp import GcpLayout
from .network import Network


def build_health_check(
    name: str, layout: GcpLayout, net: Network, child: pulumi.ResourceOptions
) -> gcp.compute.HealthCheck | None:
    probe = layout.health_probe
    if probe is None:
        return None
    gcp.compute.Firewall(
        f"{name}-health-check",
        network=net.host.id,
        direction="INGRESS",
        allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=[str(probe.port)])],
        source_ranges=list(probe.source_ranges),
        description="Google's health-check probers to the nodes' health endpoint only (MIG autohealing)",
        opts=child,
    )
    return gcp.compute.HealthCheck(
        f"{name}-health",
        check_interval_sec=probe.check_interval_sec,
        timeout_sec=probe.timeout_sec,
        healthy_threshold=probe.healthy_threshold,
        unhealthy_threshold=probe.unhealthy_threshold,
        http_health_check=gcp.compute.HealthCheckHttpHealthCheckArgs(port=probe.port, request_path=probe.path),
        description=f"gpu-cluster {layout.spec.name}: node health (GPUs, fabric, local NVMe) for autohealing",
        opts=child,
    )
