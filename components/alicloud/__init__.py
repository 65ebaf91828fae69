"""Alibaba Cloud resources for one GPU cluster: maps an `AlicloudLayout` onto pulumi-alicloud, nothing more.

Decisions (ERI wiring, vSwitch ranges, deployment set strategy, image, user data) are made in
`components.layout.alicloud`; this package turns them into resources, one module per concern:
`network` (VPC, vSwitches, NAT egress, security group), `identity` (the nodes' RAM role),
`access` (session manager, key pair, login node), `nodes` (deployment set, image, an ESS
scaling group or N ECS instances) and `serve` (the intranet CLB in front of the ESS group), or with
`scheduler: kubernetes` `kubernetes` (an ACK cluster and its pools instead of the nodes); the login node and the
Slurm head are `cpu_node`s, and every instance is built from one `context.Context`. Every resource is parented to
`CloudCluster`, so URNs do not depend on which module registers it.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_alicloud as alicloud

from ..bootstrap.metrics import endpoints
from ..bootstrap.mounts import SOURCE_PLACEHOLDER
from ..layout.alicloud import AlicloudLayout
from ..resources import fill
from . import (
    access,
    arms,
    audit,
    encryption,
    health,
    identity,
    kubernetes,
    logs,
    monitoring,
    network,
    nodes,
    partitions,
    scaling,
    serve,
    slurm,
)
from .context import Context
from .storage import build_shared

TYPE = "gpu-cluster:alicloud:Cluster"


def metrics_output(layout: AlicloudLayout) -> dict[str, Any]:
    """The `metrics` stack output: what every node exports, and how to list the targets (inside the VPC only)."""
    spec = layout.spec
    if not spec.dcgm_exporter:
        return {"endpoints": [], "scrape": "none: monitoring.dcgmExporter is false"}
    listing = (
        f"aliyun ecs DescribeInstances --RegionId {spec.region} --Tag.1.Key gpu-cluster:cluster --Tag.1.Value "
        f"{spec.name} | jq -r '.Instances.Instance[].VpcAttributes.PrivateIpAddress.IpAddress[0]'"
    )
    return {
        "endpoints": [{"name": e.name, "port": e.port, "path": e.path} for e in endpoints()],
        "scrape": f"{listing}: each private IP with each port; reachable only from the nodes' own security group",
    }


def _gpu_driver(layout: AlicloudLayout) -> str | None:
    if layout.kubernetes is not None:  # ACK installs it, pinned by the node-pool label
        return f"NVIDIA {layout.kubernetes.driver_version} (installed by ACK, node-pool label)"
    driver = layout.gpu_driver or layout.grid
    return driver.describe() if driver else None


class CloudCluster(pulumi.ComponentResource):
    """The Alibaba Cloud half of `GpuCluster`; children are parented here so the tree reads cloud-first."""

    outputs: dict[str, Any]

    def __init__(self, name: str, layout: AlicloudLayout, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, {}, opts)
        self.layout = layout
        spec = layout.spec
        tags = dict(layout.tags)
        for message in layout.warnings:
            pulumi.log.warn(message, resource=self)

        # encryption.key not provider: the KMS key of every ESSD below (None: the ECS service key, as before)
        self.encryption = encryption.build(self, name, layout, tags)
        kms_key = self.encryption.key_id if self.encryption else None
        self.network = network.build(self, name, layout, tags)
        self.audit = audit.build(self, name, layout, tags)  # compliance mlps3: the ActionTrail trail
        self.logs = logs.build(self, name, layout, tags)  # monitoring.logs: SLS; Logtail is in the nodes' user data
        self.vpc = self.network.vpc
        self.vswitch = self.network.vswitch
        self.security_group = self.network.security_group
        self.nat_gateway = self.network.nat.gateway if self.network.nat else None
        self.identity = identity.build(self, name, layout, tags)
        self.access = access.build(self, name, layout, tags)
        key_pair, role_name = self.access.key_pair, self.identity.role_name
        self.shared = build_shared(self, name, layout, self.network, tags, kms_key)
        mount_source = self.shared.source if self.shared else None
        # what every instance below (GPU nodes, ACK pools, login node, Slurm head) is built with
        ctx = Context(self, name, layout, self.network, key_pair, role_name, tags, kms_key)
        self.kubernetes: kubernetes.Kubernetes | None = None
        self.slurm: slurm.SlurmHead | None = None
        if layout.kubernetes is not None:  # the GPU nodes are an ACK node pool, not an ESS group
            self.kubernetes = kubernetes.build(ctx)
            if self.logs is not None and layout.logs is not None:  # ACK's logtail-ds, into the cluster's project
                logs.build_ack(self, name, layout.logs, self.logs, self.kubernetes.cluster.id)
            self.deployment_set = self.kubernetes.deployment_set
            self.image_id = pulumi.Output.from_input(layout.kubernetes.image_type)
            self.group: alicloud.ess.ScalingGroup | None = None
            self.instances: list[alicloud.ecs.Instance] = []
        else:
            # scheduler slurm: the head first, its address and the MUNGE key's ciphertext go into the nodes' user data
            self.slurm = slurm.build_head(ctx, mount_source)
            fills = self.slurm.replacements() if self.slurm else None
            if layout.partitions and fills is not None:  # elastic Slurm: the head launches nodes from templates
                self.templates = partitions.build(ctx, mount_source, fills)
                self.slurm = slurm.build_power(ctx, self.slurm, self.templates)
                self.deployment_set = None
                self.image_id = next(iter(self.templates.values())).image_id  # the first partition's
                self.group = None
                self.instances = []
            else:
                self.nodes = nodes.build(ctx, mount_source, fills)
                self.deployment_set = self.nodes.deployment_set
                self.image_id = self.nodes.image_id
                self.group = self.nodes.group
                self.instances = self.nodes.instances
        head = self.slurm
        login_data = (
            fill(
                head.plan.login_user_data,
                {**head.replacements(), SOURCE_PLACEHOLDER: mount_source},
                layout.user_data_b64_for,
            )
            if head
            else (layout.user_data_b64_for(layout.logs.login_user_data) if layout.logs else None)
        )
        if login_data is None and layout.monitoring is not None:  # VM mode: the login node's only parts
            login_data = layout.user_data_b64_for(layout.monitoring.vm_user_data)
        self.login = access.build_login(ctx, user_data=login_data)
        self.monitoring = monitoring.build(ctx, self.login)  # selfHosted: the login node lists and scrapes the nodes
        # managed: the ARMS instance federating the login node's Prometheus (ACK: bound to the cluster)
        self.arms = arms.build(ctx, self.login, self.kubernetes)
        slurm.connect(ctx, head, self.login.security_group if self.login else None)
        self.health = health.build(ctx, self.group)
        self.schedule = scaling.build(self, name, layout, self.group)  # ESS scheduled tasks (metric schedule)
        self.serving = serve.build_serving(ctx, self.group)  # serve: the intranet CLB the group is attached to

        node_ids: pulumi.Output[Any]
        if self.kubernetes is not None:
            node_ids = self.kubernetes.gpu_pool.id
        else:
            node_ids = self.group.id if self.group else pulumi.Output.all(*[inst.id for inst in self.instances])
        self.outputs = {
            "vpcId": self.vpc.id,
            "subnetIds": pulumi.Output.all(self.vswitch.id),
            "securityGroupId": self.security_group.id,
            "imageId": self.image_id,
            "nodeGroup" if spec.node_group == "managed" else "instanceIds": node_ids,
            "placementGroup": self.deployment_set.id if self.deployment_set else None,
            "gpuDriver": _gpu_driver(layout),
            "identity": self.identity.output(layout),
            "access": access.output(layout, self.login, self.instances[0] if self.instances else None),
            # what the nodes get, beside `placement` (what was asked): managed groups and spot take no set
            "placementApplied": layout.placement_applied,
            "health": health.output(layout, self.health),
            "metrics": metrics_output(layout),
            "monitoring": monitoring.output(layout, self.login, self.arms),
        }
        if (fleet := scaling.output(layout)) is not None:
            self.outputs["scaling"] = fleet
        if self.serving is not None and layout.serve is not None:
            self.outputs["serve"] = self.serving.output(layout.serve)
        if self.shared is not None and layout.shared is not None:
            self.outputs["sharedFilesystem"] = self.shared.output(layout.shared)
        if head is not None:
            self.outputs["slurm"] = slurm.output(head)
        if self.encryption is not None:
            self.outputs["encryption"] = self.encryption.output()
        if self.audit is not None:
            self.outputs["audit"] = self.audit.output(layout)
        if self.logs is not None and layout.logs is not None:
            self.outputs["logs"] = self.logs.output(layout.logs)
        if self.kubernetes is not None:
            self.outputs["kubernetes"] = self.kubernetes.output(layout)
            self.outputs["kubeconfig"] = self.kubernetes.kubeconfig
        if self.instances:  # a hostfile for mpirun / torchrun
            self.outputs["privateIps"] = pulumi.Output.all(*[inst.private_ip for inst in self.instances])
        self.register_outputs(self.outputs)
