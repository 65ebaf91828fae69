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
from . import access, audit, encryption, identity, kubernetes, logs, monitoring, network, nodes, slurm, tmp

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
        # scheduler: slurm: the head before the GPU and login nodes, whose user data holds its address
        self.slurm = slurm.build(self, name, layout, self.network, key_ids, role, tags)
        nodes_sg = self.network.security_group
        head = self.slurm.address if self.slurm else None
        kms_key_id = encryption.build(self, name, layout, tags)  # encryption.key: the data disks' KMS key
        # scheduler kubernetes: the GPU nodes are the TKE GPU pool's, no CVM instances of their own
        tke = layout.kubernetes is not None
        self.nodes = (
            None if tke else nodes.build(self, name, layout, self.network, key_ids, role, tags, kms_key_id, head)
        )
        self.kubernetes = kubernetes.build(self, name, layout, self.network, key_ids, role, tags) if tke else None
        # monitoring.prometheus managed: TMP, whose id and addresses the login node's user data takes
        self.tmp = tmp.build(self, name, layout, self.network, tags)
        self.login = access.build_login(
            self, name, layout, self.network, key_ids, role, tags,
            tmp.login_user_data(layout, self.slurm, self.tmp), slurm.login_ingress(self.slurm, nodes_sg),
        )  # fmt: skip
        login_sg = self.login.security_group if self.login else None
        scrapes = monitoring.scrape_ingress(layout, self.login)
        network.node_rules(self, name, layout, nodes_sg, [*scrapes, *slurm.node_ingress(self.slurm, login_sg)])
        slurm.head_rules(self, name, self.slurm, nodes_sg, login_sg)
        monitoring.build(self, name, layout, role)
        tmp.grant(self, name, layout, self.tmp, role)
        cluster = self.kubernetes.cluster if self.kubernetes else None
        # monitoring.logs: CLS (LogListener in the user data; on TKE the cluster's log agent and LogConfigs)
        self.logs = logs.build(self, name, layout, role, tags, cluster)
        self.audit = audit.build(self, name, layout, tags)  # compliance mlps3: the CloudAudit tracking set
        instances = self.nodes.instances if self.nodes else []
        tke_os = f"TKE node OS {layout.kubernetes.node_os}" if layout.kubernetes else None
        self.outputs = {
            "vpcId": self.network.vpc.id,
            "subnetIds": pulumi.Output.all(self.network.subnet.id),
            "securityGroupId": self.network.security_group.id,
            "imageId": self.nodes.image_id if self.nodes else tke_os,
            # a managed group's nodes come and go: its id, as Alibaba's managed groups report theirs
            **(
                {"nodeGroup": self.nodes.group.id}
                if self.nodes is not None and self.nodes.group is not None
                else {"instanceIds": pulumi.Output.all(*[inst.id for inst in instances])}
            ),
            "placementGroup": self.nodes.placement_group.id if self.nodes and self.nodes.placement_group else None,
            "hpcClusterId": self.nodes.hpc_cluster.id if self.nodes and self.nodes.hpc_cluster else None,
            "gpuDriver": layout.gpu_driver,  # None with an image of your own, and on TKE (the GPU operator installs it)
            "identity": self.identity.output(layout),
            "access": (access_out := access.output(layout, self.login)),
            "monitoring": monitoring.output(layout, self.login, self.tmp),
            "placementApplied": layout.placement_applied,
            "fabricUsable": layout.fabric_usability.describe(),
            # a hostfile for mpirun / torchrun
            "privateIps": pulumi.Output.all(*[inst.private_ip for inst in instances]) if instances else None,
        }
        if self.slurm is not None:
            self.outputs["slurm"] = slurm.output(self.slurm, access_out)
        if self.kubernetes is not None:
            self.outputs["kubernetes"] = self.kubernetes.output(layout)
            self.outputs["kubeconfig"] = self.kubernetes.kubeconfig  # a secret
        if self.logs is not None and layout.logs is not None:
            self.outputs["logs"] = self.logs.output(layout.logs)
        if kms_key_id is not None:
            self.outputs["kmsKeyId"] = kms_key_id
        if self.audit is not None:
            self.outputs["audit"] = self.audit.output(layout)
        self.register_outputs(self.outputs)
