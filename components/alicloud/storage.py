"""The shared filesystem (`storage.shared`): General-purpose NAS (NFS) with a mount target in the node vSwitch.

Who may mount is a NAS permission group, not an ECS security group: the cluster's own group has one
rule, read-write from the node vSwitch's CIDR, and the mount target uses it (the default VPC group
would admit the whole VPC). Encrypted at rest with the NAS-managed key (`encrypt_type` 1), or, when the cluster has
a customer-managed key (`encryption.key`), with that key (`encrypt_type` 2 and `kms_key_id`: the layout's
`encryption.nas_encrypt_type`). `retain: true` sets `protect` and `retainOnDelete` on the filesystem.

NAS descriptions (CreateFileSystem, CreateAccessGroup) start with a letter and hold letters, digits, ':', '_' and
'-' only, 2 to 128 characters (alibabacloud_nas20170626 models, the Description members): no spaces, so the words
are joined with ':' and '-' (the cluster name is [a-z][a-z0-9-]{0,30}).
"""

from __future__ import annotations

from collections.abc import Mapping

import pulumi
import pulumi_alicloud as alicloud

from ..layout.alicloud import AlicloudLayout
from ..resources import SharedFilesystem
from .network import Network


def build_shared(
    parent: pulumi.Resource,
    name: str,
    layout: AlicloudLayout,
    net: Network,
    tags: Mapping[str, str],
    kms_key: pulumi.Input[str] | None = None,
) -> SharedFilesystem | None:
    shared = layout.shared
    if shared is None:
        return None
    if shared.existing:
        return SharedFilesystem(None, shared.source_form)
    spec = layout.spec
    child = pulumi.ResourceOptions(parent=parent)
    nas_encrypt_type = layout.encryption.nas_encrypt_type if layout.encryption else None
    # None: the NAS-managed key, and no kms_key_id input, as before
    cluster_key = kms_key if nas_encrypt_type is not None else None
    fs = alicloud.nas.FileSystem(
        f"{name}-shared",
        file_system_type="standard",
        protocol_type="NFS",
        storage_type="Performance",
        encrypt_type=nas_encrypt_type if cluster_key is not None else 1,  # 1: the NAS-managed key, 2: a KMS key
        kms_key_id=cluster_key,
        zone_id=net.zone,
        description=f"gpu-cluster:{spec.name}:shared-filesystem",
        tags={**tags, "Name": f"{spec.name}-shared"},
        opts=pulumi.ResourceOptions(parent=parent, protect=shared.retain, retain_on_delete=shared.retain),
    )
    group = alicloud.nas.AccessGroup(
        f"{name}-shared-ag",
        access_group_name=f"{spec.name}-shared",
        access_group_type="Vpc",
        file_system_type="standard",
        description=f"gpu-cluster:{spec.name}:node-vswitch-only",
        opts=child,
    )
    # the node vSwitch (with network.existing, the network's configured CIDR: its vSwitch CIDR is not known here)
    source_cidr = layout.node_vswitch_cidr if spec.network.existing is None else spec.network.cidr
    alicloud.nas.AccessRule(
        f"{name}-shared-rule",
        access_group_name=group.access_group_name,
        file_system_type="standard",
        source_cidr_ip=source_cidr,
        rw_access_type="RDWR",
        user_access_type="no_squash",
        priority=1,
        opts=child,
    )
    target = alicloud.nas.MountTarget(
        f"{name}-shared-mt",
        file_system_id=fs.id,
        access_group_name=group.access_group_name,
        network_type="Vpc",
        vpc_id=net.vpc.id,
        vswitch_id=net.vswitch.id,
        opts=child,
    )
    source = target.mount_target_domain.apply(lambda domain: shared.source_form.format(mountTargetDomain=domain))
    return SharedFilesystem(fs, source)
