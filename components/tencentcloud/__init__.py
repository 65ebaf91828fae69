"""Tencent Cloud resources for one GPU cluster: maps a `TencentLayout` onto tencentcloud-iac-pulumi, nothing more.

Decisions (HPC cluster or placement group, subnet range, image, user data) are made in
`components.layout.tencentcloud`; this package turns them into resources, one module per concern:
`network` (VPC, subnet, NAT egress, security group), `identity` (the nodes' CAM role), `access`
(key pair, login node) and `nodes` (HPC cluster or placement group, image, N CVM instances).
Every resource is parented to `CloudCluster`, so URNs do not depend on which module registers it.
"""

from __future__ import annotations

from typing import Any

import pulumi

from ..layout.tencentcloud import TencentLayout
from . import access, identity, logs, monitoring, network, nodes

TYPE = "gpu-cluster:tencentcloud:Cluster"


class CloudCluster(pulumi.ComponentResource):
    """The Tencent Cloud half of `GpuCluster`; children are parented here so the tree reads cloud-first."""

    outputs: dict[str, Any]

    def __init__(self, name: str, layout: TencentLayout, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, {}, opts)
        self.layout = layout
        tags = dict(layout.tags)
        for message in layout.warnings:
            pulumi.log.warn(message, resource=self)
        self.network = network.build(self, name, layout, tags)
        self.identity = identity.build(self, name, layout, tags)
        self.access = access.build(self, name, layout, tags)
        key_ids = [self.access.key_pair.id] if self.access.key_pair else None
        role = self.identity.role_name
        self.nodes = nodes.build(self, name, layout, self.network, key_ids, role, tags)
        self.login = access.build_login(self, name, layout, self.network, key_ids, role, tags)
        scrapes = monitoring.scrape_ingress(layout, self.login)
        network.node_rules(self, name, layout, self.network.security_group, scrapes)
        monitoring.build(self, name, layout, role)
        self.logs = logs.build(self, name, layout, role, tags)  # monitoring.logs: CLS; LogListener is in the user data
        instances = self.nodes.instances
        self.outputs = {
            "vpcId": self.network.vpc.id,
            "subnetIds": pulumi.Output.all(self.network.subnet.id),
            "securityGroupId": self.network.security_group.id,
            "imageId": self.nodes.image_id,
            # a managed group's nodes come and go: its id, as Alibaba's managed groups report theirs
            **(
                {"nodeGroup": self.nodes.group.id}
                if self.nodes.group is not None
                else {"instanceIds": pulumi.Output.all(*[inst.id for inst in instances])}
            ),
            "placementGroup": self.nodes.placement_group.id if self.nodes.placement_group else None,
            "hpcClusterId": self.nodes.hpc_cluster.id if self.nodes.hpc_cluster else None,
            "gpuDriver": layout.gpu_driver,  # None with an explicit image: it brings its own
            "identity": self.identity.output(layout),
            "access": access.output(layout, self.login),
            "monitoring": monitoring.output(layout, self.login),
            "placementApplied": layout.placement_applied,
            "fabricUsable": layout.fabric_usability.describe(),
            # a hostfile for mpirun / torchrun
            "privateIps": pulumi.Output.all(*[inst.private_ip for inst in instances]) if instances else None,
        }
        if self.logs is not None and layout.logs is not None:
            self.outputs["logs"] = self.logs.output(layout.logs)
        self.register_outputs(self.outputs)
