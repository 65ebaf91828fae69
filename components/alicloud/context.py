"""What every ECS instance of one cluster is built with: the GPU nodes (nodes.py, or the ACK pools in kubernetes.py),
the login node (access.py) and the Slurm head (slurm.py) come up in the same network, with the same key pair, RAM
role, tags and disk key, as children of the cluster's `CloudCluster`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_alicloud as alicloud

from ..layout.alicloud import AlicloudLayout
from .network import Network


@dataclass(frozen=True)
class Context:
    parent: pulumi.Resource  # the CloudCluster
    name: str  # the logical-name prefix
    layout: AlicloudLayout
    network: Network
    key_pair: alicloud.ecs.EcsKeyPair | None
    role_name: pulumi.Output[str]  # the nodes' RAM role
    tags: Mapping[str, str]
    kms_key: pulumi.Input[str] | None = None  # encryption.key not provider: the disks' KMS key (else the ECS one)

    @property
    def child(self) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self.parent)

    @property
    def key_name(self) -> pulumi.Output[str] | None:
        """The key pair's name for an instance's `key_name` (None without sshPublicKey)."""
        return self.key_pair.key_pair_name if self.key_pair else None

    @property
    def instance_disk_algorithm(self) -> str | None:
        """An ECS instance's system-disk cipher (sm4-128 with encryption.algorithm sm4; None: as before)."""
        enc = self.layout.encryption
        return enc.instance_disk_algorithm if enc else None

    @property
    def ess_disk_algorithm(self) -> str | None:
        """The ESS configuration's system-disk cipher (SM4-128 with encryption.algorithm sm4; None: as before)."""
        enc = self.layout.encryption
        return enc.ess_disk_algorithm if enc else None
