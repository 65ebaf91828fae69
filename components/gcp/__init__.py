"""GCP resources for one GPU cluster: maps a `GcpLayout` onto pulumi-gcp, nothing more.

Decisions (GPU VPCs and NICs, ranges, image, scheduling, labels) are made in
`components.layout.gcp`; this package turns them into resources, one module per concern:
`network` (VPCs, subnets, firewall rules, Cloud NAT), `access` (the SSH rule), `placement` (the
compact placement policy) and `nodes` (one instance template and a managed instance group, or N
instances from the template). Every resource is parented to `CloudCluster`, so URNs do not
depend on which module made it.
"""

from __future__ import annotations

from typing import Any

import pulumi

from ..layout.gcp import GcpLayout
from .access import build_ssh_firewall
from .network import build_nat, build_vpcs
from .nodes import build_nodes
from .placement import build_placement

TYPE = "gpu-cluster:gcp:Cluster"


class CloudCluster(pulumi.ComponentResource):
    """The GCP half of `GpuCluster`; children are parented here so the tree reads cloud-first."""

    outputs: dict[str, Any]

    def __init__(self, name: str, layout: GcpLayout, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, {}, opts)
        self.layout = layout
        spec = layout.spec
        child = pulumi.ResourceOptions(parent=self)
        for message in layout.warnings:
            pulumi.log.warn(message, resource=self)

        # Registration order is kept as before the split (plans compare byte for byte).
        self.network = build_vpcs(name, layout, child)
        self.ssh_firewall = build_ssh_firewall(name, layout, self.network, child)
        build_nat(name, layout, self.network, child)
        self.placement_policy = build_placement(name, layout, child)
        self.nodes = build_nodes(name, layout, self.network, self.placement_policy, self)
        self.template = self.nodes.template

        net = self.network
        self.outputs = {
            "vpcId": net.host.id,
            "subnetIds": pulumi.Output.all(net.subnets["nodes"].id),
            "gpuNetworkIds": pulumi.Output.all(*[n.id for role, n in net.networks.items() if role != "host"]),
            "securityGroupId": net.internal_firewall.id,
            "zone": layout.zone,
            "imageId": self.nodes.image_id,
            "instanceTemplate": self.template.self_link_unique,
            "nodeGroup" if spec.node_group == "managed" else "instanceIds": self.nodes.ids,
            "placementGroup": self.placement_policy.self_link if self.placement_policy else None,
        }
        self.register_outputs(self.outputs)
