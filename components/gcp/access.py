"""How people reach the nodes: the tcp:22 firewall rule (IAP's range and/or sshCidrs)."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from ..layout.gcp import GcpLayout
from .network import Network


def build_ssh_firewall(
    name: str, layout: GcpLayout, net: Network, child: pulumi.ResourceOptions
) -> gcp.compute.Firewall | None:
    if not layout.ssh_source_ranges:
        return None
    return gcp.compute.Firewall(
        f"{name}-ssh",
        network=net.host.id,
        direction="INGRESS",
        allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=["22"])],
        source_ranges=list(layout.ssh_source_ranges),
        description="SSH to the nodes (sshCidrs, and IAP's range when gcp.iap is set)",
        opts=child,
    )
