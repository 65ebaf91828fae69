"""Huawei Cloud resources for one GPU cluster: maps a `HuaweiLayout` onto pulumi-huaweicloud, nothing more.

Decisions (server group, subnet range, image, DEW key, user data) are made in `components.layout.huaweicloud`; this
package turns them into resources, one module per concern: `network` (VPC, subnet, NAT gateway + SNAT on an EIP,
security group), `encryption` (the DEW key), `identity` (the nodes' IAM agency), `access` (key pair, login node),
`storage` (the SFS Turbo filesystem) and `nodes` (server group, image, N ECS instances or an AS group). Every
resource is parented to `CloudCluster`, so URNs do not depend on which module registers it.
"""

from __future__ import annotations

import warnings
from typing import Any

import pulumi

# pulumi-huaweicloud 0.0.12 imports pkg_resources (pyproject pins setuptools<81 for it), whose deprecation warning
# would print on every plan: silenced here, for this import only
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", "pkg_resources is deprecated", UserWarning)
    import pulumi_huaweicloud  # noqa: F401

from ..layout.huaweicloud import HuaweiLayout
from . import access, encryption, identity, kubernetes, logs, monitoring, network, nodes, slurm
from .storage import build_shared

TYPE = "gpu-cluster:huaweicloud:Cluster"


class CloudCluster(pulumi.ComponentResource):
    """The Huawei Cloud half of `GpuCluster`; children are parented here so the tree reads cloud-first."""

    outputs: dict[str, Any]

    def __init__(self, name: str, layout: HuaweiLayout, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, {}, opts)
        self.layout = layout
        tags = dict(layout.tags)
        for message in layout.warnings:
            pulumi.log.warn(message, resource=self)
        self.network = network.build(self, name, layout, tags)
        kms_key_id = encryption.build(self, name, layout, tags)
        # scheduler: slurm: the secrets and the policy reading them, granted to the agency by name
        secrets = slurm.build_secrets(self, name, layout, kms_key_id, tags)
        # monitoring.notify: the topic, its emails and the policy publishing to it, granted to the agency by name
        self.alerts = monitoring.build_alerts(self, name, layout, tags)
        roles_first = [*([secrets.role] if secrets else []), *([self.alerts.role] if self.alerts else [])]
        self.identity = identity.build(self, name, layout, roles_first)
        self.logs = logs.build(self, name, layout, tags)  # monitoring.logs: LTS; ICAgent is in the user data
        self.access = access.build(self, name, layout)
        key_pair = self.access.key_pair.name if self.access.key_pair else None
        agency = self.identity.agency_name
        self.shared = build_shared(self, name, layout, self.network, kms_key_id, tags)
        mount_source = self.shared.source if self.shared else None
        # the head before the GPU and login nodes, whose user data holds its address
        self.slurm = slurm.build_head(
            self, name, layout, self.network, secrets, key_pair, agency, kms_key_id, mount_source
        )
        head = self.slurm.address if self.slurm else None
        # scheduler kubernetes: the GPU nodes are a CCE node pool, not ECS instances
        self.kubernetes = (
            kubernetes.build(self, name, layout, self.network, key_pair, agency, kms_key_id, tags)
            if layout.kubernetes is not None
            else None
        )
        self.nodes = (
            nodes.build(self, name, layout, self.network, key_pair, agency, kms_key_id, tags, mount_source, head)
            if self.kubernetes is None
            else None
        )
        login = layout.login
        login_image = nodes.image(self, login.image_name_regex, login.flavor) if login else None
        topic_urn = self.alerts.topic.topic_urn if self.alerts else None
        login_data = (
            self.slurm.login_user_data(mount_source, topic_urn)
            if self.slurm
            else monitoring.login_user_data(layout, topic_urn)
        )
        self.login = (
            access.build_login(self, name, layout, self.network, key_pair, agency, kms_key_id, login_image, login_data)
            if login_image is not None
            else None
        )
        monitoring.build(self, name, layout, self.network, self.login)
        login_sg = self.login.security_group if self.login else None
        filesystem = self.shared.resource if self.shared else None
        shared_ports = layout.shared.ports if layout.shared else ()
        slurm.rules(self, name, self.slurm, self.network.security_group, login_sg, filesystem, shared_ports)
        instances = self.nodes.instances if self.nodes else []
        if self.logs is not None:  # which files reach LTS: every instance, head and login included (AS: by label)
            hosts = [
                *instances,
                *([self.slurm.instance] if self.slurm else []),
                *([self.login.instance] if self.login else []),
            ]
            cluster = self.kubernetes.cluster if self.kubernetes else None  # CCE: its nodes, by their identifier
            logs.ingest(self, name, layout, self.logs, [] if cluster else hosts, tags, cluster)
        self.outputs = {
            "vpcId": self.network.vpc.id,
            "subnetIds": pulumi.Output.all(self.network.subnet.id),
            "securityGroupId": self.network.security_group.id,
            # CCE pools boot CCE's own OS, named in place of an image id
            "imageId": self.nodes.image_id if self.nodes else (layout.kubernetes and layout.kubernetes.node_os),
            # an AS group's nodes come and go: its id, as Alibaba's and Tencent's managed groups report theirs
            **(
                {"nodeGroup": self.nodes.group.id}
                if self.nodes is not None and self.nodes.group is not None
                else {"instanceIds": pulumi.Output.all(*[inst.id for inst in instances])}
            ),
            "placementGroup": self.nodes.server_group.id if self.nodes and self.nodes.server_group else None,
            "kmsKeyId": kms_key_id,
            # not managed on ECS nodes (see the image warning, docs/huaweicloud.md); CCE's add-on installs it
            "gpuDriver": self.kubernetes.output(layout)["gpuDriver"] if self.kubernetes else None,
            "identity": self.identity.output(layout),
            "access": (access_out := access.output(layout, self.login)),
            "monitoring": monitoring.output(layout, self.login),
            "placementApplied": layout.placement_applied,
            "fabricUsable": layout.fabric_usability.describe(),
            # a hostfile for mpirun / torchrun
            "privateIps": pulumi.Output.all(*[inst.access_ip_v4 for inst in instances])
            if self.nodes is None or self.nodes.group is None
            else None,
        }
        if (alerts := monitoring.alerts_output(layout, self.alerts)) is not None:
            self.outputs["alerts"] = alerts
        if self.slurm is not None:
            self.outputs["slurm"] = slurm.output(self.slurm, access_out)
        if self.kubernetes is not None:
            self.outputs["kubernetes"] = self.kubernetes.output(layout)
            self.outputs["kubeconfig"] = self.kubernetes.kubeconfig
        if self.shared is not None and layout.shared is not None:
            self.outputs["sharedFilesystem"] = self.shared.output(layout.shared)
        if self.logs is not None and layout.logs is not None:
            self.outputs["logs"] = self.logs.output(layout.logs)
        self.register_outputs(self.outputs)
